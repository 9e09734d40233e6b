"""The lower layers never import the upper ones (DESIGN.md, Layering): statistics, protocol,
providers and importers must not reach the store, the runner or the CLI — not at module level,
not inside a function, not under TYPE_CHECKING. Read from the source with ast, so an import that
only runs on some path is caught too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import judgepanel

PACKAGE = Path(judgepanel.__file__).parent
LOWER = ("metrics", "protocol", "providers", "datasets")
UPPER = ("judgepanel.store", "judgepanel.runner", "judgepanel.cli")


def imported_modules(path: Path, root: Path = PACKAGE.parent) -> list[tuple[int, str]]:
    """Every module an ``import`` or ``from … import`` in ``path`` names (relative ones resolved
    against its package below ``root``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def _violations(layer: str) -> list[str]:
    out = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for line, module in imported_modules(path):
            if any(module == up or module.startswith(up + ".") for up in UPPER):
                out.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}")
    return out


@pytest.mark.parametrize("layer", LOWER)
def test_lower_layers_do_not_import_store_runner_or_cli(layer: str) -> None:
    assert (PACKAGE / layer).is_dir()
    assert _violations(layer) == []


def test_the_checker_sees_every_import_form(tmp_path: Path) -> None:
    # the checker itself: a function-local import, a TYPE_CHECKING import, a relative import and
    # `from judgepanel import store` are all found
    mod = PACKAGE / "metrics" / "summary.py"
    assert "judgepanel.metrics.matrix" in {m for _, m in imported_modules(mod)}
    src = tmp_path / "judgepanel" / "metrics" / "x.py"
    src.parent.mkdir(parents=True)
    src.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from judgepanel.store.matrices import RatingMatrix\n"
        "def f():\n    import judgepanel.runner.plan\n"
        "from .. import cli\n"
        "from judgepanel import store\n"
    )
    found = {m for _, m in imported_modules(src, tmp_path)}
    assert {
        "judgepanel.store.matrices",
        "judgepanel.runner.plan",
        "judgepanel.cli",
        "judgepanel.store",
    } <= found
