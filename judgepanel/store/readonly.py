"""`judgepanel query`: SQL over the results database that cannot change it.

SQLite is opened with `mode=ro` and `PRAGMA query_only`; PostgreSQL runs the statement inside a
`READ ONLY` transaction that is always rolled back. Either way a write fails inside the database
engine itself, not by our parsing the SQL.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, OperationalError, ProgrammingError

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
            if conn.dialect.name == "sqlite":
                # ATTACH would open (and create) another file that mode=ro does not cover
                raw = conn.connection.driver_connection
                assert isinstance(raw, sqlite3.Connection)
                raw.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
                conn.exec_driver_sql("PRAGMA query_only=ON")
            else:
                conn.exec_driver_sql("SET TRANSACTION READ ONLY")
            try:
                result = conn.execute(text(sql))
                if not result.returns_rows:
                    raise BadInput("the statement returned no rows; `query` only reads")
                columns = list(result.keys())
                rows = [tuple(r) for r in (result.fetchmany(max_rows) if max_rows else result.fetchall())]
            finally:
                conn.rollback()
            return QueryResult(columns, rows)
    except (OperationalError, ProgrammingError, DBAPIError) as exc:
        message = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        if "attached databases" in message.lower():
            raise BadInput("refused: `query` reads only the results database (no ATTACH)") from exc
        if any(h in message.lower() for h in _WRITE_HINTS):
            raise BadInput(f"refused: `query` is read-only ({message})") from exc
        raise BadInput(f"query failed: {message}") from exc
    finally:
        engine.dispose()
