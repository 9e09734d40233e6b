"""Start-up stays light (issue 8: every command took 1.6–2.5 s before doing anything).

Checked by what gets imported, not by timing (benchmarks/bench_startup.py measures the time):
the CLI package, the root app, `--help` and every command group's help import none of the heavy
libraries; those are imported inside the commands that use them.
"""

from __future__ import annotations

import json
import subprocess
import sys

from judgepanel.cli.app import COMMANDS

HEAVY = ("numpy", "scipy", "sqlalchemy", "alembic", "openai", "anthropic", "jinja2", "pandas")


def _imported_after(code: str) -> list[str]:
    """The heavy top-level packages a fresh interpreter holds after running `code`."""
    probe = f"""
import contextlib, io, json, sys
{code}
print(json.dumps(sorted({{m.split(".")[0] for m in sys.modules}} & set({list(HEAVY)!r}))))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    found: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


def test_importing_the_cli_imports_no_heavy_library() -> None:
    assert _imported_after("import judgepanel.cli") == []
    assert _imported_after("import judgepanel.cli.app") == []


def test_help_of_every_command_group_imports_no_heavy_library() -> None:
    code = f"""
from judgepanel.cli import main
for argv in [["--help"], *([name, "--help"] for name in {list(COMMANDS)!r})]:
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            main(argv)
        except SystemExit as exc:
            assert exc.code == 0, (argv, exc.code)
"""
    assert _imported_after(code) == []


def test_command_modules_import_no_heavy_library() -> None:
    """Typer command modules import the library inside their commands, not at module import."""
    modules = sorted({module for module, _, _ in COMMANDS.values()})
    assert _imported_after("\n".join(f"import {m}" for m in modules)) == []


def test_a_command_imports_only_what_it_uses() -> None:
    """`data list` needs the database layer, not the statistics or the provider SDKs."""
    code = """
import tempfile
from judgepanel.cli import main
url = "sqlite:///" + tempfile.mkdtemp() + "/j.db"
for argv in (["--db", url, "db", "upgrade"], ["--db", url, "data", "list", "--json"]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(argv)
        except SystemExit as exc:
            assert exc.code == 0, argv
"""
    assert _imported_after(code) == ["alembic", "sqlalchemy"]  # alembic: by `db upgrade` only


def test_data_list_on_a_current_database_does_not_import_alembic() -> None:
    """The schema check every command makes reads the migration files instead of importing Alembic."""
    code = """
import tempfile
from judgepanel.store.engine import make_engine
from judgepanel.store import migrate
url = "sqlite:///" + tempfile.mkdtemp() + "/j.db"
eng = make_engine(url)
migrate.upgrade(eng)
for name in [m for m in sys.modules if m == "alembic" or m.startswith("alembic.")]:
    del sys.modules[name]
migrate.require_current(eng)
assert "alembic" not in sys.modules
"""
    assert "sqlalchemy" in _imported_after(code)


def test_migration_files_read_as_text_agree_with_alembic(sqlite_url: str) -> None:
    from alembic.script import ScriptDirectory

    from judgepanel.store import migrate
    from judgepanel.store.engine import make_engine

    eng = make_engine(sqlite_url)
    try:
        script = ScriptDirectory.from_config(migrate.alembic_config(eng))
        graph = migrate.script_revisions()
        assert graph == {s.revision: s.down_revision for s in script.walk_revisions()}
        assert migrate._quick_head() == script.get_current_head()
    finally:
        eng.dispose()
