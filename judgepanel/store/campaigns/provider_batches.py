"""Provider batches (`campaign run --batch`): which jobs travel in which submission to a provider's
batch API, so polling resumes from the database alone and no job is ever submitted twice.

A job put in a batch stays `running`, leased to the owner `batch:<pk>` with a lease that never
expires on its own (`BATCH_LEASE_UNTIL`), until the batch's results are stored through the same
`write_batch` as realtime calls (whose guard `lease_owner = batch:<pk> AND status = 'running'`
accepts each result once, however many processes collect it) or the batch is given up. A plain
`campaign run` therefore never leases it, and `reclaim_dead_leases` never takes it back (the owner
names no process).

Order of writes, each its own transaction: the batch row and its jobs (`preparing`, no provider
id) and the jobs' move to the batch's lease — then the provider call — then the provider's id. A
crash between leaves a `preparing` batch without id: the next run asks the provider whether it
exists (and records it), else gives it up and its jobs back to `pending`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, delete, func, select, update

from judgepanel.store import budget
from judgepanel.store.campaigns.leases import _JOB_COLS, _with_texts
from judgepanel.store.campaigns.records import LeasedJob
from judgepanel.store.engine import in_chunks, session_scope
from judgepanel.store.models import (
    BudgetHold,
    Campaign,
    Job,
    Judge,
    ProviderBatch,
    ProviderBatchJob,
    utcnow,
)

BATCH_LEASE_UNTIL = datetime(9999, 1, 1)  # a job in a batch is leased until the batch is closed
GIVEN_UP = "abandoned"  # a batch never (provably) submitted: its jobs went back to pending


def batch_owner(pk: int) -> str:
    return f"batch:{pk}"


@dataclass(frozen=True)
class BatchEntry:
    job_id: int
    custom_id: str
    attempt: int
    request_hash: str


@dataclass(frozen=True)
class OpenBatch:
    pk: int
    judge_id: int
    provider: str
    batch_id: str | None
    input_file_id: str | None
    status: str
    token: str  # the prefix of every custom_id; OpenAI batches also carry it as metadata
    created_at: datetime
    jobs: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.pk,
            "provider": self.provider,
            "batch_id": self.batch_id,
            "status": self.status,
            "jobs": self.jobs,
        }


class BatchMoved(Exception):
    """Some of the jobs to put in a batch were no longer leased by the caller."""


def open_provider_batch(
    engine: Engine,
    campaign_id: int,
    judge_id: int,
    provider: str,
    owner: str,
    jobs: Sequence[tuple[int, int, str]],
    nonce: str,
    hold_usd: float = 0.0,
) -> tuple[int, str, dict[int, str]]:
    """Record a batch (`preparing`) and its jobs `(job id, attempt, request hash)`, and move the
    jobs from `owner`'s lease to the batch's, in one transaction — with `hold_usd` of `owner`'s
    budget hold (what the batch was estimated to cost), kept until the batch is closed. Returns the
    batch's pk, its token and each job's custom_id."""
    with session_scope(engine) as s:
        row = ProviderBatch(
            campaign_id=campaign_id,
            judge_id=judge_id,
            provider=provider,
            status="preparing",
            request_counts={},
            created_at=utcnow(),
        )
        s.add(row)
        s.flush()
        token = f"jp{row.id}x{nonce}"
        ids = {job: f"{token}-{job}" for job, _, _ in jobs}
        s.add_all(
            ProviderBatchJob(
                batch_pk=row.id, job_id=job, custom_id=ids[job], attempt=att, request_hash=h, state="open"
            )
            for job, att, h in jobs
        )
        moved = s.execute(
            update(Job)
            .where(Job.id.in_(list(ids)), Job.lease_owner == owner, Job.status == "running")
            .values(lease_owner=batch_owner(row.id), lease_expires=BATCH_LEASE_UNTIL, updated_at=utcnow())
        )
        if int(moved.rowcount or 0) != len(ids):  # type: ignore[attr-defined]
            raise BatchMoved(f"{len(ids) - int(moved.rowcount or 0)} job(s) were taken over")  # type: ignore[attr-defined]
        if hold_usd:
            budget.move_hold(s.connection(), campaign_id, owner, batch_owner(row.id), hold_usd)
        return row.id, token, ids


def take_back(engine: Engine, pk: int, job_ids: Sequence[int], owner: str, lease_seconds: float) -> int:
    """Before a batch is sent: these of its jobs leave it and go back to `owner`'s lease (their
    request is being asked elsewhere right now). Returns how many moved."""
    if not job_ids:
        return 0
    now = utcnow()
    ids = list(job_ids)  # one batch's jobs at most, as `open_provider_batch` moved them
    with session_scope(engine) as s:
        s.execute(
            delete(ProviderBatchJob).where(ProviderBatchJob.batch_pk == pk, ProviderBatchJob.job_id.in_(ids))
        )
        res = s.execute(
            update(Job)
            .where(Job.id.in_(ids), Job.lease_owner == batch_owner(pk), Job.status == "running")
            .values(lease_owner=owner, lease_expires=now + timedelta(seconds=lease_seconds), updated_at=now)
        )
        return int(res.rowcount or 0)  # type: ignore[attr-defined]


def record_input_file(engine: Engine, pk: int, file_id: str) -> None:
    with session_scope(engine) as s:
        s.execute(update(ProviderBatch).where(ProviderBatch.id == pk).values(input_file_id=file_id))


def record_submitted(engine: Engine, pk: int, batch_id: str, status: str) -> None:
    with session_scope(engine) as s:
        s.execute(
            update(ProviderBatch)
            .where(ProviderBatch.id == pk)
            .values(batch_id=batch_id, status=status, submitted_at=utcnow())
        )


def record_progress(
    engine: Engine, pk: int, status: str, counts: dict[str, Any], output_file_id: str | None = None
) -> None:
    with session_scope(engine) as s:
        values: dict[str, Any] = {"status": status, "request_counts": counts}
        if output_file_id is not None:
            values["output_file_id"] = output_file_id
        s.execute(update(ProviderBatch).where(ProviderBatch.id == pk).values(**values))


def open_batches(engine: Engine, campaign_id: int) -> list[OpenBatch]:
    """The campaign's batches not yet closed (results stored, or given up), oldest first."""
    with session_scope(engine) as s:
        rows = s.execute(
            select(ProviderBatch, func.count(ProviderBatchJob.id), func.min(ProviderBatchJob.custom_id))
            .join(ProviderBatchJob, ProviderBatchJob.batch_pk == ProviderBatch.id, isouter=True)
            .where(ProviderBatch.campaign_id == campaign_id, ProviderBatch.finished_at.is_(None))
            .group_by(ProviderBatch.id)
            .order_by(ProviderBatch.id)
        ).all()
        return [
            OpenBatch(
                b.id,
                b.judge_id,
                b.provider,
                b.batch_id,
                b.input_file_id,
                b.status,
                (first or "").rsplit("-", 1)[0],
                b.created_at,
                int(n),
            )
            for b, n, first in rows
        ]


def known_batch_ids(engine: Engine, provider: str) -> set[str]:
    """Provider batch ids this database already records (any campaign)."""
    with session_scope(engine) as s:
        return {
            i
            for i in s.scalars(select(ProviderBatch.batch_id).where(ProviderBatch.provider == provider))
            if i is not None
        }


def batch_entries(engine: Engine, pk: int) -> list[BatchEntry]:
    with session_scope(engine) as s:
        return [
            BatchEntry(j, c, a, h)
            for j, c, a, h in s.execute(
                select(
                    ProviderBatchJob.job_id,
                    ProviderBatchJob.custom_id,
                    ProviderBatchJob.attempt,
                    ProviderBatchJob.request_hash,
                )
                .where(ProviderBatchJob.batch_pk == pk)
                .order_by(ProviderBatchJob.id)
            )
        ]


def batch_jobs(engine: Engine, pk: int) -> list[LeasedJob]:
    """The jobs a batch carries, with their texts (to render their prompts again)."""
    with session_scope(engine) as s:
        ids = select(ProviderBatchJob.job_id).where(ProviderBatchJob.batch_pk == pk)
        rows = [
            (r[0], r[-1], *r[1:-1])
            for r in s.execute(
                select(*_JOB_COLS, Judge.name)
                .join(Judge, Judge.id == Job.judge_id)
                .where(Job.id.in_(ids))
                .order_by(Job.id)
            )
        ]
        return _with_texts(s, rows)


def close_batch(engine: Engine, pk: int, status: str, error: str | None = None) -> int:
    """Close a batch: its jobs' states follow their jobs, and any job still leased to the batch
    (its result never stored) goes back to `pending`. Returns how many went back."""
    owner = batch_owner(pk)
    now = utcnow()
    with session_scope(engine) as s:
        back = s.execute(
            update(Job)
            .where(Job.lease_owner == owner, Job.status == "running")
            .values(status="pending", lease_owner=None, lease_expires=None, updated_at=now)
        )
        for state in ("done", "failed", "pending"):
            s.execute(
                update(ProviderBatchJob)
                .where(
                    ProviderBatchJob.batch_pk == pk,
                    ProviderBatchJob.job_id.in_(select(Job.id).where(Job.status == state)),
                )
                .values(state="released" if state == "pending" else state)
            )
        s.execute(
            update(ProviderBatch)
            .where(ProviderBatch.id == pk)
            .values(status=status, finished_at=now, error=error)
        )
        # its results (and their real cost) are stored, or never will be: its budget hold is free
        s.execute(delete(BudgetHold).where(BudgetHold.owner == owner))
        return int(back.rowcount or 0)  # type: ignore[attr-defined]


def jobs_in_open_batches(engine: Engine, campaign_id: int) -> int:
    with session_scope(engine) as s:
        return int(
            s.scalar(
                select(func.count())
                .select_from(Job)
                .where(
                    Job.campaign_id == campaign_id,
                    Job.status == "running",
                    Job.lease_owner.like("batch:%"),
                )
            )
            or 0
        )


def open_batch_ids(engine: Engine) -> frozenset[int]:
    """Every campaign's batches not yet closed: a worker that left jobs pending for them looks at
    those jobs again once this set changes (a batch collected or given up, or a new one)."""
    with session_scope(engine) as s:
        return frozenset(s.scalars(select(ProviderBatch.id).where(ProviderBatch.finished_at.is_(None))))


def hashes_in_open_batches(
    engine: Engine, hashes: Sequence[str], *, except_batch: int | None = None
) -> dict[str, str]:
    """Which of these request hashes an open batch (of any campaign; not `except_batch`) is asking
    now, each with the name of a campaign whose batch asks it: a twin of one waits for that batch's
    answer instead of being asked again, in a batch run (held) or a realtime one (left pending)
    (issue 28 §2)."""
    found: dict[str, str] = {}
    with session_scope(engine) as s:
        for chunk in in_chunks(hashes):
            q = (
                select(ProviderBatchJob.request_hash, Campaign.name)
                .join(ProviderBatch, ProviderBatch.id == ProviderBatchJob.batch_pk)
                .join(Campaign, Campaign.id == ProviderBatch.campaign_id)
                .where(
                    ProviderBatchJob.request_hash.in_(chunk),
                    ProviderBatchJob.state == "open",
                    ProviderBatch.finished_at.is_(None),
                )
                .order_by(Campaign.name)
            )
            if except_batch is not None:
                q = q.where(ProviderBatch.id != except_batch)
            rows = s.execute(q)
            for h, name in rows:
                found.setdefault(h, name)
    return found
