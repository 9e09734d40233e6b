"""What a user can select from: every table and column of the results database with one line of
meaning, read from the schema itself (`doc=` on each column in `store.tables`, the first paragraph
of the docstring of the model mapped onto each table), so the description cannot drift from it.

`judgepanel query --schema` prints it (table, JSON or Markdown); the Markdown form is the
database page of the documentation. A test checks that every table and column has its line.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy import JSON, Boolean, DateTime, Float, Integer, String, Text
from sqlalchemy.sql.schema import Column as SAColumn
from sqlalchemy.types import TypeEngine

from judgepanel.store.models import Base, table_of


@dataclass(frozen=True)
class ColumnDoc:
    name: str
    type: str
    nullable: bool
    references: str | None  # "table.column" for a foreign key
    doc: str


@dataclass(frozen=True)
class TableDoc:
    name: str
    doc: str
    columns: tuple[ColumnDoc, ...]

    def as_dict(self) -> dict[str, object]:
        return {
            "table": self.name,
            "doc": self.doc,
            "columns": [
                {
                    "name": c.name,
                    "type": c.type,
                    "nullable": c.nullable,
                    "references": c.references,
                    "doc": c.doc,
                }
                for c in self.columns
            ],
        }


def _type_name(t: TypeEngine[object]) -> str:
    """A portable name for the column type (both backends store the same kinds of value)."""
    for kind, name in (
        (Boolean, "boolean"),
        (DateTime, "timestamp (UTC)"),
        (Integer, "integer"),
        (Float, "real"),
        (JSON, "json"),
        (Text, "text"),
        (String, "text"),
    ):
        if isinstance(t, kind):
            length = getattr(t, "length", None)
            return f"text ≤ {length}" if kind is String and length else name
    return str(t).lower()


def _first_paragraph(text: str | None) -> str:
    para = (text or "").strip().split("\n\n", 1)[0]
    return " ".join(para.split())


def _column(col: SAColumn[object]) -> ColumnDoc:
    fk = next(iter(col.foreign_keys), None)
    return ColumnDoc(
        name=col.name,
        type=_type_name(col.type),
        nullable=bool(col.nullable),
        references=None if fk is None else f"{fk.column.table.name}.{fk.column.name}",
        doc=" ".join((col.doc or "").split()),
    )


def tables() -> list[TableDoc]:
    """Every table, in the order `store.tables` declares them (data, rubrics, campaigns, repair,
    planning, scale), then the annotation queues' (`store.annotation_tables`, Core only, described
    by their `info["doc"]`)."""
    from judgepanel.store.annotation_tables import metadata as annotation

    docs = {table_of(m.class_).name: _first_paragraph(m.class_.__doc__) for m in Base.registry.mappers}
    docs |= {t.name: _first_paragraph(t.info.get("doc")) for t in annotation.tables.values()}
    return [
        TableDoc(t.name, docs.get(t.name, ""), tuple(_column(c) for c in t.columns))
        for t in [*Base.metadata.tables.values(), *annotation.tables.values()]
    ]


def markdown() -> str:
    """The schema as a Markdown page: one section per table, one row per column."""
    out = [
        "# The results database",
        "",
        "Every table and column `judgepanel query` can select from, generated from the models "
        "(`judgepanel query --schema --format md`). Times are UTC; JSON columns come back as text "
        "on SQLite and parsed on PostgreSQL.",
    ]
    for t in tables():
        out += ["", f"## `{t.name}`", "", t.doc, "", "| column | type | meaning |", "|---|---|---|"]
        for c in t.columns:
            kind = c.type + ("" if c.nullable else ", not null")
            ref = f" → `{c.references}`" if c.references else ""
            meaning = c.doc.replace("|", "\\|")
            out.append(f"| `{c.name}` | {kind}{ref} | {meaning} |")
    return "\n".join(out) + "\n"


def missing_docs() -> Iterator[str]:
    """`table` or `table.column` for each table or column without its line of meaning."""
    for t in tables():
        if not t.doc:
            yield t.name
        yield from (f"{t.name}.{c.name}" for c in t.columns if not c.doc)
