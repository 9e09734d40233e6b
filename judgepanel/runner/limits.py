"""Per-judge flow control: an adaptive concurrency limit, request and token rate limits, and a
pause gate that a 429's Retry-After closes for every call of the judge at once.

Rates use GCRA (the "virtual scheduling" form of a token bucket): each call is given the next
free start time, `start = max(now, tat − (burst−1)/rate)`, `tat = max(tat, now) + cost/rate`, which is O(1), needs no
background refill task, and spaces calls evenly instead of releasing them in bursts.

Adaptive back-off (AIMD, as TCP does): a 429 halves the concurrency limit and cuts the request
rate to 80 % — at most once per congestion episode, since the calls that were in flight when the
limit was hit all fail together — and closes the gate until Retry-After. Every success then adds
1/limit to the concurrency limit (one slot per window of successes) and 0.2 % of the configured
rate back, so recovery is slow and cannot overshoot the configured ceiling.

A timeout halves the concurrency limit the same way (once per episode, no pause, rates kept): a
local server with fewer parallel slots than our concurrency queues the surplus, and queued calls
time out; fewer calls in flight is what helps.

No server can close the gate for longer than `max_pause` (the retry policy's `max_retry_after`):
a Retry-After of a day, an HTTP-date in 2099 or `retry-after-ms: inf` pauses for `max_pause`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable

SHRINK = 0.5
RATE_CUT = 0.8
RATE_RECOVERY = 0.002


class _Gcra:
    def __init__(self, rate_per_s: float, burst: float) -> None:
        self.max_rate = rate_per_s
        self.rate = rate_per_s
        self.burst = max(1.0, burst)
        self._tat = 0.0

    def reserve(self, now: float, cost: float = 1.0) -> float:
        """Book `cost` units; return how long to wait before starting. `_tat` is the theoretical
        arrival time; up to `burst` units may start at once, then one every 1/rate seconds."""
        tolerance = (self.burst - 1.0) / self.rate
        start = max(now, self._tat - tolerance)
        self._tat = max(self._tat, now) + cost / self.rate
        return start - now

    def adjust(self, delta: float) -> None:
        """Book (or refund) `delta` units after the fact, e.g. real tokens vs the estimate."""
        self._tat += delta / self.rate


class SharedBucket:
    """This process's view of a token bucket shared by several workers (see `store.ratebucket`):
    tokens are taken from the shared row in slices (`take(n)` is a blocking call, run in a thread,
    that returns the seconds to wait before using them) and handed out locally, so a call costs a
    database round trip only once per slice."""

    def __init__(self, take: Callable[[float], float], slice_: float) -> None:
        self._take = take
        self.slice = max(1.0, slice_)
        self._local = 0.0
        self._ready_at = 0.0
        self._lock = asyncio.Lock()
        self.round_trips = 0

    async def reserve(self, cost: float = 1.0) -> float:
        """Book `cost` units; return how long to wait before starting."""
        async with self._lock:
            if self._local < cost:
                need = max(self.slice, cost - self._local)
                wait = await asyncio.to_thread(self._take, need)
                self.round_trips += 1
                self._local += need
                self._ready_at = max(self._ready_at, time.monotonic() + wait)
            self._local -= cost
            return max(0.0, self._ready_at - time.monotonic())

    def adjust(self, delta: float) -> None:
        """Book (or refund) `delta` units after the fact: they come out of (or back into) the slice."""
        self._local -= delta


class JudgeLimiter:
    def __init__(
        self,
        concurrency: int,
        *,
        rpm: float | None = None,
        tpm: float | None = None,
        burst_s: float = 0.1,
        max_pause: float = 300.0,
    ) -> None:
        self.max_concurrency = max(1, concurrency)
        self.limit = float(self.max_concurrency)
        self.in_flight = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self.requests = _Gcra(rpm / 60.0, rpm / 60.0 * burst_s) if rpm else None
        self.tokens = _Gcra(tpm / 60.0, tpm / 60.0 * burst_s) if tpm else None
        self.pause_until = 0.0
        self.max_pause = max_pause
        self.timeouts = 0
        self._episode_end = 0.0
        self.rate_limited = 0
        self.shrinks = 0
        self.stop: asyncio.Event | None = None  # set by the runner: a stop request cuts waits short
        # budgets shared with other workers through the database (set by the runner on PostgreSQL)
        self.shared_requests: SharedBucket | None = None
        self.shared_tokens: SharedBucket | None = None

    # ------------------------------------------------------------ slots

    async def acquire(self, tokens: int = 0) -> None:
        """Wait for a concurrency slot, the pause gate, and the request/token rates."""
        while self.in_flight >= int(self.limit):
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():
                    self._wake()  # pass the wake-up on
                raise
        self.in_flight += 1
        try:
            while True:
                now = time.monotonic()
                if self.pause_until > now and not self._stopped():
                    await self._nap(self.pause_until - now)
                    continue
                break
            wait = 0.0
            if self.requests is not None:
                wait = self.requests.reserve(now)
            if self.tokens is not None and tokens:
                wait = max(wait, self.tokens.reserve(now, tokens))
            if self.shared_requests is not None:
                wait = max(wait, await self.shared_requests.reserve(1.0))
            if self.shared_tokens is not None and tokens:
                wait = max(wait, await self.shared_tokens.reserve(float(tokens)))
            if wait > 0:
                await self._nap(wait)
        except BaseException:
            self.release()
            raise

    def _stopped(self) -> bool:
        return self.stop is not None and self.stop.is_set()

    async def _nap(self, seconds: float) -> None:
        if self.stop is None:
            await asyncio.sleep(seconds)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stop.wait(), timeout=seconds)

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        free = int(self.limit) - self.in_flight
        while free > 0 and self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                free -= 1

    # ------------------------------------------------------------ feedback

    def on_success(self, token_correction: float = 0.0) -> None:
        if self.limit < self.max_concurrency:
            self.limit = min(float(self.max_concurrency), self.limit + 1.0 / self.limit)
            self._wake()
        r = self.requests
        if r is not None and r.rate < r.max_rate:
            r.rate = min(r.max_rate, r.rate + r.max_rate * RATE_RECOVERY)
        if self.tokens is not None and token_correction:
            self.tokens.adjust(token_correction)
        if self.shared_tokens is not None and token_correction:
            self.shared_tokens.adjust(token_correction)

    def capped(self, retry_after: float | None) -> float | None:
        """A server's wait, at most `max_pause` (an absurd or infinite one counts as the cap)."""
        if retry_after is None or retry_after != retry_after or retry_after <= 0:  # None, NaN, 0
            return None
        return min(retry_after, self.max_pause)

    def on_rate_limited(self, retry_after: float | None) -> None:
        self.rate_limited += 1
        now = time.monotonic()
        wait = self.capped(retry_after)
        if wait is not None:
            self.pause_until = max(self.pause_until, now + wait)
        if self._shrink(now, wait or 0.0):
            for bucket in (self.requests, self.tokens):
                if bucket is not None:
                    bucket.rate = max(bucket.max_rate * 0.05, bucket.rate * RATE_CUT)

    def on_timeout(self, timeout: float) -> None:
        """A call ran out of time: halve the concurrency limit (once per episode), no pause."""
        self.timeouts += 1
        self._shrink(time.monotonic(), min(timeout, self.max_pause))

    def _shrink(self, now: float, episode: float) -> bool:
        if now < self._episode_end:
            return False  # the same episode: the calls in flight when the limit was hit
        self.shrinks += 1
        self._episode_end = now + max(1.0, episode)
        self.limit = max(1.0, self.limit * SHRINK)
        return True
