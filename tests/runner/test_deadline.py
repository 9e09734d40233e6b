"""The per-attempt deadline starts when the request leaves, not while the call waits behind an
OpenAI-compatible judge's probing first call; the wait is stored apart as `queued_ms`. The real
OpenAI SDK against the fake server, whose every answer takes 1.2 s, under a 2 s timeout: calls
that wait 1.2 s for the probe and then take 1.2 s themselves must not time out."""

from __future__ import annotations

from sqlalchemy import select

from judgepanel.fake.server import FakeServerProcess
from judgepanel.store.engine import make_engine
from judgepanel.store.migrate import upgrade
from judgepanel.store.models import Request, Response
from tests.helpers import cli
from tests.runner.conftest import create_argv, load_tiny


def test_calls_waiting_for_the_probe_are_timed_from_when_they_are_sent(
    sqlite_url: str, fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    eng = make_engine(sqlite_url)
    upgrade(eng)
    load_tiny(eng, n_groups=1, per_group=4)
    judge = f"openai:slow!latency=1.2?base_url={fake.url}/v1&timeout=2&concurrency=4"
    assert cli(*create_argv("slow", judge), db=sqlite_url).code == 0
    before = fake.stats()["by_path"].get("/v1/chat/completions", 0)
    ran = cli("campaign", "run", "slow", "--json", db=sqlite_url).json()
    assert (ran["done"], ran["errors"], ran["calls"]) == (4, {}, 4), ran
    assert fake.stats()["by_path"]["/v1/chat/completions"] - before == 4  # no call was asked twice
    with eng.connect() as conn:
        rows = conn.execute(
            select(Response.queued_ms, Response.latency_ms, Response.error_class)
            .join(Request, Request.id == Response.request_id)
            .order_by(Response.queued_ms)
        ).all()
    assert [r.error_class for r in rows] == [None] * 4
    probe, *waited = rows
    assert probe.queued_ms is not None and probe.queued_ms < 500
    for r in waited:  # waited for the probe (about 1.2 s), then answered in about 1.2 s
        assert r.queued_ms is not None and r.queued_ms > 900, rows
        assert 900 < r.latency_ms < 2000, rows
    eng.dispose()
