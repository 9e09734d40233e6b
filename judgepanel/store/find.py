"""Finding verdicts: full-text search, sorting, the human-label column and the previous / next case
of the viewer's verdict table. Rows out, nothing computed but what the database orders by.

**Search** (`q`): the words of `q` (letters and digits; anything else separates words), each
matched as a word prefix, all of them required, each in any of the verdict's rationale, its item's
texts (external id, input, output, system; either item of a pair) or its judge's name. Backed by
the full-text indexes of migration 0010_search — SQLite FTS5 (`verdict_fts`, `item_fts`) and
PostgreSQL `to_tsvector('simple', …)` GIN indexes — and by a LIKE scan (substrings, case-folded
ASCII) where they are missing (an SQLite built without FTS5, or its triggers dropped by a later
table rebuild): `search_mode` says which one answers.

**Sort**: by verdict id (the default), score, latency, cost or the size of the disagreement with
the humans (pointwise: |humans' mean − score|; pairwise: the share of human annotators who chose
another label), ascending or descending, a missing value always last, ties by verdict id.

**Paging** is by keyset: `after` is the verdict id of the last row shown,
and the page continues from that row's place in the order (its sort value is read again), so a page
deep in the table costs what the first does and a row appearing meanwhile shifts nothing.
`before` walks the same order backwards (the previous case).
"""

from __future__ import annotations

import re
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any
from weakref import WeakKeyDictionary

from sqlalchemy import (
    BigInteger,
    Engine,
    Float,
    and_,
    case,
    cast,
    false,
    func,
    literal,
    literal_column,
    or_,
    select,
    text,
    union_all,
)
from sqlalchemy.orm import aliased

from judgepanel.errors import BadInput
from judgepanel.store import browse
from judgepanel.store.models import Annotator, Item, Job, Judge, Label, Pair, PairLabel, Response, Verdict

SORTS = ("id", "score", "latency", "cost", "disagreement")
MAX_TERMS = 8
MAX_QUERY_CHARS = 200
_WORD = re.compile(r"[^\W_]+")
_LAST = 1e300  # where a missing sort value goes: after every real one, whichever the direction


@dataclass(frozen=True)
class VerdictSearch:
    """A filtered, searched, sorted list of a campaign's verdicts."""

    filter: browse.VerdictFilter = field(default_factory=browse.VerdictFilter)
    q: str | None = None
    sort: str = "id"
    descending: bool = False


@dataclass(frozen=True)
class FoundRow:
    """A verdict row of the table: `browse.VerdictRow`'s fields plus what the reply cost."""

    row: browse.VerdictRow
    latency_ms: float | None
    cost_usd: float | None


def search_terms(q: str | None) -> list[str]:
    """The words searched for; a query with characters but no word is a `BadInput`."""
    if q is None or not q.strip():
        return []
    if len(q) > MAX_QUERY_CHARS:
        raise BadInput(f"q: at most {MAX_QUERY_CHARS} characters, got {len(q)}")
    words = [w.lower() for w in _WORD.findall(q)]
    if not words:
        raise BadInput(f"q: search for words (letters or digits), got {q[:40]!r}")
    return list(dict.fromkeys(words))[:MAX_TERMS]


# ------------------------------------------------------------------- which index answers

_MODES: WeakKeyDictionary[Engine, str] = WeakKeyDictionary()
_MODES_LOCK = threading.Lock()
_SQLITE_OBJECTS = {
    "verdict_fts",
    "item_fts",
    *(f"{t}_{s}" for t in ("verdict_fts", "item_fts") for s in ("ai", "ad", "au")),
}
_PG_INDEXES = {"ix_verdict_rationale_search", "ix_item_text_search"}


def search_mode(engine: Engine) -> str:
    """`fts5`, `postgresql` (full-text indexes) or `like` (a scan), looked up once per engine."""
    with _MODES_LOCK:
        if engine in _MODES:
            return _MODES[engine]
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            names = {r[0] for r in conn.execute(text("SELECT name FROM sqlite_master"))}
            mode = "fts5" if names >= _SQLITE_OBJECTS else "like"
        else:
            names = {
                r[0]
                for r in conn.execute(
                    text("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")
                )
            }
            mode = "postgresql" if names >= _PG_INDEXES else "like"
    with _MODES_LOCK:
        _MODES[engine] = mode
    return mode


def _like(term: str) -> str:
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _item_text_like(term: str) -> Any:
    pattern = _like(term)
    return or_(
        *(
            func.lower(func.coalesce(c, "")).like(pattern, escape="\\")
            for c in (Item.external_id, Item.input, Item.output, Item.system)
        )
    )


def _matching_items(mode: str, term: str, k: int) -> Any:
    """A SELECT of the ids of items whose texts hold `term`."""
    if mode == "fts5":
        return (
            select(literal_column("rowid"))
            .select_from(text("item_fts"))
            .where(text(f"item_fts MATCH :m{k}").bindparams(**{f"m{k}": f'"{term}"*'}))
        )
    if mode == "postgresql":
        return select(Item.id).where(
            text(
                "to_tsvector('simple', coalesce(item.external_id, '') || ' ' || coalesce(item.input, '') "
                "|| ' ' || coalesce(item.output, '') || ' ' || coalesce(item.system, '')) "
                f"@@ to_tsquery('simple', :m{k})"
            ).bindparams(**{f"m{k}": f"{term}:*"})
        )
    return select(Item.id).where(_item_text_like(term))


def _rationale_ids(mode: str, term: str, k: int) -> Any:
    """A SELECT of the ids of verdicts whose rationale holds `term`."""
    if mode == "fts5":
        return (
            select(literal_column("rowid"))
            .select_from(text("verdict_fts"))
            .where(text(f"verdict_fts MATCH :r{k}").bindparams(**{f"r{k}": f'"{term}"*'}))
        )
    if mode == "postgresql":
        return select(Verdict.id).where(
            text(
                f"to_tsvector('simple', coalesce(verdict.rationale, '')) @@ to_tsquery('simple', :r{k})"
            ).bindparams(**{f"r{k}": f"{term}:*"})
        )
    return select(Verdict.id).where(
        func.lower(func.coalesce(Verdict.rationale, "")).like(_like(term), escape="\\")
    )


def _term_matches(
    mode: str, term: str, k: int, judge_ids: list[int], info: dict[str, Any], sqlite: bool
) -> Any:
    """`verdict.id IN (…)` of the verdicts one term finds: by their rationale (the full-text
    index), their item's or pair's texts (the item index, then the campaign's jobs of those items
    or pairs by `ix_job_item` / `ix_job_pair`) or their judge's name (`ix_job_judge`). The
    database starts from these ids, the few a word finds, instead of walking the campaign's
    verdicts and testing each one (at 10⁶ verdicts a word in no rationale read all of them)."""
    items = _matching_items(mode, term, k)
    # on SQLite `+ 0` keeps the planner on the item, pair or judge index (a word's few jobs), not
    # on the campaign's, whose every job it would walk
    campaign = (Job.campaign_id + 0 if sqlite else Job.campaign_id) == info["id"]

    def verdicts_where(where: Any) -> Any:
        return select(Verdict.id).join(Job, Job.id == Verdict.job_id).where(where, campaign)

    found = [_rationale_ids(mode, term, k)]
    if info["protocol"] == "pairwise":
        pairs = select(Pair.id).where(
            Pair.pair_set_id == info["pair_set_id"], or_(Pair.item_a_id.in_(items), Pair.item_b_id.in_(items))
        )
        found.append(verdicts_where(Job.pair_id.in_(pairs)))
    else:
        found.append(verdicts_where(Job.item_id.in_(items)))
    if judge_ids:
        found.append(verdicts_where(Job.judge_id.in_(judge_ids)))
    return Verdict.id.in_(union_all(*found))


def _judges_named(engine: Engine, campaign_id: int, term: str) -> list[int]:
    """The campaign's judges whose name (or short name) holds `term` (a handful of rows)."""
    from judgepanel.store.models import CampaignJudge

    with engine.connect() as conn:
        return [
            int(r[0])
            for r in conn.execute(
                select(Judge.id)
                .join(CampaignJudge, CampaignJudge.judge_id == Judge.id)
                .where(
                    CampaignJudge.campaign_id == campaign_id,
                    func.lower(Judge.name).like(_like(term), escape="\\"),
                )
            )
        ]


# ------------------------------------------------------------------- sorting


def disagreement_size(protocol: str) -> Any:
    """How far the humans are from this verdict (NULL without a human label): pointwise the
    humans' mean score for the item and dimension minus the score, in absolute value; pairwise
    the share of human annotators of the pair who chose another label (a verdict `tie` is `T`)."""
    if protocol == "pairwise":
        ann = aliased(Annotator)
        mine = browse.verdict_as_pair_label()
        share = (
            select(
                func.sum(case((PairLabel.value != mine, 1.0), else_=0.0))
                / func.nullif(cast(func.count(), Float), 0.0)
            )
            .select_from(PairLabel)
            .join(ann, ann.id == PairLabel.annotator_id)
            .where(PairLabel.pair_id == Job.pair_id, ann.kind == "human")
            .scalar_subquery()
        )
        return case((Verdict.value_canonical.is_(None), None), else_=share)
    return func.abs(browse.human_mean_score() - Verdict.score)


def _sort_value(sort: str, protocol: str) -> Any:
    if sort == "score":
        return Verdict.score
    if sort == "latency":
        return Response.latency_ms
    if sort == "cost":
        return Response.cost_usd
    if sort == "disagreement":
        return disagreement_size(protocol)
    raise BadInput(f"sort must be one of {', '.join(SORTS)}, got {sort!r}")


# ------------------------------------------------------------------- the page


def _base(engine: Engine, info: dict[str, Any], s: VerdictSearch) -> tuple[Any, Any]:
    """The filtered, searched SELECT of verdict rows (no order, no cursor) and the sort key."""
    flt = s.filter
    q = (
        select(
            Verdict.id,
            Judge.name,
            func.coalesce(Job.pair_id, Job.item_id),
            Job.order,
            Job.condition,
            Job.dimension,
            Job.repeat,
            Verdict.attempt,
            *browse.verdict_shown(),
            Verdict.request_id,
            Verdict.created_at,
            Response.latency_ms,
            Response.cost_usd,
        )
        .select_from(Verdict)
        .join(Job, Job.id == Verdict.job_id)
        .join(Judge, Judge.id == Job.judge_id)
        .outerjoin(Response, Response.request_id == Verdict.request_id)
        .where(browse._in_campaign(engine, info["id"]))
    )
    if flt.judge:
        q = q.where(Job.judge_id == browse._judge_id(engine, flt.judge))
    if flt.dimension:
        q = q.where(Job.dimension == flt.dimension)
    if flt.condition:
        q = q.where(Job.condition == flt.condition)
    if flt.order:
        q = q.where(Job.order == flt.order)
    if flt.failure_kind:
        q = q.where(Verdict.failure_kind == flt.failure_kind)
    if flt.judges_disagree:
        q = q.where(Verdict.parse_status == "ok", browse._judges_disagree())
    if flt.humans_disagree:
        q = q.where(Verdict.parse_status == "ok", browse._human_disagrees(info["protocol"]))
    terms = search_terms(s.q)
    if terms:
        mode = search_mode(engine)
        for k, term in enumerate(terms):
            judges = _judges_named(engine, info["id"], term)
            q = q.where(_term_matches(mode, term, k, judges, info, engine.dialect.name == "sqlite"))
    if s.sort == "id":
        return q, None
    value = _sort_value(s.sort, info["protocol"])
    key = func.coalesce(value, literal(_LAST if not s.descending else -_LAST, Float))
    return q.add_columns(key.label("sort_key")), key


def search_page(
    engine: Engine,
    campaign: str,
    s: VerdictSearch,
    *,
    after: int | None = None,
    before: int | None = None,
    limit: int = 50,
) -> tuple[list[FoundRow], bool]:
    """Up to `limit` rows after (or, with `before`, just before, still returned in list order) the
    row of verdict id `after`/`before` in the list's order, and whether more follow that way."""
    if s.sort not in SORTS:
        raise BadInput(f"sort must be one of {', '.join(SORTS)}, got {s.sort!r}")
    info = browse.campaign_row(engine, campaign)
    if s.sort != "id" and not search_terms(s.q) and s.filter == browse.VerdictFilter():
        return _kept_page(engine, info, s, after=after, before=before, limit=limit)
    q, key = _base(engine, info, s)
    backwards = before is not None
    cursor = before if backwards else after
    # the list's order: the key ascending (or descending), then the id the same way for `id`
    # and ascending under a key; walking backwards reverses all of it
    up = not s.descending
    ids_up = up if key is None else True
    if backwards:
        up, ids_up = not up, not ids_up
    if cursor is not None:
        # bound as BIGINT: a cursor may be any 64-bit number, and PostgreSQL's INTEGER ids would
        # refuse one beyond 32 bits as "out of range" instead of finding no row there
        at_id = literal(cursor, BigInteger)
        id_beyond = Verdict.id > at_id if ids_up else Verdict.id < at_id
        if key is None:
            q = q.where(id_beyond)
        else:
            at = _key_of(engine, info, s, cursor)
            if at is None:  # the cursor's row is not in this campaign: nothing follows it
                q = q.where(false())
            else:
                q = q.where(or_(key > at if up else key < at, and_(key == at, id_beyond)))
    id_order = Verdict.id.asc() if ids_up else Verdict.id.desc()
    q = q.order_by(id_order) if key is None else q.order_by(key.asc() if up else key.desc(), id_order)
    with engine.connect() as conn:
        rows = conn.execute(q.limit(limit + 1)).all()
    out = [_found(r) for r in rows[:limit]]
    if backwards:
        out.reverse()
    return out, len(rows) > limit


def _kept_page(
    engine: Engine,
    info: dict[str, Any],
    s: VerdictSearch,
    *,
    after: int | None,
    before: int | None,
    limit: int,
) -> tuple[list[FoundRow], bool]:
    """A page of the whole campaign's sorted list from its kept order (`store.find_order`: every
    verdict's key read once per change of the stored results, by the same expression the SQL path
    orders by), its rows read by primary key: no sort of the campaign per page."""
    from judgepanel.store import find_order

    value = _sort_value(s.sort, info["protocol"])
    key = func.coalesce(value, literal(_LAST if not s.descending else -_LAST, Float))
    listed = (
        select(Verdict.id, key)
        .select_from(Verdict)
        .join(Job, Job.id == Verdict.job_id)
        .join(Judge, Judge.id == Job.judge_id)
        .outerjoin(Response, Response.request_id == Verdict.request_id)
        .where(Job.campaign_id == info["id"])
    )
    order = find_order.kept_order(engine, (info["id"], s.sort, s.descending), listed, s.descending)
    ids, more = order.page(after=after, before=before, limit=limit)
    if not ids:
        return [], more
    q, _ = _base(engine, info, VerdictSearch(sort="id"))
    with engine.connect() as conn:
        rows = {int(r[0]): r for r in conn.execute(q.where(Verdict.id.in_(ids)))}
    return [_found(rows[i]) for i in ids if i in rows], more


def _key_of(engine: Engine, info: dict[str, Any], s: VerdictSearch, verdict_id: int) -> float | None:
    """The sort key of verdict `verdict_id` (None when it is not in the campaign)."""
    value = _sort_value(s.sort, info["protocol"])
    key = func.coalesce(value, literal(_LAST if not s.descending else -_LAST, Float))
    q = (
        select(key)
        .select_from(Verdict)
        .join(Job, Job.id == Verdict.job_id)
        .outerjoin(Response, Response.request_id == Verdict.request_id)
        .where(Verdict.id == literal(verdict_id, BigInteger), Job.campaign_id == info["id"])
    )
    with engine.connect() as conn:
        got = conn.execute(q).first()
    return None if got is None else float(got[0])


def _found(r: Any) -> FoundRow:
    row = browse.VerdictRow(
        verdict_id=int(r[0]),
        judge=r[1],
        unit=int(r[2]) if r[2] is not None else 0,
        order=r[3],
        condition=r[4],
        dimension=r[5],
        repeat=int(r[6]),
        attempt=int(r[7]),
        **browse.shown_fields(r, 8),
        request_id=int(r[14]),
        created_at=r[15],
    )
    return FoundRow(row, _num(r[16]), _num(r[17]))


def _num(v: Any) -> float | None:
    return None if v is None else float(v)


def first_verdict_of_case(engine: Engine, campaign: str, unit: int) -> int | None:
    """The smallest verdict id of case `unit` (a pair id, or an item id) in `campaign`."""
    info = browse.campaign_row(engine, campaign)
    col = Job.pair_id if info["protocol"] == "pairwise" else Job.item_id
    with engine.connect() as conn:
        got = conn.execute(
            select(func.min(Verdict.id))
            .join(Job, Job.id == Verdict.job_id)
            .where(Job.campaign_id == info["id"], col == unit)
        ).scalar()
    return None if got is None else int(got)


# ------------------------------------------------------------------- the human-label column


def human_column(
    engine: Engine, protocol: str, rows: list[browse.VerdictRow]
) -> dict[tuple[int, str | None], dict[str, Any]]:
    """(unit, dimension) → what the humans said: pairwise `{"A": n, "B": n, "T": n}` counts of the
    pair's human labels; pointwise `{"mean": m, "n": k}` over the item's human scores of that
    dimension (`n` 0 and `mean` None where there is none)."""
    units = sorted({r.unit for r in rows})
    if not units:
        return {}
    out: dict[tuple[int, str | None], dict[str, Any]] = {}
    with engine.connect() as conn:
        if protocol == "pairwise":
            counts: dict[int, dict[str, int]] = defaultdict(lambda: {"A": 0, "B": 0, "T": 0})
            for pid, value, n in conn.execute(
                select(PairLabel.pair_id, PairLabel.value, func.count())
                .join(Annotator, Annotator.id == PairLabel.annotator_id)
                .where(PairLabel.pair_id.in_(units), Annotator.kind == "human")
                .group_by(PairLabel.pair_id, PairLabel.value)
            ):
                counts[int(pid)][str(value)] = int(n)
            for r in rows:
                out[(r.unit, r.dimension)] = dict(counts.get(r.unit, {"A": 0, "B": 0, "T": 0}))
            return out
        means: dict[tuple[int, str], tuple[float, int]] = {}
        for iid, dim, mean, n in conn.execute(
            select(Label.item_id, Label.dimension, func.avg(Label.value_num), func.count(Label.value_num))
            .join(Annotator, Annotator.id == Label.annotator_id)
            .where(Label.item_id.in_(units), Annotator.kind == "human", Label.value_num.is_not(None))
            .group_by(Label.item_id, Label.dimension)
        ):
            means[(int(iid), str(dim))] = (float(mean), int(n))
    for r in rows:
        m, n = means.get((r.unit, r.dimension or ""), (None, 0))
        out[(r.unit, r.dimension)] = {"mean": m, "n": n}
    return out


__all__ = [
    "SORTS",
    "FoundRow",
    "VerdictSearch",
    "disagreement_size",
    "first_verdict_of_case",
    "human_column",
    "search_mode",
    "search_page",
    "search_terms",
]
