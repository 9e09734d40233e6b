"""Hostile and slow providers over real HTTP (issue 8): absurd Retry-After values, bodies that drip
in a byte at a time, timeouts that back concurrency off, replies cut at the output cap, and
one-model servers whose model the cache key must see. The fake server runs in a thread of this
process so a test can swap the model it serves between runs."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, func, select

from judgepanel.errors import BadInput
from judgepanel.fake.server import FakeServer
from judgepanel.providers.spec import parse_spec
from judgepanel.runner import campaign as api
from judgepanel.runner.executor import Runner, RunSummary
from judgepanel.runner.options import RetryPolicy, RunOptions
from judgepanel.runner.prepare import default_max_tokens
from judgepanel.store.models import Job, Judge, Request, Response, Verdict
from tests.runner.conftest import DATASET, tiny_db

FAST = RetryPolicy(max_attempts=3, initial_wait=0.01, max_wait=0.05, jitter=0.01, max_retry_after=0.2)


@pytest.fixture
def eng(sqlite_url: str) -> Engine:
    engine = tiny_db(sqlite_url, n_groups=1, per_group=2)
    return engine


@pytest.fixture
def server(keys_env: dict[str, str]) -> Iterator[FakeServer]:
    with FakeServer(seed=5, hang=30.0) as fake:
        yield fake


def run_within(engine: Engine, name: str, seconds: float, options: RunOptions) -> tuple[RunSummary, Runner]:
    """Run the campaign; fail the test (instead of hanging the suite) if it takes longer than `seconds`."""
    runner = Runner(engine, name, options)

    async def main() -> RunSummary:
        return await asyncio.wait_for(runner.run(), seconds)

    return asyncio.run(main()), runner


def calls_per_job(engine: Engine) -> dict[int, int]:
    with engine.connect() as conn:
        return dict(conn.execute(select(Request.job_id, func.count()).group_by(Request.job_id)).all())


def failed_classes(engine: Engine) -> list[str | None]:
    with engine.connect() as conn:
        return list(conn.execute(select(Job.error_class).where(Job.status == "failed")).scalars())


@pytest.mark.parametrize("fault", ["429far", "429inf"])
def test_an_absurd_retry_after_is_capped_and_the_job_fails_as_rate_limit(
    eng: Engine, server: FakeServer, fault: str
) -> None:
    judges = [f"openai:j!{fault}?base_url={server.url}/v1", f"anthropic:j!{fault}?base_url={server.url}"]
    api.create(eng, "far", dataset=DATASET, protocol="pointwise", judges=judges)
    summary, runner = run_within(eng, "far", 120, RunOptions(retry=FAST, flush_ms=20))
    assert summary.status == "incomplete" and summary.failed == 4 and summary.pending == 0
    assert failed_classes(eng) == ["rate_limit"] * 4
    assert set(calls_per_job(eng).values()) == {FAST.max_attempts}
    # two waits of at most the 0.2 s cap (+10 % jitter) per job, plus the judge's paused gate:
    # measured at the server, so a slow start-up of the test process does not count
    arrived = [r.arrived for r in server.recent() if r.path in ("/v1/chat/completions", "/v1/messages")]
    assert len(arrived) == 12 and max(arrived) - min(arrived) < 5
    for judge in runner.judges.values():
        assert judge.limiter.rate_limited == 2 * FAST.max_attempts
        assert judge.limiter.pause_until < time.monotonic() + FAST.max_retry_after


def test_a_body_dripped_a_byte_at_a_time_meets_the_deadline(eng: Engine, server: FakeServer) -> None:
    """Every read answers within the timeout, so only a deadline on the whole call stops it; a
    timed-out call is retried once, not `max_attempts` times."""
    judges = [
        f"openai:j!drip,drip=0.25?base_url={server.url}/v1&timeout=1",
        f"anthropic:j!drip,drip=0.25?base_url={server.url}&timeout=1",
    ]
    api.create(eng, "drip", dataset=DATASET, protocol="pointwise", judges=judges, limit=1)
    policy = RetryPolicy(max_attempts=6, initial_wait=0.01, max_wait=0.05, jitter=0.01)
    summary, _ = run_within(eng, "drip", 120, RunOptions(retry=policy, flush_ms=20))
    assert (summary.failed, summary.done, summary.errors) == (2, 0, {"transient": 4})
    assert failed_classes(eng) == ["transient", "transient"]
    assert sorted(calls_per_job(eng).values()) == [2, 2]  # one retry after a timeout, not five
    with eng.connect() as conn:
        rows = conn.execute(select(Response.error_message, Response.latency_ms)).all()
    assert all("deadline" in str(msg) or "within 1 s" in str(msg) for msg, _ in rows)
    # each attempt ended at its 1 s deadline; the whole body would have taken minutes
    assert all(ms is not None and 900 <= ms < 5000 for _, ms in rows)


def test_timeouts_halve_the_judges_concurrency(eng: Engine, server: FakeServer) -> None:
    judge = f"openai:j!hang?base_url={server.url}/v1&timeout=0.3&concurrency=8"
    api.create(eng, "slow", dataset=DATASET, protocol="pointwise", judges=[judge])
    summary, runner = run_within(eng, "slow", 120, RunOptions(retry=FAST, flush_ms=20))
    assert summary.failed == 2 and set(calls_per_job(eng).values()) == {2}
    limiter = next(iter(runner.judges.values())).limiter
    assert limiter.timeouts == 4 and limiter.shrinks >= 1
    assert limiter.limit <= 4  # AIMD: halved on the first timeout episode


def test_every_real_provider_gets_a_protocol_sized_output_cap(eng: Engine, server: FakeServer) -> None:
    judges = [
        f"openai:j?base_url={server.url}/v1",
        f"anthropic:j?base_url={server.url}",
        f"openai:k?base_url={server.url}/v1&max_tokens=77",  # the spec's own cap wins
    ]
    api.create(eng, "cap", dataset=DATASET, protocol="pointwise", judges=judges)
    summary, _ = run_within(eng, "cap", 120, RunOptions(retry=FAST, flush_ms=20))
    assert summary.done == 6
    sent = {}
    for r in server.recent():
        if r.path in ("/v1/chat/completions", "/v1/messages"):
            sent.setdefault((r.path, r.model), set()).add(json.loads(r.body)["max_tokens"])
    pointwise = default_max_tokens("pointwise")
    assert sent == {
        ("/v1/chat/completions", "j"): {pointwise},
        ("/v1/messages", "j"): {pointwise},
        ("/v1/chat/completions", "k"): {77},
    }
    with eng.connect() as conn:  # stored with the request, so the hash and the record agree
        caps = list(conn.execute(select(Request.params)).scalars())
    assert {p["max_tokens"] for p in caps} == {pointwise, 77}
    with eng.connect() as conn:
        finish = set(conn.execute(select(Response.finish_reason)).scalars())
    assert finish == {"stop", "tool_use"}  # as the provider said it


def test_clause_caps_grow_with_the_clause_count() -> None:
    one, six = default_max_tokens("clauses", 1), default_max_tokens("clauses", 6)
    assert one < six < default_max_tokens("clauses", 10_000) == 8192  # scaled, and bounded
    assert six - one == 5 * (default_max_tokens("clauses", 2) - one)


def test_a_reply_cut_at_the_output_cap_is_a_truncated_parse_failure(eng: Engine, server: FakeServer) -> None:
    judges = [
        f"openai:cut!length?base_url={server.url}/v1",
        f"anthropic:cut!length?base_url={server.url}",
        # the brain garbles every reply; half of them end at the cap, half are prose ending normally
        f"openai:garble!parse_error_rate=1?base_url={server.url}/v1&structured=off",
    ]
    api.create(eng, "cut", dataset=DATASET, protocol="pointwise", judges=judges)
    summary, _ = run_within(eng, "cut", 120, RunOptions(retry=FAST, flush_ms=20))
    assert summary.failed == 6 and summary.errors == {"parse": 6}
    with eng.connect() as conn:
        rows = conn.execute(
            select(Judge.name, Verdict.parse_status, Verdict.failure_kind, Response.finish_reason)
            .join(Request, Request.id == Verdict.request_id)
            .join(Response, Response.request_id == Request.id)
            .join(Job, Job.id == Verdict.job_id)
            .join(Judge, Judge.id == Job.judge_id)
        ).all()
    assert len(rows) == 6 and {r.parse_status for r in rows} == {"failed"}
    for name, _, kind, finish in rows:
        assert kind == ("truncated" if finish in ("length", "max_tokens") else "unreadable"), name
        if "cut" in name:
            assert kind == "truncated"
    assert summary.parse_failures["truncated"] >= 4 and summary.parse_failures["unreadable"] >= 1
    assert sum(summary.parse_failures.values()) == 6
    assert "cut at the output cap" in summary.warnings[0]
    assert summary.as_dict()["parse_failures"] == summary.parse_failures


def chat_calls(server: FakeServer) -> int:
    return sum(1 for r in server.recent() if r.path in ("/v1/chat/completions", "/v1/messages"))


def test_a_different_model_behind_the_same_base_url_is_not_answered_from_the_cache(
    eng: Engine, server: FakeServer
) -> None:
    """llama.cpp / vLLM serve whatever they loaded, whatever `model` the request names: the cache
    key must carry what the server reports, so swapping the weights means asking again."""
    judges = [f"openai:local?base_url={server.url}/v1", f"anthropic:local?base_url={server.url}"]
    options = RunOptions(retry=FAST, flush_ms=20)
    calls = []
    for name, served in (("m1-a", "qwen-7b"), ("m2", "llama-8b"), ("m1-b", "qwen-7b")):
        server.served_model = served
        before = chat_calls(server)
        api.create(eng, name, dataset=DATASET, protocol="pointwise", judges=judges)
        summary, _ = run_within(eng, name, 120, options)
        # unpriced local judges: the one warning is the advice that would make the spend known
        # (issue 28 §5); nothing was dropped or refused
        assert summary.done == 4
        assert [w for w in summary.warnings if not w.startswith("spent unknown: no price known")] == []
        calls.append((chat_calls(server) - before, summary.cached))
    # the second model is asked (4 calls); the first model's answers serve its second campaign
    assert calls == [(4, 0), (4, 0), (0, 4)]
    with eng.connect() as conn:
        returned = set(conn.execute(select(Response.model_returned)).scalars())
    assert returned == {"qwen-7b", "llama-8b"}
    probes = [r for r in server.recent() if r.path == "/v1/models"]
    assert len(probes) == 6  # once per judge and run


def test_revision_is_part_of_the_key_and_never_sent(eng: Engine, server: FakeServer) -> None:
    """A server that cannot say what it runs: `revision=` is the user's way to tell builds apart."""
    server.served_model = "same"
    base = f"openai:local?base_url={server.url}/v1"
    options = RunOptions(retry=FAST, flush_ms=20)
    got = []
    for name, judge in (("r0", base), ("r1", base + "&revision=q4_k_m"), ("r2", base + "&revision=q4_k_m")):
        before = chat_calls(server)
        api.create(eng, name, dataset=DATASET, protocol="pointwise", judges=[judge])
        summary, _ = run_within(eng, name, 120, options)
        got.append((chat_calls(server) - before, summary.cached))
    assert got == [(2, 0), (2, 0), (0, 2)]
    bodies = [json.loads(r.body) for r in server.recent() if r.path == "/v1/chat/completions"]
    assert bodies and all("revision" not in b for b in bodies)
    with eng.connect() as conn:
        names = set(conn.execute(select(Judge.name)).scalars())
    assert any("revision=q4_k_m" in n for n in names)


def test_revision_is_a_checked_identity_parameter() -> None:
    spec = parse_spec("openai:local?base_url=http://127.0.0.1:8000/v1&revision=q4_k_m-2026.11")
    assert "revision=q4_k_m-2026.11" in spec.name and spec.request_params() == {"revision": "q4_k_m-2026.11"}
    for bad in ("", "a b", "x" * 101, "../etc"):
        with pytest.raises(BadInput, match="revision"):
            parse_spec(f"openai:local?revision={bad}")
