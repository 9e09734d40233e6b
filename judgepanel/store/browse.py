"""What the viewer (`judgepanel view`) reads: pages of verdicts, one case, recent calls, spend.

Rows out, nothing computed (the view computes rates and ETAs from them). Every reader here is
built to stay fast on a campaign of 10⁶ verdicts:

- `store.find.search_page` pages by keyset (`verdict.id > after … ORDER BY verdict.id LIMIT n`), never by
  OFFSET, so the 20,000th page costs what the first does;
- `recent_calls` and `spend_since` walk the response table from its newest row (primary key),
  so a poll while a run is going reads the new rows, not the whole table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, and_, case, func, literal_column, select
from sqlalchemy.orm import Session, aliased

from judgepanel.store.campaigns import campaign_by_name, judge_specs_in
from judgepanel.store.models import (
    Alignment,
    Annotator,
    Campaign,
    Item,
    Job,
    Judge,
    Label,
    PairLabel,
    Request,
    Response,
    Verdict,
)
from judgepanel.store.simulated import simulated_reply
from judgepanel.store.units import unit_items

ORDERS = ("AB", "BA")
FAILURE_KINDS = ("unreadable", "truncated", "missing_clauses", "ambiguous")


@dataclass(frozen=True)
class VerdictFilter:
    """Which verdicts a page shows; None means any."""

    judge: str | None = None
    dimension: str | None = None
    condition: str | None = None
    order: str | None = None
    failure_kind: str | None = None
    judges_disagree: bool = False  # another judge gave this case a different verdict
    humans_disagree: bool = False  # the case's human labels are against this verdict


@dataclass(frozen=True)
class VerdictRow:
    verdict_id: int
    judge: str
    unit: int  # pair id (pairwise) or item id
    order: str | None
    condition: str | None
    dimension: str | None
    repeat: int
    attempt: int
    parse_status: str
    failure_kind: str | None
    value: str | None
    value_presented: str | None
    score: float | None
    rationale: str | None
    request_id: int
    created_at: datetime


@dataclass(frozen=True)
class CaseAttempt:
    """One attempt at one job of a case, with its verdict when the reply was read."""

    judge: str
    order: str | None
    condition: str | None
    dimension: str | None
    repeat: int
    attempt: int
    status: str  # the job's
    request_id: int
    ok: bool | None
    error_class: str | None
    error_message: str | None
    parse_status: str | None
    failure_kind: str | None
    value: str | None
    value_presented: str | None
    score: float | None
    rationale: str | None


@dataclass(frozen=True)
class HumanLabel:
    annotator: str
    group: str | None
    item: str  # external id
    dimension: str
    value: str | None
    rationale: str | None


@dataclass(frozen=True)
class CaseRecord:
    campaign: str
    protocol: str
    unit: int
    items: list[dict[str, Any]]  # one (item) or two (pair a, b): external_id, input, output, system
    attempts: list[CaseAttempt]
    pair_labels: dict[str, str]  # human annotator -> A/B/T (pairwise)
    labels: list[HumanLabel]


@dataclass(frozen=True)
class RawAttempt:
    request_id: int
    messages: list[Any]
    params: dict[str, Any]
    output_schema: dict[str, Any] | None
    template_name: str
    raw_body: str | None
    text: str | None
    error_message: str | None
    http_status: int | None
    model_returned: str | None
    system_fingerprint: str | None


def campaign_row(engine: Engine, name: str) -> dict[str, Any]:
    """The campaign's own row: id, protocol, dataset and pair set ids, spec."""
    with Session(engine) as s:
        c = campaign_by_name(s, name)
        judges = judge_specs_in(s, c.id)
        return {
            "id": c.id,
            "name": c.name,
            "protocol": c.protocol,
            "dataset_id": c.dataset_id,
            "pair_set_id": c.pair_set_id,
            "condition": c.condition,
            "dimension": c.dimension,
            "status": c.status,
            "spec": dict(c.spec or {}),
            # the cap on the campaign's total spend (set by `campaign run --max-cost`), else its file's
            "max_cost_usd": c.max_cost_usd if c.max_cost_usd is not None else (c.spec or {}).get("max_cost"),
            "judges": judges,
        }


def verdict_as_pair_label() -> Any:
    """The verdict's canonical value as the human pair labels spell it (a verdict `tie` is `T`)."""
    return func.coalesce(func.nullif(Verdict.value_canonical, "tie"), literal_column("'T'"))


def human_mean_score() -> Any:
    """The humans' mean score for the job's item and dimension (a scalar subquery; NULL without
    one): what a pointwise verdict is held against here and in `store.find`."""
    ann = aliased(Annotator)
    return (
        select(func.avg(Label.value_num))
        .join(ann, ann.id == Label.annotator_id)
        .where(
            Label.item_id == Job.item_id,
            ann.kind == "human",
            Label.dimension == func.coalesce(Job.dimension, ""),
            Label.value_num.is_not(None),
        )
        .scalar_subquery()
    )


def verdict_shown() -> tuple[Any, ...]:
    """A verdict's columns as the viewer shows them, in the order of `VerdictRow` and `CaseAttempt`
    (parse status, failure kind, canonical and presented value, score, rationale)."""
    return (
        Verdict.parse_status,
        Verdict.failure_kind,
        Verdict.value_canonical,
        Verdict.value_presented,
        Verdict.score,
        Verdict.rationale,
    )


def shown_fields(row: Sequence[Any], start: int) -> dict[str, Any]:
    """The `verdict_shown()` columns of a result row, from index `start`, as the keyword arguments
    of `VerdictRow` and `CaseAttempt` (a score as a float; None where the verdict has none)."""
    status, kind, value, presented, score, rationale = row[start : start + 6]
    return {
        "parse_status": status,
        "failure_kind": kind,
        "value": value,
        "value_presented": presented,
        "score": None if score is None else float(score),
        "rationale": rationale,
    }


def _human_disagrees(protocol: str) -> Any:
    """A correlated condition: the case's human labels are mostly against the verdict.

    Pairwise: more human annotators chose another label than this verdict's (ties `T` = `tie`).
    Pointwise: the humans' mean score for the dimension is a full point or more away."""
    if protocol == "pairwise":
        ann = aliased(Annotator)
        mine = verdict_as_pair_label()
        humans = (
            select(func.count())
            .select_from(PairLabel)
            .join(ann, ann.id == PairLabel.annotator_id)
            .where(PairLabel.pair_id == Job.pair_id, ann.kind == "human")
        )
        against = humans.where(PairLabel.value != mine).scalar_subquery()
        agree = humans.where(PairLabel.value == mine).scalar_subquery()
        return and_(Verdict.value_canonical.is_not(None), against > agree)
    return and_(Verdict.score.is_not(None), func.abs(human_mean_score() - Verdict.score) >= 1.0)


def _judges_disagree() -> Any:
    """Another judge's accepted verdict on the same case (condition, dimension) differs."""
    j2 = aliased(Job)
    v2 = aliased(Verdict)
    return (
        select(v2.id)
        .join(j2, j2.id == v2.job_id)
        .where(
            j2.campaign_id == Job.campaign_id,
            func.coalesce(j2.pair_id, j2.item_id) == func.coalesce(Job.pair_id, Job.item_id),
            func.coalesce(j2.condition, "") == func.coalesce(Job.condition, ""),
            func.coalesce(j2.dimension, "") == func.coalesce(Job.dimension, ""),
            j2.judge_id != Job.judge_id,
            v2.parse_status == "ok",
            v2.value_canonical != Verdict.value_canonical,
        )
        .exists()
    )


def _in_campaign(engine: Engine, campaign_id: int) -> Any:
    """`job.campaign_id = id`, written so that each planner walks verdicts in id order and stops
    after a page: SQLite would otherwise walk the campaign's jobs through their index and sort
    every verdict (`+ 0` hides the index from it); PostgreSQL estimates the plain comparison
    from its statistics (the `+ 0` form would make it guess a few rows and scan every job)."""
    if engine.dialect.name == "sqlite":
        return Job.campaign_id + 0 == campaign_id
    return Job.campaign_id == campaign_id


def _judge_id(engine: Engine, name: str) -> int:
    with engine.connect() as conn:
        found = conn.execute(select(Judge.id).where(Judge.name == name)).scalar()
    return -1 if found is None else int(found)  # -1: no such judge, so no row


def verdict_page_offset(engine: Engine, campaign: str, *, offset: int, limit: int = 50) -> list[int]:
    """The verdict ids of the same unfiltered page by OFFSET: the reference keyset paging is
    measured against in `benchmarks/bench_viewer.py` (not used by the viewer)."""
    cid = campaign_row(engine, campaign)["id"]
    q = (
        select(Verdict.id)
        .join(Job, Job.id == Verdict.job_id)
        .where(_in_campaign(engine, cid))
        .order_by(Verdict.id)
        .offset(offset)
        .limit(limit)
    )
    with engine.connect() as conn:
        return [int(r[0]) for r in conn.execute(q)]


def unit_labels(engine: Engine, protocol: str, units: list[int]) -> dict[int, str]:
    """Unit id -> external id ('a | b' for a pair), for the rows of one page."""
    with engine.connect() as conn:
        found = unit_items(conn, protocol, units, Item.external_id)
    return {u: " | ".join(str(r[1]) for r in rows) for u, rows in found.items()}


def case_record(engine: Engine, campaign: str, unit: int) -> CaseRecord | None:
    """Everything stored about one case of a campaign; None when the campaign has no such case."""
    info = campaign_row(engine, campaign)
    pairwise = info["protocol"] == "pairwise"
    unit_col = Job.pair_id if pairwise else Job.item_id
    with engine.connect() as conn:
        rows = conn.execute(
            select(
                Judge.name,
                Job.order,
                Job.condition,
                Job.dimension,
                Job.repeat,
                Request.attempt,
                Job.status,
                Request.id,
                Response.ok,
                Response.error_class,
                Response.error_message,
                *verdict_shown(),
            )
            .select_from(Job)
            .join(Judge, Judge.id == Job.judge_id)
            .join(Request, Request.job_id == Job.id)
            .outerjoin(Response, Response.request_id == Request.id)
            .outerjoin(Verdict, and_(Verdict.job_id == Job.id, Verdict.attempt == Request.attempt))
            .where(Job.campaign_id == info["id"], unit_col == unit)
            .order_by(Judge.id, Job.condition, Job.dimension, Job.repeat, Job.order, Request.attempt)
        ).all()
        jobs_exist = conn.execute(
            select(func.count()).select_from(Job).where(Job.campaign_id == info["id"], unit_col == unit)
        ).scalar_one()
        if not jobs_exist:
            return None
        found = unit_items(
            conn, info["protocol"], [unit], Item.external_id, Item.input, Item.output, Item.system
        ).get(unit, [])
        items = [{"external_id": r[1], "input": r[2], "output": r[3], "system": r[4]} for r in found]
        item_ids = [int(r[0]) for r in found]
        pair_labels = {}
        if pairwise:
            pair_labels = {
                str(n): str(v)
                for n, v in conn.execute(
                    select(Annotator.name, PairLabel.value)
                    .join(Annotator, Annotator.id == PairLabel.annotator_id)
                    .where(PairLabel.pair_id == unit, Annotator.kind == "human")
                    .order_by(Annotator.id)
                )
            }
        labels = [
            HumanLabel(str(r[0]), r[1], str(r[2]), str(r[3]), r[4], r[5])
            for r in conn.execute(
                select(
                    Annotator.name,
                    Annotator.group,
                    Item.external_id,
                    Label.dimension,
                    Label.value_text,
                    Label.rationale,
                )
                .join(Annotator, Annotator.id == Label.annotator_id)
                .join(Item, Item.id == Label.item_id)
                .where(Label.item_id.in_(item_ids), Annotator.kind == "human")
                .order_by(Item.id, Label.dimension, Annotator.id)
            )
        ]
    attempts = [
        CaseAttempt(
            judge=r[0],
            order=r[1],
            condition=r[2],
            dimension=r[3],
            repeat=int(r[4]),
            attempt=int(r[5]),
            status=r[6],
            request_id=int(r[7]),
            ok=r[8],
            error_class=r[9],
            error_message=r[10],
            **shown_fields(r, 11),
        )
        for r in rows
    ]
    return CaseRecord(
        campaign=info["name"],
        protocol=info["protocol"],
        unit=unit,
        items=items,
        attempts=attempts,
        pair_labels=pair_labels,
        labels=labels,
    )


def raw_attempt(engine: Engine, campaign: str, request_id: int) -> RawAttempt | None:
    """The request as sent and the reply as received; None unless it belongs to `campaign`."""
    cid = campaign_row(engine, campaign)["id"]
    with engine.connect() as conn:
        r = conn.execute(
            select(
                Request.id,
                Request.messages,
                Request.params,
                Request.output_schema,
                Request.template_name,
                Response.raw_body,
                Response.text,
                Response.error_message,
                Response.http_status,
                Response.model_returned,
                Response.system_fingerprint,
            )
            .join(Job, Job.id == Request.job_id)
            .outerjoin(Response, Response.request_id == Request.id)
            .where(Request.id == request_id, Job.campaign_id == cid)
        ).first()
    if r is None:
        return None
    return RawAttempt(int(r[0]), list(r[1] or []), dict(r[2] or {}), r[3], r[4], *r[5:])


def recent_calls(engine: Engine, *, limit: int = 2_000) -> list[tuple[int, datetime]]:
    """(campaign id, created_at) of the newest `limit` responses, newest first."""
    with engine.connect() as conn:
        return [
            (int(c), t)
            for c, t in conn.execute(
                select(Job.campaign_id, Response.created_at)
                .select_from(Response)
                .join(Request, Request.id == Response.request_id)
                .join(Job, Job.id == Request.job_id)
                .order_by(Response.id.desc())
                .limit(limit)
            )
        ]


def spend_since(engine: Engine, after_response_id: int) -> list[tuple[int, int, int, float, int, bool]]:
    """Per campaign, over the responses with id > `after_response_id`: (campaign id, newest
    response id, calls, summed cost, calls with a cost, any simulated reply) — only new rows are
    read on each poll."""
    with engine.connect() as conn:
        return [
            (int(c), int(m), int(n), float(s or 0.0), int(k), bool(sim))
            for c, m, n, s, k, sim in conn.execute(
                select(
                    Job.campaign_id,
                    func.max(Response.id),
                    func.count(),
                    func.sum(Response.cost_usd),
                    func.count(Response.cost_usd),
                    func.max(case((simulated_reply(Response), 1), else_=0)),
                )
                .select_from(Response)
                .join(Request, Request.id == Response.request_id)
                .join(Job, Job.id == Request.job_id)
                .where(Response.id > after_response_id, Response.cached_from.is_(None))
                .group_by(Job.campaign_id)
            )
        ]


def failed_jobs_by_class(engine: Engine) -> list[tuple[int, str | None, int]]:
    """(campaign id, error class of the last attempt, failed jobs)."""
    with engine.connect() as conn:
        return [
            (int(c), e, int(n))
            for c, e, n in conn.execute(
                select(Job.campaign_id, Job.error_class, func.count())
                .where(Job.status == "failed")
                .group_by(Job.campaign_id, Job.error_class)
            )
        ]


def failure_examples(engine: Engine, campaign: str) -> list[dict[str, Any]]:
    """Per failure kind (a parse failure's kind, or an attempt's error class): how many, and the
    first one's text (the rationale or raw reply, or the error message) and case."""
    info = campaign_row(engine, campaign)
    unit = Job.pair_id if info["protocol"] == "pairwise" else Job.item_id
    in_campaign = Job.campaign_id == info["id"]
    parse = (
        Verdict.failure_kind,
        Verdict.id,
        select(func.coalesce(Response.text, Verdict.rationale), unit, Verdict.request_id, Judge.name)
        .select_from(Verdict)
        .join(Job, Job.id == Verdict.job_id)
        .outerjoin(Response, Response.request_id == Verdict.request_id),
        and_(in_campaign, Verdict.parse_status != "ok"),
    )
    attempt = (
        Response.error_class,
        Response.id,
        select(Response.error_message, unit, Request.id, Judge.name)
        .select_from(Response)
        .join(Request, Request.id == Response.request_id)
        .join(Job, Job.id == Request.job_id),
        and_(in_campaign, Response.error_class.is_not(None)),
    )
    out: list[dict[str, Any]] = []
    with engine.connect() as conn:
        for source, (kind_col, id_col, cases, failed) in (("parse", parse), ("attempt", attempt)):
            # one query shape for both: count per kind and the first row's id, then that row's case
            cases = cases.join(Judge, Judge.id == Job.judge_id)
            counted = cases.with_only_columns(kind_col, func.count(), func.min(id_col)).where(failed)
            for kind, n, first in conn.execute(counted.group_by(kind_col)).all():
                example, unit_id, request_id, judge = conn.execute(cases.where(id_col == first)).one()
                out.append(
                    {
                        "kind": kind or "unknown",
                        "source": source,
                        "count": int(n),
                        "example": example,
                        "unit": unit_id,
                        "request_id": int(request_id),
                        "judge": judge,
                    }
                )
    return out


def campaign_births(engine: Engine) -> dict[int, datetime]:
    """campaign id -> when that campaign was created: with the id, a key a delete and a create
    cannot repeat (a cache keyed by the id alone would hand a deleted campaign's figures to a new
    one that got its id, e.g. in a database from before ids were AUTOINCREMENT on SQLite)."""
    with engine.connect() as conn:
        return {int(i): t for i, t in conn.execute(select(Campaign.id, Campaign.created_at))}


def campaign_names_by_id(engine: Engine) -> dict[int, str]:
    with engine.connect() as conn:
        return {int(i): str(n) for i, n in conn.execute(select(Campaign.id, Campaign.name))}


def sub_campaigns(engine: Engine) -> dict[str, tuple[str, str, str]]:
    """Campaign name → (`repair` or `align`, the iteration's or alignment's name, the campaign's
    role in it) for every campaign a repair iteration or an alignment made."""
    from judgepanel.store.models import RepairIteration

    out: dict[str, tuple[str, str, str]] = {}
    with engine.connect() as conn:
        for kind, model in (("repair", RepairIteration), ("align", Alignment)):
            for name, camps in conn.execute(select(model.name, model.campaigns).order_by(model.id)):
                for role, campaign in (camps or {}).items():
                    if isinstance(campaign, str):
                        out.setdefault(campaign, (kind, str(name), str(role)))
    return out


def alignments_using(engine: Engine, campaign: str) -> list[str]:
    """The alignments (`align run`) that made `campaign`, by name."""
    with engine.connect() as conn:
        rows = conn.execute(select(Alignment.name, Alignment.campaigns).order_by(Alignment.name)).all()
    return [name for name, camps in rows if campaign in (camps or {}).values()]
