"""`judgepanel query`: SQL over the results database that cannot change it, read anything else,
run anything, or run for ever.

SQLite is opened with `mode=ro` and `PRAGMA query_only`, with ATTACH disabled, and an authorizer
allows only reading: SELECT, reading columns, recursive CTEs, the functions in `SQLITE_FUNCTIONS`
(the core, date, math, JSON, aggregate and window functions; not `fts3_tokenizer`,
`load_extension`, `readfile`/`writefile`, …) and the introspection pragmas in `SQLITE_PRAGMAS`.

PostgreSQL runs the statement inside a `READ ONLY` transaction that is always rolled back, under
the `judgepanel_reader` role (`SET LOCAL ROLE`), which `db upgrade` creates and grants SELECT on
the judgepanel tables and nothing else. READ ONLY alone is no privilege boundary: a superuser's
read-only transaction still runs `COPY … TO PROGRAM`, `pg_read_file` and `pg_terminate_backend`.
SET ROLE alone is none either while the reader may call `set_config('role', …)` (the session user
stays the superuser, so the role switches straight back): `db upgrade` revokes that, and `query`
refuses a privileged session (superuser, or member of the server-file / signal roles) when the
reader is missing, cannot be assumed, or may still call `set_config`. A plain login role without
the reader runs the query as itself.

Either way a write fails inside the database engine itself, not by our parsing the SQL. Exactly one
statement runs: the SQLite driver refuses a second one, and on PostgreSQL the statement is sent as
a prepared statement, which the server refuses to hold more than one command in (a plain execute
would run `commit; delete …` after ending the read-only transaction).

Size: the rows a statement returns may hold at most `max_bytes` (text counted by its characters,
blobs by their bytes, other values as 8). SQLite is told the same bound as its largest string or
blob (`SQLITE_LIMIT_LENGTH`), so `randomblob(400000000)` fails inside SQLite before it allocates;
rows are fetched in batches and counted as they come on both backends (PostgreSQL streams them in
single-row mode), and the statement stops at the first batch over the bound with one line.

Time: `timeout` seconds, enforced by the database (`SET LOCAL statement_timeout`; a SQLite
progress handler that aborts the statement). Ctrl-C (SIGINT) cancels the statement in the database
(psycopg's cancel request; `sqlite3.Connection.interrupt`) and raises `Interrupted` (exit 130), so
no server backend keeps running a query whose client has gone.
"""

from __future__ import annotations

import signal
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy.exc import DBAPIError

from judgepanel.errors import BadInput, Interrupted, JudgepanelError
from judgepanel.store.engine import bounded_pool, ensure_reachable, is_sqlite, make_engine, refused_here
from judgepanel.store.migrate import READER_ROLE, SET_CONFIG

if TYPE_CHECKING:
    import psycopg
    from sqlalchemy import Engine

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_BYTES = 100_000_000
_FETCH = 500  # rows per batch between size checks
_WRITE_HINTS = ("readonly", "read-only", "read only", "query_only", "attempt to write")


# Default roles that make a session dangerous to hand a user's SQL to, like a superuser.
def _psycopg() -> Any:
    """psycopg, when a PostgreSQL engine has loaded it; None on SQLite, where no psycopg error can
    arise (so `query` on SQLite does not import the PostgreSQL driver)."""
    return sys.modules.get("psycopg")


def _driver_errors() -> tuple[type[Exception], ...]:
    """The errors a statement can raise: SQLite's, SQLAlchemy's, and psycopg's once it is loaded
    (an `except` clause is evaluated when the exception is raised, so after the engine loaded it)."""
    pg = _psycopg()
    return (sqlite3.Error, DBAPIError) if pg is None else (sqlite3.Error, pg.Error, DBAPIError)


_PRIVILEGED_ROLES = (
    "pg_execute_server_program",
    "pg_read_server_files",
    "pg_write_server_files",
    "pg_signal_backend",
)


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


SQLITE_FUNCTIONS = _names(
    # core scalar functions (https://sqlite.org/lang_corefunc.html), minus the extension loader
    "abs changes char coalesce concat concat_ws format glob hex ifnull iif instr last_insert_rowid length "
    "like likelihood likely lower ltrim max min nullif octet_length printf quote random randomblob replace "
    "round rtrim sign soundex sqlite_offset sqlite_source_id sqlite_version substr substring "
    "total_changes trim typeof unhex unicode unistr unlikely upper zeroblob "
    # date and time
    "date time datetime julianday unixepoch strftime timediff "
    # aggregate and window
    "avg count group_concat string_agg sum total row_number rank dense_rank percent_rank cume_dist ntile "
    "lag lead first_value last_value nth_value "
    # math
    "acos acosh asin asinh atan atan2 atanh ceil ceiling cos cosh degrees exp floor ln log log10 log2 mod "
    "pi pow power radians sin sinh sqrt tan tanh trunc "
    # JSON (json_each / json_tree are table-valued and need no entry)
    "json jsonb json_array jsonb_array json_array_length json_error_position json_extract jsonb_extract "
    "json_insert jsonb_insert json_object jsonb_object json_patch jsonb_patch json_pretty json_remove "
    "jsonb_remove json_replace jsonb_replace json_set jsonb_set json_type json_valid json_quote "
    "json_group_array jsonb_group_array json_group_object jsonb_group_object"
)
SQLITE_PRAGMAS = _names(
    "table_info table_xinfo table_list index_list index_info index_xinfo foreign_key_list"
)
_SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema", "sqlite_temp_master"})
_PROGRESS_STEPS = 2000  # SQLite VM instructions between deadline checks (microseconds apart)


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]


class _Stop:
    """Why a statement was stopped: Ctrl-C, the deadline, or an authorizer refusal."""

    def __init__(self, timeout: float, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.deadline = time.monotonic() + timeout
        self.interrupted = threading.Event()
        self.denied: str | None = None

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline


def run_read_only(
    url: str,
    sql: str,
    *,
    max_rows: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_bytes: int = DEFAULT_MAX_BYTES,
    reader_role: str = READER_ROLE,
) -> QueryResult:
    """Run one read-only statement; see the module docstring for what stops it."""
    if not sql.strip():
        raise BadInput("empty query")
    if not timeout > 0:
        raise BadInput(f"--timeout must be a positive number of seconds, got {timeout:g}")
    if max_bytes < 1:
        raise BadInput(f"--max-bytes must be a positive number of bytes, got {max_bytes}")
    engine = make_engine(url, read_only=True)
    stop = _Stop(timeout, max_bytes)
    try:
        if not is_sqlite(engine):
            ensure_reachable(engine)
        with engine.connect() as conn:
            raw = conn.connection.driver_connection
            assert raw is not None
            try:
                if isinstance(raw, sqlite3.Connection):
                    with _on_sigint(stop, raw.interrupt):
                        cur: Any = _sqlite_execute(raw, sql, stop)
                        return _fetch(cur, max_rows, stop)
                import psycopg

                assert isinstance(raw, psycopg.Connection)
                _pg_enter(raw, timeout, reader_role)
                with _on_sigint(stop, raw.cancel_safe):
                    return _pg_fetch(raw, sql, max_rows, stop)
            finally:
                raw.rollback()
    except _driver_errors() as exc:
        orig = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
        raise _explain(orig, stop) from None
    finally:
        engine.dispose()


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str | bytes | bytearray | memoryview) else 8


class _Counter:
    """The rows kept so far and their size; `TooBig` once the size passes the bound."""

    def __init__(self, stop: _Stop, max_rows: int | None) -> None:
        self.stop, self.max_rows = stop, max_rows
        self.rows: list[tuple[Any, ...]] = []
        self.size = 0

    def full(self) -> bool:
        return self.max_rows is not None and len(self.rows) >= self.max_rows

    def add(self, row: Any) -> None:
        self.size += sum(_size(v) for v in row)
        if self.size > self.stop.max_bytes:
            raise _too_big(self.stop)
        self.rows.append(tuple(row))


def _too_big(stop: _Stop) -> BadInput:
    return BadInput(
        f"the result holds more than {stop.max_bytes:,} bytes: select fewer rows or columns "
        "(e.g. substr(text, 1, 200)), or raise --max-bytes"
    )


def _fetch(cur: Any, max_rows: int | None, stop: _Stop) -> QueryResult:
    if cur.description is None:
        raise BadInput("the statement returned no rows; `query` only reads")
    columns = [str(d[0]) for d in cur.description]
    kept = _Counter(stop, max_rows)
    while not kept.full() and (batch := cur.fetchmany(_FETCH)):
        for row in batch:
            if kept.full():
                break
            kept.add(row)
    return QueryResult(columns, kept.rows)


def _explain(orig: BaseException, stop: _Stop) -> JudgepanelError:
    """One line for what went wrong, most specific reason first."""
    if stop.interrupted.is_set():
        return Interrupted("interrupted: the query was cancelled in the database; nothing was changed")
    message = (str(orig).strip().splitlines() or [type(orig).__name__])[0]
    lowered = message.lower()
    pg = _psycopg()
    if (pg is not None and isinstance(orig, pg.errors.QueryCanceled)) or (
        isinstance(orig, sqlite3.OperationalError) and lowered == "interrupted" and stop.expired()
    ):
        return JudgepanelError(
            f"query cancelled: it ran longer than its {stop.timeout:g} s limit (raise it with --timeout)"
        )
    if "string or blob too big" in lowered:  # SQLITE_LIMIT_LENGTH, set to --max-bytes
        return _too_big(stop)
    if stop.denied == "ATTACH":
        return BadInput("refused: `query` reads only the results database (no ATTACH)")
    if stop.denied is not None:
        what = "is read-only" if stop.denied.isupper() else "only reads the judgepanel tables"
        return BadInput(f"refused: `query` {what} ({stop.denied} is not allowed)")
    if "multiple commands" in message or "one statement at a time" in message:
        return BadInput("`query` runs exactly one statement; leave out the ';'-separated rest")
    if "attached databases" in lowered:
        return BadInput("refused: `query` reads only the results database (no ATTACH)")
    if any(h in lowered for h in _WRITE_HINTS):
        return BadInput(f"refused: `query` is read-only ({message})")
    if pg is not None and isinstance(orig, pg.errors.InsufficientPrivilege):
        return BadInput(f"refused: `query` only reads the judgepanel tables ({message})")
    return BadInput(f"query failed: {message}")


@contextmanager
def _on_sigint(stop: _Stop, cancel: Callable[[], None]) -> Iterator[None]:
    """While the statement runs, Ctrl-C cancels it in the database instead of raising
    KeyboardInterrupt somewhere the driver swallows it (SQLite) or only after the statement ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.interrupted.set()
        cancel()

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if stop.interrupted.is_set():  # the statement finished just as Ctrl-C came: still exit 130
        raise Interrupted("interrupted: the query was cancelled; nothing was changed")


# ---------------------------------------------------------------- SQLite


def _sqlite_execute(raw: sqlite3.Connection, sql: str, stop: _Stop) -> sqlite3.Cursor:
    # ATTACH would open (and create) another file that mode=ro does not cover
    raw.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    # no single string or blob larger than the whole result may hold: SQLite refuses to build it
    raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, min(stop.max_bytes, raw.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)))
    raw.execute("PRAGMA query_only=ON")
    raw.execute("SELECT count(*) FROM sqlite_master").fetchall()  # load the schema before the authorizer
    raw.set_progress_handler(lambda: int(stop.interrupted.is_set() or stop.expired()), _PROGRESS_STEPS)
    raw.set_authorizer(_sqlite_authorizer(stop))
    return raw.execute(sql)


def _sqlite_authorizer(stop: _Stop) -> Callable[[int, str | None, str | None, str | None, str | None], int]:
    # BEGIN / COMMIT / SAVEPOINT change nothing in a query_only connection; letting them compile
    # keeps `commit; delete …` failing as "one statement at a time", which says what is wrong
    allowed_actions = {
        sqlite3.SQLITE_SELECT,
        sqlite3.SQLITE_READ,
        sqlite3.SQLITE_RECURSIVE,
        sqlite3.SQLITE_TRANSACTION,
        sqlite3.SQLITE_SAVEPOINT,
    }

    def authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None, _view: str | None) -> int:
        if action in allowed_actions:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in SQLITE_FUNCTIONS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in SQLITE_PRAGMAS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_UPDATE and arg1 in _SCHEMA_TABLES:
            # SQLite asks this while it builds a table-valued function (json_each); the file is
            # opened read-only with query_only on, so nothing can be written either way
            return sqlite3.SQLITE_OK
        if stop.denied is None:
            stop.denied = (
                f"{arg2}()"
                if action == sqlite3.SQLITE_FUNCTION
                else f"pragma {arg1}"
                if action == sqlite3.SQLITE_PRAGMA
                else _ACTION_NAMES.get(action, f"operation {action}")
            )
        return sqlite3.SQLITE_DENY

    return authorize


_ACTION_NAMES = {
    getattr(sqlite3, f"SQLITE_{name}"): name.replace("_", " ")
    for name in _names(
        "CREATE_INDEX CREATE_TABLE CREATE_TEMP_INDEX CREATE_TEMP_TABLE CREATE_TEMP_TRIGGER CREATE_TEMP_VIEW "
        "CREATE_TRIGGER CREATE_VIEW DELETE DROP_INDEX DROP_TABLE DROP_TEMP_INDEX DROP_TEMP_TABLE "
        "DROP_TEMP_TRIGGER DROP_TEMP_VIEW DROP_TRIGGER DROP_VIEW INSERT TRANSACTION UPDATE ATTACH DETACH "
        "ALTER_TABLE REINDEX ANALYZE CREATE_VTABLE DROP_VTABLE SAVEPOINT"
    )
    if hasattr(sqlite3, f"SQLITE_{name}")
}


# ---------------------------------------------------------------- PostgreSQL


def _pg_fetch(raw: psycopg.Connection[Any], sql: str, max_rows: int | None, stop: _Stop) -> QueryResult:
    """Rows in single-row mode, counted as they arrive: the client never holds more than the bound.
    `stream` always sends the statement with the extended protocol, which, like a prepared
    statement, the server refuses to hold more than one command in (see the module docstring)."""
    cur = raw.cursor()
    kept = _Counter(stop, max_rows)
    gen = cast("Generator[Any, None, None]", cur.stream(sql))
    try:
        for row in gen:
            if kept.full():
                break
            kept.add(row)
    except raw.ProgrammingError as exc:  # `commit`, `set …`: a command that returns no result set
        if "didn't produce a result" not in str(exc):
            raise
        raise BadInput("the statement returned no rows; `query` only reads") from None
    finally:
        gen.close()  # psycopg cancels the statement if rows are still coming, and drops them
    if cur.description is None:
        raise BadInput("the statement returned no rows; `query` only reads")
    return QueryResult([str(d[0]) for d in cur.description], kept.rows)


def _pg_enter(raw: psycopg.Connection[Any], timeout: float, reader: str) -> None:
    """Open the read-only transaction with its time limit and become the reader role, or refuse."""
    from psycopg import sql as pgsql

    raw.execute("SET TRANSACTION READ ONLY")
    raw.execute(
        pgsql.SQL("SET LOCAL statement_timeout = {}").format(pgsql.Literal(max(1, round(timeout * 1000))))
    )
    row = raw.execute(
        "SELECT session_user::text, r.rolsuper OR EXISTS ("
        "  SELECT 1 FROM pg_roles d WHERE d.rolname = ANY(%s) AND pg_has_role(session_user, d.oid, 'MEMBER')),"
        " (SELECT oid FROM pg_roles WHERE rolname = %s)"
        " FROM pg_roles r WHERE r.rolname = session_user",
        (list(_PRIVILEGED_ROLES), reader),
    ).fetchone()
    assert row is not None
    user, privileged, reader_oid = str(row[0]), bool(row[1]), row[2]
    can_assume = can_set_config = False
    if reader_oid is not None:
        check = raw.execute(
            "SELECT pg_has_role(session_user, %s::oid, 'MEMBER'), has_function_privilege(%s::oid, %s, 'EXECUTE')",
            (reader_oid, reader_oid, SET_CONFIG),
        ).fetchone()
        assert check is not None
        can_assume, can_set_config = bool(check[0]), bool(check[1])
    if privileged and (reader_oid is None or not can_assume or can_set_config):
        why = (
            f"the {reader} role is missing"
            if reader_oid is None
            else f"it cannot assume the {reader} role"
            if not can_assume
            else f"the {reader} role may call set_config(), which switches a query back to {user}"
        )
        raise BadInput(
            f"refused: {user} is a superuser or may run server programs, read server files or signal "
            f"backends, and {why}; run `judgepanel db upgrade` as a superuser, or connect as a non-superuser"
        )
    if can_assume:
        raw.execute(pgsql.SQL("SET LOCAL ROLE {}").format(pgsql.Identifier(reader)))


# ---------------------------------------------------------------- an engine for long-lived readers


def read_only_engine(
    url: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    reader_role: str = READER_ROLE,
    pool_size: int | None = None,
    pool_timeout: float | None = None,
) -> Engine:
    """An engine every transaction of which reads only, for a long-lived reader (`judgepanel view`).

    `pool_size` connections at most (no overflow beyond it), each waited for at most
    `pool_timeout` seconds before `sqlalchemy.exc.TimeoutError`; SQLAlchemy's defaults without.

    SQLite: the file opened with `mode=ro` and `PRAGMA query_only`. PostgreSQL: each transaction
    starts `READ ONLY` with `statement_timeout`, under the reader role that `query` uses, and is
    refused on a privileged session without it, exactly as `query` (see `_pg_enter`); pooled
    connections are rolled back when returned. Fails here, not on the first page, when refused."""
    from sqlalchemy import event

    engine = make_engine(url, read_only=True, pool=bounded_pool(pool_size, pool_timeout))
    if is_sqlite(engine):

        def _query_only(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.execute("PRAGMA query_only=ON")

        event.listen(engine, "connect", _query_only)
    else:

        def _enter(conn: Any) -> None:
            raw = conn.connection.driver_connection
            _pg_enter(raw, timeout, reader_role)

        event.listen(engine, "begin", _enter)
    return refused_here(engine)
