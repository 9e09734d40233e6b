"""`request.output_schema` is SQL NULL where no schema was sent (free-text replies), so
`output_schema IS NULL` finds those requests on both backends; migration 0005_wire turns the JSON
`null` values stored before into SQL NULL, and adds `response.queued_ms` (up and down)."""

from __future__ import annotations

from sqlalchemy import func, select, text

from judgepanel.store import migrate
from judgepanel.store.models import Request, Response
from tests.helpers import cli
from tests.runner.conftest import create_argv, tiny_db


def _counts(eng) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    with eng.connect() as conn:
        nulls = conn.execute(text("SELECT count(*) FROM request WHERE output_schema IS NULL")).scalar()
        total = conn.execute(select(func.count()).select_from(Request)).scalar()
    return int(nulls or 0), int(total or 0)


def test_no_schema_is_sql_null_and_old_json_nulls_are_migrated(db_url: str) -> None:
    eng = tiny_db(db_url, n_groups=1, per_group=2)
    judges = ["sim:free?structured=off", "sim:schema"]
    assert cli(*create_argv("nulls", *judges), db=db_url).code == 0
    assert cli("campaign", "run", "nulls", "--json", db=db_url).json()["done"] == 4
    assert _counts(eng) == (2, 4)  # the two free-text requests, and not the two with a schema
    with eng.connect() as conn:
        schemas = conn.execute(select(Request.output_schema)).scalars().all()
    assert sum(isinstance(s, dict) for s in schemas) == 2

    # rows written before the fix held the JSON value null
    json_null = "'null'::json" if eng.dialect.name == "postgresql" else "'null'"
    with eng.begin() as conn:
        conn.execute(text(f"UPDATE request SET output_schema = {json_null} WHERE output_schema IS NULL"))
    assert _counts(eng) == (0, 4)
    migrate.downgrade(eng, "0004")
    migrate.upgrade(eng)
    assert _counts(eng) == (2, 4)
    with eng.connect() as conn:  # queued_ms came back with the upgrade (empty for the old rows)
        assert (
            conn.execute(
                select(func.count()).select_from(Response).where(Response.queued_ms.is_(None))
            ).scalar()
            == 4
        )
    eng.dispose()
