"""Start-up stays light (issue 8: every command took 1.6–2.5 s before doing anything).

Checked by what gets imported, not by timing (benchmarks/bench_startup.py measures the time):
the CLI package, the root app, `--help` and every command group's help import none of the heavy
libraries; those are imported inside the commands that use them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable
from typing import Any

import pytest

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


def test_help_of_the_commands_that_run_loads_no_event_loop() -> None:
    """asyncio (its sockets, SSL, threads: ~20 ms) is for `campaign run` and `worker`, imported
    when they run; the help of their groups and of `run` itself lists them without it. (A command
    that opens a database gets asyncio from SQLAlchemy, which imports it.)"""
    probe = """
import contextlib, io, sys
from judgepanel.cli import main
for argv in (["campaign", "--help"], ["campaign", "run", "--help"], ["worker", "--help"]):
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            main(argv)
        except SystemExit as exc:
            assert exc.code == 0, (argv, exc.code)
print("asyncio" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


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


# ---------------------------------------------------------------- commands that open a database

# Never needed to read the store or print a status: the SDKs, the template engine, YAML, Alembic,
# pydantic (Typer's option conversion, see `cli.coercion`), the data-frame libraries
NOT_FOR_READING = (
    "alembic",
    "anthropic",
    "httpx",
    "jinja2",
    "matplotlib",
    "openai",
    "pandas",
    "pyarrow",
    "pydantic",
    "yaml",
)


@pytest.fixture(scope="module")
def finished_campaign(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A database with a finished pairwise campaign `c` of two simulated judges over `tiny-pairs`,
    whose items two human annotators scored: built once per test run (`from_built`), whichever
    xdist worker asks first, and copied for each module."""
    from tests.helpers import from_built

    url = f"sqlite:///{tmp_path_factory.mktemp('startup') / 'j.db'}"
    from_built(url, "startup-finished-campaign", _finish_campaign)
    return url


def _finish_campaign(url: str) -> None:
    from judgepanel.datasets.records import AnnotatorRecord, LabelRecord, ParsedDataset
    from judgepanel.store.engine import make_engine
    from judgepanel.store.imports import import_parsed
    from judgepanel.store.queries import create_pair_set
    from tests.helpers import cli, migrate_db
    from tests.runner.conftest import DATASET, PAIRS, create_argv, make_items

    migrate_db(url)
    eng = make_engine(url)
    items = make_items(3, 4)
    humans = [AnnotatorRecord("h1", group="expert"), AnnotatorRecord("h2", group="expert")]
    labels = [
        LabelRecord(it.external_id, h.name, "overall", float(1 + (k * (j + 2)) % 5), "")
        for k, it in enumerate(items)
        for j, h in enumerate(humans)
    ]
    import_parsed(eng, DATASET, ParsedDataset("items", "tiny-humans", items, humans, labels))
    create_pair_set(eng, DATASET, PAIRS, seed=1)
    eng.dispose()
    create = create_argv("c", "sim:a", "sim:b", protocol="pairwise", extra=("--pairs", PAIRS))
    assert cli(*create, db=url).code == 0
    assert cli("campaign", "run", "c", "--json", db=url).code == 0


def _modules_after(url: str, *argvs: list[str]) -> set[str]:
    """Every module a fresh interpreter holds after running the command lines (each must exit 0
    and print something)."""
    probe = f"""
import contextlib, io, json, sys
from judgepanel.cli import main
for argv in {[["--db", url, *a] for a in argvs]!r}:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            main(argv)
        except SystemExit as exc:
            assert exc.code == 0, (argv, exc.code)
    assert out.getvalue().strip(), argv
print(json.dumps(sorted(sys.modules)))
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    found: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return set(found)


def _packages(modules: set[str], names: Iterable[str]) -> list[str]:
    return sorted(n for n in names if any(m == n or m.startswith(n + ".") for m in modules))


def test_campaign_status_and_listings_import_no_statistics_sdk_or_template_engine(
    finished_campaign: str,
) -> None:
    """`campaign status` (table and JSON), `campaign list` and `data list` read the store only."""
    modules = _modules_after(
        finished_campaign,
        ["campaign", "status", "c"],
        ["campaign", "status", "c", "--json"],
        ["campaign", "list"],
        ["data", "list"],
    )
    assert _packages(modules, ("numpy", "scipy", *NOT_FOR_READING)) == []
    assert "judgepanel.runner" not in modules  # nor the executor, the SDK glue, the templates
    assert "sqlalchemy" in modules  # it did read the store


def test_statistics_commands_import_only_the_scipy_they_use(finished_campaign: str) -> None:
    """`metrics bias` needs the sign test (scipy.stats); `metrics agreement` without a bootstrap
    needs numpy only: no scipy.stats, and none of the libraries a reading command never needs."""
    bias = _modules_after(finished_campaign, ["metrics", "bias", "--campaign", "c"])
    assert _packages(bias, NOT_FOR_READING) == []
    assert "scipy.stats" in bias  # it did test
    agreement = _modules_after(
        finished_campaign,
        [
            "metrics",
            "agreement",
            "--pairs",
            "tiny-pairs",
            "--with-judges",
            "all",
            "--metric",
            "alpha",
            "--json",
        ],
    )
    assert _packages(agreement, ("scipy.stats", "scipy.optimize", *NOT_FOR_READING)) == []
    assert "numpy" in agreement


def test_a_missing_campaign_is_reported_before_numpy_is_imported(finished_campaign: str) -> None:
    """`metrics bias` looks the campaign up before it loads the statistics."""
    probe = f"""
import contextlib, io, sys
from judgepanel.cli import main
with contextlib.redirect_stderr(io.StringIO()):
    try:
        main(["--db", {finished_campaign!r}, "metrics", "bias", "--campaign", "nope"])
    except SystemExit as exc:
        assert exc.code == 2, exc.code
print(sorted(m for m in ("numpy", "scipy", "pydantic") if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_plan_overlap_does_not_import_scipy_stats() -> None:
    """The planner's normal quantile comes from scipy.special (see `metrics.design.z_quantile`)."""
    probe = """
import contextlib, io, sys
from judgepanel.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(["plan", "overlap", "--sigma0", "0.5", "--mu-d", "0.1", "--json"])
    except SystemExit as exc:
        assert exc.code == 0, exc.code
print(sorted(m for m in ("scipy.stats", "pydantic", "sqlalchemy") if m in sys.modules), "scipy.special" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[] True"


def test_query_on_sqlite_does_not_import_the_postgresql_driver(finished_campaign: str) -> None:
    """psycopg is loaded by a PostgreSQL engine only; `query` on SQLite reads without it."""
    modules = _modules_after(finished_campaign, ["query", "select count(*) from job"])
    assert _packages(modules, ("psycopg", "numpy", *NOT_FOR_READING)) == []


# The ORM (importing `sqlalchemy.orm` and mapping `store.models`: ~0.45 s of CPU at each start,
# issue 20) is for the commands that write; these read through Core (`store.tables`).
ORM = ("sqlalchemy.orm", "judgepanel.store.models")


def test_read_commands_load_no_orm(finished_campaign: str) -> None:
    """`campaign list`, `campaign status` (its budget line included: `store.budget` is written on
    the Core tables) and `metrics agreement` (with and without the judges' columns) read the store
    through SQLAlchemy Core. One fresh interpreter per command runs its table and then its
    `--json` form: modules only accumulate, so the ORM loaded by either form is found, and the
    second form meets no state but the one its own command's first run left (three interpreter
    start-ups of about 0.5 s of CPU each, instead of six)."""
    agreement = ["metrics", "agreement", "--pairs", "tiny-pairs", "--with-judges", "all", "--metric", "alpha"]
    for argv in (["campaign", "list"], ["campaign", "status", "c"], agreement):
        modules = _modules_after(finished_campaign, argv, [*argv, "--json"])
        assert _packages(modules, ORM) == [], argv
        assert "sqlalchemy" in modules  # it did read the store


# Parsing and checking judge specs, the key rules, the capability table, the SDK glue: for the
# commands that create or run campaigns. Naming a stored campaign's judges needs `providers.names`.
SPEC_PARSING = (
    "judgepanel.providers.spec",
    "judgepanel.providers.keys",
    "judgepanel.providers.capabilities",
    "judgepanel.providers.registry",
)


def test_listing_campaigns_and_their_judges_parses_no_judge_spec(finished_campaign: str) -> None:
    """`campaign list` and `metrics agreement --with-judges` name the judges from the stored specs
    (`providers.names`) without `providers.spec` (issue 20 §2); the table of `campaign list` needs
    no key scrubber either (`providers.errors`: JSON output is scrubbed, and loads it)."""
    agreement = ["metrics", "agreement", "--pairs", "tiny-pairs", "--with-judges", "all", "--metric", "alpha"]
    listing = _modules_after(finished_campaign, ["campaign", "list"])
    assert _packages(listing, (*SPEC_PARSING, "judgepanel.providers.errors")) == []
    modules = _modules_after(
        finished_campaign, ["campaign", "list", "--json"], agreement, [*agreement, "--json"]
    )
    assert _packages(modules, SPEC_PARSING) == []
    assert "judgepanel.providers.names" in modules  # it did name the judges


def test_read_commands_print_without_richs_console_where_it_would_style_nothing(
    finished_campaign: str,
) -> None:
    """Output that is not a terminal gets plain text, laid out as rich lays it out (`cli.plain`,
    tested byte for byte against rich in tests/cli/test_plain.py) without importing rich's console,
    tables and text (issue 20 §2); `--json` imports no rich at all."""
    agreement = ["metrics", "agreement", "--pairs", "tiny-pairs", "--with-judges", "all", "--metric", "alpha"]
    reads = [["campaign", "list"], ["campaign", "status", "c"], agreement]
    tables = _modules_after(finished_campaign, *reads)
    assert _packages(tables, ("rich.console", "rich.table", "rich.text", "rich.markup")) == []
    assert "judgepanel.cli.plain" in tables  # it did print tables
    as_json = _modules_after(finished_campaign, *([*a, "--json"] for a in reads))
    assert _packages(as_json, ("rich",)) == []


def test_campaign_status_does_not_load_the_simulator(finished_campaign: str) -> None:
    """`campaign status` labels a simulated campaign from the stored fingerprint (a constant in
    `judgepanel.config`), so it need not import the simulator itself (~0.03 s of the 0.5 s
    start-up budget on a quiet machine)."""
    for argv in (["campaign", "status", "c"], ["campaign", "status", "c", "--json"], ["campaign", "list"]):
        modules = _modules_after(finished_campaign, argv)
        assert "judgepanel.simjudge" not in modules, argv


def test_campaign_plan_of_simulated_judges_loads_no_provider_sdk(finished_campaign: str) -> None:
    """`campaign plan` asks no server (see tests/runner/test_plan_offline.py for base_url judges)."""
    modules = _modules_after(finished_campaign, ["campaign", "plan", "c", "--json"])
    assert _packages(modules, ("openai", "anthropic", "httpx")) == []


def test_agreement_over_the_humans_reads_no_campaign(finished_campaign: str) -> None:
    """Over the human raters alone (no `--raters`, `--group judge` or `--with-judges`) no campaign
    judge can be selected, so `metrics agreement` neither imports the campaign readers and the
    judge names nor reads the campaigns' verdicts; with judges asked for, it does. With
    `--json` it prints without rich."""
    argv = ["metrics", "agreement", "--pairs", "tiny-pairs", "--metric", "alpha"]
    readers = ("judgepanel.store.campaigns.readers", "judgepanel.providers.names")
    assert _packages(_modules_after(finished_campaign, argv), readers) == []
    as_json = _modules_after(finished_campaign, [*argv, "--json"])
    # `--json` loads the key scrubber (`providers.errors`), not the provider registry
    assert _packages(as_json, ("rich", "judgepanel.providers.registry", *readers)) == []
    with_judges = _modules_after(finished_campaign, [*argv, "--with-judges", "all"])
    assert _packages(with_judges, readers) == sorted(readers)


def test_running_a_command_builds_only_that_command_of_its_group(
    finished_campaign: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Typer reads every command function's signature to build its options; a group's commands
    are built when first looked up, so `metrics agreement` builds one command, not the group's
    ten, while `metrics --help` still lists them all."""
    import typer.main

    from tests.helpers import cli

    built: list[str] = []
    real = typer.main.get_command_from_info

    def counting(info: Any, **kw: Any) -> Any:
        cmd = real(info, **kw)
        built.append(cmd.name)
        return cmd

    monkeypatch.setattr(typer.main, "get_command_from_info", counting)
    res = cli(
        "metrics", "agreement", "--pairs", "tiny-pairs", "--metric", "alpha", "--json", db=finished_campaign
    )
    assert res.code == 0 and res.json()["metric"] == "alpha"
    assert built == ["agreement"]
    built.clear()
    listed = cli("metrics", "--help")
    assert listed.code == 0 and "agreement" in listed.stdout and "votes" in listed.stdout
    assert {"agreement", "bias", "votes"} <= set(built)


# ---------------------------------------------------------------- the cyclic garbage collector


def _probe_process(code: str, argv: list[str]) -> str:
    """In a fresh interpreter: import `judgepanel.cli`, run `code` up to a line `# after`, call
    `main()` as the console script does (`sys.argv` is `judgepanel ARGV`), then run the rest of
    `code`; its last stdout line."""
    before, _, after = code.partition("# after\n")
    probe = f"""
import contextlib, gc, io, sys
from judgepanel.cli import main
{before}
sys.argv = ["judgepanel", *{argv!r}]
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main()
    except SystemExit as exc:
        assert exc.code == 0, exc.code
{after}
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_read_commands_run_no_garbage_collection(finished_campaign: str) -> None:
    """Start-up creates objects that live as long as the process; the collector walking that
    growing heap every 700 of them was about a fifth of a read command's CPU time (issue 20 §2).
    `metrics agreement` allocates the most of the three read commands."""
    # The probe's own lines between importing judgepanel.cli and main() raising the threshold
    # still run at the default one: without the collect below, a process whose imports left the
    # collector's count within a few allocations of 700 (it depends on whether the modules came
    # from bytecode files or were compiled) counted that collection as the command's.
    count = """
runs = []
gc.collect()
gc.callbacks.append(lambda phase, info: runs.append(info["generation"]) if phase == "stop" else None)
# after
print(len(runs))
"""
    for argv in (
        ["campaign", "list"],
        ["metrics", "agreement", "--pairs", "tiny-pairs", "--with-judges", "all", "--metric", "alpha"],
    ):
        assert _probe_process(count, ["--db", finished_campaign, *argv]) == "0", argv


def test_the_collector_comes_back_after_start_up() -> None:
    """A long command (a run, a report) collects cyclic garbage as usual once start-up is over:
    the first collection restores the default threshold."""
    cycles = """
import weakref
default = gc.get_threshold()
class Node:
    pass
def cycle():
    node = Node()
    node.me = node
    return weakref.ref(node)
# after
refs = [cycle() for _ in range(400_000)]
alive = sum(r() is not None for r in refs)
print(gc.get_threshold() == default, alive < 2_000)
"""
    assert _probe_process(cycles, ["--help"]) == "True True"
