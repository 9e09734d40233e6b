"""Kept clause checkers in a clause campaign (issue 18 §2).

A checker kept by `repair checkers` for a clause of rubric version V answers that clause in every
clause campaign on V created after it was kept without a model call (campaigns created earlier,
and a repair iteration's own campaigns, ask every clause as before — a resumed campaign does not
change how it asks, and a repair comparison asks every version alike): the clause is left out of the request (prompt,
schema, parse and output cap all see only the clauses still asked) and its verdict is computed
from the candidate text and stored with the judge's verdict, marked `by_checker`. When every clause
of a dimension has a kept checker the dimension is asked as before (a request cannot be empty) and
the checkers are not used for it. Campaigns with a custom template are not changed either (the
template decides what it shows).

The cost saved is an estimate: each reply's cost times the share of its clauses the checkers
removed, k / n (k clauses answered by checkers, n still asked), i.e. the cost of the same request
with k more clauses, assuming cost grows in proportion to the number of clauses asked (output
tokens are per clause; the prompt's shared part makes this an upper bound).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import Engine

from judgepanel.protocol.checkers import Checker, CheckerError, validate
from judgepanel.store import checkers as store
from judgepanel.store.campaigns import campaign_clauses
from judgepanel.store.campaigns.records import ClauseRow

Answered = Mapping[str, tuple[tuple[ClauseRow, Checker], ...]]


def clause_plan(
    engine: Engine, campaign: str, rubric_version_id: int | None, protocol: str, *, custom: bool = False
) -> tuple[dict[str, list[ClauseRow]], dict[str, tuple[tuple[ClauseRow, Checker], ...]]]:
    """(dimension -> the clauses the model is asked, dimension -> the clauses a checker answers)."""
    clauses = campaign_clauses(engine, rubric_version_id)
    if protocol != "clauses" or custom or rubric_version_id is None:
        return clauses, {}
    kept = store.kept_checkers(engine, rubric_version_id, campaign=campaign)
    if not kept:
        return clauses, {}
    asked: dict[str, list[ClauseRow]] = {}
    answered: dict[str, tuple[tuple[ClauseRow, Checker], ...]] = {}
    for dim, rows in clauses.items():
        by_checker: list[tuple[ClauseRow, Checker]] = []
        rest: list[ClauseRow] = []
        for r in rows:
            k = kept.get(r.clause_key)
            try:
                checker = validate(k.kind, k.params) if k is not None and k.kind else None
            except CheckerError:
                checker = None
            if checker is None:
                rest.append(r)
            else:
                by_checker.append((r, checker))
        if by_checker and rest:
            asked[dim], answered[dim] = rest, tuple(by_checker)
        else:
            asked[dim] = rows
    return asked, answered


@dataclass(frozen=True)
class CheckerUse:
    checker_verdicts: int
    cost_saved_usd: float | None  # None when a reply was not priced

    def as_dict(self) -> dict[str, object]:
        return {"checker_verdicts": self.checker_verdicts, "checker_cost_saved_usd": self.cost_saved_usd}


def saved_estimate(rows: Sequence[tuple[int, int, float | None]]) -> CheckerUse:
    """From (checker-answered, still asked, reply cost) per verdict: the method in the docstring."""
    total = sum(k for k, _n, _c in rows)
    saved: float | None = 0.0
    for k, n, cost in rows:
        if cost is None:
            saved = None
            break
        assert saved is not None
        saved += cost * k / max(n, 1)
    return CheckerUse(total, None if saved is None else round(saved, 6))


def checker_use(engine: Engine, campaign: str) -> CheckerUse:
    return saved_estimate(store.checker_job_rows(engine, campaign))
