"""The engine the annotators' pages write through: it can read everything and write only the
annotation tables' listed columns (`store.annotation_tables.WRITABLE`), enforced by the database
itself, not by our code being careful.

- PostgreSQL: every transaction runs `SET LOCAL ROLE judgepanel_annotator`, the role `db upgrade`
  creates with SELECT on the judgepanel tables plus exactly those INSERT/UPDATE grants
  (`store.migrate.grant_annotator`); a privileged session (superuser, or a member of the server
  file / program / signal roles) that cannot assume the role is refused, as `query` refuses one
  without its reader role (`store.readonly`).
- SQLite: each connection gets an authorizer that allows reading, transactions, savepoints and
  functions, INSERT into the insertable tables and UPDATE of the listed columns, and denies the
  rest (DELETE, DDL, ATTACH, PRAGMA writes, any other table or column). One delete passes no
  authorizer: the row an `INSERT OR REPLACE` removes to make room, which would rewrite a label
  whole or a history row. So before the authorizer is set, each connection turns on
  `recursive_triggers` (with which REPLACE fires delete triggers) and gets a TEMP trigger on each
  insertable table that aborts any delete.

Every other page stays on `store.readonly.read_only_engine`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, event

from judgepanel.errors import BadInput
from judgepanel.store.annotation_tables import ANNOTATOR_ROLE, WRITABLE
from judgepanel.store.engine import bounded_pool, is_sqlite, make_engine, refused_here

_PRIVILEGED = (
    "pg_execute_server_program",
    "pg_read_server_files",
    "pg_write_server_files",
    "pg_signal_backend",
)


def sqlite_authorizer(
    writable: dict[str, tuple[bool, tuple[str, ...]]] = WRITABLE,
) -> Callable[[int, str | None, str | None, str | None, str | None], int]:
    """An authorizer for `sqlite3.Connection.set_authorizer` (see the module docstring)."""
    always = {
        sqlite3.SQLITE_SELECT,
        sqlite3.SQLITE_READ,
        sqlite3.SQLITE_TRANSACTION,
        sqlite3.SQLITE_SAVEPOINT,
        sqlite3.SQLITE_FUNCTION,
        sqlite3.SQLITE_RECURSIVE,
    }
    inserts = {t for t, (ins, _) in writable.items() if ins}
    updates = {(t, c) for t, (_, cols) in writable.items() for c in cols}

    def authorize(
        action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None
    ) -> int:
        if action in always:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_INSERT and arg1 in inserts:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_UPDATE and (arg1, arg2) in updates:
            return sqlite3.SQLITE_OK
        if (
            action == sqlite3.SQLITE_PRAGMA
            and arg2 is None
            and (arg1 or "").lower() in ("foreign_keys", "busy_timeout", "journal_mode", "query_only")
        ):
            return sqlite3.SQLITE_OK  # reading a setting (arg2 None): the engine checks them on connect
        return sqlite3.SQLITE_DENY

    return authorize


def annotation_engine(
    url: str, *, role: str = ANNOTATOR_ROLE, pool_size: int | None = None, pool_timeout: float | None = None
) -> Engine:
    """An engine for the annotators' writes (module docstring); fails here when refused.
    `pool_size` connections at most (no overflow), each waited for at most `pool_timeout` seconds
    (`sqlalchemy.exc.TimeoutError`), as `store.readonly.read_only_engine` takes them."""
    engine = make_engine(url, create=False, pool=bounded_pool(pool_size, pool_timeout))
    if is_sqlite(engine):

        def _restrict(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.execute("PRAGMA recursive_triggers = ON")
            for table in (t for t, (ins, _) in WRITABLE.items() if ins):
                dbapi_conn.execute(
                    f"CREATE TEMP TRIGGER IF NOT EXISTS jp_no_delete_{table} BEFORE DELETE ON main.{table} "
                    "BEGIN SELECT RAISE(ABORT, 'the annotators'' engine deletes nothing'); END"
                )
            dbapi_conn.set_authorizer(sqlite_authorizer())

        # after store.engine's own connect listener (WAL, foreign keys, busy timeout) has run;
        # make_engine already opened one connection (to set WAL): drop it, so every connection
        # the pool hands out is a restricted one
        event.listen(engine, "connect", _restrict)
        engine.dispose()
    else:

        def _enter(conn: Any) -> None:
            _pg_become(conn.connection.driver_connection, role)

        event.listen(engine, "begin", _enter)
    return refused_here(engine)


def _pg_become(raw: Any, role: str) -> None:
    from psycopg import sql as pgsql

    row = raw.execute(
        "SELECT session_user::text, r.rolsuper OR EXISTS ("
        "  SELECT 1 FROM pg_roles d WHERE d.rolname = ANY(%s) AND pg_has_role(session_user, d.oid, 'MEMBER')),"
        " (SELECT oid FROM pg_roles WHERE rolname = %s)"
        " FROM pg_roles r WHERE r.rolname = session_user",
        (list(_PRIVILEGED), role),
    ).fetchone()
    user, privileged, oid = str(row[0]), bool(row[1]), row[2]
    can = oid is not None and bool(
        raw.execute("SELECT pg_has_role(session_user, %s::oid, 'MEMBER')", (oid,)).fetchone()[0]
    )
    if not can:
        if privileged:
            raise BadInput(
                f"refused: {user} is a superuser or may run server programs, and cannot assume the {role} "
                "role the annotators' pages write as; run `judgepanel db upgrade` as a superuser"
            )
        return  # a plain login role writes as itself, with its own grants
    raw.execute(pgsql.SQL("SET LOCAL ROLE {}").format(pgsql.Identifier(role)))
