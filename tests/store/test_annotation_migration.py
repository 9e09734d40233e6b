"""Migration 0012_annotation on SQLite and PostgreSQL: down drops the queue tables and keeps every
label (a queue's labels are ordinary labels), up brings the tables back empty, and the schema
matches the Core declaration (`store.annotation_tables`) both times."""

from __future__ import annotations

from sqlalchemy import func, inspect, select

from judgepanel.store import annotation_tables as at
from judgepanel.store import migrate
from judgepanel.store import tables as base
from judgepanel.store.engine import make_engine
from tests.annotate.conftest import make_queue, member
from tests.helpers import load_summeval_sample


def test_annotation_revision_down_and_up(db_url: str) -> None:
    from judgepanel.store import annotation as store

    load_summeval_sample(db_url)
    eng = make_engine(db_url)
    assert migrate.current_revision(eng) == migrate.head_revision(eng)
    before = migrate.script_revisions()["0012_annotation"]  # whatever the annotation revision follows
    assert migrate.drift(eng) == []
    make_queue(eng, items=2, per_item=1)
    a, _ = member(eng, "q", "a")
    slot = store.next_slot(eng, a)
    assert slot is not None
    store.submit(eng, a, slot, value=5)
    with eng.connect() as c:
        labels = c.scalar(select(func.count()).select_from(base.label))
    assert before is not None
    migrate.downgrade(eng, before)
    names = set(inspect(eng).get_table_names())
    assert not names & set(at.metadata.tables)
    with eng.connect() as c:
        assert c.scalar(select(func.count()).select_from(base.label)) == labels  # the queue's label stays
    assert migrate.current_revision(eng) == before
    migrate.upgrade(eng)
    assert set(at.metadata.tables) <= set(inspect(eng).get_table_names())
    with eng.connect() as c:
        assert all(c.scalar(select(func.count()).select_from(t)) == 0 for t in at.metadata.sorted_tables)
    assert migrate.drift(eng) == []
    eng.dispose()
