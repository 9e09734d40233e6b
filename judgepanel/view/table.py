"""The verdict table and the walk from case to case: what `/campaigns/C/verdicts` and the previous /
next links of a case page show, as JSON-ready dicts.

The table's state lives in its query string only (`judge`, `dimension`, `condition`, `order`,
`failure_kind`, `judges_disagree`, `humans_disagree`, `q`, `sort`, `desc`, `limit`, and the
cursor `after` or `before`), so a view is shared by sharing its address; a case opened from the
table carries the same state plus `v` (the verdict row it was opened from), which is what its
previous / next links walk from (`store.find`).
"""

from __future__ import annotations

import urllib.parse
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Engine

from judgepanel.errors import BadInput
from judgepanel.store import browse, find
from judgepanel.store.campaigns import campaign_judge_names
from judgepanel.store.identity import unit_identities
from judgepanel.store.sources import imported_source_text

PAGE_SIZES = (25, 50, 100, 200)
RATIONALE_CUT = 300  # characters shown before "…" and the expand
# the query-string keys of the table's state (the cursor keys `after` / `before` apart)
STATE_KEYS = (
    "judge",
    "dimension",
    "condition",
    "order",
    "failure_kind",
    "judges_disagree",
    "humans_disagree",
    "q",
    "sort",
    "desc",
    "limit",
)
_INT64 = 2**63


@dataclass(frozen=True)
class VerdictQuery:
    filter: browse.VerdictFilter
    after: int | None
    limit: int
    q: str | None = None
    sort: str = "id"
    desc: bool = False
    before: int | None = None

    @property
    def search(self) -> find.VerdictSearch:
        return find.VerdictSearch(self.filter, self.q, self.sort, self.desc)


def _flag(params: dict[str, str], key: str) -> bool:
    v = params.get(key, "")
    if v not in ("", "0", "1", "true", "false", "on"):
        raise BadInput(f"{key} must be 0 or 1, got {v[:40]!r}")
    return v in ("1", "true", "on")


def parse_cursor(params: dict[str, str], key: str) -> int | None:
    raw = params.get(key)
    if not raw:
        return None
    try:
        v = int(raw)
    except ValueError:
        raise BadInput(f"{key} must be a whole number, got {raw[:40]!r}") from None
    if not -_INT64 <= v < _INT64:  # a database integer holds no more
        raise BadInput(f"{key} must be a verdict id (a 64-bit integer), got {raw[:40]}")
    return v


def parse_verdict_query(params: dict[str, str]) -> VerdictQuery:
    """The query string of the verdict table; a bad value is a BadInput (HTTP 400)."""
    order = params.get("order") or None
    if order is not None and order not in browse.ORDERS:
        raise BadInput(f"order must be AB or BA, got {order[:40]!r}")
    kind = params.get("failure_kind") or None
    if kind is not None and kind not in browse.FAILURE_KINDS:
        raise BadInput(f"failure_kind must be one of {', '.join(browse.FAILURE_KINDS)}, got {kind[:40]!r}")
    try:
        limit = int(params.get("limit") or 50)
    except ValueError:
        raise BadInput("after and limit must be whole numbers") from None
    if limit not in PAGE_SIZES:
        raise BadInput(f"limit must be one of {', '.join(map(str, PAGE_SIZES))}, got {limit}")
    try:
        after, before = parse_cursor(params, "after"), parse_cursor(params, "before")
    except BadInput as exc:
        if "whole number" in str(exc):
            raise BadInput(f"after and limit must be whole numbers ({exc})") from None
        raise
    if after is not None and before is not None:
        raise BadInput("give after or before, not both")
    sort = params.get("sort") or "id"
    if sort not in find.SORTS:
        raise BadInput(f"sort must be one of {', '.join(find.SORTS)}, got {sort[:40]!r}")
    q = params.get("q") or None
    find.search_terms(q)  # a query with no word is refused here, before any page is read
    return VerdictQuery(
        browse.VerdictFilter(
            judge=params.get("judge") or None,
            dimension=params.get("dimension") or None,
            condition=params.get("condition") or None,
            order=order,
            failure_kind=kind,
            judges_disagree=_flag(params, "judges_disagree"),
            humans_disagree=_flag(params, "humans_disagree"),
        ),
        after,
        limit,
        q=q,
        sort=sort,
        desc=_flag(params, "desc"),
        before=before,
    )


def state_query(params: dict[str, str], **changes: Any) -> str:
    """The table's state as a query string (cursor left out), with `changes` applied."""
    kept = {k: params[k] for k in STATE_KEYS if params.get(k)}
    for k, v in changes.items():
        if v is None or v == "":
            kept.pop(k, None)
        else:
            kept[k] = str(v)
    return urllib.parse.urlencode(kept)


def sort_query(params: dict[str, str], col: str) -> str:
    """The table sorted by `col`: ascending first, descending when it already is ascending."""
    now, desc = params.get("sort") or "id", params.get("desc") in ("1", "true", "on")
    flip = now == col and not desc
    return state_query(params, sort="" if col == "id" else col, desc="1" if flip else "")


def cut_text(text: str | None, limit: int = RATIONALE_CUT) -> tuple[str, bool]:
    """`text` cut at a word before `limit` characters with "…", and whether it was cut."""
    t = text or ""
    if len(t) <= limit:
        return t, False
    head = t[:limit]
    if " " in head[limit // 2 :]:
        head = head.rsplit(" ", 1)[0]
    return head.rstrip() + "…", True


def _disagreement(
    protocol: str, value: str | None, score: float | None, human: dict[str, Any]
) -> float | None:
    """As `store.find.disagreement_size`, for one row from its human column."""
    if protocol == "pairwise":
        total = int(sum(human.values()))
        if value is None or not total:
            return None
        mine = "T" if value == "tie" else value
        return float(total - int(human.get(mine, 0))) / float(total)
    if score is None or human.get("mean") is None:
        return None
    return abs(float(human["mean"]) - score)


def verdicts(
    engine: Engine, name: str, q: VerdictQuery, params: dict[str, str] | None = None
) -> dict[str, Any]:
    """`rows` with the column names of `export --what verdicts` (campaign, judge, unit, order,
    condition, dimension, repeat, attempt, parse_status, failure_kind, value, value_presented,
    score, rationale, created_at) plus `verdict_id`, `case` (the case's unit id), `unit_title` and
    `unit_short` (the readable identity; `unit` keeps the full id), `human` (the humans' labels of
    the case: pairwise `{A, B, T}` counts, pointwise `{mean, n}`), `disagreement`, `latency_ms`
    and `cost_usd`; `next_after` / `prev_before` (the keyset cursors of the next and previous
    pages, None at either end), the `filters` and `sorts` a page offers, what is `applied`, and
    `search` (`fts5`, `postgresql` or `like`: what answered `q`)."""
    from judgepanel.store.simulated import simulated_campaigns

    info = browse.campaign_row(engine, name)
    names = campaign_judge_names(engine, name)
    found, more = find.search_page(engine, name, q.search, after=q.after, before=q.before, limit=q.limit)
    rows = [f.row for f in found]
    ids = unit_identities(engine, info["protocol"], [r.unit for r in rows])
    humans = find.human_column(engine, info["protocol"], rows)
    spec = info["spec"]
    backwards = q.before is not None
    # going forwards there is a page before unless this is the first; backwards, after unless last
    has_next = (more if not backwards else True) and bool(rows)
    has_prev = (q.after is not None if not backwards else more) and bool(rows)
    out_rows = []
    for f in found:
        r = f.row
        ident = ids.get(r.unit)
        human = humans.get((r.unit, r.dimension), {})
        short, was_cut = cut_text(r.rationale)
        out_rows.append(
            {
                "verdict_id": r.verdict_id,
                "campaign": name,
                "judge": r.judge,
                "judge_name": names.get(r.judge, r.judge),
                "unit": ident.full if ident else str(r.unit),
                "unit_title": ident.title if ident else "",
                "unit_short": ident.short if ident else str(r.unit),
                "case": r.unit,
                "order": r.order,
                "condition": r.condition,
                "dimension": r.dimension,
                "repeat": r.repeat,
                "attempt": r.attempt,
                "parse_status": r.parse_status,
                "failure_kind": r.failure_kind,
                "value": r.value,
                "value_presented": r.value_presented,
                "score": r.score,
                "rationale": r.rationale,
                "rationale_cut": short if was_cut else None,
                "created_at": r.created_at.isoformat(timespec="seconds") if r.created_at else None,
                "human": human,
                "disagreement": _disagreement(info["protocol"], r.value, r.score, human),
                "latency_ms": f.latency_ms,
                "cost_usd": f.cost_usd,
            }
        )
    sorts = [s for s in find.SORTS if not (s == "score" and info["protocol"] == "pairwise")]
    applied = {k: v for k, v in asdict(q.filter).items() if v}
    if q.q:
        applied["q"] = q.q
    if q.sort != "id":
        applied["sort"] = q.sort
    if q.desc:
        applied["desc"] = True
    return {
        "campaign": name,
        "protocol": info["protocol"],
        "simulated": simulated_campaigns(engine, [name]).get(name, False),
        "source": imported_source_text(info["spec"]),  # issue 35: another tool's graders
        "rows": out_rows,
        "next_after": rows[-1].verdict_id if has_next else None,
        "prev_before": rows[0].verdict_id if has_prev else None,
        "limit": q.limit,
        "q": q.q,
        "sort": q.sort,
        "desc": q.desc,
        "search": find.search_mode(engine) if q.q else None,
        "filters": {
            "judge": info["judges"],
            "judge_names": {j: names.get(j, j) for j in info["judges"]},
            "dimension": list(spec.get("dimensions") or ([info["dimension"]] if info["dimension"] else [])),
            "condition": list(spec.get("conditions") or ([info["condition"]] if info["condition"] else [])),
            "order": list(browse.ORDERS) if info["protocol"] == "pairwise" else [],
            "failure_kind": list(browse.FAILURE_KINDS),
        },
        "sorts": sorts,
        "applied": applied,
    }


def neighbours(engine: Engine, name: str, unit: int, q: VerdictQuery, v: int | None) -> dict[str, Any]:
    """The previous and next case in the table's list around verdict row `v` (this case's first
    verdict in id order when `v` is not given): `prev` / `next` as `{case, v, label}` or None."""
    if v is None:
        v = find.first_verdict_of_case(engine, name, unit)
        if v is None:
            return {"prev": None, "next": None, "v": None}
    out: dict[str, Any] = {"v": v}
    for way in ("next", "prev"):
        out[way] = None
        cursor = v
        for _ in range(4):  # a few pages of this case's own rows at most
            kw = {"after": cursor} if way == "next" else {"before": cursor}
            rows, more = find.search_page(engine, name, q.search, limit=50, **kw)
            seq = rows if way == "next" else list(reversed(rows))
            hit = next((f.row for f in seq if f.row.unit != unit), None)
            if hit is not None:
                out[way] = {"case": hit.unit, "v": hit.verdict_id}
                break
            if not more or not seq:
                break
            cursor = seq[-1].row.verdict_id
    return out
