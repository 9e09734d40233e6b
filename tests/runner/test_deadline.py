"""The per-attempt deadline starts when the request leaves, not while the call waits behind an
OpenAI-compatible judge's probing first call; the wait is stored apart as `queued_ms`. The real
OpenAI SDK against the fake server, whose every answer takes 1.2 s, under a 2 s timeout: calls
that wait 1.2 s for the probe and then take 1.2 s themselves must not time out."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Iterator

from sqlalchemy import select

from judgepanel.fake.server import FakeServerProcess
from judgepanel.store.models import Request, Response
from tests.helpers import cli
from tests.runner.conftest import create_argv, tiny_db


def test_calls_waiting_for_the_probe_are_timed_from_when_they_are_sent(
    sqlite_url: str, fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    eng = tiny_db(sqlite_url, n_groups=1, per_group=4)
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


@contextlib.contextmanager
def unreachable_port() -> Iterator[int]:
    """A port whose listen queue is full: a connection to it never completes the TCP handshake."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    queued = []
    for _ in range(8):  # fill the backlog: later handshakes are never answered
        c = socket.socket()
        c.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            c.connect(("127.0.0.1", port))
        queued.append(c)
    try:
        yield port
    finally:
        for c in queued:
            c.close()
        server.close()


def test_a_call_that_never_reached_the_server_is_not_a_timeout(
    sqlite_url: str, keys_env: dict[str, str]
) -> None:
    """A server whose listen queue is full never completes the TCP handshake: the call fails as a
    connection error (never sent), not as an answer that took too long."""
    with unreachable_port() as port:
        eng = tiny_db(sqlite_url, n_groups=1, per_group=2)
        judge = f"openai:unreachable?base_url=http://127.0.0.1:{port}/v1&timeout=1"
        assert cli(*create_argv("unreachable", judge), db=sqlite_url).code == 0
        ran = cli("campaign", "run", "unreachable", "--json", "--max-attempts", "1", db=sqlite_url).json(
            code=3
        )
        assert ran["errors"] == {"transient": 2}
        with eng.connect() as conn:
            messages = conn.execute(select(Response.error_message)).scalars().all()
        assert messages == ["openai: connection failed (ConnectTimeout)"] * 2, messages
        eng.dispose()


def test_the_served_model_probe_waits_no_longer_than_the_judges_timeout(keys_env: dict[str, str]) -> None:
    """Before a run's first call, a `base_url` judge's server is asked which model it serves
    (`GET /v1/models`). That probe waited a fixed 10 s for a server that never answers, whatever
    the judge's `timeout=`: the run above spent 10 of its 11 s there. It now gives up within the
    judge's timeout (1 s here; the bound below leaves a loaded machine 5 s of slack, still half
    the old wait)."""
    from judgepanel.providers.registry import make_provider
    from judgepanel.providers.spec import parse_spec
    from judgepanel.runner.served import PROBE_SECONDS, served_models

    async def probe(port: int) -> tuple[dict[str, str], list[str]]:
        spec = parse_spec(f"openai:unreachable?base_url=http://127.0.0.1:{port}/v1&timeout=1")
        provider = make_provider(spec)
        try:
            return await served_models({"j": (spec, provider)})
        finally:
            await provider.aclose()

    with unreachable_port() as port:
        started = time.monotonic()
        served, warnings = asyncio.run(probe(port))
        took = time.monotonic() - started
    assert served == {} and len(warnings) == 1 and "did not say which model" in warnings[0]
    assert took < PROBE_SECONDS / 2, took
