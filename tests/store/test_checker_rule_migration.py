"""Migration 0011_checker_rule on SQLite and PostgreSQL: one step down drops the rule's columns
of `clause_checker` and keeps its proposals; up again brings them back NULL (a proposal decided
by the old agreement-only rule, to be re-judged by `repair checkers --recheck`)."""

from __future__ import annotations

from sqlalchemy import inspect, text

from judgepanel.rubrics import bundled_rubric
from judgepanel.store import migrate
from judgepanel.store.engine import make_engine
from judgepanel.store.models import ClauseChecker
from judgepanel.store.rubrics import add_rubric
from tests.helpers import load_summeval_sample

RULE = {
    "kappa",
    "lower_bound",
    "n_met",
    "n_not_met",
    "sensitivity",
    "specificity",
    "decision",
    "decision_reason",
    "warning",
    "rule",
}


def test_checker_rule_revision_down_and_up(db_url: str) -> None:
    load_summeval_sample(db_url)
    eng = make_engine(db_url)
    assert migrate.current_revision(eng) == migrate.head_revision(eng)
    columns = {c["name"] for c in inspect(eng).get_columns("clause_checker")}
    assert columns == {c.name for c in ClauseChecker.__table__.columns} and columns >= RULE
    add_rubric(eng, bundled_rubric("summeval_format"))  # a rubric version the proposal belongs to
    with eng.begin() as c:
        c.execute(
            text(
                "INSERT INTO clause_checker (iteration, rubric_version_id, clause_key, kind, params, "
                "agreement, n_items, threshold, kept, created_at, kappa, decision) "
                "SELECT 'k1', id, 'format.1', 'word_count', '{}', 1.0, 16, 0.9, true, CURRENT_TIMESTAMP, "
                "0.5, 'kept' FROM rubric_version"
            )
        )
    migrate.downgrade(eng, "0010_search")
    assert migrate.current_revision(eng) == "0010_search"
    assert not RULE & {c["name"] for c in inspect(eng).get_columns("clause_checker")}
    with eng.connect() as c:
        assert c.execute(text("SELECT clause_key, kept FROM clause_checker")).one() == ("format.1", True)
    migrate.upgrade(eng)
    with eng.connect() as c:
        row = c.execute(text("SELECT kappa, decision, rule FROM clause_checker")).one()
    assert tuple(row) == (None, None, None)
    assert migrate.drift(eng) == []
    eng.dispose()
