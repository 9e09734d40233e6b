"""Flow control: GCRA pacing of requests and tokens, the adaptive concurrency limit, the pause gate."""

from __future__ import annotations

import asyncio
import time

from judgepanel.runner.limits import JudgeLimiter, _Gcra


def test_gcra_spaces_calls_after_the_burst() -> None:
    g = _Gcra(rate_per_s=10.0, burst=3.0)
    waits = [g.reserve(100.0) for _ in range(6)]
    # three start at once, then one every 1/rate seconds
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert [round(w, 6) for w in waits[3:]] == [0.1, 0.2, 0.3]
    # an idle bucket refills: after a long pause the burst is available again
    assert g.reserve(200.0) == 0.0


def test_token_bucket_weights_and_corrections() -> None:
    g = _Gcra(rate_per_s=100.0, burst=1.0)  # 6,000 tokens per minute, no burst
    assert g.reserve(0.0, cost=50) == 0.0
    assert round(g.reserve(0.0, cost=50), 6) == 0.5  # the first call's 50 tokens take half a second
    g.adjust(-50)  # the first call used 50 tokens fewer than reserved: refunded
    assert round(g.reserve(0.0, cost=10), 6) == 0.5


def test_requests_per_minute_pace_real_calls() -> None:
    async def main() -> float:
        lim = JudgeLimiter(8, rpm=1200)  # 20 per second, burst of 2 (0.1 s)
        t0 = time.monotonic()
        for _ in range(12):
            await lim.acquire()
            lim.release()
        return time.monotonic() - t0

    elapsed = asyncio.run(main())
    assert 0.45 <= elapsed < 1.5  # ten paced starts at 1/20 s after the burst of two


def test_adaptive_backoff_on_429_and_slow_recovery() -> None:
    lim = JudgeLimiter(16, rpm=600)
    assert lim.requests is not None
    lim.on_rate_limited(retry_after=0.5)
    assert lim.limit == 8 and lim.requests.rate == 0.8 * 10
    assert lim.pause_until > time.monotonic() + 0.4
    # the other calls of the same episode do not shrink it again
    for _ in range(10):
        lim.on_rate_limited(retry_after=0.5)
    assert lim.limit == 8 and lim.shrinks == 1 and lim.rate_limited == 11
    # additive increase: one slot per window of `limit` successes
    for _ in range(8):
        lim.on_success()
    assert 8.9 < lim.limit < 9.1
    for _ in range(10_000):
        lim.on_success()
    assert lim.limit == 16 and lim.requests.rate == 10


def test_concurrency_limit_and_pause_gate() -> None:
    async def main() -> tuple[int, float]:
        lim = JudgeLimiter(2)
        peak = 0

        async def call() -> None:
            nonlocal peak
            await lim.acquire()
            peak = max(peak, lim.in_flight)
            await asyncio.sleep(0.02)
            lim.release()

        await asyncio.gather(*(call() for _ in range(10)))
        lim.on_rate_limited(retry_after=0.3)
        t0 = time.monotonic()
        await lim.acquire()
        lim.release()
        return peak, time.monotonic() - t0

    peak, gated = asyncio.run(main())
    assert peak == 2
    assert gated >= 0.28


def test_no_retry_after_pauses_a_judge_longer_than_the_cap() -> None:
    for absurd in (float("inf"), 86_400.0, 2.3e9):  # inf, a day, an HTTP-date in 2099
        lim = JudgeLimiter(4, max_pause=2.0)
        before = time.monotonic()
        lim.on_rate_limited(retry_after=absurd)
        assert before + 1.9 < lim.pause_until <= time.monotonic() + 2.0
    lim = JudgeLimiter(4, max_pause=2.0)
    lim.on_rate_limited(retry_after=float("nan"))  # unreadable: back off without a pause
    assert lim.pause_until == 0.0 and lim.limit == 2


def test_timeouts_shrink_concurrency_once_per_episode_and_recover_slowly() -> None:
    lim = JudgeLimiter(16)
    for _ in range(5):  # the calls in flight when the server fell behind all time out together
        lim.on_timeout(10.0)
    assert lim.limit == 8 and lim.shrinks == 1 and lim.timeouts == 5 and lim.pause_until == 0.0
    for _ in range(8):
        lim.on_success()
    assert 8.9 < lim.limit < 9.1
