"""Issue 30 §3 and issue 34 §1 end to end: on the guides' sample the word-range checker agreed
with the judges at their base rate and was kept; the rule now says it cannot be validated there.
A checker whose kind does not fit its clause is flagged and, answering one way on every item,
never kept. `repair checkers --recheck` re-judges a checker kept by the old rule."""

from __future__ import annotations

from sqlalchemy import create_engine, text

from judgepanel.repair.checkers import CheckerRule, decide, kind_fit_warning
from tests.helpers import cli
from tests.repair.conftest import PANEL_SIM, prepare_db

LENGTH = "The summary's length is between 20 and 120 words."


def test_kind_fit_warning() -> None:
    assert kind_fit_warning("language", {"language": "en"}, LENGTH) is not None
    assert kind_fit_warning("word_count", {"min": 20, "max": 120}, LENGTH) is None
    assert "not the clause's" in (kind_fit_warning("word_count", {"min": 10, "max": 120}, LENGTH) or "")
    assert kind_fit_warning("language", {"language": "en"}, "The summary is written in English.") is None
    assert "not the one the clause names" in (
        kind_fit_warning("language", {"language": "de"}, "The summary is written in English.") or ""
    )
    assert kind_fit_warning("phrase", {"phrases": ["Outcome"]}, "It names 'Outcome'.") is None
    assert kind_fit_warning("word_count", {"max": 40}, "No phrase or sentence is repeated.") is not None
    assert kind_fit_warning(None, {}, LENGTH) is None


def test_a_wrong_kind_that_agrees_at_the_base_rate_is_flagged_and_not_kept() -> None:
    """Issue 34 §1: a real editor mapped the length clause to `language = en`; the judges said met
    on every development item, so it agreed 1.000 and was kept."""
    texts = {
        i: "the council said that the new bridge would open in the spring and the town is glad"
        for i in range(40)
    }
    votes = {i: [True, True, True] for i in range(40)}
    row = decide("format.1", LENGTH, "language", {"language": "en"}, None, texts, votes, CheckerRule())
    assert row.agreement == 1.0 and row.kept is False and row.decision == "cannot be validated"
    assert row.warning is not None and "does not fit" in row.warning
    assert row.n_met == 40 and row.n_not_met == 0


def _k1(db: str) -> None:
    prepare_db(db)
    assert cli("rubric", "add", "summeval_format", db=db).code == 0
    args = ["repair", "run", "k1", "--dataset", "se", "--rubric", "summeval_format", "--editor", "sim:editor"]
    for j in PANEL_SIM:
        args += ["--judge", j]
    args += ["--dimension", "format", "--limit", "12", "--control-seed", "7", "--stop-after", "dev"]
    assert cli(*args, db=db).code == 0


def test_the_guides_word_range_checker_cannot_be_validated_and_recheck_drops_an_old_keep(
    sqlite_url: str,
) -> None:
    _k1(sqlite_url)
    out = cli("repair", "checkers", "k1", "--json", db=sqlite_url).json()
    row = {r["clause"]: r for r in out["checkers"]}["format.1"]
    # the old rule kept it: agreement >= 0.9 on the 12 development items
    assert row["agreement"] >= 0.9 and row["kept"] is False and row["decision"] == "cannot be validated"
    assert "the judges say 'met' on" in row["decision_reason"] and out["kept"] == 0
    text_out = cli("repair", "checkers", "k1", db=sqlite_url)
    assert "cannot be validated on these items" in text_out.stdout
    # a checker kept by the old agreement-only rule (before migration 0010), re-judged on request
    eng = create_engine(sqlite_url)
    with eng.begin() as c:
        c.execute(
            text(
                "UPDATE clause_checker SET kept = 1, decision = NULL, kappa = NULL, decision_reason = NULL "
                "WHERE clause_key = 'format.1'"
            )
        )
    eng.dispose()
    again = cli("repair", "checkers", "--recheck", "--json", db=sqlite_url).json()
    assert again["dropped"] == 1 and again["kept"] == 0
    (it,) = again["rechecked"]
    assert it["iteration"] == "k1" and it["dropped"] == ["format.1"]
    assert {r["clause"]: r["decision"] for r in it["checkers"]}["format.1"] == "cannot be validated"
    st = cli("campaign", "status", "k1-checkers", "--json", db=sqlite_url).json()
    assert st["calls"] == 5  # --recheck asks the editor nothing
    bad = cli("repair", "checkers", "--json", db=sqlite_url)
    assert bad.code == 2 and "needs the iteration's NAME" in bad.stderr
    none = cli("repair", "checkers", "nope", "--recheck", db=sqlite_url)
    assert none.code == 2 and none.stderr.count("\n") == 1
