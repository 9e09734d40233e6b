"""`judgepanel query --schema`: every table and column a user can select from, with one line of
meaning each, generated from the models (issue 19 §6)."""

from __future__ import annotations

from sqlalchemy import inspect

from judgepanel.store import migrate, schema_doc
from judgepanel.store.engine import make_engine
from tests.helpers import cli


def test_every_table_and_column_has_its_line() -> None:
    assert list(schema_doc.missing_docs()) == []
    described = {(t.name, c.name) for t in schema_doc.tables() for c in t.columns}
    modelled = {
        (t.name, c.name) for m in migrate.all_metadata() for t in m.tables.values() for c in t.columns
    }
    assert described == modelled
    assert {"label", "annotation_queue", "annotation_event"} <= {t.name for t in schema_doc.tables()}


def test_schema_lists_what_the_database_has(db_url: str) -> None:
    assert cli("db", "upgrade", db=db_url).code == 0
    eng = make_engine(db_url)
    try:
        insp = inspect(eng)
        actual = {
            (t, c["name"])
            for t in insp.get_table_names()
            # the full-text indexes (migration 0010_search) are no table a user selects from
            if t != "alembic_version" and not t.startswith(migrate.SEARCH_INDEXES)
            for c in insp.get_columns(t)
        }
    finally:
        eng.dispose()
    got = cli("query", "--schema", "--json", db=db_url).json()
    listed = {(t["table"], c["name"]) for t in got["tables"] for c in t["columns"]}
    assert listed == actual
    assert all(t["doc"] and all(c["doc"] for c in t["columns"]) for t in got["tables"])
    job = next(t for t in got["tables"] if t["table"] == "job")
    pair_id = next(c for c in job["columns"] if c["name"] == "pair_id")
    assert pair_id["references"] == "pair.id" and pair_id["nullable"] is True


def test_table_and_markdown_forms() -> None:
    r = cli("query", "--schema")
    assert r.code == 0, r.stderr
    assert "verdict" in r.stdout and "value_canonical" in r.stdout
    md = cli("query", "--schema", "--format", "md")
    assert md.code == 0 and md.stdout == schema_doc.markdown()
    assert md.stdout.count("\n## `") == sum(len(m.tables) for m in migrate.all_metadata())
    r = cli("query", "--schema", "--format", "csv")
    assert r.code == 2 and "table, json, md" in r.stderr


def test_the_docs_schema_reference_is_what_query_schema_prints() -> None:
    """docs/database.md carries the generated reference between two markers: a column added to the
    models without regenerating it fails here (regenerate with `judgepanel query --schema --format md`,
    headings one level down)."""
    import re

    from judgepanel.store import schema_doc
    from tests.conftest import REPO

    page = (REPO / "docs" / "database.md").read_text(encoding="utf-8")
    shown = (
        page.split("<!-- schema-reference:begin", 1)[1]
        .split("\n", 1)[1]
        .split("<!-- schema-reference:end -->")[0]
    )
    generated = schema_doc.markdown().split("\n", 1)[1].strip()
    generated = "\n".join("#" + ln if re.match(r"^#+ ", ln) else ln for ln in generated.split("\n"))
    assert shown.strip() == generated
