"""Test helpers: run the real CLI entry point in-process and capture what a user would see."""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgepanel.cli import main
from judgepanel.resources import sample_path


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self, *, code: int = 0) -> Any:
        """The one JSON object printed, after checking the exit code (3: a run left jobs without
        a verdict, which still prints its summary)."""
        assert self.code == code, self.stderr
        lines = [ln for ln in self.stdout.splitlines() if ln.strip()]
        assert len(lines) == 1, f"expected exactly one JSON line, got {self.stdout!r}"
        return json.loads(lines[0])


def cli(*args: str, db: str | None = None) -> CliResult:
    argv = ([f"--db={db}"] if db else []) + [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return CliResult(code, out.getvalue(), err.getvalue())


def load_summeval_sample(db: str, name: str | None = "se", *, articles: bool = True) -> None:
    """Migrate `db` and import the bundled SummEval sample (with its source articles unless told
    not to) as dataset `name` (None: the importer's default name). A new SQLite file becomes a
    copy of the one database this made in the test run (`from_built`); tests/datasets checks
    the import itself."""
    from_built(
        db, f"summeval-sample-{name}-{articles}", lambda url: _load_summeval_sample(url, name, articles)
    )


def _load_summeval_sample(db: str, name: str | None, articles: bool) -> None:
    assert cli("db", "upgrade", db=db).code == 0
    args = ["data", "import-summeval", str(sample_path("summeval_sample.jsonl.gz"))]
    if articles:
        args += ["--articles", str(sample_path("summeval_articles_sample.jsonl.gz"))]
    if name is not None:
        args += ["--name", name]
    r = cli(*args, db=db)
    assert r.code == 0, r.stderr


def built_once(root: Path, name: str, build: Callable[[str], None]) -> Path:
    """The SQLite file `build(url)` fills, built once per test run however many xdist workers ask:
    `root` is the run's shared temporary folder (`shared_root`), the first worker to ask builds
    under a lock, the others wait for it and reuse the file. Callers copy it (`copy_db`) before
    they read or write, so no test sees another test's writes."""
    folder = root / f"built-{name}"
    folder.mkdir(exist_ok=True)
    final = folder / f"{name}.db"
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not final.exists():
                part = folder / f"{name}.partial.db"
                for stale in folder.glob(f"{name}.*.db*"):  # a build that failed half-way
                    stale.unlink()
                build(f"sqlite:///{part}")
                # a consistent, self-contained copy (the WAL database keeps recent writes beside
                # it), written under another name and renamed so no reader sees half a file
                con = sqlite3.connect(part)
                try:
                    con.execute("VACUUM INTO ?", (str(folder / f"{name}.vacuumed.db"),))
                finally:
                    con.close()
                (folder / f"{name}.vacuumed.db").replace(final)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return final


_BUILDS: list[Path] = []  # the run's shared folder, once conftest's session fixture has set it


def share_builds_under(root: Path) -> None:
    _BUILDS[:] = [root]


def from_built(db: str, name: str, build: Callable[[str], None]) -> None:
    """Fill `db` as `build(db)` does. A SQLite file that does not exist yet becomes a copy of the
    database `build` filled once in this test run (`built_once`); an empty PostgreSQL test
    database (`tests.conftest.fresh_pg_database`) becomes a copy of a template database `build`
    filled once in this test run on that server (`pg_built_once`); any other database (an existing
    file, a database with tables) is filled by `build` itself. `name` must say everything `build`
    does."""
    if not _BUILDS:
        build(db)
        return
    path = _new_sqlite_file(db)
    if path is not None:
        shutil.copyfile(built_once(_BUILDS[0], name, build), path)
    elif _empty_test_pg_database(db):
        _recreate_from(db, pg_built_once(_BUILDS[0], db, name, build))
    else:
        build(db)


def migrate_db(db: str) -> None:
    """Bring `db` to the schema's head as `judgepanel db upgrade` does: a new SQLite file
    or an empty PostgreSQL test database becomes a copy of the one database migrated in this test
    run (`from_built`; tests/store/test_migrations.py runs the migrations themselves)."""
    from_built(db, "migrated", _migrate)


def _migrate(url: str) -> None:
    r = cli("db", "upgrade", db=url)  # migrate.upgrade to head, as `judgepanel db upgrade` runs it
    assert r.code == 0, r.stderr


def bulk_db(db: str, n: int, *, judges: int = 1, humans: int = 0, pairwise: bool = False) -> int:
    """Fill `db` as `benchmarks.bulk.build(db, n, judges=…, humans=…, pairwise=…)` does (the
    migrations, then the bulk-generated campaign `bench`), as a copy of the one such database built
    in this test run (`from_built`; the build is seeded, so every copy holds the same rows).
    Returns the number of verdicts stored, counted in `db`."""
    from sqlalchemy import text

    from judgepanel.store.engine import make_engine

    kind = "pairwise" if pairwise else "pointwise"
    from_built(
        db,
        f"bulk-{kind}-{n}-judges-{judges}-humans-{humans}",
        lambda url: _bulk(url, n, judges=judges, humans=humans, pairwise=pairwise),
    )
    eng = make_engine(db)
    try:
        with eng.connect() as conn:
            return int(conn.execute(text("SELECT count(*) FROM verdict")).scalar_one())
    finally:
        eng.dispose()


def _bulk(url: str, n: int, *, judges: int, humans: int, pairwise: bool) -> None:
    from benchmarks.bulk import build

    build(url, n, judges=judges, humans=humans, pairwise=pairwise)


PG_TEMPLATE_PREFIX = "jp_tpl_"


_ADMIN_ENGINES: dict[str, Any] = {}


def admin_engine(db: str) -> Any:
    """An AUTOCOMMIT engine on the `postgres` database of `db`'s server, one per server and test
    process: its pooled connection creates, copies and drops every test database of the process
    (a new engine each time cost the server a connection, 4 ms of its CPU, twice per test)."""
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url

    admin = make_url(db).set(drivername="postgresql+psycopg", database="postgres")
    key = admin.render_as_string(hide_password=False)
    if key not in _ADMIN_ENGINES:  # pre-ping: a test may restart its own server
        _ADMIN_ENGINES[key] = create_engine(admin, isolation_level="AUTOCOMMIT", pool_pre_ping=True)
    return _ADMIN_ENGINES[key]


def _empty_test_pg_database(db: str) -> bool:
    """A PostgreSQL database `fresh_pg_database` made (named jp_…) with no table yet."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    url = make_url(db)
    if url.get_backend_name() != "postgresql" or not (url.database or "").startswith("jp_"):
        return False
    eng = create_engine(url.set(drivername="postgresql+psycopg"))
    try:
        with eng.connect() as conn:
            tables = conn.execute(
                text("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()")
            ).scalar_one()
    finally:
        eng.dispose()
    return int(tables) == 0


def pg_built_once(root: Path, db: str, name: str, build: Callable[[str], None]) -> str:
    """The name of a template database on `db`'s server that `build(url)` filled once per test
    run however many xdist workers ask (as `built_once` does for SQLite files, under the same kind
    of lock). `drop_pg_templates` drops them when the run ends. Copying a template is one
    `CREATE DATABASE … TEMPLATE`: about 0.1 s where running the migrations took 0.8–1.9 s."""
    import uuid

    from sqlalchemy import text
    from sqlalchemy.engine import make_url

    url = make_url(db)
    folder = root / f"built-pg-{url.host}-{url.port}-{name}"
    folder.mkdir(exist_ok=True)
    token = folder / "template"
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if token.exists():
                return token.read_text().strip()
            template = f"{PG_TEMPLATE_PREFIX}{uuid.uuid4().hex[:12]}"
            admin = admin_engine(db)
            try:
                with admin.connect() as conn:
                    conn.exec_driver_sql(f'CREATE DATABASE "{template}"')
                token.write_text(template)  # written first, so a failed build is dropped too
                build(url.set(database=template).render_as_string(hide_password=False))
                with admin.connect() as conn:  # a copy needs the template free of sessions
                    conn.execute(
                        text(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE datname = :t AND pid <> pg_backend_pid()"
                        ),
                        {"t": template},
                    )
            except BaseException:
                with admin.connect() as conn:
                    conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{template}" WITH (FORCE)')
                token.unlink(missing_ok=True)
                raise
            return template
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _recreate_from(db: str, template: str) -> None:
    from sqlalchemy.engine import make_url

    name = make_url(db).database
    with admin_engine(db).connect() as conn:
        conn.exec_driver_sql(f'DROP DATABASE "{name}" WITH (FORCE)')
        conn.exec_driver_sql(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')


def drop_pg_templates(root: Path, server: str) -> None:
    """Drop the template databases `pg_built_once` made under `root` (at the end of the run)."""
    names = [p.read_text().strip() for p in root.glob("built-pg-*/template")]
    if not names:
        return
    with admin_engine(server).connect() as conn:
        for name in names:
            if name.startswith(PG_TEMPLATE_PREFIX):
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _new_sqlite_file(db: str) -> Path | None:
    from sqlalchemy.engine import make_url

    url = make_url(db)
    database = url.database or ""
    if url.get_backend_name() != "sqlite" or url.query or database in ("", ":memory:"):
        return None
    path = Path(database)
    return path if not path.exists() and path.parent.is_dir() else None


def shared_root(base: Path) -> Path:
    """The temporary folder every xdist worker of this run shares (each worker's base temp is a
    `popen-gwN` folder under it), or the base temp itself without xdist. Read from the folder, not
    from PYTEST_XDIST_WORKER: a pytest a worker starts in a subprocess inherits that variable, and
    its shared folder was then /tmp/pytest-of-USER itself, where a migrated database built by an
    older checkout hours before was taken as this run's (a schema without 0014's indexes)."""
    return base.parent if base.name.startswith("popen-gw") else base


def copy_db(src: Path, folder: Path, name: str = "judgepanel.db") -> str:
    """A private copy of a database `built_once` made, as a SQLite URL."""
    dst = folder / name
    shutil.copyfile(src, dst)
    return f"sqlite:///{dst}"


def chromium_driver() -> object:
    """Debian's headless Chromium through Selenium (skipped without it, failed when
    JUDGEPANEL_REQUIRE_BROWSER is set); the report and viewer browser tests share it."""
    import os
    import shutil

    import pytest

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    chromedriver = shutil.which("chromedriver")
    if not (chromium and chromedriver):
        if os.environ.get("JUDGEPANEL_REQUIRE_BROWSER", "") not in ("", "0"):
            pytest.fail("chromium and chromedriver are required (JUDGEPANEL_REQUIRE_BROWSER=1)")
        pytest.skip("no chromium/chromedriver on this machine")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,1800",
    ):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=chromedriver), options=opts)


def displayed(driver: Any, elements: list[Any]) -> list[bool]:
    """`[e.is_displayed() for e in elements]` in one round trip to the browser: Selenium's own
    check (its isDisplayed atom, which `is_displayed` sends once per element) run over the list."""
    from selenium.webdriver.remote import webelement

    if webelement.isDisplayed_js is None:
        webelement._load_js()
    script = f"const shown = ({webelement.isDisplayed_js}); return arguments[0].map(e => shown(e));"
    return [bool(v) for v in driver.execute_script(script, elements)]


def text_contents(driver: Any, elements: list[Any]) -> list[str]:
    """`[e.get_attribute("textContent") for e in elements]` in one round trip to the browser."""
    return [str(v) for v in driver.execute_script("return arguments[0].map(e => e.textContent);", elements)]


class ServedCli:
    """A judgepanel command that serves (`view`, `annotate serve`) in its own process; `url` is the
    address it printed first (without the trailing slash)."""

    def __init__(self, db: str, *argv: str) -> None:
        import re
        import subprocess
        import sys

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "judgepanel", "--db", db, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        m = re.match(r"(http://\S+/)", line)
        if not m:
            self.stop()
            raise RuntimeError(
                f"{' '.join(argv[:2])} did not start: {line!r} {self.proc.stderr.read() if self.proc.stderr else ''}"
            )
        self.url = m.group(1).rstrip("/")

    def stop(self) -> None:
        import subprocess

        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
