"""Who works on which job: leases, their renewal and release, and requeueing failed jobs."""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import Connection, Engine, and_, delete, func, or_, select, update
from sqlalchemy.orm import Session

from judgepanel.store import liveness
from judgepanel.store.campaigns.records import (
    ItemText,
    LeasedJob,
)
from judgepanel.store.engine import session_scope
from judgepanel.store.models import (
    BudgetHold,
    Job,
    Judge,
    Request,
    Response,
    utcnow,
)

# ---------------------------------------------------------------- jobs to do (for estimates)


def pending_jobs(
    engine: Engine, campaign_id: int, *, limit: int | None = None, ids: Collection[int] | None = None
) -> list[LeasedJob]:
    """Jobs not yet done or failed, read without leasing them (for `plan` estimates); with `ids`,
    only those of them (plan renders only the jobs whose stored figures do not do: their texts
    are all it reads)."""
    with session_scope(engine) as s:
        return pending_in(s, campaign_id, limit=limit, ids=ids)


def pending_in(
    s: Session, campaign_id: int, *, limit: int | None = None, ids: Collection[int] | None = None
) -> list[LeasedJob]:
    """`pending_jobs` in an open session (e.g. the one that is creating the campaign)."""
    q = (
        select(*_JOB_COLS, Judge.name)
        .join(Judge, Judge.id == Job.judge_id)
        .where(Job.campaign_id == campaign_id, Job.status.in_(("pending", "running")))
        .order_by(Job.id)
    )
    if ids is None:
        found = list(s.execute(q if limit is None else q.limit(limit)))
    elif limit is not None:
        raise ValueError("pending_in: ids or limit, not both")
    else:  # in chunks of ids, in order: a statement holds at most so many parameters
        wanted = sorted(ids)
        found = [
            r for i in range(0, len(wanted), 500) for r in s.execute(q.where(Job.id.in_(wanted[i : i + 500])))
        ]
    rows: list[_JobRow] = [(r[0], r[-1], *r[1:-1]) for r in found]
    return _with_texts(s, rows)


# (job id, judge name, dimension, prompt_chars, prompt_messages, prompt_prefix_tokens, prompt_sig,
#  prompt_prefixes)
PendingShape = tuple[int, str, str | None, int | None, int | None, int | None, str | None, str | None]


def pending_shapes(engine: Engine, campaign_id: int) -> list[PendingShape]:
    """The jobs `pending_jobs` returns, in the same order, with the prompt figures stored at create
    (NULL for jobs created before they were) and without their texts."""
    from judgepanel.store import tables as t

    job, judge = t.job, t.judge
    with engine.connect() as conn:
        rows = conn.execute(
            select(
                job.c.id,
                judge.c.name,
                job.c.dimension,
                job.c.prompt_chars,
                job.c.prompt_messages,
                job.c.prompt_prefix_tokens,
                job.c.prompt_sig,
                job.c.prompt_prefixes,
            )
            .join(judge, judge.c.id == job.c.judge_id)
            .where(job.c.campaign_id == campaign_id, job.c.status.in_(("pending", "running")))
            .order_by(job.c.id)
        ).all()
    return [tuple(r) for r in rows]


# (job id, judge id, item id, pair id, condition, dimension, repeat, prompt_chars stored or NULL)
UnitJob = tuple[int, int, int | None, int | None, str | None, str | None, int, int | None]


def unit_jobs(engine: Engine, campaign_id: int) -> list[UnitJob]:
    """The jobs still to do, with what a run needs to group them by item or pair and to estimate
    each one's cost (`runner.units`), in plan order."""
    from judgepanel.store import tables as t

    job = t.job
    with engine.connect() as conn:
        rows = conn.execute(
            select(
                job.c.id,
                job.c.judge_id,
                job.c.item_id,
                job.c.pair_id,
                job.c.condition,
                job.c.dimension,
                job.c.repeat,
                job.c.prompt_chars,
            )
            .where(job.c.campaign_id == campaign_id, job.c.status.in_(("pending", "running")))
            .order_by(job.c.id)
        ).all()
    return [(int(r[0]), int(r[1]), r[2], r[3], r[4], r[5], int(r[6]), r[7]) for r in rows]


def judges_with_requests(engine: Engine, judges: Iterable[tuple[str, str, str]]) -> set[str]:
    """The names among `judges` (name, provider, model) whose provider and model some stored request
    was sent to (by a job of that judge, or of any judge with that provider and model, in any
    campaign): only their requests can be answered from the response cache, whose key includes both."""
    from judgepanel.store import tables as t

    job, judge, request = t.job, t.judge, t.request
    out: set[str] = set()
    with engine.connect() as conn:
        for name, provider, model in judges:
            ids = list(
                conn.scalars(
                    select(judge.c.id).where(
                        or_(judge.c.name == name, and_(judge.c.provider == provider, judge.c.model == model))
                    )
                )
            )
            if not ids:
                continue
            # the judges' jobs by `ix_job_judge`, each probed in request's (job_id, attempt) index
            sent = (
                select(request.c.id)
                .select_from(job)
                .join(request, request.c.job_id == job.c.id)
                .where(job.c.judge_id.in_(ids))
                .limit(1)
            )
            if conn.execute(sent).first() is not None:
                out.add(name)
    return out


def job_counts(engine: Engine, campaign_id: int) -> dict[str, int]:
    with session_scope(engine) as s:
        counts = dict(
            s.execute(
                select(Job.status, func.count()).where(Job.campaign_id == campaign_id).group_by(Job.status)
            ).all()
        )
        return {k: int(counts.get(k, 0)) for k in ("pending", "running", "done", "failed")}


# ---------------------------------------------------------------- leases


def lease_owner_id() -> str:
    """`host:pid:nonce:pidns:boot` (see `store.liveness`)."""
    return liveness.owner_id()


def reclaim_dead_leases(engine: Engine, campaign_id: int) -> int:
    """Give back to `pending` the jobs leased by owners that are certainly dead (see
    `store.liveness`: on PostgreSQL an owner whose advisory lock is free — twice, `GRACE_S` apart,
    so a live owner re-connecting after a database restart has time to take its lock again —, on
    SQLite a process of this host, boot and PID namespace that no longer exists), and drop their
    budget holds; every other owner's leases wait for their expiry."""

    def candidates() -> list[str]:
        with session_scope(engine) as s:
            owners = s.scalars(
                select(Job.lease_owner)
                .where(Job.campaign_id == campaign_id, Job.status == "running", Job.lease_owner.is_not(None))
                .distinct()
            ).all()
            holders = s.scalars(select(BudgetHold.owner).where(BudgetHold.campaign_id == campaign_id)).all()
            found = sorted({o for o in (*owners, *holders) if o and not o.startswith("batch:")})
            return liveness.dead_owners(s.connection(), found)  # the locks end with this transaction

    suspects = candidates()
    if not suspects:
        return 0
    if engine.dialect.name == "postgresql":
        time.sleep(liveness.GRACE_S)
    with session_scope(engine) as s:
        dead = liveness.dead_owners(s.connection(), suspects)
        if not dead:
            return 0
        s.execute(delete(BudgetHold).where(BudgetHold.campaign_id == campaign_id, BudgetHold.owner.in_(dead)))
        res = s.execute(
            update(Job)
            .where(Job.campaign_id == campaign_id, Job.status == "running", Job.lease_owner.in_(dead))
            .values(status="pending", lease_owner=None, lease_expires=None)
        )
        return int(res.rowcount or 0)  # type: ignore[attr-defined]


_JOB_COLS = (
    Job.id,
    Job.attempts,
    Job.item_id,
    Job.pair_id,
    Job.order,
    Job.condition,
    Job.dimension,
    Job.repeat,
)
_JobRow = tuple[int, str, int, int | None, int | None, str | None, str | None, str | None, int]


def lease_jobs(
    engine: Engine,
    campaign_id: int,
    owner: str,
    limit: int,
    *,
    lease_seconds: float = 120.0,
    judge_id: int | None = None,
) -> list[LeasedJob]:
    """Take up to `limit` jobs (pending, or running under an expired lease), in plan order: one
    UPDATE … RETURNING for the chunk, then the judges' names and the items' texts in one query
    each, on the Core tables (the runner's feeder calls this for every chunk; the ORM's row
    bookkeeping cost more than the statements)."""
    from judgepanel.store import tables as t

    job = t.job
    now = utcnow()
    with engine.begin() as conn:
        cond = [
            job.c.campaign_id == campaign_id,
            or_(job.c.status == "pending", and_(job.c.status == "running", job.c.lease_expires < now)),
        ]
        if judge_id is not None:
            cond.append(job.c.judge_id == judge_id)
        pick = select(job.c.id).where(*cond).order_by(job.c.id).limit(limit).with_for_update(skip_locked=True)
        leased = conn.execute(
            update(job)
            .where(job.c.id.in_(pick.scalar_subquery()))
            .values(
                status="running",
                lease_owner=owner,
                lease_expires=now + timedelta(seconds=lease_seconds),
                updated_at=now,
            )
            .returning(job.c.judge_id, *(job.c[c.key] for c in _JOB_COLS))
        ).all()
        if not leased:
            return []
        names = dict(
            conn.execute(
                select(t.judge.c.id, t.judge.c.name).where(t.judge.c.id.in_({r[0] for r in leased}))
            ).all()
        )
        rows: list[_JobRow] = sorted(((r[1], names[r[0]], *r[2:]) for r in leased), key=lambda r: r[0])
        return _with_texts(conn, rows)


def _with_texts(s: Session | Connection, rows: Sequence[_JobRow]) -> list[LeasedJob]:
    from judgepanel.store import tables as t

    pair, item = t.pair, t.item
    pair_ids = {r[4] for r in rows if r[4] is not None}
    pairs = (
        {
            pid: (a, b)
            for pid, a, b in s.execute(
                select(pair.c.id, pair.c.item_a_id, pair.c.item_b_id).where(pair.c.id.in_(pair_ids))
            )
        }
        if pair_ids
        else {}
    )
    item_ids = {r[3] for r in rows if r[3] is not None} | {i for ab in pairs.values() for i in ab}
    texts = {
        i: ItemText(i, e, inp, out, meta or {})
        for i, e, inp, out, meta in s.execute(
            select(item.c.id, item.c.external_id, item.c.input, item.c.output, item.c.meta).where(
                item.c.id.in_(item_ids)
            )
        )
    }
    out = []
    for jid, name, attempts, item_id, pair_id, order, condition, dimension, repeat in rows:
        if pair_id is not None:
            a, b = pairs[pair_id]
            units: tuple[ItemText, ...] = (texts[a], texts[b])
        else:
            units = (texts[item_id],) if item_id is not None else ()  # an editor job reads no item
        out.append(
            LeasedJob(jid, name, attempts, item_id, pair_id, order, condition, dimension, repeat, units)
        )
    return out


def last_parse_errors(engine: Engine, job_ids: Sequence[int]) -> dict[int, str]:
    """For jobs whose latest attempt was an unreadable reply: job id -> the parse error."""
    if not job_ids:
        return {}
    out: dict[int, str] = {}
    with session_scope(engine) as s:
        for i in range(0, len(job_ids), 500):
            chunk = list(job_ids[i : i + 500])
            latest = (
                select(Request.job_id, func.max(Request.attempt).label("att"))
                .where(Request.job_id.in_(chunk))
                .group_by(Request.job_id)
                .subquery()
            )
            for jid, msg in s.execute(
                select(Request.job_id, Response.error_message)
                .join(latest, and_(latest.c.job_id == Request.job_id, latest.c.att == Request.attempt))
                .join(Response, Response.request_id == Request.id)
                .where(Response.error_class == "parse")
            ):
                out[jid] = msg or "unreadable reply"
    return out


def _owned(owner: str, job_ids: Iterable[int] | None = None) -> Any:
    """The ids of the owner's running jobs, locked in id order: every writer of job rows locks
    them in ascending id order (`write_batch` sorts its rows), so a lease renewal or release can
    never deadlock with the same worker's writer, whose transaction runs beside it."""
    q = select(Job.id).where(Job.lease_owner == owner, Job.status == "running")
    if job_ids is not None:
        q = q.where(Job.id.in_(list(job_ids)))
    return q.order_by(Job.id).with_for_update().scalar_subquery()


def renew_leases(engine: Engine, owner: str, *, lease_seconds: float = 120.0) -> int:
    """Extend the owner's leases, and its budget holds with them."""
    expires = utcnow() + timedelta(seconds=lease_seconds)
    with session_scope(engine) as s:
        res = s.execute(
            update(Job)
            .where(Job.id.in_(_owned(owner)), Job.lease_owner == owner, Job.status == "running")
            .values(lease_expires=expires)
        )
        s.execute(update(BudgetHold).where(BudgetHold.owner == owner).values(expires=expires))
        return int(res.rowcount or 0)  # type: ignore[attr-defined]


def release_leases(engine: Engine, owner: str, job_ids: Iterable[int] | None = None) -> int:
    """Hand unfinished jobs back (`pending`), e.g. when a run stops early or on budget."""
    ids = None if job_ids is None else list(job_ids)
    if ids is not None and not ids:
        return 0
    with session_scope(engine) as s:
        q = update(Job).where(
            Job.id.in_(_owned(owner, ids)), Job.lease_owner == owner, Job.status == "running"
        )
        res = s.execute(q.values(status="pending", lease_owner=None, lease_expires=None))
        return int(res.rowcount or 0)  # type: ignore[attr-defined]


def requeue(engine: Engine, campaign_id: int, error_classes: Sequence[str]) -> int:
    """Failed jobs of the given error classes back to `pending` (re-ask parse failures, retry
    exhausted transient errors). Their earlier attempts and failed verdicts stay stored."""
    with session_scope(engine) as s:
        res = s.execute(
            update(Job)
            .where(Job.campaign_id == campaign_id, Job.status == "failed", Job.error_class.in_(error_classes))
            .values(status="pending", error_class=None, updated_at=utcnow())
        )
        return int(res.rowcount or 0)  # type: ignore[attr-defined]


def work_left(engine: Engine, names: Sequence[str] | None = None) -> dict[str, tuple[int, int, int]]:
    """For every campaign (or the named ones): (jobs a worker may lease now — pending, or running
    under an expired lease —, jobs still without an outcome — pending or running —, all jobs)."""
    from judgepanel.store.models import Campaign

    now = utcnow()
    leasable = or_(Job.status == "pending", and_(Job.status == "running", Job.lease_expires < now))
    with session_scope(engine) as s:
        q = (
            select(
                Campaign.name,
                func.count(Job.id).filter(leasable),
                # jobs waiting in an open provider batch are `campaign run --batch`'s, not a worker's
                func.count(Job.id).filter(
                    Job.status.in_(("pending", "running")),
                    ~func.coalesce(Job.lease_owner, "").like("batch:%"),
                ),
                func.count(Job.id),
            )
            .join(Job, Job.campaign_id == Campaign.id, isouter=True)
            .group_by(Campaign.id, Campaign.name)
            .order_by(Campaign.id)
        )
        if names is not None:
            q = q.where(Campaign.name.in_(list(names)))
        return {str(n): (int(a), int(b), int(c)) for n, a, b, c in s.execute(q)}
