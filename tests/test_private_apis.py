"""judgepanel uses no private API of a dependency (issue 31 §3): no module or name whose path has a
part starting with `_` (`rich._wrap`, `typer._coercion`, `from typer.core import _TyperParameter`),
imported or reached as an attribute of an imported third-party module or name, nor named in an
`importlib.import_module` string. A release of rich, Typer, SQLAlchemy, … may change those without
notice and break the CLI at start-up. Dunder names (`__version__`, `__future__`) are public.

The standard library and judgepanel's own modules are not third-party; `judgepanel/_bundled/`
(third-party code shipped as it is) is left out."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import judgepanel

PACKAGE = Path(judgepanel.__file__).parent
OWN = {"judgepanel", "__future__"}


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _third_party(module: str) -> bool:
    top = module.split(".")[0]
    return top not in OWN and top not in sys.stdlib_module_names


def offences(source: str, where: str = "<source>") -> list[str]:
    """Each use of a dependency's private API in `source`, as `where:line: what`."""
    tree = ast.parse(source)
    found: list[str] = []
    bound: dict[str, str] = {}  # local name -> the third-party module path it stands for

    def flag(node: ast.AST, what: str) -> None:
        found.append(f"{where}:{getattr(node, 'lineno', 0)}: {what}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not _third_party(alias.name):
                    continue
                if any(_private(p) for p in alias.name.split(".")):
                    flag(node, f"import {alias.name}")
                local = alias.asname or alias.name.split(".")[0]
                bound[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if not _third_party(node.module):
                continue
            if any(_private(p) for p in node.module.split(".")):
                flag(node, f"from {node.module} import …")
            for alias in node.names:
                if _private(alias.name):
                    flag(node, f"from {node.module} import {alias.name}")
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            name = node.args[0].value
            if _third_party(name) and any(_private(p) for p in name.split(".")):
                flag(node, f"import_module({name!r})")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            root: ast.expr = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in bound:
                flag(node, f"{ast.unparse(node)} ({bound[root.id]})")
    return found


def test_the_scanner_finds_each_form() -> None:
    src = """
import rich._wrap
import typer.main as tm
from typer._coercion import build_runtime_param
from typer.core import _TyperParameter, TyperGroup
from rich import cells
import importlib
x = tm._private_helper
y = TyperGroup._hidden
z = cells._table
importlib.import_module("typer._coercion")
ok1 = tm.get_command
ok2 = TyperGroup.__name__
from judgepanel.cli import _own
import os._thing
"""
    lines = sorted(int(hit.split(":")[1]) for hit in offences(src))
    # rich._wrap, typer._coercion, _TyperParameter, tm._private_helper, TyperGroup._hidden,
    # cells._table, import_module("typer._coercion"); not the public names, judgepanel's own
    # private module or the standard library's
    assert lines == [2, 4, 5, 8, 9, 10, 11]


def test_judgepanel_uses_no_private_api_of_a_dependency() -> None:
    found = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        if "_bundled" not in path.relative_to(PACKAGE).parts
        for hit in offences(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE.parent)))
    ]
    assert found == []
