"""The rate, ETA and "active" of a campaign for slow judges (issue 34 §1): one computation
(`analysis.pace`) for the progress line, `campaign status --json` and the viewer.

The complaint, measured against a real local model: the viewer showed 0.0 calls/s, no ETA and
"not active" while four 1-3-minute calls were in flight, and once an ETA of 13.9 s for calls that
took 4 minutes. Here: pure cases with those numbers, then a real run against the fake server with
a latency, read from the store while the calls are in flight."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from judgepanel.analysis.pace import MIN_WINDOW_S, pace, rate_number
from judgepanel.fake.server import FakeServerProcess
from judgepanel.store.engine import make_engine
from tests.helpers import cli
from tests.runner.conftest import FAKE_KEYS, create_argv, tiny_db


def test_slow_calls_give_a_rate_over_a_window_that_scales_with_their_latency() -> None:
    # four slots; calls of about 2 minutes, the last four ended in the last 4 minutes
    calls = [(-230.0, 120.0), (-200.0, 110.0), (-20.0, 180.0), (-5.0, 60.0)]
    p = pace(calls, 0.0, 6, live_leases=4, concurrency=4)
    assert p.mean_latency_s == pytest.approx(117.5)
    assert p.window_s == pytest.approx(4 * 117.5)  # a 30 s window held 2 calls: 0.067/s
    assert p.calls_per_s is not None and p.calls_per_s > 0
    assert rate_number(p.calls_per_s) != "0.0"
    # ETA: 6 pending on 4 slots are 2 waves of ~2 minutes — never less than that
    assert p.eta_s is not None and p.eta_s >= 2 * 117.5
    assert p.active is True


def test_a_burst_of_answers_does_not_make_an_eta_of_seconds() -> None:
    # 4 calls of 4 minutes ended within the last 10 s; 2 pending. A 30 s window made this
    # 4 calls / 30 s, ETA 2 / 0.133 = 15 s. Their latency says at least one more wave of 4 minutes.
    calls = [(-10.0, 240.0), (-8.0, 241.0), (-5.0, 239.0), (-1.0, 240.0)]
    p = pace(calls, 0.0, 2, live_leases=2)
    assert p.eta_s is not None and p.eta_s >= 239.0
    assert p.concurrency is not None and 1.0 <= p.concurrency <= 2.0  # at most the live leases


def test_undefined_figures_are_none_and_active_follows_leases() -> None:
    nothing = pace([], 0.0, 10, live_leases=3)
    assert (nothing.calls_per_s, nothing.eta_s, nothing.mean_latency_s) == (None, None, None)
    assert nothing.active is True and nothing.window_s == MIN_WINDOW_S
    idle = pace([(-5.0, 0.2)], 0.0, 0, live_leases=2)
    assert idle.active is True and idle.eta_s is None  # nothing pending: no ETA
    old = pace([(-4000.0, 1.0)], 0.0, 5, live_leases=1)
    assert old.calls_per_s is None  # nothing ended in the window
    # no live lease: no run is going; its last rate would only decay with the clock
    ended = pace([(-5.0, 0.2), (-4.0, 0.2)], 0.0, 3, live_leases=0)
    assert ended.active is False and (ended.calls_per_s, ended.eta_s, ended.concurrency) == (None, None, None)
    assert ended.mean_latency_s == pytest.approx(0.2)
    assert rate_number(None) == "—" and rate_number(12.34) == "12.3" and rate_number(0.0166) == "0.017"


def test_fast_calls_keep_the_measured_throughput() -> None:
    # 1 ms calls but only 50 calls/s got through (a busy client): the ETA is the throughput's
    calls = [(-k / 50.0, 0.001) for k in range(500)]
    p = pace(calls, 0.0, 1000, live_leases=16, concurrency=16, started=-10.0)
    assert p.calls_per_s == pytest.approx(50.0, rel=0.02)
    assert p.eta_s == pytest.approx(20.0, rel=0.02)


@pytest.fixture(scope="module")
def slow_fake() -> Iterator[FakeServerProcess]:
    with FakeServerProcess("--latency", "3", "--jitter", "0.2") as server:
        yield server


def test_status_and_viewer_see_slow_calls_in_flight(sqlite_url: str, slow_fake: FakeServerProcess) -> None:
    eng = tiny_db(sqlite_url, n_groups=1, per_group=6)
    eng.dispose()
    judge = f"openai:slow?base_url={slow_fake.url}/v1&concurrency=2"
    assert cli(*create_argv("slow", judge), db=sqlite_url).code == 0
    run = subprocess.Popen(
        [sys.executable, "-m", "judgepanel", "--db", sqlite_url, "campaign", "run", "slow", "--json"],
        env={**os.environ, **FAKE_KEYS},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        seen = None
        while time.monotonic() < deadline and run.poll() is None:
            st = cli("campaign", "status", "slow", "--json", db=sqlite_url).json()
            if st["done"] >= 2 and st["pending"] > 0:
                seen = st
                break
            time.sleep(0.3)
        assert seen is not None, "never saw the run with two calls done and more to go"
        prog = seen["progress"]
        assert prog["active"] is True  # calls in flight hold leases
        assert prog["mean_latency_s"] is not None and prog["mean_latency_s"] > 2.5
        assert prog["calls_per_s"] is not None and 0 < prog["calls_per_s"] < 2
        # what is left takes at least its waves of ~3 s calls on 2 slots
        assert prog["eta_s"] is not None and prog["eta_s"] >= (seen["pending"] // 2) * 2.5
        from judgepanel.view.data import Tracker, campaigns

        eng = make_engine(sqlite_url)
        try:
            row = next(c for c in campaigns(eng, Tracker())["campaigns"] if c["name"] == "slow")
        finally:
            eng.dispose()
        assert set(row["progress"]) >= {"calls_per_s", "eta_s", "active", "window_s", "mean_latency_s"}
        assert row["progress"]["mean_latency_s"] is not None and row["progress"]["mean_latency_s"] > 2.5
        # what follows checks only how the run ends: the calls not yet sent need not take 3 s each
        slow_fake.set_latency(0)
        _out, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
        after = cli("campaign", "status", "slow", "--json", db=sqlite_url).json()
        assert after["progress"]["active"] is False and after["progress"]["eta_s"] is None
    finally:
        slow_fake.set_latency(3, jitter=0.2)
        if run.poll() is None:
            run.kill()
            run.communicate()
