"""What a report reads: a campaign's facts, usage, verdicts, and the human labels beside them.

Plain records out (no statistics here: `judgepanel.report.build` computes those with the pure
functions of `judgepanel.metrics`).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection, Engine, and_, case, func, literal, select
from sqlalchemy.orm import Session

from judgepanel.errors import BadInput
from judgepanel.providers.spec import stored_judge_names
from judgepanel.store import tables
from judgepanel.store.campaigns import campaign_by_name, judge_specs_in
from judgepanel.store.campaigns.readers import done_verdicts
from judgepanel.store.models import (
    Dataset,
    Item,
    Job,
    Judge,
    PairSet,
    Request,
    Rubric,
    RubricVersion,
    Verdict,
)
from judgepanel.store.sources import imported_source_text
from judgepanel.store.units import unit_items

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
    # where the verdicts come from when another tool graded them (`data import-inspect` /
    # `import-promptfoo`): one line naming the tool, file, task, eval id and model; None otherwise
    source: str | None = None


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
        judges = judge_specs_in(s, c.id)
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
        # Core rows (the ORM's per-row cost dominates at 10⁵ calls) on the session's own
        # connection: a second one while this is held could wait for ever on a full pool
        usage = _usage(s.connection(), c.id, judges)
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
            source=imported_source_text(c.spec),
        )


def _usage(conn: Connection, campaign_id: int, judges: list[str]) -> list[JudgeUsage]:
    """Per judge: calls, tokens, cost and errors counted by the database (GROUP BY), and the
    latencies of answered, uncached calls streamed into arrays in request order."""
    j, q, r, jd = tables.job, tables.request, tables.response, tables.judge
    joined = (
        q.join(j, j.c.id == q.c.job_id).join(jd, jd.c.id == j.c.judge_id).join(r, r.c.request_id == q.c.id)
    )
    mine = j.c.campaign_id == campaign_id
    unpriced = and_(r.c.cost_usd.is_(None), r.c.cached_from.is_(None), r.c.ok.is_(True))
    # one pass: per judge and error class (NULL for none), summed per judge below
    totals: dict[str, list[Any]] = {}
    errors: dict[str, dict[str, int]] = defaultdict(dict)
    for name, kind, calls, cached, tin, tout, cost, unknown in conn.execute(
        select(
            jd.c.name,
            r.c.error_class,
            func.count(),
            func.count(r.c.cached_from),
            func.coalesce(func.sum(r.c.input_tokens), 0),
            func.coalesce(func.sum(r.c.output_tokens), 0),
            func.coalesce(func.sum(r.c.cost_usd), 0.0),
            func.max(case((unpriced, 1), else_=0)),
        )
        .select_from(joined)
        .where(mine)
        .group_by(jd.c.name, r.c.error_class)
    ):
        t = totals.setdefault(name, [0, 0, 0, 0, 0.0, 0])
        for k, x in enumerate((calls, cached, tin, tout, float(cost), unknown)):
            t[k] = max(t[k], x) if k == 5 else t[k] + x
        if kind:
            errors[name][kind] = int(calls)
    ids = dict(conn.execute(select(jd.c.name, jd.c.id).where(jd.c.name.in_(judges))).all())
    chunks: dict[int, list[NDArray[np.float64]]] = defaultdict(list)
    for rows in _streamed(
        conn,
        select(j.c.judge_id, r.c.latency_ms)
        .select_from(q.join(j, j.c.id == q.c.job_id).join(r, r.c.request_id == q.c.id))
        .where(mine, r.c.ok.is_(True), r.c.cached_from.is_(None), r.c.latency_ms.is_not(None))
        .order_by(q.c.id),
    ):
        jid = np.array([x[0] for x in rows], dtype=np.int64)
        lat = np.array([x[1] for x in rows], dtype=np.float64)
        for k in np.unique(jid).tolist():
            chunks[k].append(lat[jid == k])
    parse_failed: dict[str, int] = dict(
        conn.execute(
            select(jd.c.name, func.count())
            .select_from(
                tables.verdict.join(j, j.c.id == tables.verdict.c.job_id).join(jd, jd.c.id == j.c.judge_id)
            )
            .where(mine, tables.verdict.c.parse_status != "ok")
            .group_by(jd.c.name)
        ).all()
    )
    out = []
    for name in judges:
        calls, cached, tin, tout, cost, unknown = totals.get(name, (0, 0, 0, 0, 0.0, 0))
        parts = chunks.get(ids.get(name, -1), [])
        lat = np.concatenate(parts) if parts else np.zeros(0)
        if len(lat) > LATENCY_SAMPLE:
            step = len(lat) / LATENCY_SAMPLE
            lat = lat[[int(i * step) for i in range(LATENCY_SAMPLE)]]
        out.append(
            JudgeUsage(
                judge=name,
                calls=int(calls),
                cached=int(cached),
                input_tokens=int(tin),
                output_tokens=int(tout),
                cost_usd=None if unknown else float(cost),
                errors=dict(sorted(errors.get(name, {}).items())),
                latencies_ms=lat.tolist(),
                parse_failures=int(parse_failed.get(name, 0)),
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
    q = done_verdicts(
        cid,
        Judge.name,
        func.coalesce(Job.pair_id, Job.item_id),
        Job.order,
        Job.condition,
        Job.dimension,
        Verdict.value_canonical,
        Verdict.score,
        Verdict.rationale if rationales else literal(None),
        accepted=True,
    ).order_by(Job.id)
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
        rows = conn.execute(_pair_label_query(pair_set_id)).all()
    out = HumanRatings()
    for name, group, pid, value in rows:
        out.raters.setdefault(name, (group or "human", {}))[1][int(pid)] = value
    return out


def human_item_scores(engine: Engine, dataset_id: int, dimension: str | None) -> HumanRatings:
    """Human numeric labels of a dataset's items for one dimension ('' or None: the only one)."""
    with engine.connect() as conn:
        rows = conn.execute(_item_label_query(dataset_id, dimension)).all()
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

    with engine.connect() as conn:
        found = unit_items(conn, protocol, ids, Item.external_id, Item.input, Item.output)
    return {
        u: UnitText(u, " | ".join(str(r[1]) for r in rows), cut(rows[0][2]), [cut(r[3]) or "" for r in rows])
        for u, rows in found.items()
    }


# Columnar reads for the report at 10⁵–10⁶ verdicts (issue 20 §4): rows are streamed in chunks
# (a server-side cursor on PostgreSQL) straight into numpy arrays, never held as Python objects;
# strings that repeat (judges, conditions, values) become small integer codes into a list.

STREAM_ROWS = 50_000  # rows fetched per chunk


def _streamed(conn: Connection, q: Any) -> Iterator[Sequence[Any]]:
    """The rows of `q` in chunks of `STREAM_ROWS` as the driver's plain tuples, through a
    server-side cursor on PostgreSQL (SQLite steps through the result as it is fetched).

    The statement runs on the DBAPI cursor with bound parameters: SQLAlchemy's per-row result
    objects cost more than the query itself at 10⁶ rows. Values are the driver's."""
    compiled = q.compile(dialect=conn.dialect)
    params = compiled.construct_params()
    args: Any = tuple(params[k] for k in compiled.positiontup or ()) if compiled.positional else params
    raw: Any = conn.connection.dbapi_connection
    server_side = conn.dialect.name == "postgresql"
    cur = raw.cursor(name=f"jp_report_{next(_CURSORS)}") if server_side else raw.cursor()
    try:
        cur.execute(str(compiled), args)
        while part := cur.fetchmany(STREAM_ROWS):
            yield part
    finally:
        cur.close()


_CURSORS = itertools.count()


def _coder(codes: dict[Any, int]) -> Any:
    """`code(column)`: each value's index in `codes` (new values appended)."""

    def code(col: Sequence[Any]) -> list[int]:
        return [codes.setdefault(v, len(codes)) for v in col]

    return code


@dataclass(frozen=True)
class VerdictColumns:
    """Accepted verdicts (parse ok, first sample) of a campaign's done jobs as parallel arrays,
    in job order. Codes index the lists: `judge` → `judges` (judge names), `condition` →
    `conditions`, `dimension` → `dimensions`, `value` → `values` (canonical values; -1 when
    empty); `order` is 1 for AB, 2 for BA, 0 otherwise; `score` is NaN when none."""

    judges: list[str]
    conditions: list[str | None]
    dimensions: list[str | None]
    values: list[str]
    judge: NDArray[np.int32]
    unit: NDArray[np.int64]
    order: NDArray[np.int8]
    condition: NDArray[np.int32]
    dimension: NDArray[np.int32]
    value: NDArray[np.int32]
    score: NDArray[np.float64]


def verdict_columns(engine: Engine, name: str) -> VerdictColumns:
    """The campaign's accepted verdicts (as `campaign_verdicts` selects them, without
    rationales) as arrays; memory grows by ~33 bytes per verdict, never by a Python object."""
    j, v = tables.job, tables.verdict
    with engine.connect() as conn:
        cid = _campaign_id(conn, name)
        names = dict(conn.execute(select(tables.judge.c.id, tables.judge.c.name)).all())
        unit = func.coalesce(j.c.pair_id, j.c.item_id)
        q = (
            select(
                j.c.judge_id,
                unit,
                case((j.c.order == "AB", 1), (j.c.order == "BA", 2), else_=0),
                j.c.condition,
                j.c.dimension,
                v.c.value_canonical,
                v.c.score,
            )
            .select_from(j.join(v, v.c.job_id == j.c.id))
            .where(
                j.c.campaign_id == cid,
                j.c.status == "done",
                j.c.repeat == 0,
                v.c.parse_status == "ok",
                unit.is_not(None),
            )
            .order_by(j.c.id)
        )
        judge_codes: dict[Any, int] = {}
        cond_codes: dict[Any, int] = {}
        dim_codes: dict[Any, int] = {}
        value_codes: dict[Any, int] = {"": -1, None: -1}
        value_names: list[str] = []
        chunks: list[tuple[Any, ...]] = []
        code_j, code_c, code_d = _coder(judge_codes), _coder(cond_codes), _coder(dim_codes)
        for rows in _streamed(conn, q):
            jid, u, o, c, d, val, s = zip(*rows, strict=True)
            for x in set(val) - value_codes.keys():
                value_codes[x] = len(value_names)
                value_names.append(x)
            chunks.append(
                (
                    np.array(code_j(jid), dtype=np.int32),
                    np.array(u, dtype=np.int64),
                    np.array(o, dtype=np.int8),
                    np.array(code_c(c), dtype=np.int32),
                    np.array(code_d(d), dtype=np.int32),
                    np.array([value_codes[x] for x in val], dtype=np.int32),
                    np.array(s, dtype=np.float64),  # None -> NaN
                )
            )
    dtypes = (np.int32, np.int64, np.int8, np.int32, np.int32, np.int32, np.float64)
    cols = [
        np.concatenate([ch[k] for ch in chunks]) if chunks else np.zeros(0, dtype=dt)
        for k, dt in enumerate(dtypes)
    ]
    return VerdictColumns(
        judges=[names[k] for k in judge_codes],
        conditions=list(cond_codes),
        dimensions=list(dim_codes),
        values=value_names,
        judge=cols[0],
        unit=cols[1],
        order=cols[2],
        condition=cols[3],
        dimension=cols[4],
        value=cols[5],
        score=cols[6],
    )


def _campaign_id(conn: Connection, name: str) -> int:
    cid = conn.execute(select(tables.campaign.c.id).where(tables.campaign.c.name == name)).scalar()
    if cid is None:
        raise BadInput(f"no campaign named {name!r}")
    return int(cid)


@dataclass(frozen=True)
class HumanColumns:
    """Human labels as arrays: `rater` → `raters` (annotator names, by annotator id, with their
    `groups`), `unit` (item or pair id), `value` (item scores; pair labels as codes into
    `labels`)."""

    raters: list[str]
    groups: list[str]
    labels: list[str]
    rater: NDArray[np.int32]
    unit: NDArray[np.int64]
    value: NDArray[np.float64]


def _human_columns(conn: Connection, q: Any, numeric: bool) -> HumanColumns:
    rater_codes: dict[str, int] = {}
    groups: list[str] = []
    label_codes: dict[Any, int] = {}
    code_l = _coder(label_codes)
    chunks = []
    for rows in _streamed(conn, q):
        r = []
        for name, group in ((x[0], x[1]) for x in rows):
            k = rater_codes.get(name)
            if k is None:
                k = rater_codes[name] = len(groups)
                groups.append(group or "human")
            r.append(k)
        vals = [x[3] for x in rows]
        chunks.append(
            (
                np.array(r, dtype=np.int32),
                np.array([x[2] for x in rows], dtype=np.int64),
                np.array([float(x or 0.0) for x in vals] if numeric else code_l(vals), dtype=np.float64),
            )
        )
    cols = [np.concatenate([ch[k] for ch in chunks]) if chunks else np.zeros(0) for k in range(3)]
    return HumanColumns(
        raters=list(rater_codes),
        groups=groups,
        labels=[str(x) for x in label_codes],
        rater=cols[0].astype(np.int32),
        unit=cols[1].astype(np.int64),
        value=cols[2].astype(np.float64),
    )


def human_pair_label_columns(engine: Engine, pair_set_id: int) -> HumanColumns:
    """`human_pair_labels` as arrays (the labels A/B/T as codes into `labels`)."""
    with engine.connect() as conn:
        return _human_columns(conn, _pair_label_query(pair_set_id), numeric=False)


def _pair_label_query(pair_set_id: int) -> Any:
    """The human annotators' (name, group, pair id, A/B/T) on a pair set, in rater then pair order."""
    a, pl, p = tables.annotator, tables.pair_label, tables.pair
    return (
        select(a.c.name, a.c.group, pl.c.pair_id, pl.c.value)
        .select_from(pl.join(a, a.c.id == pl.c.annotator_id).join(p, p.c.id == pl.c.pair_id))
        .where(p.c.pair_set_id == pair_set_id, a.c.kind == "human")
        .order_by(a.c.id, p.c.position)
    )


def _item_label_query(dataset_id: int, dimension: str | None) -> Any:
    a, lab = tables.annotator, tables.label
    return (
        select(a.c.name, a.c.group, lab.c.item_id, lab.c.value_num, lab.c.rationale)
        .select_from(lab.join(a, a.c.id == lab.c.annotator_id))
        .where(
            a.c.dataset_id == dataset_id,
            a.c.kind == "human",
            lab.c.value_num.is_not(None),
            lab.c.dimension == (dimension or ""),
        )
        .order_by(a.c.id, lab.c.item_id)
    )


def human_item_score_columns(engine: Engine, dataset_id: int, dimension: str | None) -> HumanColumns:
    """`human_item_scores` as arrays, without the rationales (`human_item_rationales` reads
    those for the units a report shows)."""
    q = _item_label_query(dataset_id, dimension).with_only_columns(
        tables.annotator.c.name, tables.annotator.c.group, tables.label.c.item_id, tables.label.c.value_num
    )
    with engine.connect() as conn:
        return _human_columns(conn, q, numeric=True)


def human_item_rationales(
    engine: Engine, dataset_id: int, dimension: str | None, units: Iterable[int]
) -> dict[tuple[str, int], str]:
    """(annotator, item) -> rationale of the human scores of `units` (as `human_item_scores`)."""
    wanted = sorted(set(units))
    if not wanted:
        return {}
    q = _item_label_query(dataset_id, dimension).where(tables.label.c.item_id.in_(wanted))
    out: dict[tuple[str, int], str] = {}
    with engine.connect() as conn:
        for name, _g, item, _v, rationale in conn.execute(q):
            if rationale:
                out[(name, int(item))] = rationale
    return out
