"""`judgepanel query`: SQL over the results database that cannot change it.

SQLite is opened with `mode=ro` and `PRAGMA query_only`, with ATTACH disabled; PostgreSQL runs
the statement inside a `READ ONLY` transaction that is always rolled back. Either way a write fails
inside the database engine itself, not by our parsing the SQL. Exactly one statement runs: the
SQLite driver refuses a second one, and on PostgreSQL the statement is sent as a prepared
statement, which the server refuses to hold more than one command in (a plain execute would run
`commit; delete …` after ending the read-only transaction).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

import psycopg
from sqlalchemy.exc import DBAPIError

from judgepanel.errors import BadInput
from judgepanel.store.engine import make_engine

_WRITE_HINTS = ("readonly", "read-only", "read only", "query_only", "attempt to write")


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]


def run_read_only(url: str, sql: str, *, max_rows: int | None = None) -> QueryResult:
    if not sql.strip():
        raise BadInput("empty query")
    engine = make_engine(url, read_only=True)
    try:
        with engine.connect() as conn:
            raw = conn.connection.driver_connection
            assert raw is not None
            try:
                if isinstance(raw, sqlite3.Connection):
                    # ATTACH would open (and create) another file that mode=ro does not cover
                    raw.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
                    raw.execute("PRAGMA query_only=ON")
                    cur: Any = raw.execute(sql)
                else:
                    assert isinstance(raw, psycopg.Connection)
                    raw.execute("SET TRANSACTION READ ONLY")
                    cur = raw.cursor()
                    cur.execute(sql, prepare=True)  # one command only: see the module docstring
                if cur.description is None:
                    raise BadInput("the statement returned no rows; `query` only reads")
                columns = [str(d[0]) for d in cur.description]
                rows = [tuple(r) for r in (cur.fetchmany(max_rows) if max_rows else cur.fetchall())]
            finally:
                raw.rollback()
            return QueryResult(columns, rows)
    except (sqlite3.Error, psycopg.Error, DBAPIError) as exc:
        orig = exc.orig if isinstance(exc, DBAPIError) else exc
        message = (str(orig).strip().splitlines() or [type(orig).__name__])[0]
        if "multiple commands" in message or "one statement at a time" in message:
            raise BadInput("`query` runs exactly one statement; leave out the ';'-separated rest") from exc
        if "attached databases" in message.lower():
            raise BadInput("refused: `query` reads only the results database (no ATTACH)") from exc
        if any(h in message.lower() for h in _WRITE_HINTS):
            raise BadInput(f"refused: `query` is read-only ({message})") from exc
        raise BadInput(f"query failed: {message}") from exc
    finally:
        engine.dispose()
