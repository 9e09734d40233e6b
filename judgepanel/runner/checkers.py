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

What the checkers saved is counted by `analysis.checkers` (`campaign status`).
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import Engine

from judgepanel.protocol.checkers import Checker, CheckerError, validate
from judgepanel.store import checkers as store
from judgepanel.store.campaigns import campaign_clauses
from judgepanel.store.campaigns.records import ClauseRow

Answered = Mapping[str, tuple[tuple[ClauseRow, Checker], ...]]


def clause_plan(
    engine: Engine,
    campaign: str | None,
    rubric_version_id: int | None,
    protocol: str,
    *,
    custom: bool = False,
) -> tuple[dict[str, list[ClauseRow]], dict[str, tuple[tuple[ClauseRow, Checker], ...]]]:
    """(dimension -> the clauses the model is asked, dimension -> the clauses a checker answers).
    `campaign` None: as for a campaign created now (every checker kept so far)."""
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
