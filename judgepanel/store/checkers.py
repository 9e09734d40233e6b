"""Clause checkers in the store: the editor's proposals per repair iteration (`clause_checker`),
the kept checkers of a rubric version (read by the runner), and the checker-answered clause
verdicts of a campaign (`clause_verdict.by_checker`). Rows only; nothing is computed here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, delete, func, select

from judgepanel.store.campaigns import campaign_by_name
from judgepanel.store.engine import session_scope
from judgepanel.store.models import (
    Campaign,
    ClauseChecker,
    ClauseVerdict,
    Job,
    RepairIteration,
    Verdict,
    utcnow,
)


@dataclass(frozen=True)
class CheckerRow:
    clause_key: str
    kind: str | None  # None: the editor proposed no checker
    params: dict[str, Any]
    reason: str | None
    error: str | None
    agreement: float | None
    n_items: int
    threshold: float
    kept: bool
    kappa: float | None = None
    lower_bound: float | None = None
    n_met: int | None = None
    n_not_met: int | None = None
    sensitivity: float | None = None
    specificity: float | None = None
    decision: str | None = None  # None: decided by the old agreement-only rule
    decision_reason: str | None = None
    warning: str | None = None
    rule: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "clause": self.clause_key,
            "checker": self.kind or "none",
            "params": dict(self.params),
            "reason": self.reason,
            "error": self.error,
            "agreement": self.agreement,
            "n_items": self.n_items,
            "threshold": self.threshold,
            "kept": self.kept,
            "kappa": self.kappa,
            "lower_bound": self.lower_bound,
            "n_met": self.n_met,
            "n_not_met": self.n_not_met,
            "sensitivity": self.sensitivity,
            "specificity": self.specificity,
            "decision": self.decision,
            "decision_reason": self.decision_reason,
            "warning": self.warning,
            "rule": None if self.rule is None else dict(self.rule),
        }


def store_checkers(
    engine: Engine, iteration: str, rubric_version_id: int, rows: Sequence[CheckerRow]
) -> None:
    """Replace the iteration's proposals by `rows`, in one transaction. A proposal decided as
    before (same checker, parameters and decision) keeps its time stamp: campaigns created since
    it was kept keep using it."""
    with session_scope(engine) as s:
        old = {
            c.clause_key: c
            for c in s.scalars(select(ClauseChecker).where(ClauseChecker.iteration == iteration))
        }
        s.execute(delete(ClauseChecker).where(ClauseChecker.iteration == iteration))
        for r in rows:
            was = old.get(r.clause_key)
            same = was is not None and (was.kind, dict(was.params or {}), was.kept) == (
                r.kind,
                dict(r.params),
                r.kept,
            )
            s.add(
                ClauseChecker(
                    created_at=was.created_at if same and was is not None else utcnow(),
                    iteration=iteration,
                    rubric_version_id=rubric_version_id,
                    clause_key=r.clause_key,
                    kind=r.kind,
                    params=dict(r.params),
                    reason=r.reason,
                    error=r.error,
                    agreement=r.agreement,
                    n_items=r.n_items,
                    threshold=r.threshold,
                    kept=r.kept,
                    kappa=r.kappa,
                    lower_bound=r.lower_bound,
                    n_met=r.n_met,
                    n_not_met=r.n_not_met,
                    sensitivity=r.sensitivity,
                    specificity=r.specificity,
                    decision=r.decision,
                    decision_reason=r.decision_reason,
                    warning=r.warning,
                    rule=None if r.rule is None else dict(r.rule),
                )
            )


def _row(c: ClauseChecker) -> CheckerRow:
    return CheckerRow(
        c.clause_key,
        c.kind,
        dict(c.params or {}),
        c.reason,
        c.error,
        c.agreement,
        c.n_items,
        c.threshold,
        c.kept,
        c.kappa,
        c.lower_bound,
        c.n_met,
        c.n_not_met,
        c.sensitivity,
        c.specificity,
        c.decision,
        c.decision_reason,
        c.warning,
        None if c.rule is None else dict(c.rule),
    )


def iteration_checkers(engine: Engine, iteration: str) -> list[CheckerRow]:
    with session_scope(engine) as s:
        rows = s.scalars(
            select(ClauseChecker).where(ClauseChecker.iteration == iteration).order_by(ClauseChecker.id)
        )
        return [_row(c) for c in rows]


def kept_checkers(
    engine: Engine, rubric_version_id: int, *, campaign: str | None = None
) -> dict[str, CheckerRow]:
    """clause key -> the kept checker for that clause of the rubric version (the latest proposal
    when several iterations kept one). With `campaign`: only checkers kept before the campaign was
    created, and none for a repair iteration's own campaigns (their comparison must ask every
    version the same way)."""
    with session_scope(engine) as s:
        stmt = select(ClauseChecker).where(
            ClauseChecker.rubric_version_id == rubric_version_id, ClauseChecker.kept.is_(True)
        )
        if campaign is not None:
            created = s.scalar(select(Campaign.created_at).where(Campaign.name == campaign))
            if created is None:
                return {}
            for used in s.scalars(select(RepairIteration.campaigns)):
                if campaign in (used or {}).values():
                    return {}
            stmt = stmt.where(ClauseChecker.created_at <= created)
        return {c.clause_key: _row(c) for c in s.scalars(stmt.order_by(ClauseChecker.id))}


def checker_verdict_count(engine: Engine, campaign: str) -> int:
    """Clause verdicts of the campaign's latest verdicts answered by a checker."""
    with session_scope(engine) as s:
        cid = campaign_by_name(s, campaign).id
        return int(
            s.scalar(
                select(func.count(ClauseVerdict.id))
                .join(Verdict, Verdict.id == ClauseVerdict.verdict_id)
                .join(Job, Job.id == Verdict.job_id)
                .where(Job.campaign_id == cid, ClauseVerdict.by_checker.is_(True))
            )
            or 0
        )


def iterations_with_checkers(engine: Engine) -> list[str]:
    """The repair iterations that stored checker proposals, in the order they were first stored."""
    with session_scope(engine) as s:
        rows = s.execute(
            select(ClauseChecker.iteration, func.min(ClauseChecker.id))
            .group_by(ClauseChecker.iteration)
            .order_by(func.min(ClauseChecker.id))
        ).all()
        return [str(name) for name, _ in rows]
