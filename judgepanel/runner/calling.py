"""The calls of a run: a judge's worker coroutines take prepared jobs, reserve budget, call the
provider under the judge's limiter and the per-attempt deadline, retry (tenacity's back-off,
honouring Retry-After) and hand each attempt and outcome to the writer (see the
`runner.executor` docstring for the retry, stop and deadline rules).

Boundary: `Calls` is a part of `runner.executor.Runner` (its base class): the leasing, the
feeders and the run's set-up and summary stay there, the rows written are built by
`runner.rows`.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import Engine
from tenacity import RetryCallState
from tenacity.wait import wait_exponential_jitter

from judgepanel.errors import (
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
from judgepanel.providers.pricing import Price
from judgepanel.providers.replies import clean_body, clean_result, clean_text
from judgepanel.providers.spec import JudgeSpec
from judgepanel.runner.budget import SLICE_CALLS, Budget
from judgepanel.runner.inflight import InFlight
from judgepanel.runner.limits import JudgeLimiter
from judgepanel.runner.options import RunOptions, RunStats
from judgepanel.runner.prepare import CampaignContext, Prepared, as_sent
from judgepanel.runner.rows import _reply_kind, answer_fields, failed_class, judged_reply, sent_row
from judgepanel.runner.units import UnitGate
from judgepanel.runner.writer import Writer
from judgepanel.store import budget as budget_store
from judgepanel.store import campaigns as store
from judgepanel.store.campaigns import JobOutcome


class _Abandoned(Exception):
    """A job given back unfinished (stop requested during its back-off)."""


@dataclass(frozen=True)
class _AttemptNumber:
    """What tenacity's wait strategies read of a `RetryCallState`."""

    attempt_number: int


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


class Calls:
    """A run's workers and their calls (`Runner`'s base); the state they share is the runner's."""

    engine: Engine
    name: str
    cid: int
    owner: str
    opts: RunOptions
    stats: RunStats
    ctx: CampaignContext
    budget: Budget
    gate: UnitGate
    writer: Writer
    inflight: InFlight
    _stopping: asyncio.Event
    _settled: asyncio.Event
    _growing: asyncio.Lock
    _expo: wait_exponential_jitter
    _working: int
    _background: list[asyncio.Task[None]]
    _redact_keys: dict[int, tuple[str, ...]]
    _too_long: dict[str, tuple[int | None, int | None]]
    _cap_too_small: dict[tuple[str, int], int]
    _cache_priced: set[str]
    _db: Callable[..., Coroutine[Any, Any, Any]]
    _stop: Callable[[str], None]
    _low_water: Callable[[_Judge], int]
    _count_answer: Callable[[_Judge, Prepared, ChatResult, str | None], None]

    if TYPE_CHECKING:

        @property
        def stopping(self) -> bool: ...

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
            cost = j.price.cost(r.input_tokens, r.output_tokens, r.cache_read_tokens, r.cache_write_tokens)
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
