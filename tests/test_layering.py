"""The import graph keeps the house's rules (DESIGN.md, Layering), read from the source with ast so
an import that only runs on some path — inside a function, under TYPE_CHECKING — counts too:

* the lower layers (statistics, protocol, providers, importers, the simulated judge) never reach
  the store, the use cases or the CLI;
* the store reads and writes rows: it imports no use case, and from `metrics` only types (classes,
  constants, type aliases) and the constructors of the rating matrix it returns — no function
  that computes a statistic;
* the test doubles in `judgepanel/fake/` are tied to nothing in `providers/` but the documented
  wire facts (`providers.wire`), and no production module but the CLI's `fake-server` command
  imports them;
* there is no import circle at all.

and no product file under `judgepanel/` is longer than 900 lines (issue 31 §4): a module that
grows past that is split by concern, each part stating its boundary in its opening docstring.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

import judgepanel

PACKAGE = Path(judgepanel.__file__).parent
LOWER = ("metrics", "protocol", "providers", "datasets", "simjudge")
UPPER = ("judgepanel.store", "judgepanel.runner", "judgepanel.cli")
# the use cases and everything above them: read → compute → shape, or render
USE_CASES = (
    "judgepanel.runner",
    "judgepanel.repair",
    "judgepanel.align",
    "judgepanel.report",
    "judgepanel.analysis",
    "judgepanel.view",
    "judgepanel.annotate",
    "judgepanel.cli",
    "judgepanel.demo",
    "judgepanel.api",
)
# What the store may call from `metrics`: the constructors of the rating matrix it returns (they
# shape rows into the shared type and compute no statistic). Everything else it imports from
# `metrics` must be a type or a constant.
MATRIX_CONSTRUCTORS = frozenset(
    {
        "judgepanel.metrics.matrix.merge_rater_columns",
        "judgepanel.metrics.matrix.number_label",
        "judgepanel.metrics.matrix.numeric_scale",
        "judgepanel.metrics.matrix.with_categories",
    }
)
# What the fake server may import from `providers`: the documented facts of the wire it imitates.
FAKE_MAY_IMPORT = ("judgepanel.fake", "judgepanel.simjudge", "judgepanel.providers.wire")
# Who may import the fake server: the command that starts it.
FAKE_IMPORTERS = ("judgepanel/fake/", "judgepanel/cli/")


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


def _sources(layer: str) -> list[Path]:
    root = PACKAGE / layer
    return [root] if root.is_file() else sorted(root.rglob("*.py"))


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _violations(layer: str, upper: tuple[str, ...] = UPPER) -> list[str]:
    out = []
    for path in _sources(layer):
        for line, module in imported_modules(path):
            if _under(module, upper):
                out.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}")
    return out


@pytest.mark.parametrize("layer", LOWER)
def test_lower_layers_do_not_import_store_runner_or_cli(layer: str) -> None:
    assert (PACKAGE / layer).exists()
    assert _violations(layer, (*UPPER, *USE_CASES, "judgepanel.fake")) == []


def test_the_store_imports_no_use_case() -> None:
    assert _violations("store", USE_CASES) == []


def _metrics_names(path: Path) -> Iterator[tuple[int, str]]:
    """Every `judgepanel.metrics…` name `path` imports: `module.name` for `from … import name`,
    the module itself for `import judgepanel.metrics.x`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("judgepanel.metrics"):
            yield from ((node.lineno, f"{node.module}.{a.name}") for a in node.names)
        elif isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names if a.name.startswith("judgepanel.metrics"))


def _computes(qualified: str) -> bool:
    """Whether `qualified` names something that computes: a function, or a whole module (whose
    functions could then all be called). Classes, constants and type aliases do not."""
    module, _, name = qualified.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return True  # `import judgepanel.metrics.x`, or a name that is itself a module
    if inspect.ismodule(obj):
        return True
    return not inspect.isclass(obj) and callable(obj) and inspect.isroutine(obj)


def test_the_store_imports_no_statistic_from_metrics() -> None:
    found = []
    for path in sorted((PACKAGE / "store").rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        found += [
            f"{rel}:{line} imports {name}"
            for line, name in _metrics_names(path)
            if name not in MATRIX_CONSTRUCTORS and _computes(name)
        ]
    assert found == []


def test_the_statistics_rule_tells_a_type_from_a_computation(tmp_path: Path) -> None:
    # what store/conditions.py imported before the split was caught; the types it keeps are not
    assert _computes("judgepanel.metrics.conditions.condition_study")
    assert _computes("judgepanel.metrics.conditions.rounded_mean")
    assert _computes("judgepanel.metrics.validation")  # a whole module
    assert not _computes("judgepanel.metrics.conditions.Comparisons")
    assert not _computes("judgepanel.metrics.conditions.STATISTICS")
    assert not _computes("judgepanel.metrics.matrix.FloatArray")
    src = tmp_path / "x.py"
    src.write_text("def f():\n    from judgepanel.metrics.design import allocate, DESIGNS\n")
    assert [n for _, n in _metrics_names(src)] == [
        "judgepanel.metrics.design.allocate",
        "judgepanel.metrics.design.DESIGNS",
    ]


def test_the_fake_server_is_tied_to_the_wire_only() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}"
        for path in _sources("fake")
        for line, module in imported_modules(path)
        if module.startswith("judgepanel") and not _under(module, FAKE_MAY_IMPORT)
    ]
    assert found == []


def test_only_the_cli_starts_the_fake_server() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if not path.relative_to(PACKAGE.parent).as_posix().startswith(FAKE_IMPORTERS)
        for line, module in imported_modules(path)
        if _under(module, ("judgepanel.fake",))
    ]
    assert found == []


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path, root: Path) -> dict[str, set[str]]:
    """Module → the modules of the package it imports, every form counted. `from pkg import sub`
    is an edge to `pkg.sub` when that is a module (else to `pkg`); a parent package's own
    `__init__`, which Python runs first anyway, is not an edge."""
    modules = {_module_name(p, root): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges = set()
        for _, target in imported_modules(path, root):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):
                edges.add(target)
        graph[name] = edges
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return circles


def test_no_import_circle() -> None:
    assert import_circles(import_graph(PACKAGE, PACKAGE.parent)) == []


def test_the_circle_finder_finds_a_circle_through_a_type_checking_import(tmp_path: Path) -> None:
    # the circle fake/batch.py ↔ fake/server.py had before BatchHost: one side imported only
    # under TYPE_CHECKING, and it still counts
    pkg = tmp_path / "judgepanel" / "fake"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "server.py").write_text("from judgepanel.fake.batch import FakeBatches\n")
    (pkg / "batch.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from judgepanel.fake.server import FakeServer\n"
    )
    (pkg / "cache.py").write_text("from judgepanel.fake import batch\n")
    graph = import_graph(tmp_path / "judgepanel", tmp_path)
    assert import_circles(graph) == [["judgepanel.fake.batch", "judgepanel.fake.server"]]
    assert graph["judgepanel.fake.cache"] == {"judgepanel.fake.batch"}


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


MAX_LINES = 900
SOURCE_SUFFIXES = frozenset({".py", ".js", ".css", ".j2", ".html"})


def long_files(package: Path, limit: int = MAX_LINES) -> list[str]:
    """Every source file under `package` (Python, templates, scripts, styles; not the wheel's
    `_bundled` copies) longer than `limit` lines, as `path: N lines`."""
    found = []
    for path in sorted(package.rglob("*")):
        if path.suffix not in SOURCE_SUFFIXES or "_bundled" in path.parts or not path.is_file():
            continue
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > limit:
            found.append(f"{path.relative_to(package.parent).as_posix()}: {n} lines")
    return found


def test_no_product_file_over_900_lines() -> None:
    assert long_files(PACKAGE) == []


def test_the_length_rule_counts_lines_of_every_source_file(tmp_path: Path) -> None:
    pkg = tmp_path / "judgepanel"
    (pkg / "view" / "static").mkdir(parents=True)
    (pkg / "_bundled").mkdir()
    (pkg / "ok.py").write_text("x = 1\n" * MAX_LINES)
    (pkg / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (pkg / "view" / "static" / "app.js").write_text("f();\n" * (MAX_LINES + 5))
    (pkg / "_bundled" / "copy.py").write_text("x = 1\n" * 2000)  # the wheel's copies are not ours
    (pkg / "data.gz").write_bytes(b"\x1f\x8b" + b"\n" * 2000)  # nor is binary data
    assert long_files(pkg) == [
        "judgepanel/long.py: 901 lines",
        "judgepanel/view/static/app.js: 905 lines",
    ]
