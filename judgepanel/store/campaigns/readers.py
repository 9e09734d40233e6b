"""Campaigns out: status, listings, verdicts, and judges as rating-matrix columns."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, Row, Select, and_, case, func, select

from judgepanel.errors import BadInput, NotFound
from judgepanel.protocol.pairs import as_label, combine_orders
from judgepanel.providers.names import stored_judge_names
from judgepanel.store.rater_sources import MatrixScope, register_rater_source

# Core tables, not the ORM models: `campaign status`, `campaign list` and the rating matrices read
# without loading `sqlalchemy.orm` (see `store.tables`)
from judgepanel.store.tables import (
    Campaign,
    CampaignJudge,
    ClauseVerdict,
    Dataset,
    Job,
    Judge,
    ProviderBatchJob,
    Request,
    Response,
    Verdict,
    utcnow,
)

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from judgepanel.metrics.matrix import RaterColumn
    from judgepanel.providers.pricing import Price

# ---------------------------------------------------------------- status and listing


def run_state(stored: str, running_jobs: int, live_leases: int) -> str:
    """What a campaign's stored status means now. A run that was killed (SIGKILL, a lost machine)
    never writes its end: its status stays `running` while its jobs hold leases that nobody renews.
    So `running` is only said while some lease is live; once every lease has expired the run is
    `interrupted` (a later `campaign run` or worker takes the jobs over), and `running` with no job
    leased at all is `stopped`. Leases of jobs waiting in provider batches do not expire while the
    batch is open."""
    if stored != "running":
        return stored
    if not running_jobs:
        return "stopped"
    return "running" if live_leases else "interrupted"


def campaign_state(engine: Engine, name: str) -> tuple[str, int]:
    """(status, pending jobs) as `campaign_status` says them, read alone: what changes with the
    clock while the stored rows do not (a lease expiring), for pages that cache the rest."""
    with engine.connect() as s:
        c = _campaign(s, name)
        counts: Counter[str] = Counter(
            {
                str(k): int(n)
                for k, n in s.execute(
                    select(Job.status, func.count()).where(Job.campaign_id == c.id).group_by(Job.status)
                )
            }
        )
        jobs = sum(counts.values())
        status = "done" if jobs and counts["done"] == jobs else c.status
        status = run_state(status, counts["running"], _live_leases(s, c.id).get(c.id, 0))
        return status, counts["pending"] + counts["running"]


def live_leases(engine: Engine) -> dict[int, int]:
    """campaign id -> its jobs held under a live lease right now (`analysis.pace`: "active")."""
    with engine.connect() as s:
        return _live_leases(s)


def _live_leases(s: Connection, campaign_id: int | None = None) -> dict[int, int]:
    """campaign id -> its running jobs whose lease has not expired (batch leases included)."""
    q = select(Job.campaign_id, func.count()).where(Job.status == "running", Job.lease_expires > utcnow())
    if campaign_id is not None:
        q = q.where(Job.campaign_id == campaign_id)
    return {int(c): int(n) for c, n in s.execute(q.group_by(Job.campaign_id))}


def _campaign(s: Connection, name: str) -> Row[Any]:
    """The campaign's row (`planning.campaign_by_name` without the ORM)."""
    c = s.execute(select(Campaign).where(Campaign.name == name)).one_or_none()
    if c is None:
        known = ", ".join(s.scalars(select(Campaign.name).order_by(Campaign.name)).all()) or "none"
        raise NotFound(f"no campaign named {name!r} (known: {known})")
    return c


def recent_call_latencies(engine: Engine, *, limit: int = 2_000) -> list[tuple[int, datetime, float | None]]:
    """(campaign id, created_at, latency in ms) of the newest `limit` responses that were calls
    (not answered from the store's cache), newest first: what `analysis.pace` reads."""
    with engine.connect() as conn:
        return [
            (int(c), t, None if ms is None else float(ms))
            for c, t, ms in conn.execute(
                select(Job.campaign_id, Response.created_at, Response.latency_ms)
                .select_from(Response)
                .join(Request, Request.id == Response.request_id)
                .join(Job, Job.id == Request.job_id)
                .where(Response.cached_from.is_(None))
                .order_by(Response.id.desc())
                .limit(limit)
            )
        ]


def campaign_id(engine: Engine, name: str) -> int:
    """The campaign's id, read on the Core tables (read commands load no ORM)."""
    with engine.connect() as s:
        return int(_campaign(s, name).id)


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
    partial: int = 0  # failed jobs whose reply left clauses unanswered (re-asked by retry-parse-failures)
    cache_read_tokens: int = 0  # prompt tokens the providers read from their prompt caches
    cache_write_tokens: int = 0  # … and wrote to them
    # what those cost less (reads) and more (writes) than at the input rate; None when a rate is unknown
    saved_by_cache_usd: float | None = 0.0
    in_batches: int = 0  # jobs waiting in open provider batches (`campaign run --batch`)
    batch_calls: int = 0  # calls answered through a provider's batch API
    # what those cost less than the same calls made one by one; None when a rate is unknown
    saved_by_batch_usd: float | None = 0.0
    # every call at the input and output rates, neither cached nor batched (= cost_usd +
    # saved_by_cache_usd + saved_by_batch_usd); None when a price is unknown
    cost_list_usd: float | None = 0.0
    # the cap on the campaign's total spend (None: no cap), what its stored replies cost (known
    # prices; = cost_usd when every price is known) and what live runs hold for calls in flight
    max_cost_usd: float | None = None
    spent_usd: float = 0.0
    reserved_usd: float = 0.0

    @property
    def left_usd(self) -> float | None:
        """What may still be spent under the cap (None without one)."""
        if self.max_cost_usd is None:
            return None
        return round(max(0.0, self.max_cost_usd - self.spent_usd - self.reserved_usd), 6)

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
            "partial": self.partial,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "saved_by_cache_usd": self.saved_by_cache_usd,
            "in_batches": self.in_batches,
            "batch_calls": self.batch_calls,
            "saved_by_batch_usd": self.saved_by_batch_usd,
            "cost_list_usd": self.cost_list_usd,
            "max_cost_usd": self.max_cost_usd,
            "spent_usd": self.spent_usd,
            "reserved_usd": self.reserved_usd,
            "left_usd": self.left_usd,
        }


def judge_specs_in(s: Connection | Session, campaign_id: int) -> list[str]:
    """The specs (`judge.name`) of the judges linked to a campaign, in judge id order: the one
    query behind every list of a campaign's judges (status, viewer, report, position bias)."""
    return list(
        s.scalars(
            select(Judge.name)
            .join(CampaignJudge, CampaignJudge.judge_id == Judge.id)
            .where(CampaignJudge.campaign_id == campaign_id)
            .order_by(Judge.id)
        )
    )


def judge_names_in(s: Connection | Session, c: Any) -> dict[str, str]:
    """judge spec -> short name for the judges linked to campaign `c` (a campaign row or model;
    stored names, else derived)."""
    return stored_judge_names(judge_specs_in(s, c.id), c.spec)


def campaign_judge_names(engine: Engine, name: str) -> dict[str, str]:
    """judge spec -> the short name shown for it, for the judges of campaign `name`."""
    with engine.connect() as conn:
        return judge_names_in(conn, _campaign(conn, name))


def checker_job_rows(engine: Engine, campaign: str) -> list[tuple[int, int, float | None]]:
    """(checker-answered clauses, model-answered clauses, the reply's cost) of each verdict of the
    campaign that has a checker-answered clause."""
    checked = func.sum(case((ClauseVerdict.by_checker.is_(True), 1), else_=0))
    with engine.connect() as s:
        cid = _campaign(s, campaign).id
        rows = s.execute(
            select(checked, func.count(ClauseVerdict.id), func.max(Response.cost_usd))
            .select_from(ClauseVerdict)
            .join(Verdict, Verdict.id == ClauseVerdict.verdict_id)
            .join(Job, Job.id == Verdict.job_id)
            .outerjoin(Response, Response.request_id == Verdict.request_id)
            .where(Job.campaign_id == cid)
            .group_by(ClauseVerdict.verdict_id)
        ).all()
    return [(int(k), int(n) - int(k), None if cost is None else float(cost)) for k, n, cost in rows if k]


def _failed_by_class(s: Connection, campaign_id: int) -> dict[str, int]:
    return {
        (ec or "unknown"): int(n)
        for ec, n in s.execute(
            select(Job.error_class, func.count())
            .where(Job.campaign_id == campaign_id, Job.status == "failed")
            .group_by(Job.error_class)
        )
    }


def failed_by_class(engine: Engine, name: str) -> tuple[dict[str, int], dict[str, str]]:
    """The campaign's failed jobs by the class of their last failure (`unknown` when unstored), and
    for each class the stored message (keys redacted) of the latest such failure, where there is one."""
    with engine.connect() as s:
        cid = _campaign(s, name).id
        return dict(sorted(_failed_by_class(s, cid).items())), _last_failures(s, cid)


def last_failures(engine: Engine, name: str) -> dict[str, str]:
    """`failed_by_class`'s messages alone, for a caller that has the counts (`campaign status`)."""
    with engine.connect() as s:
        return _last_failures(s, _campaign(s, name).id)


def _last_failures(s: Connection, campaign_id: int) -> dict[str, str]:
    latest = (
        select(Response.error_class, func.max(Response.id).label("rid"))
        .join(Request, Request.id == Response.request_id)
        .join(Job, Job.id == Request.job_id)
        .where(
            Job.campaign_id == campaign_id, Job.status == "failed", Response.error_class == Job.error_class
        )
        .group_by(Response.error_class)
        .subquery()
    )
    rows = s.execute(
        select(Response.error_class, Response.error_message).join(latest, latest.c.rid == Response.id)
    )
    return {str(cls): str(msg) for cls, msg in rows if cls and msg}


def campaign_status(engine: Engine, name: str) -> CampaignStatus:
    from judgepanel.store.budget import spent_and_held

    with engine.connect() as s:
        c = _campaign(s, name)
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
                {
                    "jobs": 0,
                    "done": 0,
                    "failed": 0,
                    "pending": 0,
                    "calls": 0,
                    "cached": 0,
                    "cost_usd": 0.0,
                    "cache_read_tokens": 0,
                    "cache_write_tokens": 0,
                    "batch_calls": 0,
                },
            )
            d["jobs"] += n
            key = "pending" if status in ("pending", "running") else status
            d[key] += n
            counts[status] += n
        failed_by_class = _failed_by_class(s, c.id)
        priced = _judges_priced(c.spec)
        recorded: Counter[str] = Counter()  # calls with a cost, per judge
        calls = cached = tin = tout = 0
        errors: Counter[str] = Counter()
        # per judge: tokens of every call (in, out) and of the batch calls (in, out, read, write)
        listed: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        batched: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        unknown_tokens: set[str] = set()  # judges with a priced call whose token counts are missing
        via_batch = (
            select(ProviderBatchJob.id)
            .where(ProviderBatchJob.job_id == Request.job_id, ProviderBatchJob.attempt == Request.attempt)
            .exists()
        )
        for jname, is_cached, is_batch, ec, ok, n, cost, n_cost, itok, otok, rtok, wtok, n_tok in s.execute(
            select(
                Judge.name,
                Response.cached_from.is_not(None),
                via_batch,
                Response.error_class,
                Response.ok,
                func.count(),
                func.sum(Response.cost_usd),
                func.count(Response.cost_usd),
                func.sum(Response.input_tokens),
                func.sum(Response.output_tokens),
                func.sum(Response.cache_read_tokens),
                func.sum(Response.cache_write_tokens),
                func.count(Response.output_tokens),
            )
            .select_from(Response)
            .join(Request, Request.id == Response.request_id)
            .join(Job, Job.id == Request.job_id)
            .join(Judge, Judge.id == Job.judge_id)
            .where(Job.campaign_id == c.id)
            .group_by(
                Judge.name, Response.cached_from.is_not(None), via_batch, Response.error_class, Response.ok
            )
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
            d["cache_read_tokens"] += int(rtok or 0)
            d["cache_write_tokens"] += int(wtok or 0)
            if ok and n_tok < n:
                unknown_tokens.add(jname)
            listed[jname][0] += int(itok or 0)
            listed[jname][1] += int(otok or 0)
            if is_batch:
                d["batch_calls"] += n
                for i, v in enumerate((itok, otok, rtok, wtok)):
                    batched[jname][i] += int(v or 0)
            recorded[jname] += int(n_cost)
            if ok and n_cost < n:
                d["cost_usd"] = None  # a reply was not priced: the sum would be too low
            if d["cost_usd"] is not None:
                d["cost_usd"] += float(cost or 0.0)
        for jname, d in by_judge.items():
            # nothing was priced and no price is known: unknown, not free
            if not recorded[jname] and not priced.get(jname, False):
                d["cost_usd"] = None
            if d["cost_usd"] is not None:
                d["cost_usd"] = round(d["cost_usd"], 6)
        prices = _judge_prices(c.spec)
        saved: float | None = 0.0
        for jname, d in by_judge.items():
            d["saved_by_cache_usd"] = _saved(
                prices.get(jname), d["cache_read_tokens"], d["cache_write_tokens"]
            )
            saved = (
                None if saved is None or d["saved_by_cache_usd"] is None else saved + d["saved_by_cache_usd"]
            )
        saved_batch: float | None = 0.0
        cost_list: float | None = 0.0
        for jname, d in by_judge.items():
            price = prices.get(jname)
            d["saved_by_batch_usd"] = _saved_by_batch(price, d["batch_calls"], batched[jname])
            d["cost_list_usd"] = (
                None
                if price is None or jname in unknown_tokens
                else round(price.cost(listed[jname][0], listed[jname][1]) or 0.0, 6)
            )
            saved_batch = _add(saved_batch, d["saved_by_batch_usd"])
            cost_list = _add(cost_list, d["cost_list_usd"])
        names = stored_judge_names(list(by_judge), c.spec)
        for jname, d in by_judge.items():
            d["name"], d["spec"] = names[jname], jname  # keyed by spec as before; `name` is for people
        judge_costs = [d["cost_usd"] for d in by_judge.values()]
        total_cost = None if None in judge_costs else round(sum(judge_costs), 6)
        partial = _partial_jobs(s, c.id)
        in_batches = int(
            s.scalar(
                select(func.count())
                .select_from(Job)
                .where(Job.campaign_id == c.id, Job.status == "running", Job.lease_owner.like("batch:%"))
            )
            or 0
        )
        jobs = sum(counts.values())
        pending = counts["pending"] + counts["running"]
        status = "done" if jobs and counts["done"] == jobs else c.status
        status = run_state(status, counts["running"], _live_leases(s, c.id).get(c.id, 0))
        return CampaignStatus(
            c.name,
            jobs,
            counts["done"],
            counts["failed"],
            pending,
            counts["running"],
            calls,
            cached,
            total_cost,
            tin,
            tout,
            dict(sorted(errors.items())),
            dict(sorted(failed_by_class.items())),
            by_judge,
            status,
            partial,
            sum(d["cache_read_tokens"] for d in by_judge.values()),
            sum(d["cache_write_tokens"] for d in by_judge.values()),
            None if saved is None else round(saved, 6),
            in_batches,
            sum(d["batch_calls"] for d in by_judge.values()),
            None if saved_batch is None else round(saved_batch, 6),
            None if cost_list is None else round(cost_list, 6),
            c.max_cost_usd if c.max_cost_usd is not None else c.spec.get("max_cost"),
            *(round(v, 6) for v in spent_and_held(s, c.id)),
        )


def _add(total: float | None, part: float | None) -> float | None:
    return None if total is None or part is None else total + part


def _saved_by_batch(price: Price | None, calls: int, tokens: Sequence[int]) -> float | None:
    """USD the batch discount took off `calls` batch calls with these token totals (in, out, cache
    read, cache write): their one-by-one cost × the discount."""
    if not calls:
        return 0.0
    if price is None:
        return None
    full = price.cost(*tokens)
    if full == 0:
        return 0.0  # nothing to save on a free judge
    if price.batch_discount is None:
        return None
    return None if full is None else round(full * price.batch_discount, 6)


def _judges_priced(spec: dict[str, Any]) -> dict[str, bool]:
    """Canonical judge name -> whether a price is known for it now (its spec's `price_in`/
    `price_out`, the price file, the built-in table)."""
    return {name: price is not None for name, price in _judge_prices(spec).items()}


def _judge_prices(spec: dict[str, Any]) -> dict[str, Price | None]:
    """Canonical judge name -> its prices now (None when unknown)."""
    from judgepanel.errors import JudgepanelError
    from judgepanel.providers.pricing import default_table
    from judgepanel.providers.spec import parse_spec

    names = list(spec.get("judges") or ())
    raw = list(spec.get("judge_specs") or names)
    out: dict[str, Price | None] = {}
    try:
        table = default_table()
    except JudgepanelError:
        return out  # an unreadable price file: every price unknown
    for name, given in zip(names, raw, strict=False):
        try:
            out[name] = table.for_spec(parse_spec(given))
        except JudgepanelError:
            out[name] = None
    return out


def _saved(price: Price | None, read: int, written: int) -> float | None:
    """USD the prompt cache saved: reads below the input rate, less what writes cost above it."""
    if not read and not written:
        return 0.0
    if price is None:
        return None
    read_rate, write_rate = price.cache_rates()  # a free prompt's cache rates are free too
    if (read and read_rate is None) or (written and write_rate is None):
        return None
    return round(
        (read * (price.input - (read_rate or 0.0)) - written * ((write_rate or 0.0) - price.input)) / 1e6,
        6,
    )


def _partial_jobs(s: Connection, campaign_id: int) -> int:
    """Failed jobs whose latest reply answered only some clauses (verdict parse_status partial)."""
    return int(
        s.scalar(
            select(func.count())
            .select_from(Job)
            .join(Verdict, and_(Verdict.job_id == Job.id, Verdict.attempt == Job.attempts))
            .where(Job.campaign_id == campaign_id, Job.status == "failed", Verdict.parse_status == "partial")
        )
        or 0
    )


def partial_jobs(engine: Engine, campaign_id: int) -> int:
    with engine.connect() as s:
        return _partial_jobs(s, campaign_id)


def output_token_samples(
    engine: Engine, judges: Sequence[str], *, limit: int = 1000
) -> dict[tuple[str, str], list[int]]:
    """(judge, template) -> output tokens of its latest successful, not cached calls (any
    campaign, newest first, at most `limit` each): what a reply of that judge to that prompt costs."""
    if not judges:
        return {}
    out: dict[tuple[str, str], list[int]] = defaultdict(list)
    with engine.connect() as s:
        rows = s.execute(
            select(Judge.name, Request.template_name, Response.output_tokens)
            .join(Job, Job.judge_id == Judge.id)
            .join(Request, Request.job_id == Job.id)
            .join(Response, Response.request_id == Request.id)
            .where(
                Judge.name.in_(list(judges)),
                Response.ok.is_(True),
                Response.cached_from.is_(None),
                Response.output_tokens.is_not(None),
            )
            .order_by(Response.id.desc())
        )
        for name, template, tokens in rows:
            key = (name, template)
            if tokens is not None and len(out[key]) < limit:
                out[key].append(int(tokens))
    return dict(out)


def campaign_spend(engine: Engine, campaign_id: int) -> float:
    """Money already spent by a campaign's calls (known prices only)."""
    with engine.connect() as s:
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
    with engine.connect() as s:
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
    with engine.connect() as s:
        camps = s.execute(select(Campaign).order_by(Campaign.id)).all()
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
        live = _live_leases(s)
        out = []
        for c in camps:
            n = counts[c.id]
            names = stored_judge_names(judges[c.id], c.spec)
            out.append(
                {
                    "name": c.name,
                    "dataset": datasets.get(c.dataset_id) if c.dataset_id is not None else None,
                    "protocol": c.protocol,
                    "judges": judges[c.id],
                    "judge_names": [names[j] for j in judges[c.id]],
                    "jobs": sum(n.values()),
                    "done": n["done"],
                    "failed": n["failed"],
                    "pending": n["pending"] + n["running"],
                    "status": "done"
                    if n and n["done"] == sum(n.values())
                    else run_state(c.status, n["running"], live.get(c.id, 0)),
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


_STREAM_ROWS = 20_000  # rows fetched at a time by the readers that walk every verdict


def done_verdicts(campaign_id: int, *columns: Any, accepted: bool = False) -> Select[Any]:
    """`columns` of a campaign's done jobs joined to their judge and verdict (any parse status);
    `accepted`: only the verdicts the analyses read (parsed ok, of the first sample)."""
    q = (
        select(*columns)
        .select_from(Job)
        .join(Judge, Judge.id == Job.judge_id)
        .join(Verdict, Verdict.job_id == Job.id)
        .where(Job.campaign_id == campaign_id, Job.status == "done")
    )
    return q.where(Job.repeat == 0, Verdict.parse_status == "ok") if accepted else q


def swapped_verdicts(engine: Engine, name: str) -> dict[str, SwappedVerdicts]:
    with engine.connect() as s:
        c = _campaign(s, name)
        if c.protocol != "pairwise":
            raise BadInput(f"campaign {name!r} is {c.protocol}; position bias needs a pairwise campaign")
        got: dict[tuple[str, int, int, str | None, str | None], dict[str, str]] = defaultdict(dict)
        for jname, pid, rep, cond, dim, order, value in s.execute(
            done_verdicts(
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
            .execution_options(yield_per=_STREAM_ROWS)
        ):
            if value is not None and order is not None and pid is not None:
                got[(jname, pid, rep, cond, dim)][order] = value
        out = {j: SwappedVerdicts([], [], []) for j in judge_specs_in(s, c.id)}
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
    with engine.connect() as s:
        c = _campaign(s, name)
        rows = s.execute(
            done_verdicts(
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


def _as_number(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def judge_rater_columns(s: Connection | Session, scope: MatrixScope) -> list[RaterColumn]:
    """Campaign judges as extra columns of the store's rating matrices (see `store.matrices`).

    Item matrices get one column per (pointwise campaign over the dataset, judge, condition) whose
    jobs judged the matrix's dimension: the argmax score of the first sample (repeat 0). Pair matrices get
    one column per (pairwise campaign over the pair set, judge): the pair's combined AB/BA verdict
    as a three-way label (`protocol.pairs.as_label`: an inconsistent pair counts as a tie, a pair
    missing an order has no label). Columns are named `NAME@CAMPAIGN` (plus `/CONDITION` or
    `/DIMENSION` when the campaign asked several), NAME the judge's short name in the campaign, in
    group `judge`; `SPEC@CAMPAIGN…` (the judge's full spec) selects the same column.

    One judge (spec) counts once per request: campaigns are read in creation order, and a unit whose
    verdict came from a request that judge already answered in an earlier campaign (copied from the
    cache, or asked again) is left out of the later column; a column left empty is not added."""
    from judgepanel.metrics.matrix import RaterColumn  # numpy: not for `campaign status`

    protocol = "pairwise" if scope.kind == "pair" else "pointwise"
    where = (
        Campaign.pair_set_id == scope.pair_set_id
        if scope.kind == "pair"
        else Campaign.dataset_id == scope.dataset_id
    )
    camps = s.execute(
        select(Campaign).where(where, Campaign.protocol == protocol).order_by(Campaign.id)
    ).all()
    columns: list[RaterColumn] = []
    # one judge counts once per request: a later campaign that asked a judge the same request (its
    # verdict copied from the cache, or asked again) adds no second vote for that unit
    counted: set[tuple[str, str]] = set()
    for camp in camps:
        cid, cname = camp.id, camp.name
        # named by the judge's short name; `SPEC@CAMPAIGN` still selects it (`--raters`, `--with-judges`)
        short = judge_names_in(s, camp)
        q = done_verdicts(
            cid,
            Judge.name,
            Job.item_id,
            Job.pair_id,
            Job.order,
            Job.condition if scope.kind == "item" else Job.dimension,
            Verdict.value_canonical,
            Request.request_hash,
            accepted=True,
        ).join(Request, Request.id == Verdict.request_id)
        if scope.kind == "item":
            q = q.where(Job.dimension == scope.dimension)
        # conditions (items) or dimensions (pairs): asked first, so the verdicts can stream past
        # once (a million-verdict campaign is never held as a list of rows)
        variant = q.subquery().c[4]
        several = len(s.execute(select(variant).distinct().limit(2)).all()) > 1
        rows = s.execute(q.execution_options(yield_per=_STREAM_ROWS))
        if scope.kind == "pair":
            orders: dict[tuple[str, int], dict[str, str]] = defaultdict(dict)
            names: dict[tuple[str, str | None], str] = {}
            alias: dict[str, str] = {}
            seen_before: set[tuple[str, int]] = set()  # (column, pair) with a request counted already
            mine: set[tuple[str, str]] = set()
            for jname, _item, pid, order, dim, canon, rhash in rows:
                if pid is not None and order is not None and canon is not None:
                    col = names.get((jname, dim))
                    if col is None:
                        tail = f"@{cname}" + (f"/{dim}" if several else "")
                        col = names[(jname, dim)] = short.get(jname, jname) + tail
                        alias[col] = jname + tail
                    orders[(col, pid)][order] = canon
                    if (jname, rhash) in counted:
                        seen_before.add((col, pid))
                    mine.add((jname, rhash))
            counted |= mine
            labels: dict[str, dict[int, float | str]] = defaultdict(dict)
            for (col, pid), o in orders.items():
                label = as_label(combine_orders(o.get("AB"), o.get("BA")))
                if label is not None and (col, pid) not in seen_before:
                    labels[col][pid] = label
            columns += [
                RaterColumn(n, v, "judge", "judge", aliases=(alias[n],)) for n, v in sorted(labels.items())
            ]
        else:
            scores: dict[str, dict[int, float | str]] = defaultdict(dict)
            alias = {}
            mine = set()
            for jname, item, _pid, _o, cond, canon, rhash in rows:
                # the argmax verdict: agreement coefficients compare categories, and a
                # `scoring=logprobs` judge's stored score is a continuous expectation
                value = _as_number(canon)
                if item is not None and value is not None and (jname, rhash) not in counted:
                    tail = f"@{cname}" + (f"/{cond}" if several else "")
                    col = short.get(jname, jname) + tail
                    alias[col] = jname + tail
                    scores[col][item] = value
                    mine.add((jname, rhash))
            counted |= mine
            columns += [
                RaterColumn(n, v, "judge", "judge", aliases=(alias[n],)) for n, v in sorted(scores.items())
            ]
    return columns


register_rater_source(judge_rater_columns)
