"""The fake server itself: HTTP behaviour, limits, seeded faults, recording, process mode."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest

from judgepanel.fake.server import FakeServer, FakeServerProcess, running


def chat(model: str = "m", text: str = "hello") -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": f"<candidate>{text}</candidate>"}]}


async def test_rpm_limit_is_a_token_bucket_with_retry_after() -> None:
    with running(rpm=600, burst=5) as fake:  # 10 per second, at most 5 at once
        async with httpx.AsyncClient(base_url=fake.url) as client:
            replies = await asyncio.gather(
                *(client.post("/v1/chat/completions", json=chat(text=str(i))) for i in range(12))
            )
            statuses = sorted(r.status_code for r in replies)
            assert statuses.count(200) == 5 and statuses.count(429) == 7
            limited = next(r for r in replies if r.status_code == 429)
            wait_ms = float(limited.headers["retry-after-ms"])
            assert 0 < wait_ms <= 100 + 1  # one token per 100 ms
            assert limited.headers["retry-after"] == "1"
            await asyncio.sleep(wait_ms / 1000 + 0.05)
            again = await client.post("/v1/chat/completions", json=chat(text="later"))
            assert again.status_code == 200
        assert fake.stats()["by_fault"]["rpm"] == 7


async def test_seeded_fault_rates_do_not_depend_on_order() -> None:
    def pattern(order: list[int]) -> dict[int, int]:
        with running(faults={"500": 0.3}, seed=11) as fake, httpx.Client(base_url=fake.url) as client:
            return {i: client.post("/v1/chat/completions", json=chat(text=str(i))).status_code for i in order}

    forward = pattern(list(range(60)))
    backward = pattern(list(reversed(range(60))))
    assert forward == backward
    share = sum(s == 500 for s in forward.values()) / 60
    assert 0.1 < share < 0.5


async def test_many_concurrent_keep_alive_connections() -> None:
    body = json.dumps(chat()).encode()
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: fake\r\ncontent-type: application/json\r\n"
        + f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )

    async def two_calls_on_one_connection(port: int) -> list[bytes]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        heads = []
        for _ in range(2):
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            heads.append(head)
        writer.close()
        await writer.wait_closed()
        return heads

    with running(latency=0.2) as fake:
        started = time.perf_counter()
        results = await asyncio.gather(*(two_calls_on_one_connection(fake.port) for _ in range(50)))
        elapsed = time.perf_counter() - started
        stats = fake.stats()
    assert all(head.startswith(b"HTTP/1.1 200 OK") for heads in results for head in heads)
    assert b"connection: keep-alive" in results[0][0]
    # 100 calls of 0.2 s: about 0.4 s when 50 connections are served at once, 20 s one by one
    assert elapsed < 2.5
    assert stats["requests"] == 100 and stats["connections"] == 50


async def test_anthropic_wire_rules_and_recording(fake: FakeServer) -> None:
    body = {"model": "c", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}
    async with httpx.AsyncClient(base_url=fake.url) as client:
        missing_version = await client.post("/v1/messages", json=body)
        assert missing_version.status_code == 400
        assert missing_version.json()["error"]["type"] == "invalid_request_error"
        ok = await client.post(
            "/v1/messages", json=body, headers={"anthropic-version": "2023-06-01", "x-api-key": "k1"}
        )
        assert ok.status_code == 200 and ok.json()["type"] == "message"
        no_max = await client.post(
            "/v1/messages", json={**body, "max_tokens": None}, headers={"anthropic-version": "2023-06-01"}
        )
        assert no_max.status_code == 400
        stats = (await client.get("/_fake/stats")).json()
        rows = (await client.get("/_fake/requests?limit=2")).json()
    assert stats["by_status"] == {"400": 2, "200": 1} and stats["by_path"] == {"/v1/messages": 3}
    assert [r["status"] for r in rows] == [200, 400] and rows[0]["headers"]["x-api-key"] == "k1"
    assert json.loads(rows[0]["body"])["model"] == "c"


async def test_model_suffix_sets_sim_knobs(fake: FakeServer) -> None:
    pair = {
        "role": "user",
        "content": "<candidate_a>The council approved the budget.</candidate_a><candidate_b>x y z</candidate_b>",
    }
    schema = {"type": "json_schema", "json_schema": {"name": "pairwise_verdict", "schema": {}}}
    async with httpx.AsyncClient(base_url=fake.url) as client:
        plain = await client.post(
            "/v1/chat/completions", json={"model": "m", "messages": [pair], "response_format": schema}
        )
        biased = await client.post(
            "/v1/chat/completions",
            json={"model": "m!position_bias=1", "messages": [pair], "response_format": schema},
        )
    verdict = [json.loads(r.json()["choices"][0]["message"]["content"])["verdict"] for r in (plain, biased)]
    assert verdict == ["A", "B"]
    assert biased.json()["model"] == "sim/m"


def test_runs_as_a_process_and_prints_its_url() -> None:
    with FakeServerProcess("--fault", "503=1", "--seed", "3") as fake:
        assert fake.url.startswith("http://127.0.0.1:")
        reply = httpx.post(f"{fake.url}/v1/chat/completions", json=chat())
        assert reply.status_code == 503
        assert fake.stats()["by_status"] == {"503": 1}
        fake.reset()
        assert fake.stats()["requests"] == 0


def test_latency_changes_at_run_time_for_the_requests_that_follow() -> None:
    """`set_latency` lets a test hold calls in flight and then stop paying for the latency (a
    killed run's twin need not wait as long as the calls the kill had to land in)."""
    with FakeServerProcess("--latency", "1.0") as fake:
        started = time.monotonic()
        assert httpx.post(f"{fake.url}/v1/chat/completions", json=chat(), timeout=10).status_code == 200
        slow = time.monotonic() - started
        fake.set_latency(0)
        started = time.monotonic()
        assert httpx.post(f"{fake.url}/v1/chat/completions", json=chat(), timeout=10).status_code == 200
        fast = time.monotonic() - started
    assert slow >= 1.0 and fast < slow - 0.5, (slow, fast)


def test_unknown_fault_names_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        FakeServer(faults={"418": 0.1})
