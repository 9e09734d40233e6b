"""What a report reads: a campaign's facts, usage, verdicts, and the human labels beside them.

Plain records out (no statistics here: `judgepanel.report.build` computes those with the pure
functions of `judgepanel.metrics`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, func, literal, select
from sqlalchemy.orm import Session

from judgepanel.errors import BadInput
from judgepanel.providers.spec import stored_judge_names
from judgepanel.store.campaigns import campaign_by_name
from judgepanel.store.models import (
    Annotator,
    CampaignJudge,
    Dataset,
    Item,
    Job,
    Judge,
    Label,
    Pair,
    PairLabel,
    PairSet,
    Request,
    Response,
    Rubric,
    RubricVersion,
    Verdict,
)

LATENCY_SAMPLE = 5_000  # latencies kept per judge for the plot (evenly spaced over the campaign)


@dataclass(frozen=True)
class JudgeUsage:
    judge: str
    calls: int
    cached: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None  # None when any priced call's price is unknown
    errors: dict[str, int]
    latencies_ms: list[float]  # of answered, uncached calls (a sample when there are many)
    parse_failures: int


@dataclass(frozen=True)
class CampaignFacts:
    name: str
    protocol: str
    dataset: str
    dataset_id: int
    pair_set: str | None
    pair_set_id: int | None
    rubric: str | None
    conditions: list[str]
    dimensions: list[str]
    judges: list[str]
    templates: dict[str, str]  # name -> sha256
    jobs: dict[str, int]  # status -> count
    usage: list[JudgeUsage]
    # judge spec -> its short name (given `NAME=SPEC` or derived; `providers.spec.stored_judge_names`)
    judge_names: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class JudgeVerdict:
    judge: str
    unit: int  # item id (pointwise) or pair id (pairwise)
    order: str | None
    condition: str | None
    dimension: str | None
    value: str | None  # canonical
    score: float | None
    rationale: str | None


@dataclass(frozen=True)
class HumanRatings:
    """Annotator -> (group, {unit id: value}); values are item scores or pair labels A/B/T."""

    raters: dict[str, tuple[str, dict[int, Any]]] = field(default_factory=dict)
    rationales: dict[tuple[str, int], str] = field(default_factory=dict)


@dataclass(frozen=True)
class UnitText:
    unit: int
    label: str  # external id, or "a | b"
    input: str | None
    outputs: list[str]  # one (item) or two (pair: a, b)


def campaign_facts(engine: Engine, name: str) -> CampaignFacts:
    with Session(engine) as s:
        c = campaign_by_name(s, name)
        if c.dataset_id is None:
            raise BadInput(
                f"campaign {name!r} is an editor campaign: it judges no items (see `repair compare`)"
            )
        ds = s.get(Dataset, c.dataset_id)
        assert ds is not None
        ps = s.get(PairSet, c.pair_set_id) if c.pair_set_id else None
        rubric = None
        if c.rubric_version_id:
            rv = s.get(RubricVersion, c.rubric_version_id)
            r = s.get(Rubric, rv.rubric_id) if rv else None
            rubric = f"{r.name}@{rv.version}" if r and rv else None
        judges = list(
            s.scalars(
                select(Judge.name)
                .join(CampaignJudge, CampaignJudge.judge_id == Judge.id)
                .where(CampaignJudge.campaign_id == c.id)
                .order_by(Judge.id)
            )
        )
        jobs = dict(
            s.execute(
                select(Job.status, func.count()).where(Job.campaign_id == c.id).group_by(Job.status)
            ).all()
        )
        conditions = sorted(
            {v for v in s.scalars(select(Job.condition).where(Job.campaign_id == c.id).distinct()) if v}
        )
        dimensions = sorted(
            {v for v in s.scalars(select(Job.dimension).where(Job.campaign_id == c.id).distinct()) if v}
        )
        templates = dict(
            s.execute(
                select(Request.template_name, Request.template_hash)
                .join(Job, Job.id == Request.job_id)
                .where(Job.campaign_id == c.id)
                .distinct()
            ).all()
        )
        with engine.connect() as conn:  # Core rows: the ORM's per-row cost dominates at 10⁵ calls
            usage = _usage(conn, c.id, judges)
        return CampaignFacts(
            name=c.name,
            protocol=c.protocol,
            dataset=ds.name,
            dataset_id=ds.id,
            pair_set=ps.name if ps else None,
            pair_set_id=ps.id if ps else None,
            rubric=rubric,
            conditions=conditions,
            dimensions=dimensions,
            judges=judges,
            templates=templates,
            jobs={str(k): int(v) for k, v in jobs.items()},
            usage=usage,
            judge_names=stored_judge_names(judges, c.spec),
        )


def _usage(s: Any, campaign_id: int, judges: list[str]) -> list[JudgeUsage]:
    rows = s.execute(
        select(
            Judge.name,
            Response.ok,
            Response.error_class,
            Response.cached_from,
            Response.input_tokens,
            Response.output_tokens,
            Response.cost_usd,
            Response.latency_ms,
        )
        .select_from(Request)
        .join(Job, Job.id == Request.job_id)
        .join(Judge, Judge.id == Job.judge_id)
        .join(Response, Response.request_id == Request.id)
        .where(Job.campaign_id == campaign_id)
        .order_by(Request.id)
    ).all()
    by: dict[str, list[Any]] = defaultdict(list)
    for r in rows:
        by[r[0]].append(r)
    parse_failed = dict(
        s.execute(
            select(Judge.name, func.count())
            .select_from(Verdict)
            .join(Job, Job.id == Verdict.job_id)
            .join(Judge, Judge.id == Job.judge_id)
            .where(Job.campaign_id == campaign_id, Verdict.parse_status != "ok")
            .group_by(Judge.name)
        ).all()
    )
    out = []
    for j in judges:
        rs = by.get(j, [])
        errors = Counter(r[2] for r in rs if r[2])
        unknown = any(r[6] is None and r[3] is None and r[1] for r in rs)
        lat = [float(r[7]) for r in rs if r[1] and r[3] is None and r[7] is not None]
        if len(lat) > LATENCY_SAMPLE:
            step = len(lat) / LATENCY_SAMPLE
            lat = [lat[int(i * step)] for i in range(LATENCY_SAMPLE)]
        out.append(
            JudgeUsage(
                judge=j,
                calls=len(rs),
                cached=sum(1 for r in rs if r[3] is not None),
                input_tokens=sum(int(r[4] or 0) for r in rs),
                output_tokens=sum(int(r[5] or 0) for r in rs),
                cost_usd=None if unknown else float(sum(float(r[6] or 0.0) for r in rs)),
                errors=dict(sorted(errors.items())),
                latencies_ms=lat,
                parse_failures=int(parse_failed.get(j, 0)),
            )
        )
    return out


def campaign_verdicts(
    engine: Engine, name: str, *, rationales: bool = True, units: Iterable[int] | None = None
) -> list[JudgeVerdict]:
    """Accepted verdicts (parse ok, first sample) of a campaign's done jobs; without their
    rationales (None) when `rationales` is false, only of `units` when given. Read through a Core
    connection: at 10⁵ rows the ORM's per-row bookkeeping costs more than the query."""
    with Session(engine) as s:
        cid = campaign_by_name(s, name).id
    q = (
        select(
            Judge.name,
            func.coalesce(Job.pair_id, Job.item_id),
            Job.order,
            Job.condition,
            Job.dimension,
            Verdict.value_canonical,
            Verdict.score,
            Verdict.rationale if rationales else literal(None),
        )
        .select_from(Job)
        .join(Judge, Judge.id == Job.judge_id)
        .join(Verdict, Verdict.job_id == Job.id)
        .where(Job.campaign_id == cid, Job.status == "done", Job.repeat == 0, Verdict.parse_status == "ok")
        .order_by(Job.id)
    )
    if units is not None:
        wanted = sorted(set(units))
        if not wanted:
            return []
        q = q.where(func.coalesce(Job.pair_id, Job.item_id).in_(wanted))
    with engine.connect() as conn:
        rows = conn.execute(q).all()
    return [
        JudgeVerdict(r[0], int(r[1]), r[2], r[3], r[4], r[5], None if r[6] is None else float(r[6]), r[7])
        for r in rows
        if r[1] is not None
    ]


def human_pair_labels(engine: Engine, pair_set_id: int) -> HumanRatings:
    """The human annotators' derived A/B/T labels on a pair set (LLM annotators left out)."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(Annotator.name, Annotator.group, PairLabel.pair_id, PairLabel.value)
            .join(Annotator, Annotator.id == PairLabel.annotator_id)
            .join(Pair, Pair.id == PairLabel.pair_id)
            .where(Pair.pair_set_id == pair_set_id, Annotator.kind == "human")
            .order_by(Annotator.id, Pair.position)
        ).all()
    out = HumanRatings()
    for name, group, pid, value in rows:
        out.raters.setdefault(name, (group or "human", {}))[1][int(pid)] = value
    return out


def human_item_scores(engine: Engine, dataset_id: int, dimension: str | None) -> HumanRatings:
    """Human numeric labels of a dataset's items for one dimension ('' or None: the only one)."""
    with engine.connect() as conn:
        q = (
            select(Annotator.name, Annotator.group, Label.item_id, Label.value_num, Label.rationale)
            .join(Annotator, Annotator.id == Label.annotator_id)
            .where(
                Annotator.dataset_id == dataset_id, Annotator.kind == "human", Label.value_num.is_not(None)
            )
            .order_by(Annotator.id, Label.item_id)
        )
        q = q.where(Label.dimension == (dimension or ""))
        rows = conn.execute(q).all()
    out = HumanRatings()
    for name, group, item, value, rationale in rows:
        out.raters.setdefault(name, (group or "human", {}))[1][int(item)] = float(value or 0.0)
        if rationale:
            out.rationales[(name, int(item))] = rationale
    return out


def unit_texts(
    engine: Engine, protocol: str, units: Iterable[int], *, limit: int = 2_000
) -> dict[int, UnitText]:
    """The texts a person needs to read a disagreement case (each cut at `limit` characters)."""
    ids = sorted(set(units))
    if not ids:
        return {}

    def cut(t: str | None) -> str | None:
        return None if t is None else (t if len(t) <= limit else t[:limit] + " …")

    out: dict[int, UnitText] = {}
    with engine.connect() as conn:
        if protocol == "pairwise":
            pairs = conn.execute(
                select(Pair.id, Pair.item_a_id, Pair.item_b_id).where(Pair.id.in_(ids))
            ).all()
            item_ids = {i for _, a, b in pairs for i in (a, b)}
            items = {
                r[0]: r
                for r in conn.execute(
                    select(Item.id, Item.external_id, Item.input, Item.output).where(Item.id.in_(item_ids))
                )
            }
            for pid, a, b in pairs:
                ia, ib = items[a], items[b]
                out[pid] = UnitText(
                    pid, f"{ia[1]} | {ib[1]}", cut(ia[2]), [cut(ia[3]) or "", cut(ib[3]) or ""]
                )
        else:
            for iid, ext, inp, outp in conn.execute(
                select(Item.id, Item.external_id, Item.input, Item.output).where(Item.id.in_(ids))
            ):
                out[iid] = UnitText(iid, ext, cut(inp), [cut(outp) or ""])
    return out
