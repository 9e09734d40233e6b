"""The async executor: leased jobs in, one request + response row per attempt and one verdict per
job out.

Per judge: a feeder leases jobs in chunks (rendering prompts and looking up the cache in a worker
thread), a fixed pool of worker coroutines (size = the judge's concurrency) takes them, and a
`JudgeLimiter` paces calls (adaptive concurrency, RPM/TPM, Retry-After gate). One `Writer` commits
everything in batches. Retries live in `runner.calling` and only there, in `_run_job` (tenacity's
back-off, looped by hand):

    RateLimited (429, quota per minute)   wait Retry-After / retry-after-ms when the provider sent
                                           one (+ up to 10 % jitter), never longer than
                                           `RetryPolicy.max_retry_after` (an absurd or infinite
                                           value counts as that cap), else exponential back-off
                                           with jitter; the judge's limiter also backs off; when
                                           the attempts run out the job fails as `rate_limit`
    Transient (5xx, 529, resets)          exponential back-off with jitter
    TimedOut (no whole answer in time)    the same, but at most `timeout_retries` times per job, and
                                           the judge's concurrency is halved as on a 429
    Fatal (400/401/403/404, no quota)      never retried; the job fails with class `fatal`
    unreadable reply                       not retried here: the job fails with class `parse`, its
                                           raw text stored, and `campaign retry-parse-failures`
                                           re-asks it

A run whose first `RunOptions.unreadable_stop` (20) answers ALL fail to parse stops scheduling
(status `unreadable`, exit 3): the prompt, the custom template or the judge cannot produce a
readable answer, and spending through every job would not change that. The calls in flight finish
and are stored, the rest stay pending, and the summary quotes the first failure. Why twenty: a
broken template or judge costs twenty calls instead of the whole campaign, while a judge that
parses a fifth of its replies is stopped by chance only with probability 0.8²⁰ ≈ 1 % (one that
parses 5 % of them, 0.95²⁰ ≈ 36 %, is no judge to spend a campaign on anyway).

Every attempt, failed or not, is stored with its error class. Stopping: `interrupt()` once stops
scheduling (in-flight calls finish and are stored; jobs waiting in back-off are handed back);
twice abandons the calls in flight (their jobs stay pending). Either way the writer commits what
finished and the unfinished leases are released, so a later `run` picks up exactly the rest.

Every attempt has a deadline: the judge's `timeout` bounds the whole call (connect, queueing in the
HTTP pool, every byte of the body), not each read, so a server that drips a byte a second cannot
keep a call alive. It starts when the request leaves for the server (`providers.base.CallClock`):
time spent waiting for the judge's limiter, or inside the provider behind an OpenAI-compatible
judge's probing first call, is not part of it and is stored apart as `queued_ms`.

Boundary: this module loads a campaign, leases and feeds jobs, runs and stops the whole run and
sums it up (`RunSummary`); the workers' calls are `runner.calling` (`Runner`'s base class), the
rows they write `runner.rows`, the options and live counters `runner.options`, the collector
settings during a run `runner.collector`.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from sqlalchemy import Engine
from tenacity.wait import wait_exponential_jitter

from judgepanel.errors import (
    EXIT_INTERRUPTED,
    RETRY_FAILED,
)
from judgepanel.providers.base import ChatResult, Provider
from judgepanel.providers.spec import JudgeSpec, max_reply_bytes
from judgepanel.runner.budget import (
    Budget,
    assumed_rates_note,
    check_prices,
    price_for,
    unknown_price_advice,
)
from judgepanel.runner.calling import Calls, _Judge
from judgepanel.runner.collector import RelaxedCollector, freeze_heap
from judgepanel.runner.dbwait import is_outage, patient
from judgepanel.runner.failures import context_advice
from judgepanel.runner.inflight import InFlight
from judgepanel.runner.limits import JudgeLimiter, SharedBucket
from judgepanel.runner.options import RunOptions, RunStats
from judgepanel.runner.prepare import (
    CampaignContext,
    Prepared,
    campaign_judge_specs,
    load_context,
    max_output,
    template_drift,
)
from judgepanel.runner.rows import cached_answer, prepare_leased
from judgepanel.runner.served import PROBE_SECONDS, served_models
from judgepanel.runner.units import UnitGate
from judgepanel.runner.writer import Writer
from judgepanel.store import budget as budget_store
from judgepanel.store import campaigns as store
from judgepanel.store import liveness
from judgepanel.store.campaigns import (
    Batch,
    BatchResult,
    CacheHit,
    JobOutcome,
    LeasedJob,
)
from judgepanel.store.campaigns.leases import unit_jobs
from judgepanel.store.campaigns.provider_batches import jobs_in_open_batches

EXIT_INCOMPLETE = 3  # `campaign run` ended normally but some jobs have no verdict


def run_exit_code(status: str, done: int, jobs: int) -> int:
    """The CLI contract of `campaign run` (realtime or batch) and `worker`: 0 when every job has a
    verdict, 130 when interrupted, else 3 (jobs failed, unscheduled by --max-cost, or pending)."""
    if status == "interrupted":
        return EXIT_INTERRUPTED
    return 0 if done == jobs else EXIT_INCOMPLETE


class RunProgress(Protocol):
    """What every run summary (realtime, batch, worker) counts, as fields or properties."""

    @property
    def status(self) -> str: ...
    @property
    def jobs(self) -> int: ...
    @property
    def done(self) -> int: ...
    @property
    def failed(self) -> int: ...
    @property
    def pending(self) -> int: ...


def progress_keys(s: RunProgress) -> dict[str, Any]:
    """The `--json` keys every run summary shares, in their order: status, jobs, done, failed, pending."""
    return {"status": s.status, "jobs": s.jobs, "done": s.done, "failed": s.failed, "pending": s.pending}


@dataclass(frozen=True)
class RunSummary:
    campaign: str
    status: str  # done | incomplete | interrupted | budget | unreadable
    jobs: int
    done: int
    failed: int
    pending: int
    calls: int
    cached: int
    errors: dict[str, int]
    cost_usd: float | None
    elapsed_s: float
    committed_batches: int
    warnings: tuple[str, ...] = ()
    parse_failures: dict[str, int] = field(
        default_factory=dict
    )  # by kind: truncated | unreadable | missing_clauses
    unscheduled: int = 0  # jobs left pending because the next call did not fit under --max-cost
    partial: int = 0  # failed jobs whose reply left clauses unanswered
    max_cost_usd: float | None = None  # the campaign's cap on its total spend
    campaign_spent_usd: float | None = None  # what the campaign's stored replies cost, every run
    stopped: str | None = None  # why the run stopped early (status unreadable), quoting the first failure
    left_for_batches: int = 0  # jobs left pending: another campaign's open batch asks their requests

    @property
    def spent_usd(self) -> float | None:
        """What this run's calls cost (None when a judge's price is unknown)."""
        return self.cost_usd

    @property
    def left_usd(self) -> float | None:
        """What the campaign may still spend under its cap (None without a cap)."""
        if self.max_cost_usd is None or self.campaign_spent_usd is None:
            return None
        return round(max(0.0, self.max_cost_usd - self.campaign_spent_usd), 6)

    @property
    def exit_code(self) -> int:
        return run_exit_code(self.status, self.done, self.jobs)

    def as_dict(self) -> dict[str, Any]:
        return {
            "campaign": self.campaign,
            **progress_keys(self),
            "calls": self.calls,
            "cached": self.cached,
            "errors": self.errors,
            "cost_usd": self.cost_usd,
            "spent_usd": self.spent_usd,
            "max_cost_usd": self.max_cost_usd,
            "campaign_spent_usd": self.campaign_spent_usd,
            "left_usd": self.left_usd,
            "unscheduled": self.unscheduled,
            "partial": self.partial,
            "elapsed_s": round(self.elapsed_s, 3),
            "warnings": list(self.warnings),
            "parse_failures": self.parse_failures,
            "stopped": self.stopped,
            "left_for_batches": self.left_for_batches,
        }


ProviderFactory = Callable[[JudgeSpec, int], Provider]


def _default_factory(spec: JudgeSpec, connections: int) -> Provider:
    from judgepanel.providers.registry import make_provider

    return make_provider(spec, max_connections=max(16, connections))


def unpriced_advice(n: int) -> str:
    """What the summary says of replies whose cost was charged at their reservation."""
    replies = "reply" if n == 1 else "replies"
    return (
        f"{n} {replies} did not say what they cost (usage missing, not whole numbers, negative, "
        "out of range or contradicting each other, or cached tokens of a judge without a cache "
        "price): each was charged its reservation, the most the call was allowed to cost"
    )


def truncation_advice(cut: int, too_small: Mapping[tuple[str, int], int] | None = None) -> str:
    """What to do about replies cut at the output cap. A small model looping inside its rationale
    hits any cap, and a larger one only makes each failure slower and dearer — unless the cap is
    too small for any answer in the requested format (`too_small`: (judge, cap) -> the tokens the
    shortest answer takes, `protocol.schemas.shortest_answer_tokens`); then the cap is the fault
    and lowering it cannot help."""
    replies = "reply was" if cut == 1 else "replies were"
    head = (
        f"{cut} {replies} cut at the output cap (finish_reason length / max_tokens) and stored as "
        "failures of kind 'truncated'. "
    )
    tail = (
        "`campaign retry-parse-failures` does not re-ask truncated jobs (each re-ask pays for the "
        "whole cap again) unless given --truncated"
    )
    if too_small:
        caps = "; ".join(
            f"{judge}: max_tokens={cap} cannot hold even the shortest answer in the requested format "
            f"(about {need} tokens with an empty rationale)"
            for (judge, cap), need in sorted(too_small.items())
        )
        room = max(too_small.values())
        return (
            f"{head}{caps}. Raise max_tokens= to at least {room} plus room for the rationale "
            f"(a sentence or two: {room + 64}-{room + 256}), as a new judge spec; a smaller cap "
            f"cannot help. {tail}"
        )
    return (
        f"{head}A larger max_tokens= rarely helps a model that rambles or "
        "loops (each failure only gets slower and dearer): lower the cap (max_tokens=), ask for a "
        "shorter rationale (a --template that asks for one or two sentences), or lower the "
        f"temperature (temperature=0), as a new judge spec. {tail}"
    )


def _share_limits(engine: Engine, limiter: JudgeLimiter, judge: str, rpm: Any, tpm: Any) -> None:
    """Plug the judge's budgets shared through the database into its limiter (PostgreSQL only:
    SQLite serves one machine, whose limiter is already the whole budget). A bucket holds half
    a second of the rate, and is taken from in slices of a tenth of a second's worth."""
    if engine.dialect.name != "postgresql":
        return
    from judgepanel.store import ratebucket

    for kind, per_min in (("rpm", rpm), ("tpm", tpm)):
        if not per_min:
            continue
        rate = float(per_min) / 60.0
        key = f"{kind}:{judge}"[:600]
        ratebucket.ensure_bucket(engine, key, max(1.0, rate * 0.5), rate)
        bucket = SharedBucket(
            lambda n, key=key: ratebucket.take(engine, key, n),  # type: ignore[misc]
            min(max(1.0, rate * 0.1), max(1.0, rate * 0.5)),
        )
        if kind == "rpm":
            limiter.shared_requests = bucket
        else:
            limiter.shared_tokens = bucket


class Runner(Calls):
    def __init__(
        self,
        engine: Engine,
        campaign: str,
        options: RunOptions | None = None,
        *,
        provider_factory: ProviderFactory | None = None,
        reask_parse_failures: bool = False,
        reask_truncated: bool = False,
        reask_fatal: bool = False,
    ) -> None:
        self.engine = engine
        self.name = campaign
        self.opts = options or RunOptions()
        self.opts.validate()
        self.factory = provider_factory or _default_factory
        self.reask = reask_parse_failures
        self.reask_truncated = reask_truncated
        self.reask_fatal = reask_fatal  # the user re-asks refusals on purpose, after changing something
        self._too_long: dict[str, tuple[int | None, int | None]] = {}  # judge -> (longest prompt, window)
        self.owner = store.lease_owner_id()
        self.stats = RunStats()
        self._stopping = asyncio.Event()
        self._stop_reason: str | None = None
        self._abandon = False
        self._workers: list[asyncio.Task[None]] = []
        self.warnings: list[str] = []
        self._background: list[asyncio.Task[None]] = []  # writes of what probes learnt
        self._answered = 0  # replies received this run (not from the cache) …
        self._readable = 0  # … and how many of them parsed
        self._first_unreadable: str | None = None  # the first that did not, described
        self._cap_too_small: dict[tuple[str, int], int] = {}  # (judge, cap) -> shortest answer's tokens
        self._redact_keys: dict[int, tuple[str, ...]] = {}
        self._background_loops: list[asyncio.Task[None]] = []
        self.gate = UnitGate(None, (), 0.0)  # whole units under a cap (`runner.units`), set in `run`
        self._fetching = 0  # feeders leasing right now
        self._working = 0  # jobs a worker has taken and not finished (reserving, waiting, calling)
        self._cache_priced: set[str] = set()  # judges whose calls read or wrote prompt-cache tokens
        self._batched: Counter[str] = Counter()  # jobs left pending for another campaign's open batch
        # identical requests asked once, also while in flight, across concurrent runs (issue 28 §2)
        self.inflight = InFlight(
            engine, self.owner, lease_seconds=self.opts.lease_seconds, enabled=not self.opts.no_cache
        )
        self._settled = asyncio.Event()  # set (and replaced) whenever a budget reservation is released
        self._growing = asyncio.Lock()  # one database reservation at a time per run
        self._record_cap = False
        self.presence = liveness.Presence(engine)  # its own connection, closed when the run ends
        self._expo = wait_exponential_jitter(
            multiplier=self.opts.retry.initial_wait,
            max=self.opts.retry.max_wait,
            jitter=self.opts.retry.jitter,
        )

    # ------------------------------------------------------------ control

    def interrupt(self) -> None:
        """First call: stop scheduling, let calls in flight finish. Second: abandon them."""
        if self._stopping.is_set():
            self._abandon = True
            for t in self._workers:
                t.cancel()
            return
        self._stop("interrupted")

    def _stop(self, reason: str) -> None:
        if self._stop_reason is None:
            self._stop_reason = reason
        self._stopping.set()
        self._settled.set()  # calls waiting for budget give up
        for j in getattr(self, "judges", {}).values():
            j.need.set()  # wake feeders so they hand their workers the stop sentinel

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    # ------------------------------------------------------------ setup

    def _load(self) -> tuple[int, CampaignContext, dict[str, _Judge]]:
        spec, rv_id = store.campaign_spec(self.engine, self.name)
        cid = store.campaign_id(self.engine, self.name)
        found = campaign_judge_specs(self.engine, spec, cid)
        specs = dict(found.values())
        judges: dict[str, _Judge] = {}
        for jid, (name, js) in found.items():
            conc = int(js.get("concurrency") or self.opts.concurrency)
            rpm = js.get("rpm") or self.opts.rpm
            tpm = js.get("tpm") or self.opts.tpm
            limiter = JudgeLimiter(
                conc,
                rpm=float(rpm) if rpm else None,
                tpm=float(tpm) if tpm else None,
                max_pause=self.opts.retry.max_retry_after,
            )
            limiter.stop = self._stopping
            if self.opts.shared_limits:
                _share_limits(self.engine, limiter, js.name, rpm, tpm)
            judges[name] = _Judge(
                jid,
                js,
                self.factory(js, conc),
                limiter,
                price_for(js),
                float(js.timeout or self.opts.timeout),
                conc,
                reply_cap=max_reply_bytes(js),
            )
        providers = {n: j.provider for n, j in judges.items()}
        ctx = load_context(self.engine, self.name, spec, rv_id, specs, providers, self.warnings)
        self.warnings += template_drift(self.name, spec.templates)
        # the campaign's cap: --max-cost sets (or raises) it for this and every later run; without
        # it, the one recorded on the campaign (from an earlier --max-cost or its campaign file)
        recorded = budget_store.budget_state(self.engine, cid).max_cost_usd
        if recorded is None:
            recorded = spec.max_cost
        if self.opts.max_cost is None and recorded is not None:
            self.opts = replace(self.opts, max_cost=recorded)
        self._record_cap = (
            self.opts.max_cost is not None
            and self.opts.max_cost != budget_store.budget_state(self.engine, cid).max_cost_usd
        )
        return cid, ctx, judges

    def _unit_gate(self, cid: int) -> UnitGate:
        """Under a cap, whole units (every job of an item or pair) are bought (`runner.units`)."""
        if self.opts.max_cost is None:
            return UnitGate(None, (), 0.0)
        spent = budget_store.budget_state(self.engine, cid).spent_usd or 0.0
        return UnitGate(self.opts.max_cost, unit_jobs(self.engine, cid), spent)

    def _job_estimate(self, p: Prepared) -> Callable[[int, int | None], float]:
        """A job of the same unit as `p`, by judge id and stored prompt length: what its call is
        planned to reserve."""
        by_id = {j.id: (name, j) for name, j in self.judges.items()}

        def estimate(judge_id: int, chars: int | None) -> float:
            if judge_id not in by_id:
                return 0.0
            name, j = by_id[judge_id]
            kind = (name, p.prompt.template_name)  # as `_reply_kind` keys the judge's replies
            return self.budget.planned(j.price, chars or p.prompt_chars, max_output(j.spec.params), kind)

        return estimate

    async def _served_models(self, judges: dict[str, _Judge]) -> dict[str, str]:
        """Ask each `base_url` judge's server once which model it runs (see `runner.served`)."""
        served, warnings = await served_models(
            {n: (j.spec, j.provider) for n, j in judges.items()},
            timeout=min(PROBE_SECONDS, self.opts.timeout),  # `--timeout` bounds the probe too
        )
        self.warnings += warnings
        # kept with the campaign, so that `campaign plan` keys the cache alike without asking again
        await asyncio.to_thread(store.remember_served_models, self.engine, self.name, served)
        return served

    # ------------------------------------------------------------ main

    async def _db(self, fn: Callable[..., Any], *args: Any) -> Any:
        """A database step, waited out while PostgreSQL cannot be reached (`runner.dbwait`)."""
        return await patient(self.engine, fn, *args)

    async def run(self) -> RunSummary:
        cid, ctx, judges = await self._db(self._load)
        ctx = replace(ctx, served_models=await self._served_models(judges))
        self.ctx, self.judges, self.cid = ctx, judges, cid
        feeders: list[asyncio.Task[None]] = []
        heart: asyncio.Task[None] | None = None
        froze = freeze_heap()
        relaxed = RelaxedCollector()
        relaxed.start()
        try:
            check_prices(self.opts.max_cost, {j.spec.name: j.price for j in judges.values()})
            if self._record_cap:
                await self._db(budget_store.set_cap, self.engine, cid, self.opts.max_cost)
            # alive for the other workers (PostgreSQL) before the first lease is taken
            await self._db(self.presence.hold, self.owner)
            if self.opts.retry_failed:
                await self._db(store.requeue, self.engine, cid, RETRY_FAILED)
            if self.reask:
                classes = ("parse", "truncated") if self.reask_truncated else ("parse",)
                await self._db(store.requeue, self.engine, cid, classes)
            if self.reask_fatal:
                await self._db(store.requeue, self.engine, cid, ("fatal",))
            await self._db(store.reclaim_dead_leases, self.engine, cid)
            counts = await self._db(store.job_counts, self.engine, cid)
            self.stats.total = sum(counts.values())
            self.stats.concurrency = sum(j.workers for j in judges.values())
            self.stats.done_at_start = counts["done"]
            self.stats.done = counts["done"]
            self.stats.failed = counts["failed"]
            observed = (
                await self._db(store.output_token_samples, self.engine, list(judges))
                if self.opts.max_cost is not None
                else {}
            )
            self.budget = Budget(self.opts.max_cost, observed=observed)
            self.gate = await self._db(self._unit_gate, cid)
            await self._db(store.set_campaign_status, self.engine, cid, "running")
            self.writer = Writer(
                self.engine,
                self.owner,
                batch_size=self.opts.batch_size,
                flush_ms=self.opts.flush_ms,
                on_commit=self._committed,
            )
            self.writer.start()
            heart = asyncio.create_task(self._heartbeat())
            resolver = asyncio.create_task(
                self.inflight.resolve(
                    self._db, self._answer_twin, self._ask_twin, self._stopping, self._leave_for_batch
                )
            )
            self._background_loops.append(resolver)
            feeders = [asyncio.create_task(self._feed(j)) for j in judges.values()]
            for j in judges.values():
                self._workers += [asyncio.create_task(self._work(j)) for _ in range(j.workers)]
            writer_task = self.writer._task
            assert writer_task is not None
            done_workers: asyncio.Future[list[Any]] = asyncio.gather(*self._workers, return_exceptions=True)
            waited: set[asyncio.Future[Any]] = {done_workers, writer_task}
            await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
            if writer_task.done() and writer_task.exception() is not None:
                self._stop("error")
                for t in self._workers:
                    t.cancel()
            await done_workers
            await self._stop_feeders(feeders)
            await self.writer.close()
            for res in done_workers.result():
                if isinstance(res, Exception):
                    raise res
        finally:
            await self._stop_feeders(feeders)
            await asyncio.gather(*self._background)
            for loop in (heart, *self._background_loops):
                if loop is not None:
                    loop.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await loop
            try:
                await self._db(store.release_leases, self.engine, self.owner)
                await self._db(self.inflight.release_all)
                await self._db(budget_store.drop_hold, self.engine, cid, self.owner)
            finally:  # the liveness connection is closed even when the database is gone
                await asyncio.to_thread(self.presence.drop, self.owner)
            for j in judges.values():
                with contextlib.suppress(Exception):
                    await j.provider.aclose()
            if froze:
                gc.unfreeze()
            relaxed.stop()
        counts = await self._db(store.job_counts, self.engine, cid)
        pending = counts["pending"] + counts["running"]
        in_batches = await self._db(jobs_in_open_batches, self.engine, cid)
        if in_batches:
            self.warnings.append(
                f"{in_batches} job(s) wait in open provider batches and were not called again: "
                f"`campaign run {self.name} --batch` collects them"
            )
        if self._batched:
            names = ", ".join(sorted(self._batched))
            self.warnings.append(
                f"{sum(self._batched.values())} job(s) ask requests that open provider batches of campaign "
                f"{names} are asking; left pending, not paid for twice: `campaign run NAME --batch` collects "
                "those batches, then run again to answer them from the store (or --no-cache asks them now)"
            )
        if self._stop_reason is None and pending and getattr(self, "gate", None) and self.gate.closed:
            self._stop_reason = "budget"  # the cap bought the units admitted; the rest is unscheduled
        status = self._stop_reason or ("done" if pending == 0 and counts["failed"] == 0 else "incomplete")
        await self._db(store.set_campaign_status, self.engine, cid, status)
        partial = await self._db(store.partial_jobs, self.engine, cid)
        money = await self._db(budget_store.budget_state, self.engine, cid)
        return RunSummary(
            self.name,
            status,
            sum(counts.values()),
            counts["done"],
            counts["failed"],
            pending,
            self.stats.calls,
            self.stats.cached,
            dict(sorted(self.stats.errors.items())),
            None if self.stats.spent_unknown else round(self.stats.spent, 6),
            self.stats.elapsed,
            self.writer.commits,
            tuple(self._summary_warnings()),
            dict(sorted(self.stats.parse_failures.items())),
            unscheduled=pending if status == "budget" else 0,
            partial=partial,
            max_cost_usd=self.opts.max_cost,
            stopped=self._unreadable_reason(pending) if status == "unreadable" else None,
            campaign_spent_usd=round(money.spent_usd, 6),
            left_for_batches=sum(self._batched.values()),
        )

    def _unreadable_reason(self, pending: int) -> str:
        return (
            f"stopped early: the first {self._answered} answers all failed to parse, so the "
            f"{pending} job(s) left were not sent (they stay pending; fix the template or the judge, "
            f"then run again, and `campaign retry-parse-failures {self.name}` re-asks the failed ones). "
            f"The first failure: {self._first_unreadable}"
        )

    def _count_answer(self, j: _Judge, p: Prepared, r: ChatResult, error: str | None) -> None:
        """Stop the run when its first `unreadable_stop` answers all failed to parse."""
        self._answered += 1
        if error is None:
            self._readable += 1
            return
        if self._first_unreadable is None:
            text = " ".join((r.text or "").split())
            shown = text if len(text) <= 300 else text[:300] + " …"
            self._first_unreadable = f"{j.spec.name}, job {p.job.id}: {error}; the reply was {shown!r}"
        limit = self.opts.unreadable_stop
        if limit is not None and self._readable == 0 and self._answered >= limit:
            self._stop("unreadable")

    def _summary_warnings(self) -> list[str]:
        # what the providers learnt (parameters a server refused and that were dropped) comes first
        learnt = [
            w for j in getattr(self, "judges", {}).values() for w in getattr(j.provider, "warnings", [])
        ]
        warnings = [*learnt, *self.warnings][:20]
        judges = getattr(self, "judges", {}).values()
        warnings += [
            note
            for j in judges
            if j.spec.name in self._cache_priced and (note := assumed_rates_note(j.spec.name, j.price))
        ]
        if self.stats.spent_unknown:  # "unknown" only with what would make it known
            unpriced = [j.spec.name for j in judges if j.price is None]
            warnings.append(
                f"spent unknown: {unknown_price_advice(unpriced)}"
                if unpriced
                else "spent unknown: a call used prompt-cache tokens at a rate nobody gave: add "
                "price_cache_read=…&price_cache_write=… (USD per million tokens) to the judge spec"
            )
        if self.stats.charged_reserved:
            warnings = [unpriced_advice(self.stats.charged_reserved), *warnings]
        cut = self.stats.parse_failures.get("truncated", 0)
        if cut:
            warnings = [truncation_advice(cut, self._cap_too_small), *warnings]
        n = self.stats.errors.get("context", 0)
        if n:
            warnings = [
                context_advice(n, self._too_long, f"campaign run {self.name} --retry-failed"),
                *warnings,
            ]
        return warnings

    async def _stop_feeders(self, feeders: list[asyncio.Task[None]]) -> None:
        """Feeders are told to stop, not cancelled: one may be leasing in a thread right now, and
        that lease must land before the unfinished leases are released."""
        self._stopping.set()
        for j in self.judges.values():
            j.need.set()
        await asyncio.gather(*feeders, return_exceptions=True)

    def _committed(self, batch: Batch, result: BatchResult) -> None:
        self.stats.committed += len(result.accepted)
        self.inflight.committed(batch.unclaimed)
        if batch.released:
            self.budget.released([amount for _, amount in batch.released])
            self._wake_budget()

    async def _heartbeat(self) -> None:
        """Renew the leases (and budget holds) every third of the lease time, and check every
        second that this owner's liveness lock is held (re-taken after a database restart). A beat
        that cannot reach the database is skipped; the next one tries again."""
        renew_every = self.opts.lease_seconds / 3
        last_renewal = time.monotonic()
        lost = False
        while True:
            await asyncio.sleep(min(1.0, renew_every))
            try:
                await asyncio.to_thread(self.presence.check)
                if lost or time.monotonic() - last_renewal >= renew_every:
                    await asyncio.to_thread(
                        store.renew_leases, self.engine, self.owner, lease_seconds=self.opts.lease_seconds
                    )
                    await asyncio.to_thread(self.inflight.renew)
                    last_renewal = time.monotonic()
                lost = False
            except Exception as exc:
                if not is_outage(self.engine, exc):
                    raise
                lost = True

    # ------------------------------------------------------------ feeding

    def _fetch(
        self, j: _Judge, n: int
    ) -> tuple[list[Prepared], dict[str, CacheHit], list[tuple[LeasedJob, str]], set[str], dict[str, str]]:
        leased = store.lease_jobs(
            self.engine, self.cid, self.owner, n, lease_seconds=self.opts.lease_seconds, judge_id=j.id
        )
        preps, bad = prepare_leased(self.engine, self.ctx, leased)
        hits = {} if self.opts.no_cache else store.cache_lookup(self.engine, [p.request_hash for p in preps])
        return preps, hits, bad, *self.inflight.claim(preps, hits)

    def _low_water(self, j: _Judge) -> int:
        return min(self.opts.lease_chunk or 10**9, max(2 * j.workers, 32))

    async def _feed(self, j: _Judge) -> None:
        low = self._low_water(j)
        # Prefetch generously: a chunk is rendered in a thread that competes for the GIL with the
        # event loop exactly when many replies arrive at once, so it must not be needed at once.
        chunk = self.opts.lease_chunk or min(2000, max(4 * j.workers, 128))
        started = False
        try:
            while not self.stopping and not self.gate.exhausted(j.id):
                if j.queue.qsize() >= low:
                    j.need.clear()
                    await j.need.wait()
                    continue
                # the first lease is one worker-pool's worth, so calls start as soon as possible
                n = chunk if started else min(chunk, max(j.workers, 16))
                started = True
                self._fetching += 1
                try:
                    preps, hits, bad, claimed, batched = await self._db(self._fetch, j, n)
                finally:
                    self._fetching -= 1
                if not preps and not bad:
                    break
                self.gate.leased([p.job.id for p in preps] + [job.id for job, _ in bad])
                for job, why in bad:
                    self.gate.finished(job.id)
                    self.writer.outcome(JobOutcome(job.id, "failed", job.attempts, "fatal"))
                    self.stats.failed += 1
                    self.stats.errors["fatal"] += 1
                    self.warnings.append(f"job {job.id}: {why}")
                for p in preps:
                    hit = hits.get(p.request_hash)
                    if hit is not None:
                        self._answer_from_cache(p, hit)
                    elif p.request_hash in batched:  # asked by an open batch: left pending (handed back)
                        self._leave_for_batch(j, p, batched[p.request_hash])
                    elif not await self._admitted(p):
                        continue  # its unit is not bought in this run: handed back at the end
                    elif self.inflight.admit(j, p, claimed):
                        j.queue.put_nowait(p)
            while self.inflight.parked_for(j.id) and not self.stopping:  # twins still waiting
                await asyncio.sleep(0.02)
        finally:
            for _ in range(j.workers):
                j.queue.put_nowait(None)

    async def _admitted(self, p: Prepared) -> bool:
        """Under a cap: whether `p`'s unit is bought (`runner.units`); waits here, in the feeder,
        so no worker is held while the calls in flight settle."""
        if not self.gate.active:
            return True
        return await self.gate.admit(
            p.job.id, self._job_estimate(p), lambda: self.budget.spent, self._busy, self._stopping
        )

    def _busy(self) -> bool:
        """Something of this run may still spend or learn a reply's real size."""
        return (
            self._working > 0
            or self.budget.holding > 0
            or self._fetching > 0
            or any(not jj.queue.empty() for jj in self.judges.values())
        )

    def _leave_for_batch(self, j: _Judge, p: Prepared, campaign: str) -> None:
        """`p`'s request is asked by an open batch of `campaign`: handed back at the end, pending."""
        self.gate.finished(p.job.id)
        self._batched[campaign] += 1

    def _answer_twin(self, j: _Judge, p: Prepared, hit: CacheHit) -> None:
        self._answer_from_cache(p, hit)

    def _ask_twin(self, j: _Judge, p: Prepared) -> None:
        j.queue.put_nowait(p)

    def _answer_from_cache(self, p: Prepared, hit: CacheHit) -> None:
        self.gate.finished(p.job.id)
        row, outcome = cached_answer(p, hit, self.ctx)
        self.writer.attempt(row)
        self.writer.outcome(outcome)
        self.stats.cached += 1
        self.stats.done += 1
