"""Statements run with plain parameter tuples: the runner's hot writes without SQLAlchemy's
per-row parameter processing (issue 20 §5).

`conn.execute(insert(table), rows)` builds, for every row, a dict of every bound name and runs
every column type's bind processor over it; for the writer's three rows a call that was about half
of its CPU. Here each statement's SQL text is built once per dialect (identifiers quoted by the
dialect, its own placeholder) and run with `Connection.exec_driver_sql`: an INSERT as multi-row
VALUES pages (the page limits of SQLAlchemy's own "insertmanyvalues", so RETURNING works on both
backends), an UPDATE as one executemany. Values are converted by the very bind processors
SQLAlchemy would call (the dialect's, per column type), but only for the columns that have one
(JSON, and DateTime and Boolean on SQLite), and a value shared by every row (`same`) once per
statement. So the stored bytes are those the Core path stores: `tests/store/test_plain.py`
writes the same rows both ways, on SQLite and PostgreSQL, and compares them column by column.

Only the placeholder styles of the two supported drivers are known (`qmark`: sqlite3, `format` /
`pyformat`: psycopg); `supported(dialect)` is False for any other, and callers then use Core.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection, Table
from sqlalchemy.engine import Dialect

_MARKS = {"qmark": "?", "format": "%s", "pyformat": "%s"}

Processor = Callable[[Any], Any]


def supported(dialect: Dialect) -> bool:
    return dialect.paramstyle in _MARKS


@dataclass(frozen=True)
class _Insert:
    head: str  # INSERT INTO t (a, b, c) VALUES
    one: str  # (?, ?, ?)
    tail: str  # RETURNING … (or "")
    convert: tuple[tuple[int, Processor], ...]  # (position in a row, the column's bind processor)
    same_convert: tuple[Processor | None, ...]
    per_page: int


def _processor(dialect: Dialect, table: Table, name: str) -> Processor | None:
    return table.c[name].type.dialect_impl(dialect).bind_processor(dialect)


def _quote(dialect: Dialect, table: Table, name: str) -> str:
    return dialect.identifier_preparer.quote(name)


@lru_cache(maxsize=128)
def _insert(
    dialect: Dialect,
    table: Table,
    columns: tuple[str, ...],
    same: tuple[str, ...],
    returning: tuple[str, ...],
) -> _Insert:
    mark = _MARKS[dialect.paramstyle]
    names = (*columns, *same)
    unknown = [n for n in names if n not in table.c]
    if unknown:
        raise KeyError(f"{table.name} has no column(s) {', '.join(unknown)}")
    # a column left out would get its Python-side default from Core's insert(), never from here
    missing = [c.name for c in table.c if c.default is not None and c.name not in names]
    if missing:
        raise ValueError(f"{table.name}: give {', '.join(missing)} (Core would fill in their defaults)")
    tname = dialect.identifier_preparer.format_table(table)
    head = f"INSERT INTO {tname} ({', '.join(_quote(dialect, table, n) for n in names)}) VALUES "
    tail = (
        " RETURNING " + ", ".join(f"{tname}.{_quote(dialect, table, n)}" for n in returning)
        if returning
        else ""
    )
    convert = tuple((i, p) for i, n in enumerate(columns) if (p := _processor(dialect, table, n)) is not None)
    per_page = max(
        1, min(dialect.insertmanyvalues_page_size, dialect.insertmanyvalues_max_parameters // len(names))
    )
    return _Insert(
        head,
        "(" + ", ".join([mark] * len(names)) + ")",
        tail,
        convert,
        tuple(_processor(dialect, table, n) for n in same),
        per_page,
    )


def insert(
    conn: Connection,
    table: Table,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    same: Mapping[str, Any] | None = None,
    returning: Sequence[str] = (),
) -> list[tuple[Any, ...]]:
    """Insert `rows` (tuples in the order of `columns`), each followed by the values of `same`;
    the `returning` columns of every inserted row (in no promised order) when asked for."""
    same = same or {}
    stmt = _insert(conn.dialect, table, tuple(columns), tuple(same), tuple(returning))
    shared = tuple(v if p is None else p(v) for p, v in zip(stmt.same_convert, same.values(), strict=True))
    out: list[tuple[Any, ...]] = []
    for start in range(0, len(rows), stmt.per_page):
        page = rows[start : start + stmt.per_page]
        flat: list[Any] = []
        for row in page:
            if stmt.convert:
                row = list(row)
                for i, p in stmt.convert:
                    row[i] = p(row[i])
            flat += row
            flat += shared
        sql = stmt.head + ", ".join([stmt.one] * len(page)) + stmt.tail
        result = conn.exec_driver_sql(sql, tuple(flat))
        if stmt.tail:
            out += [tuple(r) for r in result]
    return out


@dataclass(frozen=True)
class Update:
    """`UPDATE table SET … WHERE …`; a row's parameters are its SET values then its WHERE values,
    with the values shared by every row (`same`) between them."""

    sql: str
    n_set: int
    convert: tuple[tuple[int, Processor], ...]  # (position in a row, the column's bind processor)
    same_convert: tuple[Processor | None, ...]

    def run(self, conn: Connection, rows: Sequence[Sequence[Any]], same: Sequence[Any] = ()) -> int:
        """One statement, or executemany for several rows; the number of rows matched in all
        (both drivers sum it over an executemany)."""
        shared = tuple(v if p is None else p(v) for p, v in zip(self.same_convert, same, strict=True))
        params = []
        for row in rows:
            if self.convert:
                row = list(row)
                for i, p in self.convert:
                    row[i] = p(row[i])
            params.append((*row[: self.n_set], *shared, *row[self.n_set :]))
        if len(params) == 1:
            return int(conn.exec_driver_sql(self.sql, params[0]).rowcount)
        return int(conn.exec_driver_sql(self.sql, params).rowcount)


@lru_cache(maxsize=128)
def update(
    dialect: Dialect,
    table: Table,
    set_columns: tuple[str, ...],
    where_columns: tuple[str, ...],
    *,
    same: tuple[str, ...] = (),
    set_null: tuple[str, ...] = (),
    where_literals: tuple[tuple[str, str], ...] = (),
) -> Update:
    """`UPDATE table SET c = ?, …, s = ?, …, n = NULL, … WHERE w = ? AND … AND l = 'literal' …`
    (`c`: `set_columns`, `s`: `same`, `w`: `where_columns`). Literals are plain words (a status),
    written into the SQL text."""
    mark = _MARKS[dialect.paramstyle]
    tname = dialect.identifier_preparer.format_table(table)

    def q(n: str) -> str:
        if n not in table.c:
            raise KeyError(f"{table.name} has no column {n}")
        return _quote(dialect, table, n)

    for _n, word in where_literals:
        if not word.isidentifier():
            raise ValueError(f"not a plain word: {word!r}")
    sets = [f"{q(n)}={mark}" for n in (*set_columns, *same)] + [f"{q(n)}=NULL" for n in set_null]
    conds = [f"{tname}.{q(n)} = {mark}" for n in where_columns]
    conds += [f"{tname}.{q(n)} = '{word}'" for n, word in where_literals]
    procs = [_processor(dialect, table, n) for n in (*set_columns, *where_columns)]
    return Update(
        f"UPDATE {tname} SET {', '.join(sets)} WHERE {' AND '.join(conds)}",
        len(set_columns),
        tuple((i, p) for i, p in enumerate(procs) if p is not None),
        tuple(_processor(dialect, table, n) for n in same),
    )
