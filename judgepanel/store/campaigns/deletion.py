"""`campaign delete NAME`: remove one campaign and every row that belongs only to it, in one
transaction, or nothing.

Belongs to the campaign: its jobs, their requests, responses, verdicts and clause verdicts, its
provider batches and their job rows, its budget holds, and its judge links. Shared rows stay: judges, datasets,
pair sets, rubric versions. Refused (one line, nothing deleted) while

- a job is leased (`running` under a lease that has not expired: a worker, a run or an open
  provider batch is working on it and would write into rows that are gone, or pay for an answer
  that is then lost);
- another campaign reuses answers stored under this one (the store's request cache points at them,
  and a copied answer keeps only its link to the original's body);
- a repair iteration or an alignment names the campaign as one of its steps (its status, stored
  comparison and `align compare --repair` would read a campaign that is gone); `force=True`
  deletes those records too (the repair iteration with its clause checkers, the alignment), in the
  same transaction. Their other campaigns stay, as ordinary campaigns.

Rows are deleted child-first with explicit statements rather than through `ON DELETE CASCADE`, so
the counts reported are exact and the order is the same on SQLite and PostgreSQL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import Engine, delete, func, or_, select, update

from judgepanel.errors import BadInput
from judgepanel.store.campaigns.planning import campaign_by_name
from judgepanel.store.engine import session_scope
from judgepanel.store.models import (
    Alignment,
    BudgetHold,
    Campaign,
    CampaignJudge,
    ClauseChecker,
    ClauseVerdict,
    Job,
    ProviderBatch,
    ProviderBatchJob,
    RepairIteration,
    Request,
    Response,
    Verdict,
    utcnow,
)

if TYPE_CHECKING:
    from sqlalchemy import CursorResult


@dataclass(frozen=True)
class Deleted:
    campaign: str
    rows: dict[str, int]  # table -> rows deleted

    def as_dict(self) -> dict[str, Any]:
        return {"campaign": self.campaign, "deleted": dict(self.rows), "total": sum(self.rows.values())}


@dataclass(frozen=True)
class Dependants:
    """The records that name a campaign as one of their steps."""

    repair_iterations: tuple[str, ...]
    alignments: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.repair_iterations or self.alignments)

    def describe(self) -> str:
        parts = []
        if self.repair_iterations:
            parts.append(f"repair iteration(s) {', '.join(self.repair_iterations)}")
        if self.alignments:
            parts.append(f"alignment(s) {', '.join(self.alignments)}")
        return " and ".join(parts)


def _dependants(s: Any, name: str) -> Dependants:
    def using(model: Any) -> tuple[str, ...]:
        return tuple(
            sorted(
                n
                for n, camps in s.execute(select(model.name, model.campaigns))
                if name in (camps or {}).values()
            )
        )

    return Dependants(using(RepairIteration), using(Alignment))


def campaign_dependants(engine: Engine, name: str) -> Dependants:
    """The repair iterations and alignments that use campaign `name` (NotFound without it)."""
    with session_scope(engine) as s:
        campaign_by_name(s, name)
        return _dependants(s, name)


def delete_campaign(engine: Engine, name: str, *, force: bool = False) -> Deleted:
    """Delete campaign `name` and its rows (module docstring), or raise `BadInput` / `NotFound`;
    `force` deletes the repair iterations and alignments that use it too."""
    with session_scope(engine) as s:
        camp = campaign_by_name(s, name)
        cid = camp.id
        # lock the campaign row first (PostgreSQL): a worker leasing jobs now waits or sees it gone
        s.execute(select(Campaign.id).where(Campaign.id == cid).with_for_update())
        jobs = select(Job.id).where(Job.campaign_id == cid)
        leased = s.scalar(
            select(func.count())
            .select_from(Job)
            .where(
                Job.campaign_id == cid,
                Job.status == "running",
                or_(Job.lease_expires.is_(None), Job.lease_expires > utcnow()),
            )
        )
        if leased:
            raise BadInput(
                f"campaign {name!r} has {leased} leased job(s): a run, worker or provider batch is working on it; "
                "stop it (or let `campaign run NAME --batch` collect open batches) and try again"
            )
        requests = select(Request.id).where(Request.job_id.in_(jobs))
        responses = select(Response.id).where(Response.request_id.in_(requests))
        reusers = sorted(
            set(
                s.scalars(
                    select(Campaign.name)
                    .join(Job, Job.campaign_id == Campaign.id)
                    .join(Request, Request.job_id == Job.id)
                    .join(Response, Response.request_id == Request.id)
                    .where(Response.cached_from.in_(responses), Campaign.id != cid)
                ).all()
            )
        )
        if reusers:
            raise BadInput(
                f"campaign(s) {', '.join(reusers)} reuse answers stored under {name!r} (the request cache): "
                "delete those first"
            )
        users = _dependants(s, name)
        if users and not force:
            raise BadInput(
                f"{users.describe()} use campaign {name!r}; it is kept "
                f"(`campaign delete {name} --force` deletes them too)"
            )

        verdicts = select(Verdict.id).where(Verdict.job_id.in_(jobs))
        batches = select(ProviderBatch.id).where(ProviderBatch.campaign_id == cid)
        rows: dict[str, int] = {}

        def run(table: str, stmt: Any) -> None:
            rows[table] = int(cast("CursorResult[Any]", s.execute(stmt)).rowcount or 0)

        if users.alignments:
            run("alignment", delete(Alignment).where(Alignment.name.in_(users.alignments)))
        if users.repair_iterations:
            its = users.repair_iterations
            run("clause_checker", delete(ClauseChecker).where(ClauseChecker.iteration.in_(its)))
            run("repair_iteration", delete(RepairIteration).where(RepairIteration.name.in_(its)))

        run("clause_verdict", delete(ClauseVerdict).where(ClauseVerdict.verdict_id.in_(verdicts)))
        run("verdict", delete(Verdict).where(Verdict.job_id.in_(jobs)))
        run("provider_batch_job", delete(ProviderBatchJob).where(ProviderBatchJob.batch_pk.in_(batches)))
        # answers this campaign copied from its own earlier answers point inside the set being deleted
        s.execute(
            update(Response)
            .where(Response.request_id.in_(requests), Response.cached_from.is_not(None))
            .values(cached_from=None)
            .execution_options(synchronize_session=False)
        )
        run("response", delete(Response).where(Response.request_id.in_(requests)))
        run("request", delete(Request).where(Request.job_id.in_(jobs)))
        run("provider_batch", delete(ProviderBatch).where(ProviderBatch.campaign_id == cid))
        run("job", delete(Job).where(Job.campaign_id == cid))
        run("budget_hold", delete(BudgetHold).where(BudgetHold.campaign_id == cid))
        run("campaign_judge", delete(CampaignJudge).where(CampaignJudge.campaign_id == cid))
        run("campaign", delete(Campaign).where(Campaign.id == cid))
        return Deleted(name, rows)
