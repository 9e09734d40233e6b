"""`store.tables` (Core, loaded without the ORM) mirrors `store.models` exactly: the same CREATE
TABLE and CREATE INDEX statements on SQLite and PostgreSQL, the same Python-side defaults. A column
added to a model and not to the tables fails here, before a read path could miss it."""

from __future__ import annotations

import pytest
from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.schema import CreateIndex, CreateTable

from judgepanel.store import models, tables


def _ddl(table: Table, dialect: object) -> list[str]:
    statements = [str(CreateTable(table).compile(dialect=dialect))]  # type: ignore[arg-type]
    statements += sorted(str(CreateIndex(ix).compile(dialect=dialect)) for ix in table.indexes)  # type: ignore[arg-type]
    return [_unordered(" ".join(s.split())) for s in statements]


def _unordered(statement: str) -> str:
    """The statement with its table constraints sorted (their order in a set is arbitrary)."""
    head, *constraints = statement.removesuffix(" )").split(", CONSTRAINT ")
    return ", CONSTRAINT ".join([head, *sorted(constraints)])


def test_the_same_tables() -> None:
    assert sorted(tables.metadata.tables) == sorted(models.Base.metadata.tables)


@pytest.mark.parametrize("dialect", [sqlite.dialect(), postgresql.dialect()], ids=["sqlite", "postgresql"])
def test_the_same_ddl(dialect: object) -> None:
    for name, orm_table in models.Base.metadata.tables.items():
        assert _ddl(tables.metadata.tables[name], dialect) == _ddl(orm_table, dialect), name


def test_the_same_defaults_and_constraint_names() -> None:
    for name, orm_table in models.Base.metadata.tables.items():
        core = tables.metadata.tables[name]
        for col in orm_table.columns:
            mine = core.c[col.name]
            assert repr(mine.type) == repr(col.type), (name, col.name)  # e.g. JSON(none_as_null=True)
            assert (mine.default is None) == (col.default is None), (name, col.name)
            if col.default is not None and mine.default is not None:
                ours, theirs = mine.default.arg, col.default.arg  # type: ignore[attr-defined]
                same = (
                    ours is theirs
                    or ours == theirs
                    or getattr(ours, "__name__", 1) == getattr(theirs, "__name__", 2)
                )
                assert same, (name, col.name)
        names = {str(c.name) for c in orm_table.constraints if c.name is not None}
        assert {str(c.name) for c in core.constraints if c.name is not None} == names, name
