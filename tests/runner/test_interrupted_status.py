"""A run killed with SIGKILL never writes its end: its campaign stays `running` in the store. Issue
34 §1: `campaign status`, `campaign list` and the viewer's list said "running" 26 minutes after
its leases expired. Now a campaign is `running` only while a lease is live, and `interrupted` once
every lease has expired — the real CLI worker in a subprocess, killed, on a real SQLite file and
on PostgreSQL."""

from __future__ import annotations

import signal
import time
from datetime import timedelta

from sqlalchemy import select

from judgepanel.fake.server import FakeServerProcess
from judgepanel.store.campaigns.readers import run_state
from judgepanel.store.engine import make_engine
from judgepanel.store.models import Job, utcnow
from judgepanel.view.data import campaign
from judgepanel.view.stats import StatsCache
from tests.helpers import cli
from tests.runner.test_workers import _campaign, counts, start_worker

LEASE_S = 3.0


def test_a_killed_run_is_interrupted_once_its_leases_expire(db_url: str) -> None:
    with FakeServerProcess("--latency", "60") as fake:  # every call is in flight when the run is killed
        _campaign(db_url, f"openai:slow?base_url={fake.url}/v1", groups=1, per_group=4, repeats=1, name="k")
        proc = start_worker(db_url, "--campaign", "k", "--concurrency", "2", "--lease-seconds", str(LEASE_S))
        eng = make_engine(db_url)
        try:
            deadline = time.monotonic() + 60
            while counts(eng).get("running", 0) == 0:
                assert time.monotonic() < deadline and proc.poll() is None, "the worker leased nothing"
                time.sleep(0.05)
            while len(fake.requests()) < 2:  # both calls sent
                assert time.monotonic() < deadline
                time.sleep(0.05)
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            killed = utcnow()
            cache = StatsCache()
            page = campaign(eng, "k", cache=cache)  # the viewer's page, computed and cached
            live = cli("campaign", "status", "k", "--json", db=db_url).json()
            listed = {c["name"]: c for c in cli("campaign", "list", "--json", db=db_url).json()["campaigns"]}
            if utcnow() - killed < timedelta(seconds=LEASE_S - 0.5):  # (a loaded machine may be slower)
                assert live["status"] == "running" and listed["k"]["status"] == "running"
                assert page["status"] == "running" and page["progress"]["active"] is True
            # until the last stored lease has expired (not a fixed LEASE_S + 0.5 s after the kill:
            # the three readers above already took part of that), and a little more
            with eng.connect() as c:
                expires = max(c.scalars(select(Job.lease_expires).where(Job.status == "running")))
            time.sleep(max(0.0, (expires - utcnow()).total_seconds()) + 0.1)
            after = cli("campaign", "status", "k", "--json", db=db_url).json()
            assert after["status"] == "interrupted" and after["running"] > 0
            listed = {c["name"]: c for c in cli("campaign", "list", "--json", db=db_url).json()["campaigns"]}
            assert listed["k"]["status"] == "interrupted"
            # the cached page (nothing stored changed) still says what the clock changed
            again = campaign(eng, "k", cache=cache)
            assert again["computed"]["cached"] is True
            assert again["status"] == "interrupted" and again["progress"]["active"] is False
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
            eng.dispose()


def test_run_state_table() -> None:
    assert run_state("running", 4, 2) == "running"
    assert run_state("running", 4, 0) == "interrupted"
    assert run_state("running", 0, 0) == "stopped"
    for stored in ("planned", "done", "incomplete", "budget", "interrupted"):
        assert run_state(stored, 3, 0) == stored
