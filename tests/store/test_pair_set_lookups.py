"""One home for the pair-set look-ups (`store.lookups`): `store.queries` re-exports them, and
the Core implementation keeps the ORM semantics its writers relied on — a session's pending
changes are seen (autoflush), as `session.get(Dataset, …)` saw them."""

from __future__ import annotations

from sqlalchemy import Engine, select

from judgepanel.store import lookups, queries
from judgepanel.store.engine import session_scope
from judgepanel.store.models import Annotator, Dataset, PairSet
from tests.helpers import cli, load_summeval_sample


def test_queries_share_the_lookups_implementation() -> None:
    for name in ("scored_annotators", "stale_annotators", "check_pair_set_current"):
        assert getattr(queries, name) is getattr(lookups, name)


def test_pending_orm_changes_are_seen_by_the_core_lookups(db_url: str) -> None:
    load_summeval_sample(db_url)
    assert cli("data", "pairs", "se", "--name", "p", "--sample", "5", db=db_url).code == 0
    from judgepanel.store.engine import make_engine

    engine: Engine = make_engine(db_url)
    try:
        with session_scope(engine) as s:
            ds = s.scalar(select(Dataset).where(Dataset.name == "se"))
            ps = s.scalar(select(PairSet).where(PairSet.name == "p"))
            assert ds is not None and ps is not None
            scored = lookups.scored_annotators(s, ds.id)
            assert len(scored) == 8 and lookups.stale_annotators(s, ps) == []
            # a pending (unflushed) record that leaves out the first annotator: stale at once
            first = s.scalar(select(Annotator.name).where(Annotator.id == scored[0]))
            queries.record_pair_set(ds, ps.id, scored[1:])
            assert lookups.stale_annotators(s, ps) == [first]
            # and back: current again, before anything is flushed
            queries.record_pair_set(ds, ps.id, scored)
            assert lookups.stale_annotators(s, ps) == []
            s.rollback()
        with engine.connect() as conn:  # a Connection reads the same
            row = lookups.pair_set_row(conn, "p")
            assert lookups.stale_annotators(conn, row) == []
    finally:
        engine.dispose()
