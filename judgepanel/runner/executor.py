"""The async executor: leased jobs in, one request + response row per attempt and one verdict per
job out.

Per judge: a feeder leases jobs in chunks (rendering prompts and looking up the cache in a worker
thread), a fixed pool of worker coroutines (size = the judge's concurrency) takes them, and a
`JudgeLimiter` paces calls (adaptive concurrency, RPM/TPM, Retry-After gate). One `Writer` commits
everything in batches. Retries live here and only here, in `_run_job` (tenacity's back-off, looped by hand):

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
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import random
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

from sqlalchemy import Engine
from tenacity import RetryCallState
from tenacity.wait import wait_exponential_jitter

from judgepanel.errors import (
    EXIT_INTERRUPTED,
    BadInput,
    ContextTooLong,
    Fatal,
    ProviderError,
    RateLimited,
    TimedOut,
    Transient,
)
from judgepanel.protocol.schemas import shortest_answer_tokens
from judgepanel.providers.base import CURRENT_CLOCK, CallClock, ChatResult, Provider
from judgepanel.providers.errors import configured_secrets, redact, redact_result
from judgepanel.providers.replies import clean_body, clean_result, clean_text
from judgepanel.providers.spec import JudgeSpec, max_reply_bytes, parse_spec
from judgepanel.rubrics import RubricDoc
from judgepanel.runner.budget import (
    SLICE_CALLS,
    Budget,
    Price,
    assumed_rates_note,
    check_prices,
    price_for,
    unknown_price_advice,
)
from judgepanel.runner.checkers import clause_plan
from judgepanel.runner.dbwait import is_outage, patient
from judgepanel.runner.failures import context_advice
from judgepanel.runner.inflight import InFlight
from judgepanel.runner.limits import JudgeLimiter, SharedBucket
from judgepanel.runner.prepare import (
    CampaignContext,
    Prepared,
    as_sent,
    assume_learnt_refusals,
    context_options,
    max_output,
    prepare,
    read,
    template_drift,
    verdict_from,
    with_logprob_score,
)
from judgepanel.runner.served import PROBE_SECONDS, served_models
from judgepanel.runner.units import UnitGate
from judgepanel.runner.writer import Writer
from judgepanel.store import budget as budget_store
from judgepanel.store import campaigns as store
from judgepanel.store import liveness
from judgepanel.store.campaigns import (
    AttemptRow,
    Batch,
    BatchResult,
    CacheHit,
    JobOutcome,
    LeasedJob,
    VerdictRow,
)
from judgepanel.store.campaigns.leases import unit_jobs
from judgepanel.store.campaigns.provider_batches import jobs_in_open_batches
from judgepanel.store.editor import editor_tasks

# what `--retry-failed` puts back: failures that another try may cure (an `oversize` reply is not
# retried by itself, as the same question tends to get the same huge answer, paid again; a
# `context` refusal is cured by raising the server's context, after which the user asks again)
RETRY_FAILED = ("rate_limit", "transient", "oversize", "context")
TRUNCATED_REASONS = frozenset({"length", "max_tokens", "model_context_window_exceeded"})
EXIT_INCOMPLETE = 3  # `campaign run` ended normally but some jobs have no verdict
RECENT_CALLS = 400  # calls kept for the progress line's rate and latency (`analysis.pace`)
UNREADABLE_STOP = 20  # a run whose first this-many answers all fail to parse stops (module docstring)


def freeze_heap() -> bool:
    """Move every object alive now (the SDKs, SQLAlchemy, the compiled templates: the process's
    whole heap once a run is set up) out of the cyclic garbage collector's reach until
    `gc.unfreeze()`; True when this call froze it. Every full collection during the run then walks
    only what the run allocated instead of some 300,000 objects that cannot become garbage while it
    runs: at zero latency that was about 5 % of the runner's CPU (one full collection per ~2,000
    calls, 0.15–0.2 s each). Nothing is kept alive: objects freed by their reference count go as
    before, and the run unfreezes when it ends. A heap already frozen (by the caller, or by another
    run in this process) is left to whoever froze it."""
    if gc.get_freeze_count():
        return False
    gc.freeze()
    return True


# the youngest generation's collection threshold while a run works (CPython's default is 700)
RUN_GC_THRESHOLD = 10_000


class RelaxedCollector:
    """Collect the youngest generation every `RUN_GC_THRESHOLD` net allocations instead of every
    700 while a run works (`start` … `stop`). At zero latency the SDKs, their HTTP stack and the
    runner allocate thousands of container objects a call, and the default threshold made about
    150 young collections and 13 middle ones per 2,000 calls, 0.10–0.12 CPU ms a call in all
    (measured with `gc.callbacks`); at 10,000 they cost 0.03–0.04 ms. Cyclic garbage lives a
    little longer (a few MB at most); nothing else changes.

    A caller's higher threshold is left alone, and a collector switched off (threshold 0) stays
    off. Someone lowering the threshold while the run works (the CLI restores CPython's default
    after its start-up, `cli._collect_after_start_up`, which may fall inside a run) is noted and
    raised again after that collection; when the run stops, the threshold is the one it would
    have been without the run."""

    def __init__(self) -> None:
        self._restore: tuple[int, int, int] | None = None
        self._active = False

    def start(self) -> None:
        now = gc.get_threshold()
        if now[0] == 0:
            return
        self._active = True
        if now[0] < RUN_GC_THRESHOLD:
            self._restore = now
            gc.set_threshold(RUN_GC_THRESHOLD, now[1], now[2])
        gc.callbacks.append(self._keep)

    def _keep(self, phase: str, info: dict[str, int]) -> None:
        if phase != "stop" or not self._active:
            return
        now = gc.get_threshold()
        if 0 < now[0] < RUN_GC_THRESHOLD:  # lowered by someone else meanwhile: theirs after the run
            self._restore = now
            gc.set_threshold(RUN_GC_THRESHOLD, now[1], now[2])

    def stop(self) -> None:
        if not self._active:
            return
        self._active = False  # the callback stays inert even if a collection holds it right now
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self._keep)
        if self._restore is not None and gc.get_threshold()[0] == RUN_GC_THRESHOLD:
            gc.set_threshold(*self._restore)


def run_exit_code(status: str, done: int, jobs: int) -> int:
    """The CLI contract of `campaign run` (realtime or batch) and `worker`: 0 when every job has a
    verdict, 130 when interrupted, else 3 (jobs failed, unscheduled by --max-cost, or pending)."""
    if status == "interrupted":
        return EXIT_INTERRUPTED
    return 0 if done == jobs else EXIT_INCOMPLETE


class _Abandoned(Exception):
    """A job given back unfinished (stop requested during its back-off)."""


@dataclass(frozen=True)
class _AttemptNumber:
    """What tenacity's wait strategies read of a `RetryCallState`."""

    attempt_number: int


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 6
    initial_wait: float = 1.0  # seconds, first exponential back-off step
    max_wait: float = 60.0
    jitter: float = 1.0
    max_retry_after: float = 300.0  # never sleep (or pause a judge) longer than this on a server's word
    timeout_retries: int = 1  # a job whose call timed out is retried at most this often for timeouts


@dataclass(frozen=True)
class RunOptions:
    concurrency: int = 16  # per judge, unless the judge spec says `concurrency=`
    rpm: float | None = None  # per judge, unless the spec says `rpm=`
    tpm: float | None = None
    max_cost: float | None = None  # USD: sets the campaign's cap on its total spend (kept for later runs)
    no_cache: bool = False
    timeout: float = 120.0  # per call, unless the spec says `timeout=`
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    retry_failed: bool = False  # put jobs that failed rate_limit/transient/oversize back first
    batch_size: int = 500
    flush_ms: float = 100.0
    lease_seconds: float = 120.0
    lease_chunk: int | None = None  # jobs leased at a time per judge (default: 4 × concurrency, ≥ 128)
    shared_limits: bool = False  # RPM/TPM budgets shared with other workers through the database
    # stop when the first this-many answers of the run all fail to parse (None: never)
    unreadable_stop: int | None = UNREADABLE_STOP

    def validate(self) -> None:
        if self.lease_seconds <= 0:
            raise BadInput(f"--lease-seconds must be positive, got {self.lease_seconds}")
        self._validate()

    def _validate(self) -> None:
        if self.concurrency < 1:
            raise BadInput(f"--concurrency must be at least 1, got {self.concurrency}")
        for name, v in (("--rpm", self.rpm), ("--tpm", self.tpm)):
            if v is not None and v <= 0:
                raise BadInput(f"{name} must be positive, got {v}")
        if self.timeout <= 0:
            raise BadInput(f"--timeout must be positive, got {self.timeout}")
        if self.unreadable_stop is not None and self.unreadable_stop < 1:
            raise BadInput(f"unreadable_stop must be at least 1 (or None), got {self.unreadable_stop}")


@dataclass
class RunStats:
    """Live counters, read by the progress display."""

    total: int = 0
    done: int = 0
    failed: int = 0
    calls: int = 0
    cached: int = 0
    in_flight: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    parse_failures: Counter[str] = field(default_factory=Counter)  # by failure kind, this run
    spent: float = 0.0
    spent_unknown: bool = False
    # replies that did not say what they cost (no usage, counts out of range or contradicting
    # each other), charged at their reservation instead: "unknown" never counts as free
    charged_reserved: int = 0
    started: float = field(default_factory=time.monotonic)
    done_at_start: int = 0
    committed: int = 0
    # (monotonic time a call ended, its latency in s) of the newest calls, and the calls the run
    # may have in flight: what `analysis.pace` reads for the rate, the ETA and the window
    recent: deque[tuple[float, float | None]] = field(default_factory=lambda: deque(maxlen=RECENT_CALLS))
    concurrency: int = 0

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started


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
            "status": self.status,
            "jobs": self.jobs,
            "done": self.done,
            "failed": self.failed,
            "pending": self.pending,
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
        }


@dataclass
class _Judge:
    id: int
    spec: JudgeSpec
    provider: Provider
    limiter: JudgeLimiter
    price: Price | None
    timeout: float
    workers: int
    queue: asyncio.Queue[Prepared | None] = field(default_factory=asyncio.Queue)
    need: asyncio.Event = field(default_factory=asyncio.Event)
    reply_cap: int | None = None  # no body longer than this is stored (`max_reply_bytes`)


ProviderFactory = Callable[[JudgeSpec, int], Provider]


def _default_factory(spec: JudgeSpec, connections: int) -> Provider:
    from judgepanel.providers.registry import make_provider

    return make_provider(spec, max_connections=max(16, connections))


def _reply_kind(p: Prepared) -> tuple[str, str]:
    """Whose replies to which prompt a call's output length is predicted from."""
    return (p.job.judge, p.prompt.template_name)


def sent_row(p: Prepared, attempt: int, *, ok: bool, **reply: Any) -> AttemptRow:
    """An attempt row: the request as sent, with what came back given as `reply` (`AttemptRow`
    fields; `answer_fields` for a provider's reply), or `replace`d in by the caller."""
    return AttemptRow(
        p.job.id,
        attempt,
        p.request_hash,
        p.prompt.template_name,
        p.prompt.template_hash,
        p.request.messages,
        p.request.params,
        ok=ok,
        output_schema=p.request.schema if p.request.params.get("structured", True) else None,
        **reply,
    )


def prepare_leased(
    engine: Engine, ctx: CampaignContext, leased: list[LeasedJob]
) -> tuple[list[Prepared], list[tuple[LeasedJob, str]]]:
    """Render leased jobs (a job asked again carries its last parse error, to re-ask with); the
    ones that cannot be rendered come back apart, with the reason."""
    reask = store.last_parse_errors(engine, [x.id for x in leased if x.attempts > 0])
    preps: list[Prepared] = []
    bad: list[tuple[LeasedJob, str]] = []
    for job in leased:
        try:
            preps.append(prepare(job, ctx, reask_error=reask.get(job.id)))
        except BadInput as exc:
            bad.append((job, str(exc)))
    return preps, bad


def answered_row(
    row: AttemptRow, r: ChatResult, *, cost: float | None, error: str | None, latency_ms: float | None
) -> AttemptRow:
    """`row` (as sent) with a provider's reply: what it said, its tokens and cost, and the parse
    error of its verdict (None when it was read)."""
    return replace(row, **answer_fields(r, cost=cost, error=error, latency_ms=latency_ms))


def answer_fields(
    r: ChatResult, *, cost: float | None, error: str | None, latency_ms: float | None
) -> dict[str, Any]:
    """The `AttemptRow` fields of a provider's reply (see `answered_row`)."""
    return {
        "error_class": "parse" if error is not None else None,
        "http_status": r.http_status,
        "error_message": error,
        "raw_body": r.raw_body,
        "text": r.text,
        "model_returned": r.model_returned,
        "system_fingerprint": r.system_fingerprint,
        "input_tokens": r.input_tokens,
        "output_tokens": r.output_tokens,
        "latency_ms": latency_ms,
        "cost_usd": cost,
        "finish_reason": r.finish_reason,
        "cache_read_tokens": r.cache_read_tokens,
        "cache_write_tokens": r.cache_write_tokens,
    }


def cached_answer(p: Prepared, hit: CacheHit, ctx: CampaignContext) -> tuple[AttemptRow, JobOutcome]:
    """A job answered from the store's request cache: its attempt row (cost 0, `cached_from` the
    original response) and its `done` outcome."""
    job = p.job
    attempt = job.attempts + 1
    row = replace(
        sent_row(p, attempt, ok=True),
        http_status=None,
        text=hit.text,
        model_returned=hit.model_returned,
        system_fingerprint=hit.system_fingerprint,
        input_tokens=hit.input_tokens,
        output_tokens=hit.output_tokens,
        latency_ms=0.0,
        cost_usd=0.0,
        cached_from=hit.response_id,
        finish_reason=hit.finish_reason,
    )
    v = hit.verdict
    clauses = [(k, met, why) for k, met, why in hit.clause_keys]
    verdict = verdict_from(job, ctx, v.parse_method, v.value_presented, v.score, v.rationale, clauses)
    return row, JobOutcome(job.id, "done", attempt, None, verdict)


def failed_class(verdict: VerdictRow | None) -> str:
    """The job's error class for a reply that was read but held no verdict: `truncated` when it
    was cut at the output cap (re-asking it costs the whole cap again, and a rambling model
    rambles again: `retry-parse-failures` leaves these unless told `--truncated`), else `parse`."""
    return "truncated" if verdict is not None and verdict.failure_kind == "truncated" else "parse"


def judged_reply(p: Prepared, ctx: CampaignContext, r: ChatResult) -> tuple[VerdictRow, str | None]:
    """The verdict read from a reply and the parse error (None when it parsed). A failure is
    classified from what the provider said, not from the text: a reply cut at the output cap
    (`finish_reason` length / max_tokens) is `truncated` — not re-asked by default, and not cured by
    a larger cap when the model loops inside its rationale —; a partial clause reply keeps its own
    kind, `missing_clauses`."""
    verdict, error = read(p, ctx, r.text, r.structured)
    verdict = with_logprob_score(p, ctx, r.raw_body, verdict)
    if error is None:
        return verdict, None
    kind = "truncated" if r.finish_reason in TRUNCATED_REASONS else (verdict.failure_kind or "unreadable")
    if kind == "truncated":
        error = f"truncated at the output cap (finish_reason {r.finish_reason}): {error}"
    return replace(verdict, failure_kind=kind), error


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


class Runner:
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
        rubric: RubricDoc | None = store.rubric_doc(self.engine, rv_id) if rv_id is not None else None
        raw = dict(zip(spec.judges, spec.judge_specs or spec.judges, strict=True))
        judges: dict[str, _Judge] = {}
        specs: dict[str, JudgeSpec] = {}
        for jid, rec in store.campaign_judges(self.engine, cid).items():
            js = parse_spec(raw.get(rec.name, rec.name))
            specs[rec.name] = js
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
            judges[rec.name] = _Judge(
                jid,
                js,
                self.factory(js, conc),
                limiter,
                price_for(js),
                float(js.timeout or self.opts.timeout),
                conc,
                reply_cap=max_reply_bytes(js),
            )
        tasks = editor_tasks(self.engine, self.name) if spec.protocol == "editor" else {}
        refused = assume_learnt_refusals(
            self.engine, {n: j.provider for n, j in judges.items()}, self.warnings
        )
        _plan = clause_plan(self.engine, self.name, rv_id, spec.protocol, custom=bool(spec.templates))
        ctx = CampaignContext(
            spec.protocol,
            rubric,
            _plan[0],
            specs,
            tasks=tasks,
            refused=refused,
            checkers=_plan[1],
            **context_options(spec),
        )
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
                self.inflight.resolve(self._db, self._answer_twin, self._ask_twin, self._stopping)
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
            await self._db(store.release_leases, self.engine, self.owner)
            await self._db(self.inflight.release_all)
            await self._db(budget_store.drop_hold, self.engine, cid, self.owner)
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
    ) -> tuple[list[Prepared], dict[str, CacheHit], list[tuple[LeasedJob, str]], set[str]]:
        leased = store.lease_jobs(
            self.engine, self.cid, self.owner, n, lease_seconds=self.opts.lease_seconds, judge_id=j.id
        )
        preps, bad = prepare_leased(self.engine, self.ctx, leased)
        hits = {} if self.opts.no_cache else store.cache_lookup(self.engine, [p.request_hash for p in preps])
        return preps, hits, bad, self.inflight.claim(preps, hits)

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
                    preps, hits, bad, claimed = await self._db(self._fetch, j, n)
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

    # ------------------------------------------------------------ working

    async def _work(self, j: _Judge) -> None:
        while True:
            if j.queue.qsize() < self._low_water(j):
                j.need.set()
            p = await j.queue.get()
            if p is None or self.stopping:
                return
            await self._run_job(j, p)

    async def _sleep(self, seconds: float) -> None:
        """The sleep between attempts: a back-off that a stop request cuts short (the job is handed back)."""
        if self.stopping:
            raise _Abandoned
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)
        if self.stopping:
            raise _Abandoned

    def _backoff(self, exc: BaseException | None, attempt_number: int) -> float:
        """The wait before the next attempt after attempt `attempt_number` (1, 2, …) raised `exc`:
        the server's Retry-After (capped, + up to 10 % jitter) when it sent one, else exponential
        back-off with jitter (tenacity's `wait_exponential_jitter`)."""
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None and retry_after >= 0:  # NaN fails this test: back off instead
            base = min(float(retry_after), self.opts.retry.max_retry_after)
            return base + random.uniform(0, 0.1 * base + 0.01)
        return float(self._expo(cast(RetryCallState, _AttemptNumber(attempt_number))))

    async def _reserve(self, estimate: Callable[[], float]) -> float | None:
        """Reserve budget for one call under the campaign's cap (see `runner.budget`): from this
        run's hold, grown in the database when short; waiting while this run's calls in flight or
        replies not yet stored hold reservations (they usually cost far less than reserved); None,
        and the run stops, when the call does not fit with nothing of this run's outstanding.
        The amount is estimated again after each wait: the replies that settled meanwhile make the
        output allowance better, and a call that waited from the run's start must not keep the
        pessimistic first estimate (made before any reply was seen) to the end. Returns the
        amount reserved."""
        amount = estimate()
        while not self.budget.take(amount):
            if self.stopping:
                return None
            settled = self._settled  # set when a reservation of this run settles or is released
            outstanding = self.budget.unreleased
            async with self._growing:
                if self.budget.take(amount):
                    return amount
                need = self.budget.shortfall(amount)
                granted = await self._db(
                    budget_store.reserve,
                    self.engine,
                    self.cid,
                    self.owner,
                    need,
                    (SLICE_CALLS - 1) * amount,
                    self.opts.lease_seconds,
                )
            if granted:
                self.budget.granted(granted)
                continue
            if not outstanding and not self.budget.unreleased:
                self._stop("budget")
                return None
            await settled.wait()  # returns at once if something was released meanwhile
            amount = estimate()
        return amount

    def _wake_budget(self) -> None:
        settled, self._settled = self._settled, asyncio.Event()
        settled.set()

    def _settle(self, reserved: float, actual: float | None) -> None:
        self.budget.settle(actual)
        self.gate.wake()
        if self.budget.max_cost is not None:
            self.writer.release(self.cid, reserved)  # with the reply, whose real cost then counts
        self._wake_budget()

    async def _run_job(self, j: _Judge, p: Prepared) -> None:
        self._working += 1
        try:
            await self._run_claimed(j, p)
        finally:
            self._working -= 1
            self.gate.finished(p.job.id)
            claimed = self.inflight.done(p)
            if claimed is not None:  # dropped in the commit that stores the answer
                self.writer.unclaim(claimed)

    async def _run_claimed(self, j: _Judge, p: Prepared) -> None:
        job = p.job
        reserved = await self._reserve(
            lambda: self.budget.estimate(j.price, p.prompt_chars, p.max_output, _reply_kind(p))
        )
        if reserved is None:
            return
        reserve = reserved
        state: dict[str, Any] = {
            "attempt": job.attempts,
            "verdict": None,
            "error": None,
            "cost": None,
            "timeouts": 0,
            "reserved": reserve,
        }

        def retryable(exc: BaseException) -> bool:
            if isinstance(exc, TimedOut):
                return bool(state["timeouts"] <= self.opts.retry.timeout_retries)
            return isinstance(exc, RateLimited | Transient)

        try:
            # tenacity's policy (retry if `retryable`, stop after `max_attempts`, re-raise the last
            # error, wait `_backoff`), looped by hand: building an `AsyncRetrying` per job and its
            # per-attempt bookkeeping cost more CPU than the rest of the job's own work
            n = 0
            while True:
                n += 1
                try:
                    await self._call(j, p, state)
                    break
                except Exception as exc:
                    if n >= self.opts.retry.max_attempts or not retryable(exc):
                        raise
                    delay = self._backoff(exc, n)
                await self._sleep(delay)
        except _Abandoned:
            self._settle(reserve, None)
            return
        except ProviderError as exc:
            self._settle(reserve, None)
            self.writer.outcome(JobOutcome(job.id, "failed", state["attempt"], exc.error_class))
            self.stats.failed += 1
            return
        self._settle(reserve, state["cost"])
        verdict = state["verdict"]
        if state["error"] is None:
            self.writer.outcome(JobOutcome(job.id, "done", state["attempt"], None, verdict))
            self.stats.done += 1
        else:
            self.writer.outcome(
                JobOutcome(job.id, "failed", state["attempt"], failed_class(verdict), verdict)
            )
            self.stats.failed += 1

    async def _call(self, j: _Judge, p: Prepared, state: dict[str, Any]) -> None:
        if self.stopping and state["attempt"] > p.job.attempts:
            raise _Abandoned  # a retry after stop was requested: hand the job back
        tokens = 0
        if j.limiter.tokens is not None:
            tokens = p.prompt_chars // 4 + (p.max_output or 512)
        await j.limiter.acquire(tokens)
        if self.stopping:
            j.limiter.release()
            raise _Abandoned  # stop came while this call waited for its turn: it never started
        state["attempt"] += 1
        n = state["attempt"]
        self.stats.in_flight += 1
        clock = CallClock()
        try:
            try:
                result = await self._timed_call(j, p, clock)
            except TimeoutError:
                raise TimedOut(
                    f"{j.spec.provider}: no complete answer within {j.timeout:g} s (per-attempt deadline)"
                ) from None
        except ProviderError as exc:
            if isinstance(exc, TimedOut):
                state["timeouts"] += 1
            self._failed_attempt(j, self._as_sent(j, p), n, exc, clock)
            raise
        except (asyncio.CancelledError, _Abandoned):
            raise
        except Exception as exc:  # a provider bug must not be retried forever, nor lost
            fatal = Fatal(f"{type(exc).__name__}: {exc}")
            self._failed_attempt(j, self._as_sent(j, p), n, fatal, clock)
            raise fatal from exc
        finally:
            self.stats.in_flight -= 1
            j.limiter.release()
        self._succeeded(j, self._as_sent(j, p), n, result, tokens, state, clock.queued_ms)

    async def _timed_call(self, j: _Judge, p: Prepared, clock: CallClock) -> ChatResult:
        """One provider call under the per-attempt deadline, which runs from the moment the request
        leaves (`CallClock.sent`): while the call waits inside the provider (behind an
        OpenAI-compatible judge's probing first call) the deadline is paused."""
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(j.timeout) as deadline:

            def move(when: float | None) -> None:
                with contextlib.suppress(RuntimeError):  # the deadline has already fired
                    deadline.reschedule(when)

            clock.bind(on_waiting=lambda: move(None), on_sent=lambda: move(loop.time() + j.timeout))
            token = CURRENT_CLOCK.set(clock)
            try:
                result = await j.provider.complete(p.request, timeout=j.timeout)
                return redact_result(clean_result(result, j.reply_cap), self._keys(j))
            finally:
                CURRENT_CLOCK.reset(token)

    def _keys(self, j: _Judge) -> tuple[str, ...]:
        """Every configured key and this judge's own (read once per run: the environment does not
        change under a running campaign), to redact replies and errors against."""
        keys = self._redact_keys.get(j.id)
        if keys is None:
            keys = self._redact_keys[j.id] = (*configured_secrets(), *getattr(j.provider, "secrets", ()))
        return keys

    def _as_sent(self, j: _Judge, p: Prepared) -> Prepared:
        """`p` as its judge's provider sent it: without what the server refused. What a probe learns
        is remembered for the requests prepared from now on and, in the campaign's spec, for later
        runs (so their requests hash as sent from the start, and the cache answers them)."""
        learnt: frozenset[str] | None = getattr(j.provider, "refused", None)
        if not learnt:
            return p
        judge = p.job.judge
        if learnt != self.ctx.refused.get(judge, frozenset()):
            self.ctx = replace(self.ctx, refused={**self.ctx.refused, judge: learnt})
            self._background.append(
                asyncio.create_task(
                    self._db(store.remember_refusals, self.engine, self.name, judge, sorted(learnt))
                )
            )
        return as_sent(p, self.ctx, learnt)

    def _failed_attempt(self, j: _Judge, p: Prepared, n: int, exc: ProviderError, clock: CallClock) -> None:
        if isinstance(exc, RateLimited):
            j.limiter.on_rate_limited(exc.retry_after)
        elif isinstance(exc, TimedOut):
            j.limiter.on_timeout(j.timeout)
        elif isinstance(exc, ContextTooLong):
            longest, window = self._too_long.get(j.spec.name, (None, None))
            if exc.request_tokens is not None and (longest is None or exc.request_tokens > longest):
                longest = exc.request_tokens
            self._too_long[j.spec.name] = (longest, exc.limit_tokens or window)
        self.stats.calls += 1
        self.stats.recent.append((time.monotonic(), clock.since_sent_ms() / 1000))
        self.stats.errors[exc.error_class] += 1
        # what the provider raised is redacted already; a provider bug's message may not be
        keys = self._keys(j)
        self.writer.attempt(
            replace(
                sent_row(p, n, ok=False),
                error_class=exc.error_class,
                http_status=exc.status,
                error_message=clean_text(redact(str(exc), keys)[:2000]),
                raw_body=clean_body(
                    None if exc.raw_body is None else redact(exc.raw_body, keys), j.reply_cap
                ),
                latency_ms=clock.since_sent_ms(),
                queued_ms=clock.queued_ms,
            )
        )

    def _succeeded(
        self,
        j: _Judge,
        p: Prepared,
        n: int,
        r: ChatResult,
        tokens_reserved: int,
        state: dict[str, Any],
        queued_ms: float | None = None,
    ) -> None:
        real_tokens = (r.input_tokens or 0) + (r.output_tokens or 0)
        j.limiter.on_success(real_tokens - tokens_reserved if tokens_reserved and real_tokens else 0.0)
        self.budget.observe_input(p.prompt_chars, r.input_tokens)
        self.budget.observe_output(_reply_kind(p), r.output_tokens)
        cost = None
        if j.price is not None and r.input_tokens is not None and r.output_tokens is not None:
            cost = j.price.call_cost(
                r.input_tokens, r.output_tokens, r.cache_read_tokens, r.cache_write_tokens
            )
        if cost is None and j.price is not None:
            # the reply did not say what it cost (or said it unusably, or in tokens of a rate the
            # price lacks): it is charged what was reserved for it, the most the call was allowed
            # to cost, never 0
            cost = float(state["reserved"])
            self.stats.charged_reserved += 1
        if cost is not None:
            self.stats.spent += cost
        elif j.price is None or r.cache_read_tokens or r.cache_write_tokens:
            self.stats.spent_unknown = True
        if r.cache_read_tokens or r.cache_write_tokens:
            self._cache_priced.add(j.spec.name)
        self.stats.calls += 1
        self.stats.recent.append((time.monotonic(), None if r.latency_ms is None else r.latency_ms / 1000))
        verdict, error = judged_reply(p, self.ctx, r)
        if error is not None:
            self.stats.errors["parse"] += 1
            self.stats.parse_failures[verdict.failure_kind or "unreadable"] += 1
            if verdict.failure_kind == "truncated" and p.max_output is not None:
                need = shortest_answer_tokens(p.prompt.schema)
                if p.max_output < need:
                    self._cap_too_small[(j.spec.name, p.max_output)] = need
        self._count_answer(j, p, r, error)
        state["verdict"], state["error"], state["cost"] = verdict, error, cost
        # one row built once (not built, then copied twice with `replace`): this runs for every call
        answer = answer_fields(r, cost=cost, error=error, latency_ms=r.latency_ms)
        self.writer.attempt(sent_row(p, n, ok=True, queued_ms=queued_ms, **answer))
