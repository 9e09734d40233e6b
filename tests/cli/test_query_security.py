"""`query` against a hostile user: no server programs, files or other backends on PostgreSQL (even
as a superuser), no pointer-leaking SQLite functions, a time limit, and Ctrl-C that cancels."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from judgepanel.errors import BadInput
from judgepanel.store.readonly import READER_ROLE, run_read_only
from tests.helpers import cli, migrate_db

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def db(db_url: str) -> str:
    migrate_db(db_url)
    return db_url


def _admin(url: str) -> Engine:
    return create_engine(make_url(url).set(drivername="postgresql+psycopg"), isolation_level="AUTOCOMMIT")


def _one_line_refusal(r: object) -> str:
    code, stderr = getattr(r, "code"), getattr(r, "stderr")  # noqa: B009
    assert code == 2, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("judgepanel: error: refused")
    return str(stderr)


# ---------------------------------------------------------------- SQLite authorizer


@pytest.mark.parametrize(
    "sql",
    [
        "select fts3_tokenizer('simple')",  # returns the tokenizer's address: a pointer leak
        "select fts3_tokenizer('evil', x'0000000000000000')",  # registers a pointer
        "select load_extension('/tmp/nothing')",
        "pragma journal_mode=delete",
        "pragma writable_schema=1",
        "select * from label where fts3_tokenizer('simple') is not null",
    ],
)
def test_sqlite_refuses_what_reading_does_not_need(sqlite_url: str, sql: str) -> None:
    migrate_db(sqlite_url)
    stderr = _one_line_refusal(cli("query", sql, db=sqlite_url))
    assert "not allowed" in stderr


def test_sqlite_reading_still_works(sqlite_url: str) -> None:
    migrate_db(sqlite_url)
    for sql, expected in [
        ("select sum(value) as s from json_each('[1,2,3]')", {"s": 6}),
        (
            "with recursive c(x) as (select 1 union all select x + 1 from c where x < 4) select sum(x) as s from c",
            {"s": 10},
        ),
        ("select json_extract('{\"a\": 2}', '$.a') * 2 as s", {"s": 4}),
        ("select count(*) as s from pragma_table_info('label')", {"s": 7}),
        ("select round(ln(exp(1)), 6) as s", {"s": 1.0}),
    ]:
        assert cli("query", sql, "--json", db=sqlite_url).json()["rows"] == [expected], sql
    assert cli("query", "pragma table_info(label)", "--json", db=sqlite_url).json()["row_count"] == 7


# ---------------------------------------------------------------- time limit and Ctrl-C


def _endless(url: str, seconds: int) -> str:
    if url.startswith("sqlite"):
        return "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c"
    return f"select pg_sleep({seconds})"


def _active(admin: Engine, database: str, needle: str) -> int:
    with admin.connect() as conn:
        return int(
            conn.execute(
                text(
                    "select count(*) from pg_stat_activity where datname = :d and state = 'active' "
                    "and query like :q and pid <> pg_backend_pid()"
                ),
                {"d": database, "q": f"%{needle}%"},
            ).scalar_one()
        )


def test_timeout_ends_the_statement_in_the_database(db: str) -> None:
    started = time.monotonic()
    r = cli("query", _endless(db, 600), "--timeout", "1", db=db)
    elapsed = time.monotonic() - started
    assert r.code == 1 and r.stderr.count("\n") == 1, r.stderr
    assert "ran longer than its 1 s limit" in r.stderr and "--timeout" in r.stderr
    assert elapsed < 15
    if not db.startswith("sqlite"):
        admin = _admin(db)
        assert _active(admin, make_url(db).database or "", "pg_sleep(600)") == 0
        admin.dispose()
    assert cli("query", "select 1 as one", "--timeout", "0", db=db).code == 2


def _child(url: str, sql: str) -> subprocess.Popen[str]:
    code = "import sys; from judgepanel.cli import main; main(sys.argv[1:])"
    return subprocess.Popen(
        [sys.executable, "-c", code, "--db", url, "query", sql, "--timeout", "300"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _wait_until(predicate: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def test_ctrl_c_cancels_the_statement(db: str) -> None:
    proc = _child(db, _endless(db, 600))
    admin = _admin(db) if not db.startswith("sqlite") else None
    database = make_url(db).database or ""
    try:
        if admin is not None:
            running = _wait_until(lambda: _active(admin, database, "pg_sleep(600)") == 1, 60)
        else:
            path = str(Path(database).resolve())
            running = _wait_until(
                lambda: any(os.path.realpath(f"/proc/{proc.pid}/fd/{fd}") == path for fd in _fds(proc.pid)),
                60,
            )
            time.sleep(0.5)  # from opening the file to running the statement
        assert running, "the query never started"
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=15)
        assert time.monotonic() - sent < 10
        assert proc.returncode == 130, stderr
        assert stderr.strip().splitlines()[-1].startswith("judgepanel: interrupted")
        if admin is not None:
            assert _wait_until(lambda: _active(admin, database, "pg_sleep(600)") == 0, 5), (
                "the backend still runs"
            )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        if admin is not None:
            admin.dispose()


def _fds(pid: int) -> list[str]:
    try:
        return os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return []


# ---------------------------------------------------------------- PostgreSQL privileges


@pytest.fixture
def pg_db(pg_url: str) -> str:
    migrate_db(pg_url)
    assert cli("db", "upgrade", db=pg_url).code == 0  # idempotent: the role exists the second time
    return pg_url


@pytest.mark.postgres
def test_superuser_query_runs_as_the_reader_and_cannot_escape(pg_db: str) -> None:
    admin = _admin(pg_db)
    with admin.connect() as conn:
        assert conn.execute(text("select rolsuper from pg_roles where rolname = current_user")).scalar()
    assert cli("query", "select current_user as u", "--json", db=pg_db).json()["rows"] == [{"u": READER_ROLE}]
    assert cli("query", "select count(*) as n from label", "--json", db=pg_db).json()["rows"] == [{"n": 0}]
    victim = admin.connect()
    try:
        pid = victim.execute(text("select pg_backend_pid()")).scalar_one()
        for sql in [
            "copy (select 1) to program 'true'",
            "select pg_read_file('/etc/hostname')",
            "select lo_import('/etc/hostname')",
            f"select pg_terminate_backend({pid})",
            # SET ROLE is undone by set_config while the session user is a superuser
            "select set_config('role', current_setting('is_superuser') || session_user, true)",
            "select set_config('role', session_user, true), query_to_xml('select pg_read_file(''/etc/hostname'')', true, false, '')",
            "select set_config('session_authorization', session_user, true)",
        ]:
            _one_line_refusal(cli("query", sql, db=pg_db))
        assert victim.execute(text("select 1")).scalar_one() == 1  # not terminated
    finally:
        victim.close()
        admin.dispose()


@pytest.mark.postgres
def test_superuser_is_refused_without_a_safe_reader(pg_db: str) -> None:
    missing = f"jp_absent_{uuid.uuid4().hex[:8]}"
    with pytest.raises(BadInput, match=f"refused: .*{missing} role is missing"):
        run_read_only(pg_db, "select 1", reader_role=missing)
    admin = _admin(pg_db)
    with admin.connect() as conn:  # undo db upgrade's hardening in this database only
        conn.execute(text("grant execute on function pg_catalog.set_config(text, text, boolean) to public"))
    admin.dispose()
    with pytest.raises(BadInput, match="may call set_config"):
        run_read_only(pg_db, "select 1")


@pytest.fixture
def login_role(pg_db: str) -> Iterator[str]:
    """A non-superuser login role on the test server (roles are server-wide: a unique name)."""
    name = f"jp_login_{uuid.uuid4().hex[:8]}"
    admin = _admin(pg_db)
    with admin.connect() as conn:
        conn.execute(text(f'create role "{name}" login nosuperuser'))
    try:
        yield name
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'drop role if exists "{name}"'))
        admin.dispose()


@pytest.mark.postgres
def test_login_role_runs_as_itself_or_as_the_reader(pg_db: str, login_role: str) -> None:
    url = make_url(pg_db).set(username=login_role).render_as_string(hide_password=False)
    # not a member of the reader: its own (small) privileges, read-only
    assert cli("query", "select current_user as u", "--json", db=url).json()["rows"] == [{"u": login_role}]
    _one_line_refusal(cli("query", "select pg_read_file('/etc/hostname')", db=url))
    _one_line_refusal(cli("query", "select count(*) from label", db=url))
    admin = _admin(pg_db)
    with admin.connect() as conn:
        conn.execute(text(f'grant {READER_ROLE} to "{login_role}"'))
    admin.dispose()
    assert cli("query", "select current_user as u", "--json", db=url).json()["rows"] == [{"u": READER_ROLE}]
    assert cli("query", "select count(*) as n from label", "--json", db=url).json()["rows"] == [{"n": 0}]
    _one_line_refusal(cli("query", "copy (select 1) to program 'true'", db=url))


@pytest.mark.postgres
def test_db_upgrade_by_a_plain_database_owner(pg_db: str, login_role: str) -> None:
    """A non-superuser owner without CREATEROLE may run `db upgrade` (it skips what it may not do),
    and `query` then runs as that owner, read-only."""
    name = f"jp_owned_{uuid.uuid4().hex[:8]}"
    admin = _admin(pg_db)
    with admin.connect() as conn:
        conn.execute(text(f'create database "{name}" owner "{login_role}"'))
    try:
        url = make_url(pg_db).set(username=login_role, database=name).render_as_string(hide_password=False)
        r = cli("db", "upgrade", db=url)
        assert r.code == 0, r.stderr
        assert cli("query", "select current_user as u", "--json", db=url).json()["rows"] == [
            {"u": login_role}
        ]
        assert cli("query", "select count(*) as n from label", "--json", db=url).json()["rows"] == [{"n": 0}]
        _one_line_refusal(cli("query", "select pg_read_file('/etc/hostname')", db=url))
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'drop database if exists "{name}" with (force)'))
        admin.dispose()
