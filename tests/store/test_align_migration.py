"""Migration 0008_align on SQLite and PostgreSQL: one step down removes the `alignment` table and
keeps a stored alignment's dataset; up again brings the table back, empty, with every column."""

from __future__ import annotations

from sqlalchemy import inspect, text

from judgepanel.store import migrate
from judgepanel.store.engine import make_engine
from judgepanel.store.models import Alignment
from tests.helpers import load_summeval_sample


def test_align_revision_down_and_up(db_url: str) -> None:
    load_summeval_sample(db_url)  # migrates, and gives the alignment a dataset
    eng = make_engine(db_url)
    assert migrate.current_revision(eng) == migrate.head_revision(eng)
    cols = {c["name"] for c in inspect(eng).get_columns("alignment")}
    assert cols == {c.name for c in Alignment.__table__.columns}
    with eng.begin() as c:
        c.execute(
            text(
                "INSERT INTO alignment (name, dataset_id, method, inputs, steps, campaigns, created_at, updated_at) "
                "SELECT 'a', id, 'fewshot', '{}', '{}', '{}', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP FROM dataset"
            )
        )
    migrate.downgrade(eng, "0007_checkers")
    assert "alignment" not in inspect(eng).get_table_names()
    assert migrate.current_revision(eng) == "0007_checkers"
    with eng.connect() as c:
        assert c.execute(text("SELECT count(*) FROM dataset")).scalar_one() == 1
    migrate.upgrade(eng)
    with eng.connect() as c:
        assert c.execute(text("SELECT count(*) FROM alignment")).scalar_one() == 0
    assert migrate.drift(eng) == []
    eng.dispose()
