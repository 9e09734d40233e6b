"""Campaigns, jobs, attempts and verdicts: every SQL statement the runner needs.

Invariants kept here, on SQLite and PostgreSQL alike:

- **Deterministic jobs.** Jobs are inserted by `job_key` (see `runner.plan`); planning again inserts
  only the keys that are missing, so a campaign never holds the same work twice.
- **Leases.** A worker takes jobs with one `UPDATE … WHERE id IN (SELECT … LIMIT n) RETURNING`
  (PostgreSQL adds `FOR UPDATE SKIP LOCKED`, so several workers or machines share a campaign
  without taking the same job; SQLite's single writer lock gives the same guarantee). A lease has
  an expiry renewed by a heartbeat; a lease held by a dead process on this host is taken back at
  once, so a run resumed after `kill -9` does not wait for the expiry.
- **Exactly once.** A job's final status, its attempts (request + response rows) and its verdict are
  written in ONE transaction, and the status update is guarded by `lease_owner = me AND status =
  'running'`: a result is accepted only from the worker that holds the job, so a verdict is stored
  once even when a lease expired under a slow worker. `UNIQUE(job_id, attempt)` on request and
  verdict backs this up in the schema.
"""

from __future__ import annotations

import os
import socket
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Connection, Engine, Select, Table, and_, bindparam, func, insert, or_, select, update
from sqlalchemy.orm import Session

from judgepanel.errors import BadInput, NotFound
from judgepanel.protocol.pairs import as_label, combine_orders
from judgepanel.rubrics import RubricDoc
from judgepanel.runner.plan import CampaignSpec, PlannedJob, Unit, plan_jobs
from judgepanel.store.engine import session_scope
from judgepanel.store.matrices import MatrixScope, RaterColumn, register_rater_source
from judgepanel.store.models import (
    Campaign,
    CampaignJudge,
    Clause,
    ClauseVerdict,
    Dataset,
    Item,
    Job,
    Judge,
    Pair,
    PairSet,
    Request,
    Response,
    RubricVersion,
    Verdict,
    utcnow,
)
from judgepanel.store.queries import dataset_by_name, pair_set_by_name

CHUNK = 2_000

# ---------------------------------------------------------------- records


@dataclass(frozen=True)
class JudgeRecord:
    """A judge as the store keeps it: canonical name, provider, model, non-secret parameters."""

    name: str
    provider: str
    model: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CampaignInfo:
    id: int
    name: str
    dataset: str
    protocol: str
    pairs: str | None
    rubric_version_id: int | None
    conditions: tuple[str, ...]
    dimensions: tuple[str, ...]
    repeats: int
    judges: tuple[JudgeRecord, ...]
    judge_ids: dict[str, int]
    spec: dict[str, Any]
    jobs: int
    added: int  # jobs inserted by this call (0 when the campaign was already planned)

    def as_dict(self) -> dict[str, Any]:
        return {
            "campaign": self.name,
            "dataset": self.dataset,
            "protocol": self.protocol,
            "judges": [j.name for j in self.judges],
            "jobs": self.jobs,
            "added": self.added,
        }


@dataclass(frozen=True)
class ItemText:
    item_id: int
    external_id: str
    input: str | None
    output: str | None
    meta: Mapping[str, Any] = field(default_factory=dict)  # conversation / reference live here


@dataclass(frozen=True)
class LeasedJob:
    id: int
    judge: str
    attempts: int
    item_id: int | None
    pair_id: int | None
    order: str | None
    condition: str | None
    dimension: str | None
    repeat: int
    units: tuple[ItemText, ...]  # the item, or the pair's two items in canonical (A, B) order


@dataclass(frozen=True)
class ClauseRow:
    clause_id: int
    clause_key: str
    dimension: str
    text: str


@dataclass(frozen=True)
class VerdictRow:
    parse_status: str  # ok | failed
    parse_method: str | None
    value_presented: str | None
    value_canonical: str | None
    score: float | None
    rationale: str | None
    clauses: tuple[tuple[int, bool | None, str | None], ...] = ()  # (clause id, met, rationale)
    failure_kind: str | None = None  # why parsing failed: truncated (cut at the output cap) | unreadable


@dataclass(frozen=True)
class AttemptRow:
    """One call (or one cache answer): the request as sent and the response as received."""

    job_id: int
    attempt: int
    request_hash: str
    template_name: str
    template_hash: str
    messages: list[dict[str, str]]
    params: dict[str, Any]
    ok: bool
    error_class: str | None = None
    http_status: int | None = None
    error_message: str | None = None
    raw_body: str | None = None
    text: str | None = None
    model_returned: str | None = None
    system_fingerprint: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: float | None = None
    cost_usd: float | None = None
    cached_from: int | None = None
    finish_reason: str | None = None  # finish_reason / stop_reason as the provider returned it


@dataclass(frozen=True)
class JobOutcome:
    """A job's final state, written with its attempts. `attempt` is the attempt the verdict reads."""

    job_id: int
    status: str  # done | failed
    attempts: int
    error_class: str | None = None
    verdict: VerdictRow | None = None


@dataclass
class Batch:
    attempts: list[AttemptRow] = field(default_factory=list)
    outcomes: list[JobOutcome] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.attempts) + len(self.outcomes)


@dataclass(frozen=True)
class BatchResult:
    accepted: frozenset[int]  # job ids whose outcome was stored
    rejected: frozenset[int]  # job ids this worker no longer held; nothing of theirs was stored


@dataclass(frozen=True)
class CacheHit:
    response_id: int
    text: str | None
    model_returned: str | None
    system_fingerprint: str | None
    input_tokens: int | None
    output_tokens: int | None
    verdict: VerdictRow  # as the original was read (canonical value re-mapped by the caller)
    clause_keys: tuple[tuple[str, bool | None, str | None], ...]
    finish_reason: str | None = None


# ---------------------------------------------------------------- campaigns


def campaign_by_name(s: Session, name: str) -> Campaign:
    c = s.scalar(select(Campaign).where(Campaign.name == name))
    if c is None:
        known = ", ".join(s.scalars(select(Campaign.name).order_by(Campaign.name)).all()) or "none"
        raise NotFound(f"no campaign named {name!r} (known: {known})")
    return c


def _units(s: Session, ds: Dataset, ps: PairSet | None, split: str | None, limit: int | None) -> list[Unit]:
    if ps is None:
        q = select(Item.id, Item.external_id).where(Item.dataset_id == ds.id)
        if split is not None:
            q = q.where(Item.split == split)
        q = q.order_by(Item.position)
        if limit is not None:
            q = q.limit(limit)
        return [Unit(i, None, (e,)) for i, e in s.execute(q)]
    if ps.dataset_id != ds.id:
        raise BadInput(f"pair set {ps.name!r} belongs to another dataset than {ds.name!r}")
    ext = dict(s.execute(select(Item.id, Item.external_id).where(Item.dataset_id == ds.id)).all())
    splits = (
        dict(s.execute(select(Item.id, Item.split).where(Item.dataset_id == ds.id)).all()) if split else {}
    )
    units = []
    for pid, a, b in s.execute(
        select(Pair.id, Pair.item_a_id, Pair.item_b_id)
        .where(Pair.pair_set_id == ps.id)
        .order_by(Pair.position)
    ):
        if split is not None and not (splits.get(a) == split and splits.get(b) == split):
            continue
        units.append(Unit(None, pid, (ext[a], ext[b])))
        if limit is not None and len(units) >= limit:
            break
    return units


def _judge_ids(s: Session, judges: Sequence[JudgeRecord]) -> dict[str, int]:
    out: dict[str, int] = {}
    for j in judges:
        row = s.scalar(select(Judge).where(Judge.name == j.name))
        if row is None:
            row = Judge(name=j.name, provider=j.provider, model=j.model, params=dict(j.params))
            s.add(row)
            s.flush()
        out[j.name] = row.id
    return out


def _insert_jobs(s: Session, campaign_id: int, jobs: Sequence[PlannedJob], judge_ids: dict[str, int]) -> int:
    have = set(s.scalars(select(Job.job_key).where(Job.campaign_id == campaign_id)))
    now = utcnow()
    rows = [
        {
            "campaign_id": campaign_id,
            "job_key": j.key,
            "judge_id": judge_ids[j.judge],
            "item_id": j.item_id,
            "pair_id": j.pair_id,
            "order": j.order,
            "condition": j.condition,
            "dimension": j.dimension,
            "repeat": j.repeat,
            "status": "pending",
            "attempts": 0,
            "updated_at": now,
        }
        for j in jobs
        if j.key not in have
    ]
    for i in range(0, len(rows), CHUNK):
        s.execute(insert(Job), rows[i : i + CHUNK])
    return len(rows)


def create_campaign(
    engine: Engine,
    spec: CampaignSpec,
    judges: Sequence[JudgeRecord],
    *,
    rubric_version_id: int | None = None,
) -> CampaignInfo:
    """Create (or, with the identical spec, re-plan) a campaign and insert its missing jobs."""
    spec.validate()
    with session_scope(engine) as s:
        ds = dataset_by_name(s, spec.dataset)
        ps = pair_set_by_name(s, spec.pairs) if spec.pairs else None
        rubric_hash = None
        if rubric_version_id is not None:
            rv = s.get(RubricVersion, rubric_version_id)
            if rv is None:
                raise NotFound(f"rubric version id {rubric_version_id} does not exist")
            rubric_hash = rv.content_hash
            doc = RubricDoc.from_dict(rv.body, origin=f"rubric {spec.rubric}")
            for d in spec.dimensions:
                doc.dimension(d)  # BadInput naming the rubric's dimensions
            asks_rubric = any(c != "none" for c in spec.conditions)
            if asks_rubric and spec.protocol != "clauses" and not spec.dimensions and len(doc.dimensions) > 1:
                raise BadInput(
                    f"--condition {','.join(c for c in spec.conditions if c != 'none')} needs --dimension: "
                    f"rubric {doc.name!r} has {', '.join(doc.dimension_names)}"
                )
            if spec.protocol == "clauses":
                have = set(
                    s.scalars(select(Clause.dimension).where(Clause.rubric_version_id == rv.id).distinct())
                )
                missing = [d for d in spec.dimensions if d not in have]
                if missing:
                    raise BadInput(
                        f"rubric {spec.rubric} has no clauses for {', '.join(missing)} "
                        f"(it has {', '.join(sorted(have)) or 'none'})"
                    )
        stored = dict(spec.as_dict(), rubric_version_id=rubric_version_id)
        camp = s.scalar(select(Campaign).where(Campaign.name == spec.name))
        if camp is not None:
            if _compared(camp.spec) != _compared(stored):
                raise BadInput(
                    f"campaign {spec.name!r} exists with another spec; choose another name "
                    f"(see `judgepanel campaign list`)"
                )
        else:
            camp = Campaign(
                name=spec.name,
                dataset_id=ds.id,
                pair_set_id=ps.id if ps else None,
                rubric_version_id=rubric_version_id,
                protocol=spec.protocol,
                condition=",".join(spec.conditions) if spec.protocol != "clauses" else None,
                dimension=",".join(spec.dimensions)[:100] or None,
                repeats=spec.repeats,
                split=spec.split,
                limit=spec.limit,
                status="planned",
                spec=stored,
            )
            s.add(camp)
            s.flush()
        ids = _judge_ids(s, judges)
        linked = set(s.scalars(select(CampaignJudge.judge_id).where(CampaignJudge.campaign_id == camp.id)))
        for jid in ids.values():
            if jid not in linked:
                s.add(CampaignJudge(campaign_id=camp.id, judge_id=jid))
        units = _units(s, ds, ps, spec.split, spec.limit)
        if not units:
            what = f"pair set {spec.pairs!r}" if ps else f"dataset {spec.dataset!r}"
            raise BadInput(
                f"{what} has nothing to judge" + (f" in split {spec.split!r}" if spec.split else "")
            )
        planned = plan_jobs(spec, units, dataset_key=ds.name, rubric_hash=rubric_hash)
        added = _insert_jobs(s, camp.id, planned, ids)
        n = s.scalar(select(func.count()).select_from(Job).where(Job.campaign_id == camp.id)) or 0
        return CampaignInfo(
            camp.id,
            camp.name,
            ds.name,
            camp.protocol,
            spec.pairs,
            rubric_version_id,
            spec.conditions,
            spec.dimensions,
            spec.repeats,
            tuple(judges),
            ids,
            stored,
            n,
            added,
        )


def _compared(spec: dict[str, Any]) -> dict[str, Any]:
    """A stored spec without its provenance: the same campaign from a file or from flags is one campaign."""
    return {k: v for k, v in spec.items() if k != "origin"}


def campaign_spec(engine: Engine, name: str) -> tuple[CampaignSpec, int | None]:
    """The spec a campaign was created with (to re-plan it) and its rubric version id."""
    with session_scope(engine) as s:
        c = campaign_by_name(s, name)
        d = dict(c.spec)
        rv = d.pop("rubric_version_id", None)
        return (
            CampaignSpec(
                name=c.name,
                dataset=d["dataset"],
                protocol=d["protocol"],
                judges=tuple(d["judges"]),
                pairs=d.get("pairs"),
                rubric=d.get("rubric"),
                conditions=tuple(d.get("conditions") or ("none",)),
                dimensions=tuple(d.get("dimensions") or ()),
                repeats=int(d.get("repeats", 1)),
                split=d.get("split"),
                limit=d.get("limit"),
                judge_specs=tuple(d.get("judge_specs") or ()),
                templates=dict(d.get("templates") or {}),
                max_cost=d.get("max_cost"),
                origin=d.get("origin"),
            ),
            rv,
        )


def campaign_id(engine: Engine, name: str) -> int:
    with session_scope(engine) as s:
        return campaign_by_name(s, name).id


def rubric_doc(engine: Engine, rubric_version_id: int) -> RubricDoc:
    """The rubric document a campaign was planned with (as stored, whatever the files say now)."""
    with session_scope(engine) as s:
        rv = s.get(RubricVersion, rubric_version_id)
        if rv is None:
            raise NotFound(f"rubric version id {rubric_version_id} does not exist")
        return RubricDoc.from_dict(rv.body, origin=f"rubric version {rubric_version_id}")


def campaign_judges(engine: Engine, campaign_id: int) -> dict[int, JudgeRecord]:
    with session_scope(engine) as s:
        rows = s.scalars(
            select(Judge)
            .join(CampaignJudge, CampaignJudge.judge_id == Judge.id)
            .where(CampaignJudge.campaign_id == campaign_id)
            .order_by(Judge.id)
        )
        return {j.id: JudgeRecord(j.name, j.provider, j.model, dict(j.params)) for j in rows}


def campaign_clauses(engine: Engine, rubric_version_id: int | None) -> dict[str, list[ClauseRow]]:
    """dimension -> its clauses in rubric order (empty without a rubric)."""
    if rubric_version_id is None:
        return {}
    with session_scope(engine) as s:
        out: dict[str, list[ClauseRow]] = defaultdict(list)
        for c in s.scalars(
            select(Clause).where(Clause.rubric_version_id == rubric_version_id).order_by(Clause.position)
        ):
            out[c.dimension].append(ClauseRow(c.id, c.clause_key, c.dimension, c.text))
        return dict(out)


def set_campaign_status(engine: Engine, campaign_id: int, status: str) -> None:
    with session_scope(engine) as s:
        s.execute(update(Campaign).where(Campaign.id == campaign_id).values(status=status))


# ---------------------------------------------------------------- jobs to do (for estimates)


def pending_jobs(engine: Engine, campaign_id: int, *, limit: int | None = None) -> list[LeasedJob]:
    """Jobs not yet done or failed, read without leasing them (for `plan` estimates)."""
    with session_scope(engine) as s:
        q = (
            select(*_JOB_COLS, Judge.name)
            .join(Judge, Judge.id == Job.judge_id)
            .where(Job.campaign_id == campaign_id, Job.status.in_(("pending", "running")))
            .order_by(Job.id)
        )
        if limit is not None:
            q = q.limit(limit)
        rows: list[_JobRow] = [(r[0], r[-1], *r[1:-1]) for r in s.execute(q)]
        return _with_texts(s, rows)


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
    """`host:pid:nonce` — the host and pid let a resumed run on the same host recognise a dead owner."""
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(4).hex()}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reclaim_dead_leases(engine: Engine, campaign_id: int) -> int:
    """Give back to `pending` the jobs leased by processes of this host that no longer exist
    (a run killed with SIGKILL leaves them behind); other hosts' leases wait for their expiry."""
    host = socket.gethostname()
    with session_scope(engine) as s:
        owners = s.scalars(
            select(Job.lease_owner)
            .where(Job.campaign_id == campaign_id, Job.status == "running", Job.lease_owner.is_not(None))
            .distinct()
        ).all()
        dead = []
        for owner in owners:
            parts = (owner or "").split(":")
            if len(parts) == 3 and parts[0] == host and parts[1].isdigit() and not _pid_alive(int(parts[1])):
                dead.append(owner)
        if not dead:
            return 0
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
    """Take up to `limit` jobs (pending, or running under an expired lease), in plan order."""
    now = utcnow()
    with session_scope(engine) as s:
        cond = [
            Job.campaign_id == campaign_id,
            or_(Job.status == "pending", and_(Job.status == "running", Job.lease_expires < now)),
        ]
        if judge_id is not None:
            cond.append(Job.judge_id == judge_id)
        pick = select(Job.id).where(*cond).order_by(Job.id).limit(limit).with_for_update(skip_locked=True)
        leased = s.execute(
            update(Job)
            .where(Job.id.in_(pick.scalar_subquery()))
            .values(
                status="running",
                lease_owner=owner,
                lease_expires=now + timedelta(seconds=lease_seconds),
                updated_at=now,
            )
            .returning(Job.judge_id, *_JOB_COLS)
        ).all()
        if not leased:
            return []
        names = dict(
            s.execute(select(Judge.id, Judge.name).where(Judge.id.in_({r[0] for r in leased}))).all()
        )
        rows: list[_JobRow] = sorted(((r[1], names[r[0]], *r[2:]) for r in leased), key=lambda r: r[0])
        return _with_texts(s, rows)


def _with_texts(s: Session, rows: Sequence[_JobRow]) -> list[LeasedJob]:
    pair_ids = {r[4] for r in rows if r[4] is not None}
    pairs = (
        {
            pid: (a, b)
            for pid, a, b in s.execute(
                select(Pair.id, Pair.item_a_id, Pair.item_b_id).where(Pair.id.in_(pair_ids))
            )
        }
        if pair_ids
        else {}
    )
    item_ids = {r[3] for r in rows if r[3] is not None} | {i for ab in pairs.values() for i in ab}
    texts = {
        i: ItemText(i, e, inp, out, meta or {})
        for i, e, inp, out, meta in s.execute(
            select(Item.id, Item.external_id, Item.input, Item.output, Item.meta).where(Item.id.in_(item_ids))
        )
    }
    out = []
    for jid, name, attempts, item_id, pair_id, order, condition, dimension, repeat in rows:
        if pair_id is not None:
            a, b = pairs[pair_id]
            units: tuple[ItemText, ...] = (texts[a], texts[b])
        else:
            assert item_id is not None
            units = (texts[item_id],)
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


def renew_leases(engine: Engine, owner: str, *, lease_seconds: float = 120.0) -> int:
    with session_scope(engine) as s:
        res = s.execute(
            update(Job)
            .where(Job.lease_owner == owner, Job.status == "running")
            .values(lease_expires=utcnow() + timedelta(seconds=lease_seconds))
        )
        return int(res.rowcount or 0)  # type: ignore[attr-defined]


def release_leases(engine: Engine, owner: str, job_ids: Iterable[int] | None = None) -> int:
    """Hand unfinished jobs back (`pending`), e.g. when a run stops early or on budget."""
    with session_scope(engine) as s:
        q = update(Job).where(Job.lease_owner == owner, Job.status == "running")
        if job_ids is not None:
            ids = list(job_ids)
            if not ids:
                return 0
            q = q.where(Job.id.in_(ids))
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


# ---------------------------------------------------------------- writing results


_REQ = cast(Table, Request.__table__)
_RESP = cast(Table, Response.__table__)
_VERD = cast(Table, Verdict.__table__)
_CLV = cast(Table, ClauseVerdict.__table__)
_JOB = cast(Table, Job.__table__)


class _Mismatch(Exception):
    pass


def write_batch(engine: Engine, batch: Batch, owner: str) -> BatchResult:
    """Store a batch of attempts and job outcomes in one transaction (see the module docstring)."""
    if not len(batch):
        return BatchResult(frozenset(), frozenset())
    try:
        with engine.begin() as conn:
            return _write(conn, batch, owner, per_row=False)
    except _Mismatch:
        with engine.begin() as conn:
            return _write(conn, batch, owner, per_row=True)


def _write(conn: Connection, batch: Batch, owner: str, *, per_row: bool) -> BatchResult:
    now = utcnow()
    final = {o.job_id: o for o in batch.outcomes}
    last_attempt: dict[int, int] = {}
    for a in batch.attempts:
        last_attempt[a.job_id] = max(last_attempt.get(a.job_id, 0), a.attempt)
    outcome_rows = [
        {
            "b_id": o.job_id,
            "b_owner": owner,
            "status": o.status,
            "error_class": o.error_class,
            "attempts": o.attempts,
        }
        for o in final.values()
    ]
    progress_rows = [
        {"b_id": jid, "b_owner": owner, "attempts": n} for jid, n in last_attempt.items() if jid not in final
    ]
    fin_stmt = (
        update(_JOB)
        .where(
            _JOB.c.id == bindparam("b_id"),
            _JOB.c.lease_owner == bindparam("b_owner"),
            _JOB.c.status == "running",
        )
        .values(
            status=bindparam("status"),
            error_class=bindparam("error_class"),
            attempts=bindparam("attempts"),
            lease_owner=None,
            lease_expires=None,
            updated_at=now,
        )
    )
    prog_stmt = (
        update(_JOB)
        .where(
            _JOB.c.id == bindparam("b_id"),
            _JOB.c.lease_owner == bindparam("b_owner"),
            _JOB.c.status == "running",
        )
        .values(attempts=bindparam("attempts"), updated_at=now)
    )
    accepted: set[int] = set()
    ours: set[int] = set()
    for stmt, rows, is_final in ((fin_stmt, outcome_rows, True), (prog_stmt, progress_rows, False)):
        if not rows:
            continue
        if not per_row:
            res = conn.execute(stmt, rows)
            if res.rowcount != len(rows):
                raise _Mismatch
            got = {cast(int, r["b_id"]) for r in rows}
        else:
            got = {cast(int, r["b_id"]) for r in rows if conn.execute(stmt, r).rowcount == 1}
        ours |= got
        if is_final:
            accepted |= got
    attempts = [a for a in batch.attempts if a.job_id in ours]
    rejected = frozenset(set(final) - accepted)
    req_ids = _insert_attempts(conn, attempts, now) if attempts else {}
    verdicts = [o for o in final.values() if o.job_id in accepted and o.verdict is not None]
    if verdicts:
        _insert_verdicts(conn, verdicts, req_ids, now)
    return BatchResult(frozenset(accepted), rejected)


def _insert_attempts(
    conn: Connection, attempts: list[AttemptRow], now: datetime
) -> dict[tuple[int, int], int]:
    req_rows = [
        {
            "job_id": a.job_id,
            "attempt": a.attempt,
            "request_hash": a.request_hash,
            "template_name": a.template_name,
            "template_hash": a.template_hash,
            "messages": a.messages,
            "params": a.params,
            "created_at": now,
        }
        for a in attempts
    ]
    returned = conn.execute(
        insert(_REQ).returning(_REQ.c.id, _REQ.c.job_id, _REQ.c.attempt, sort_by_parameter_order=True),
        req_rows,
    ).all()
    ids = {(job, att): rid for rid, job, att in returned}
    conn.execute(
        insert(_RESP),
        [
            {
                "request_id": ids[(a.job_id, a.attempt)],
                "ok": a.ok,
                "error_class": a.error_class,
                "http_status": a.http_status,
                "error_message": a.error_message,
                "raw_body": a.raw_body,
                "text": a.text,
                "model_returned": a.model_returned,
                "system_fingerprint": a.system_fingerprint,
                "input_tokens": a.input_tokens,
                "output_tokens": a.output_tokens,
                "latency_ms": a.latency_ms,
                "cost_usd": a.cost_usd,
                "cached_from": a.cached_from,
                "finish_reason": a.finish_reason,
                "created_at": now,
            }
            for a in attempts
        ],
    )
    return ids


def _insert_verdicts(
    conn: Connection, outcomes: list[JobOutcome], req_ids: dict[tuple[int, int], int], now: datetime
) -> None:
    rows = []
    for o in outcomes:
        v = o.verdict
        assert v is not None
        rid = req_ids.get((o.job_id, o.attempts))
        if rid is None:  # the verdict's attempt was written by an earlier batch
            rid = conn.execute(
                select(_REQ.c.id).where(_REQ.c.job_id == o.job_id, _REQ.c.attempt == o.attempts)
            ).scalar_one()
        rows.append(
            {
                "job_id": o.job_id,
                "attempt": o.attempts,
                "request_id": rid,
                "parse_status": v.parse_status,
                "parse_method": v.parse_method,
                "value_presented": v.value_presented,
                "value_canonical": v.value_canonical,
                "score": v.score,
                "rationale": v.rationale,
                "failure_kind": v.failure_kind,
                "created_at": now,
            }
        )
    if not any(o.verdict and o.verdict.clauses for o in outcomes):
        conn.execute(insert(_VERD), rows)
        return
    returned = conn.execute(
        insert(_VERD).returning(_VERD.c.id, _VERD.c.job_id, sort_by_parameter_order=True), rows
    ).all()
    vid = {job: v for v, job in returned}
    clause_rows = [
        {"verdict_id": vid[o.job_id], "clause_id": cid, "met": met, "rationale": why}
        for o in outcomes
        if o.verdict is not None
        for cid, met, why in o.verdict.clauses
    ]
    if clause_rows:
        conn.execute(insert(_CLV), clause_rows)


# ---------------------------------------------------------------- the request cache


def cache_lookup(engine: Engine, hashes: Iterable[str]) -> dict[str, CacheHit]:
    """Original (not themselves cached) successful responses whose reply parsed, by request hash."""
    wanted = sorted(set(hashes))
    out: dict[str, CacheHit] = {}
    if not wanted:
        return out
    with engine.connect() as conn:
        for i in range(0, len(wanted), 500):
            chunk = wanted[i : i + 500]
            rows = conn.execute(
                select(
                    _REQ.c.request_hash,
                    _RESP.c.id,
                    _RESP.c.text,
                    _RESP.c.model_returned,
                    _RESP.c.system_fingerprint,
                    _RESP.c.input_tokens,
                    _RESP.c.output_tokens,
                    _RESP.c.finish_reason,
                    _VERD.c.id,
                    _VERD.c.parse_method,
                    _VERD.c.value_presented,
                    _VERD.c.score,
                    _VERD.c.rationale,
                )
                .join(_RESP, _RESP.c.request_id == _REQ.c.id)
                .join(_VERD, _VERD.c.request_id == _REQ.c.id)
                .where(
                    _REQ.c.request_hash.in_(chunk),
                    _RESP.c.ok.is_(True),
                    _RESP.c.cached_from.is_(None),
                    _VERD.c.parse_status == "ok",
                )
                .order_by(_RESP.c.id)
            ).all()
            verdict_ids = {r[8] for r in rows}
            clauses: dict[int, list[tuple[str, bool | None, str | None]]] = defaultdict(list)
            if verdict_ids:
                for vid, key, met, why in conn.execute(
                    select(_CLV.c.verdict_id, Clause.clause_key, _CLV.c.met, _CLV.c.rationale)
                    .join(Clause, Clause.id == _CLV.c.clause_id)
                    .where(_CLV.c.verdict_id.in_(verdict_ids))
                    .order_by(_CLV.c.id)
                ):
                    clauses[vid].append((key, met, why))
            for h, rid, text, model, fp, tin, tout, finish, vid, method, value, score, why in rows:
                if h in out:
                    continue  # the oldest answer wins, so every campaign reuses the same one
                out[h] = CacheHit(
                    rid,
                    text,
                    model,
                    fp,
                    tin,
                    tout,
                    VerdictRow("ok", method, value, None, score, why),
                    tuple(clauses.get(vid, ())),
                    finish,
                )
    return out


# ---------------------------------------------------------------- status and listing


@dataclass(frozen=True)
class CampaignStatus:
    name: str
    jobs: int
    done: int
    failed: int
    pending: int
    running: int
    calls: int
    cached: int
    cost_usd: float | None
    input_tokens: int
    output_tokens: int
    errors: dict[str, int]  # attempts by error class
    failed_by_class: dict[str, int]
    by_judge: dict[str, dict[str, Any]]
    status: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "jobs": self.jobs,
            "done": self.done,
            "failed": self.failed,
            "pending": self.pending,
            "calls": self.calls,
            "cost_usd": self.cost_usd,
            "running": self.running,
            "cached": self.cached,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "errors": self.errors,
            "failed_by_class": self.failed_by_class,
            "by_judge": self.by_judge,
            "status": self.status,
        }


def campaign_status(engine: Engine, name: str) -> CampaignStatus:
    with session_scope(engine) as s:
        c = campaign_by_name(s, name)
        by_judge: dict[str, dict[str, Any]] = {}
        counts: Counter[str] = Counter()
        for jname, status, n in s.execute(
            select(Judge.name, Job.status, func.count())
            .join(Judge, Judge.id == Job.judge_id)
            .where(Job.campaign_id == c.id)
            .group_by(Judge.name, Job.status)
        ):
            d = by_judge.setdefault(
                jname,
                {"jobs": 0, "done": 0, "failed": 0, "pending": 0, "calls": 0, "cached": 0, "cost_usd": 0.0},
            )
            d["jobs"] += n
            key = "pending" if status in ("pending", "running") else status
            d[key] += n
            counts[status] += n
        failed_by_class = {
            (ec or "unknown"): int(n)
            for ec, n in s.execute(
                select(Job.error_class, func.count())
                .where(Job.campaign_id == c.id, Job.status == "failed")
                .group_by(Job.error_class)
            )
        }
        cost_unknown = False
        calls = cached = tin = tout = 0
        total_cost = 0.0
        errors: Counter[str] = Counter()
        for jname, is_cached, ec, ok, n, cost, n_cost, itok, otok in s.execute(
            select(
                Judge.name,
                Response.cached_from.is_not(None),
                Response.error_class,
                Response.ok,
                func.count(),
                func.sum(Response.cost_usd),
                func.count(Response.cost_usd),
                func.sum(Response.input_tokens),
                func.sum(Response.output_tokens),
            )
            .select_from(Response)
            .join(Request, Request.id == Response.request_id)
            .join(Job, Job.id == Request.job_id)
            .join(Judge, Judge.id == Job.judge_id)
            .where(Job.campaign_id == c.id)
            .group_by(Judge.name, Response.cached_from.is_not(None), Response.error_class, Response.ok)
        ):
            d = by_judge[jname]
            if is_cached:
                d["cached"] += n
                cached += n
                continue
            d["calls"] += n
            calls += n
            if ec:
                errors[ec] += n
            tin += int(itok or 0)
            tout += int(otok or 0)
            if ok and n_cost < n:
                cost_unknown = True
                d["cost_usd"] = None
            if d["cost_usd"] is not None:
                d["cost_usd"] += float(cost or 0.0)
            total_cost += float(cost or 0.0)
        jobs = sum(counts.values())
        pending = counts["pending"] + counts["running"]
        status = "done" if jobs and counts["done"] == jobs else c.status
        if status == "running" and not counts["running"]:
            status = "stopped"
        return CampaignStatus(
            c.name,
            jobs,
            counts["done"],
            counts["failed"],
            pending,
            counts["running"],
            calls,
            cached,
            None if cost_unknown else round(total_cost, 6),
            tin,
            tout,
            dict(sorted(errors.items())),
            dict(sorted(failed_by_class.items())),
            by_judge,
            status,
        )


def campaign_spend(engine: Engine, campaign_id: int) -> float:
    """Money already spent by a campaign's calls (known prices only)."""
    with session_scope(engine) as s:
        v = s.scalar(
            select(func.sum(Response.cost_usd))
            .join(Request, Request.id == Response.request_id)
            .join(Job, Job.id == Request.job_id)
            .where(Job.campaign_id == campaign_id)
        )
        return float(v or 0.0)


def mean_output_tokens(engine: Engine, judges: Sequence[str]) -> dict[str, float]:
    """Each judge's mean output tokens over its successful calls so far, in any campaign."""
    if not judges:
        return {}
    with session_scope(engine) as s:
        rows = s.execute(
            select(Judge.name, func.avg(Response.output_tokens))
            .join(Job, Job.judge_id == Judge.id)
            .join(Request, Request.job_id == Job.id)
            .join(Response, Response.request_id == Request.id)
            .where(Judge.name.in_(list(judges)), Response.ok.is_(True), Response.output_tokens.is_not(None))
            .group_by(Judge.name)
        )
        return {n: float(v) for n, v in rows if v is not None}


def list_campaigns(engine: Engine) -> list[dict[str, Any]]:
    with session_scope(engine) as s:
        camps = s.scalars(select(Campaign).order_by(Campaign.id)).all()
        counts: dict[int, Counter[str]] = defaultdict(Counter)
        for cid, status, k in s.execute(
            select(Job.campaign_id, Job.status, func.count()).group_by(Job.campaign_id, Job.status)
        ):
            counts[cid][status] += k
        judges: dict[int, list[str]] = defaultdict(list)
        for cid, jname in s.execute(
            select(CampaignJudge.campaign_id, Judge.name)
            .join(Judge, Judge.id == CampaignJudge.judge_id)
            .order_by(Judge.id)
        ):
            judges[cid].append(jname)
        datasets = dict(s.execute(select(Dataset.id, Dataset.name)).all())
        out = []
        for c in camps:
            n = counts[c.id]
            out.append(
                {
                    "name": c.name,
                    "dataset": datasets.get(c.dataset_id),
                    "protocol": c.protocol,
                    "judges": judges[c.id],
                    "jobs": sum(n.values()),
                    "done": n["done"],
                    "failed": n["failed"],
                    "pending": n["pending"] + n["running"],
                    "status": "done" if n and n["done"] == sum(n.values()) else c.status,
                    "created_at": c.created_at.isoformat(timespec="seconds"),
                }
            )
        return out


# ---------------------------------------------------------------- verdicts out


@dataclass(frozen=True)
class SwappedVerdicts:
    """One judge's presented verdicts on the pairs it answered in both orders (same repeat)."""

    pair_ids: list[int]
    ab: list[str]  # A | B | T as presented in AB order
    ba: list[str]  # as presented in BA order


def _done_verdicts(campaign_id: int, *columns: Any) -> Select[Any]:
    """`columns` of a campaign's done jobs joined to their judge and verdict (any parse status)."""
    return (
        select(*columns)
        .join(Judge, Judge.id == Job.judge_id)
        .join(Verdict, Verdict.job_id == Job.id)
        .where(Job.campaign_id == campaign_id, Job.status == "done")
    )


def swapped_verdicts(engine: Engine, name: str) -> dict[str, SwappedVerdicts]:
    with session_scope(engine) as s:
        c = campaign_by_name(s, name)
        if c.protocol != "pairwise":
            raise BadInput(f"campaign {name!r} is {c.protocol}; position bias needs a pairwise campaign")
        got: dict[tuple[str, int, int, str | None, str | None], dict[str, str]] = defaultdict(dict)
        for jname, pid, rep, cond, dim, order, value in s.execute(
            _done_verdicts(
                c.id,
                Judge.name,
                Job.pair_id,
                Job.repeat,
                Job.condition,
                Job.dimension,
                Job.order,
                Verdict.value_presented,
            )
            .where(Verdict.parse_status == "ok")
            .order_by(Job.id)
        ):
            if value is not None and order is not None and pid is not None:
                got[(jname, pid, rep, cond, dim)][order] = value
        judges = s.scalars(
            select(Judge.name)
            .join(CampaignJudge, CampaignJudge.judge_id == Judge.id)
            .where(CampaignJudge.campaign_id == c.id)
            .order_by(Judge.id)
        ).all()
        out = {j: SwappedVerdicts([], [], []) for j in judges}
        for (jname, pid, *_rest), by_order in got.items():
            if "AB" in by_order and "BA" in by_order:
                sv = out[jname]
                sv.pair_ids.append(pid)
                sv.ab.append(by_order["AB"])
                sv.ba.append(by_order["BA"])
        return out


@dataclass(frozen=True)
class JudgeRatings:
    """A campaign's verdicts as rating-matrix columns: one column per judge (and repeat), one row per
    unit (item id for pointwise, pair id for pairwise); values are scores or canonical A/B/T."""

    units: list[int]
    unit_kind: str  # item | pair
    columns: dict[str, list[str | float | None]]


def judge_verdict_rows(engine: Engine, name: str) -> list[dict[str, Any]]:
    """Every accepted verdict of a campaign, one dict per job (the raw material of rating columns)."""
    with session_scope(engine) as s:
        c = campaign_by_name(s, name)
        rows = s.execute(
            _done_verdicts(
                c.id,
                Judge.name,
                Job.item_id,
                Job.pair_id,
                Job.order,
                Job.condition,
                Job.dimension,
                Job.repeat,
                Verdict.parse_status,
                Verdict.value_presented,
                Verdict.value_canonical,
                Verdict.score,
            ).order_by(Job.id)
        )
        keys = (
            "judge",
            "item_id",
            "pair_id",
            "order",
            "condition",
            "dimension",
            "repeat",
            "parse_status",
            "value_presented",
            "value_canonical",
            "score",
        )
        return [dict(zip(keys, r, strict=True)) for r in rows]


# ---------------------------------------------------------------- judges as rater columns


def judge_rater_columns(s: Session, scope: MatrixScope) -> list[RaterColumn]:
    """Campaign judges as extra columns of the store's rating matrices (see `store.matrices`).

    Item matrices get one column per (pointwise campaign over the dataset, judge, condition) whose
    jobs judged the matrix's dimension: the score of the first sample (repeat 0). Pair matrices get
    one column per (pairwise campaign over the pair set, judge): the pair's combined AB/BA verdict
    as a three-way label (`protocol.pairs.as_label`: an inconsistent pair counts as a tie, a pair
    missing an order has no label). Columns are named `JUDGE@CAMPAIGN` (plus `/CONDITION` or
    `/DIMENSION` when the campaign asked several), in group `judge`."""
    protocol = "pairwise" if scope.kind == "pair" else "pointwise"
    where = (
        Campaign.pair_set_id == scope.pair_set_id
        if scope.kind == "pair"
        else Campaign.dataset_id == scope.dataset_id
    )
    camps = s.execute(select(Campaign.id, Campaign.name).where(where, Campaign.protocol == protocol)).all()
    columns: list[RaterColumn] = []
    for cid, cname in camps:
        q = _done_verdicts(
            cid,
            Judge.name,
            Job.item_id,
            Job.pair_id,
            Job.order,
            Job.condition if scope.kind == "item" else Job.dimension,
            Verdict.value_canonical,
            Verdict.score,
        ).where(Job.repeat == 0, Verdict.parse_status == "ok")
        if scope.kind == "item":
            q = q.where(Job.dimension == scope.dimension)
        rows = s.execute(q).all()
        variants = {r[4] for r in rows}  # conditions (items) or dimensions (pairs)
        if scope.kind == "pair":
            orders: dict[tuple[str, int], dict[str, str]] = defaultdict(dict)
            for jname, _item, pid, order, dim, canon, _score in rows:
                if pid is not None and order is not None and canon is not None:
                    suffix = f"/{dim}" if len(variants) > 1 else ""
                    orders[(f"{jname}@{cname}{suffix}", pid)][order] = canon
            labels: dict[str, dict[int, float | str]] = defaultdict(dict)
            for (col, pid), o in orders.items():
                label = as_label(combine_orders(o.get("AB"), o.get("BA")))
                if label is not None:
                    labels[col][pid] = label
            columns += [RaterColumn(n, v, "judge", "judge") for n, v in sorted(labels.items())]
        else:
            scores: dict[str, dict[int, float | str]] = defaultdict(dict)
            for jname, item, _pid, _o, cond, _canon, score in rows:
                if item is not None and score is not None:
                    suffix = f"/{cond}" if len(variants) > 1 else ""
                    scores[f"{jname}@{cname}{suffix}"][item] = float(score)
            columns += [RaterColumn(n, v, "judge", "judge") for n, v in sorted(scores.items())]
    return columns


register_rater_source(judge_rater_columns)
