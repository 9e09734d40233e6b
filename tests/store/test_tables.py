"""Each table is declared once, in Core (`store.tables`); the ORM classes of `store.models` map onto
those very `Table` objects (issue 31 §1), and the migrations build exactly those tables, on SQLite
and PostgreSQL: columns, nullability, keys, foreign keys with their ON DELETE, unique constraints,
indexes and check constraints, by name. A column added to `store.tables` and not to a migration
(or the other way round) fails here."""

from __future__ import annotations

import types
import typing
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    DateTime,
    Engine,
    Float,
    Integer,
    String,
    Table,
    UniqueConstraint,
    inspect,
)
from sqlalchemy.orm import Mapped

from judgepanel.store import migrate, models, tables


def _mapped_classes() -> dict[str, type[models.Base]]:
    return {models.table_of(m.class_).name: m.class_ for m in models.Base.registry.mappers}


def test_the_orm_maps_onto_the_one_definition() -> None:
    assert models.Base.metadata is tables.metadata
    classes = _mapped_classes()
    assert sorted(classes) == sorted(tables.metadata.tables)  # one class per table, no table without
    for name, cls in classes.items():
        assert cls.__table__ is tables.metadata.tables[name], name
        # every column of the table is mapped, including one no annotation names
        assert set(inspect(cls).columns.keys()) == set(tables.metadata.tables[name].c.keys()), name


def _python_type(column: Any) -> tuple[type, ...]:
    for kind, py in (
        (Boolean, (bool,)),
        (DateTime, (datetime,)),
        (Integer, (int,)),
        (Float, (float,)),
        (JSON, (dict, list)),
        (String, (str,)),  # Text is a String
    ):
        if isinstance(column.type, kind):
            return py
    raise AssertionError(f"no Python type known for {column.type!r}")


def test_the_typing_annotations_agree_with_the_columns() -> None:
    """`Mapped[...]` on a model only types a column for mypy: it must name a column of the table,
    with its Python type, `| None` exactly where the column is nullable."""
    for name, cls in _mapped_classes().items():
        table = tables.metadata.tables[name]
        hints = typing.get_type_hints(cls, vars(models))
        annotated = {k: v for k, v in hints.items() if typing.get_origin(v) is Mapped}
        assert annotated, name
        for attr, hint in annotated.items():
            assert attr in table.c, f"{name}.{attr} is annotated but is no column"
            (inner,) = typing.get_args(hint)
            args = typing.get_args(inner) if isinstance(inner, types.UnionType) else (inner,)
            optional = type(None) in args
            col = table.c[attr]
            assert optional == bool(col.nullable), f"{name}.{attr}: `| None` must match nullable"
            (py,) = [a for a in args if a is not type(None)]
            assert (typing.get_origin(py) or py) in _python_type(col), f"{name}.{attr}: {py} for {col.type!r}"


def _reflected(engine: Engine, table: Table) -> dict[str, object]:
    insp = inspect(engine)
    name = table.name
    return {
        "columns": sorted((c["name"], bool(c["nullable"])) for c in insp.get_columns(name)),
        "primary key": sorted(insp.get_pk_constraint(name)["constrained_columns"]),
        "foreign keys": sorted(
            (
                tuple(fk["constrained_columns"]),
                fk["referred_table"],
                tuple(fk["referred_columns"]),
                (fk.get("options") or {}).get("ondelete"),
            )
            for fk in insp.get_foreign_keys(name)
        ),
        "unique": sorted((u["name"], tuple(u["column_names"])) for u in insp.get_unique_constraints(name)),
        "indexes": sorted(
            (ix["name"], tuple(ix["column_names"]), bool(ix["unique"]))
            for ix in insp.get_indexes(name)
            if not ix.get("duplicates_constraint")  # PostgreSQL's index behind a unique constraint
            and not str(ix["name"]).startswith(migrate.SEARCH_INDEXES)  # full-text indexes: no model
        ),
        "checks": sorted(str(c["name"]) for c in insp.get_check_constraints(name)),
    }


def _declared(table: Table) -> dict[str, object]:
    uniques = [c for c in table.constraints if isinstance(c, UniqueConstraint)]
    return {
        "columns": sorted((c.name, bool(c.nullable)) for c in table.columns),
        "primary key": sorted(c.name for c in table.primary_key.columns),
        "foreign keys": sorted(
            (
                tuple(c.name for c in fk.columns),
                fk.referred_table.name,
                tuple(e.column.name for e in fk.elements),
                fk.ondelete,
            )
            for fk in table.foreign_key_constraints
        ),
        "unique": sorted((str(u.name), tuple(c.name for c in u.columns)) for u in uniques),
        "indexes": sorted(
            (str(ix.name), tuple(c.name for c in ix.columns), bool(ix.unique)) for ix in table.indexes
        ),
        "checks": sorted(str(c.name) for c in table.constraints if isinstance(c, CheckConstraint)),
    }


def test_the_migrations_build_the_declared_tables(engine: Engine) -> None:
    # the full-text search tables of migration 0010_search (and SQLite's shadow tables of them)
    # are read by store.find and are no model
    present = {t for t in inspect(engine).get_table_names() if not t.startswith(migrate.SEARCH_INDEXES)} - {
        "alembic_version"
    }
    # store.tables and the annotation queues' Core tables (store.annotation_tables, no ORM class)
    declared = {name: t for m in migrate.all_metadata() for name, t in m.tables.items()}
    assert set(tables.metadata.tables) < set(declared)
    assert present == set(declared)
    for name, table in declared.items():
        assert _reflected(engine, table) == _declared(table), name
    assert migrate.drift(engine) == []  # and column types, as Alembic compares them
