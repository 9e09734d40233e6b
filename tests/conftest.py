"""Shared fixtures: real SQLite files and a real PostgreSQL server, and the shared data folder.

PostgreSQL: set JUDGEPANEL_TEST_PG_URL to a server URL whose user may CREATE DATABASE
(`.ci/run` starts a throwaway cluster and sets it). Each test gets a fresh database. Without the
variable the PostgreSQL half is skipped, unless JUDGEPANEL_REQUIRE_PG=1 (as in CI), which turns
the skip into a failure so CI cannot go green on SQLite alone.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlalchemy.engine import make_url

from judgepanel.store.engine import make_engine

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("JUDGEPANEL_SHARED_DATA", REPO.parent / "shared" / "data"))
PG_ENV = "JUDGEPANEL_TEST_PG_URL"


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0", "false")


@pytest.fixture(scope="session", autouse=True)
def _share_builds(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Where databases built once per test run (`tests.helpers.built_once`) are kept."""
    from tests.helpers import share_builds_under, shared_root

    share_builds_under(shared_root(tmp_path_factory.getbasetemp()))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The end of the whole run (the xdist controller, or the only process): drop the PostgreSQL
    template databases built once for it (`tests.helpers.pg_built_once`)."""
    url = os.environ.get(PG_ENV)
    if not url or hasattr(session.config, "workerinput"):
        return
    from tests.helpers import drop_pg_templates

    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is not None:
        drop_pg_templates(factory.getbasetemp(), url)


# What a skip was for, by the start of its reason (the fixtures below and `tests.helpers`), so a
# run that skipped them says so loudly at its end (issue 28 §4): a green run that tested half of
# the suite must not look like a green run of all of it.
SKIPPED_FOR = {
    f"{PG_ENV} not set": "PostgreSQL (no JUDGEPANEL_TEST_PG_URL)",
    "no chromium/chromedriver": "the headless browser (no chromium/chromedriver)",
    "shared data folder": "the shared real data (no ../shared/data)",
}
RUN_THEM = ".ci/run"  # installs PostgreSQL and Chromium (Debian, root or sudo) and runs `make test`


def skipped_for(reports: list[Any]) -> dict[str, int]:
    """How many skipped tests each missing part of the set-up accounts for."""
    counts: dict[str, int] = {}
    for rep in reports:
        longrepr = getattr(rep, "longrepr", None)
        reason = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        for start, what in SKIPPED_FOR.items():
            if start in reason:
                counts[what] = counts.get(what, 0) + 1
    return counts


def pytest_unconfigure(config: pytest.Config) -> None:
    """The very end of the run (after pytest's own counts), on the controller only."""
    terminalreporter = config.pluginmanager.get_plugin("terminalreporter")
    if terminalreporter is None or hasattr(config, "workerinput"):
        return
    counts = skipped_for(terminalreporter.stats.get("skipped", []))
    if not counts:
        return
    total = sum(counts.values())
    terminalreporter.write_sep("!", f"{total} TESTS WERE SKIPPED: this run did not test everything", red=True)
    for what, n in counts.items():
        terminalreporter.write_line(f"  {n} skipped for want of {what}")
    terminalreporter.write_line(
        f"  run them all: `{RUN_THEM}` (installs PostgreSQL and Chromium from Debian's packages with "
        "root or sudo, starts a throwaway cluster, and runs `make test` with both required)"
    )


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED.is_dir():
        if _flag("JUDGEPANEL_REQUIRE_SHARED"):
            pytest.fail(f"shared data folder {SHARED} is missing")
        pytest.skip(f"shared data folder {SHARED} is missing")
    return SHARED


def _pg_admin_url() -> str:
    url = os.environ.get(PG_ENV)
    if not url:
        if _flag("JUDGEPANEL_REQUIRE_PG"):
            pytest.fail(f"{PG_ENV} is not set but JUDGEPANEL_REQUIRE_PG=1")
        pytest.skip(f"{PG_ENV} not set: no PostgreSQL server for this run")
    return url


@contextmanager
def fresh_pg_database() -> Iterator[str]:
    """Create an empty PostgreSQL database on the test server; drop it afterwards."""
    from tests.helpers import admin_engine

    admin = make_url(_pg_admin_url()).set(drivername="postgresql+psycopg")
    name = f"jp_{uuid.uuid4().hex[:12]}"
    eng = admin_engine(_pg_admin_url())  # the process's one admin engine (kept open)
    with eng.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield admin.set(database=name).render_as_string(hide_password=False)
    finally:
        with eng.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test."""
    with fresh_pg_database() as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'judgepanel.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest) -> str:
    """The same test on a real SQLite file and on a real PostgreSQL database."""
    name = "sqlite_url" if request.param == "sqlite" else "pg_url"
    url: str = request.getfixturevalue(name)
    return url


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    """A migrated database on each backend (on SQLite a copy of the one migrated database of the
    test run: tests/store/test_migrations.py checks the migrations themselves)."""
    from tests.helpers import migrate_db

    migrate_db(db_url)
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def module_db_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Like `db_url`, but one database per test module (for expensive read-mostly fixtures)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('db') / 'judgepanel.db'}"
    else:
        with fresh_pg_database() as url:
            yield url


def _run_demo(url: str) -> None:
    from tests.helpers import cli

    report = Path(url.removeprefix("sqlite:///")).parent / "demo-report.html"
    r = cli("demo", "--json", "--report", str(report), db=url)
    assert r.code == 0, r.stderr
    assert r.json()["report"] == str(report)


def built_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The database the offline demo filled (simulated campaigns, rubric versions, a repair
    iteration), with its `demo-report.html` beside it: the demo runs once per test run, whichever
    xdist worker asks first; copy it (`tests.helpers.copy_db`) before use."""
    from tests.helpers import built_once, shared_root

    return built_once(shared_root(tmp_path_factory.getbasetemp()), "demo", _run_demo)


@pytest.fixture(scope="session")
def demo_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A copy of the demo's database (`built_demo`) for this worker; read-only for the tests that
    share it."""
    from tests.helpers import copy_db

    return copy_db(built_demo(tmp_path_factory), tmp_path_factory.mktemp("demo-shared"), "demo.db")


@pytest.fixture(scope="session")
def _chromium_session() -> Iterator[object]:
    from tests.helpers import chromium_driver

    driver = chromium_driver()
    yield driver
    driver.quit()  # type: ignore[attr-defined]


@pytest.fixture
def chromium(_chromium_session: object) -> object:
    """Headless Chromium (`tests.helpers.chromium_driver`), started once per test run and xdist
    worker instead of once per test (a start and a quit cost about 1.5 s); each test gets it on a
    blank page with the console messages of earlier tests read away."""
    driver: Any = _chromium_session
    driver.get("about:blank")
    driver.get_log("browser")
    return driver


# The longest single tests, started first: under `pytest -n 3` a long test collected near the end
# (the tour is collected just before tests/view/) leaves one worker running it alone while the
# others have nothing left to do. Whole modules move together, so module fixtures are built once.
LONGEST_FIRST = ("tests/test_readme_tour.py",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    first = [i for i in items if i.nodeid.startswith(LONGEST_FIRST)]
    if first:
        rest = [i for i in items if not i.nodeid.startswith(LONGEST_FIRST)]
        items[:] = first + rest
