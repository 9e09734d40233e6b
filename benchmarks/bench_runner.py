"""Campaign runner throughput against the fake OpenAI server, beside a bare AsyncOpenAI loop.

Three scenarios, each with a fresh fake server in its own process (`FakeServerProcess`), the
bare loop and the runner measured one after the other against the same server:

1. realistic latency (1 s ± 0.2 s), 1,600 pointwise calls at concurrency 64, every request and
   response stored in SQLite: wall time against the ideal calls × latency / concurrency
   (target ideal/actual ≥ 0.9);
2. zero latency: calls/s and client CPU ms per call (process CPU, all threads) of the runner as
   a ratio to the bare loop (target ≥ 1.0 of its calls/s while storing everything): 5 rounds of
   each (`BENCH_ROUNDS`), alternating, the ratio of the medians;
3. a server-enforced 3,000 RPM limit (token bucket, one second's burst): 2,000 calls with the
   runner's `rpm=3000`, total time against the 40 s ideal and the share of calls answered 429
   (targets: within 10 % of ideal, under 1 % 429s). The bare loop (SDK default retries) is shown
   beside it;
4. zero latency on the Anthropic wire: the runner with an `anthropic:` judge against a bare
   `AsyncAnthropic` + semaphore loop sending the same Messages requests (same rounds as 2).

The bare loop sends exactly the requests the runner sends (same rendered messages, same
`response_format`), through `AsyncOpenAI(max_retries=0)` and an `asyncio.Semaphore`, and stores
nothing. Run: `python -m benchmarks runner` (or `python -m benchmarks.bench_runner [1 2 3 4]`).
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KEY = "sk-bench-not-a-real-key-000000000000"


@dataclass
class Measured:
    wall_s: float
    cpu_s: float
    calls: int
    status: dict[str, int]

    @property
    def calls_per_s(self) -> float:
        return self.calls / self.wall_s

    @property
    def cpu_ms_per_call(self) -> float:
        return 1000 * self.cpu_s / max(self.calls, 1)


def _dataset(engine: Any, n: int) -> None:
    from judgepanel.datasets.records import ItemRecord, ParsedDataset
    from judgepanel.fake.server import SAMPLE_WORDS
    from judgepanel.store.imports import import_parsed

    rng = random.Random(0)
    items = []
    for i in range(n):
        group = i // 10
        article = " ".join(random.Random(group).choice(SAMPLE_WORDS) for _ in range(150))
        items.append(
            ItemRecord(
                external_id=f"i{i}",
                position=i,
                group_key=f"g{group}",
                input=article,
                output=" ".join(rng.choice(SAMPLE_WORDS) for _ in range(40)),
            )
        )
    import_parsed(engine, "bench", ParsedDataset("items", f"bench-{n}", items, [], []))


def _setup(n_items: int, judge: str, repeats: int = 1) -> tuple[Any, Path]:
    from judgepanel.runner import campaign as api
    from judgepanel.store.engine import make_engine
    from judgepanel.store.migrate import upgrade

    folder = Path(tempfile.mkdtemp(prefix="jp-bench-"))
    engine = make_engine(f"sqlite:///{folder / 'bench.db'}")
    upgrade(engine)
    _dataset(engine, n_items)
    api.create(engine, "bench", dataset="bench", protocol="pointwise", judges=[judge], repeats=repeats)
    return engine, folder


def _requests(engine: Any) -> list[dict[str, Any]]:
    """The exact arguments the runner's provider (OpenAI or Anthropic, by the campaign's judge)
    gives the SDK for every job of the campaign."""
    from judgepanel.providers.anthropic_provider import AnthropicProvider
    from judgepanel.providers.openai_provider import OpenAIProvider
    from judgepanel.providers.spec import parse_spec
    from judgepanel.runner.prepare import CampaignContext, prepare
    from judgepanel.store import campaigns as store

    spec, _ = store.campaign_spec(engine, "bench")
    js = parse_spec(spec.judge_specs[0])
    ctx = CampaignContext("pointwise", None, {}, {js.name: js})
    provider = AnthropicProvider(js) if js.provider == "anthropic" else OpenAIProvider(js)
    out = []
    for job in store.pending_jobs(engine, store.campaign_id(engine, "bench")):
        p = prepare(job, ctx)
        kwargs, _ = provider._arguments(p.request)
        extra = {} if js.provider == "anthropic" else {"messages": p.request.messages}
        out.append({"model": js.model, **extra, **kwargs})
    return out


async def _bare(
    base_url: str,
    requests: list[dict[str, Any]],
    concurrency: int,
    max_retries: int = 0,
    wire: str = "openai",
) -> Measured:
    """The requests through the SDK's own `create` (`AsyncOpenAI` or `AsyncAnthropic`, a pool as
    large as the concurrency, as the runner's) and a semaphore, storing nothing."""
    import anthropic
    import openai

    sdk: Any = openai if wire == "openai" else anthropic
    size = max(concurrency, 16)
    limits = sdk.DEFAULT_CONNECTION_LIMITS.__class__(max_connections=size, max_keepalive_connections=size)
    client = (openai.AsyncOpenAI if wire == "openai" else anthropic.AsyncAnthropic)(
        api_key=KEY,
        base_url=base_url,
        max_retries=max_retries,
        http_client=sdk.DefaultAsyncHttpxClient(limits=limits),
    )
    create = client.chat.completions.create if wire == "openai" else client.messages.create
    sem = asyncio.Semaphore(concurrency)
    status: dict[str, int] = {}

    async def one(kwargs: dict[str, Any]) -> None:
        async with sem:
            try:
                await create(**kwargs, timeout=60)
                status["ok"] = status.get("ok", 0) + 1
            except sdk.APIStatusError as exc:
                status[str(exc.status_code)] = status.get(str(exc.status_code), 0) + 1

    t0, c0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one(k) for k in requests))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    await client.close()
    return Measured(wall, cpu, len(requests), status)


def _runner(engine: Any, concurrency: int, rpm: float | None = None) -> Measured:
    from judgepanel.runner import campaign as api
    from judgepanel.runner.options import RunOptions

    t0, c0 = time.perf_counter(), time.process_time()
    summary = api.run(engine, "bench", RunOptions(concurrency=concurrency, rpm=rpm, no_cache=True))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if summary.done != summary.jobs:
        print(f"   runner left work undone: {summary.as_dict()}")
    return Measured(wall, cpu, summary.calls, {"done": summary.done, **summary.errors})


def _stored(engine: Any) -> tuple[int, int]:
    from sqlalchemy import func, select

    from judgepanel.store.models import Request, Response

    with engine.connect() as conn:
        return (
            conn.execute(select(func.count()).select_from(Request)).scalar_one(),
            conn.execute(select(func.count()).select_from(Response)).scalar_one(),
        )


def scenario_latency() -> dict[str, Any]:
    from judgepanel.fake.server import FakeServerProcess

    calls, conc, latency = 1600, 64, 1.0
    ideal = calls * latency / conc
    with FakeServerProcess("--latency", "1.0", "--jitter", "0.2") as fake:
        engine, _ = _setup(calls, f"openai:bench-lat?base_url={fake.url}/v1")
        bare = asyncio.run(_bare(fake.url + "/v1", _requests(engine), conc))
        fake.reset()
        run = _runner(engine, conc)
        stored = _stored(engine)
    out = {
        "ideal_s": ideal,
        "bare_s": round(bare.wall_s, 2),
        "runner_s": round(run.wall_s, 2),
        "bare_ideal_over_actual": round(ideal / bare.wall_s, 3),
        "runner_ideal_over_actual": round(ideal / run.wall_s, 3),
        "stored_requests_responses": stored,
    }
    print(
        f"1) latency 1 s ± 0.2, {calls} calls, concurrency {conc}: ideal {ideal:.1f} s | "
        f"bare loop {bare.wall_s:.2f} s (ideal/actual {ideal / bare.wall_s:.3f}) | "
        f"runner {run.wall_s:.2f} s (ideal/actual {ideal / run.wall_s:.3f}, target >= 0.9), "
        f"stored {stored[0]} requests + {stored[1]} responses"
    )
    return out


def _order(rounds: int) -> list[str]:
    """`rounds` of each, alternating in pairs: bare, runner, runner, bare, bare, runner, …"""
    return [who for i in range(rounds) for who in (("bare", "runner") if i % 2 == 0 else ("runner", "bare"))]


def scenario_zero_latency(
    calls: int = 2000, conc: int = 64, wire: str = "openai", rounds: int = 5
) -> dict[str, Any]:
    """Bare loop and runner, `rounds` each, alternating bare, runner, runner, bare, bare, … (each
    runner round on a fresh store), so a drift of the shared machine's load falls on both alike;
    the ratio is of the two medians (calls/s), and the CPU figures are medians too."""
    import statistics

    from judgepanel.fake.server import FakeServerProcess

    load_before = os.getloadavg()
    with FakeServerProcess() as fake:
        url = f"{fake.url}/v1" if wire == "openai" else fake.url
        judge = f"{wire}:bench-zero?base_url={url}"
        engine, _ = _setup(calls, judge)
        requests = _requests(engine)

        def bare_loop(reqs: list[dict[str, Any]]) -> Measured:
            return asyncio.run(_bare(url, reqs, conc, wire=wire))

        bare_loop(requests[:100])  # warm the server and imports
        bares: list[Measured] = []
        runs: list[Measured] = []
        order = _order(rounds)
        for who in order:
            if who == "bare":
                bares.append(bare_loop(requests))
                assert bares[-1].status == {"ok": calls}, bares[-1].status
            else:
                if runs:
                    engine, _ = _setup(calls, judge)
                runs.append(_runner(engine, conc))
                stored = _stored(engine)
                assert stored == (calls, calls), stored
    load_after = os.getloadavg()
    bare_rate = statistics.median(m.calls_per_s for m in bares)
    run_rate = statistics.median(m.calls_per_s for m in runs)
    bare_cpu = statistics.median(m.cpu_ms_per_call for m in bares)
    run_cpu = statistics.median(m.cpu_ms_per_call for m in runs)
    ratio = run_rate / bare_rate
    seq = iter(bares), iter(runs)
    rounds_text = " ".join(
        f"{'B' if who == 'bare' else 'R'}{next(seq[0] if who == 'bare' else seq[1]).calls_per_s:.0f}"
        for who in order
    )
    print(
        f"{'2' if wire == 'openai' else '4'}) zero latency, {wire} wire, {calls} calls, concurrency {conc}, "
        f"{rounds} rounds each (calls/s, B bare R runner, in order: {rounds_text}); load average "
        f"{load_before[0]:.1f} before, {load_after[0]:.1f} after: median bare {bare_rate:.0f} calls/s, "
        f"{bare_cpu:.2f} CPU ms/call | median runner {run_rate:.0f} calls/s, {run_cpu:.2f} CPU ms/call, "
        f"storing every request and response | ratio of medians {ratio:.3f} (target >= 1.0), "
        f"CPU per call {bare_cpu / run_cpu:.2f}x the bare loop's"
    )
    return {
        "rounds": rounds,
        "load_before": round(load_before[0], 2),
        "load_after": round(load_after[0], 2),
        "bare_calls_per_s": round(bare_rate, 1),
        "runner_calls_per_s": round(run_rate, 1),
        "bare_cpu_ms_per_call": round(bare_cpu, 3),
        "runner_cpu_ms_per_call": round(run_cpu, 3),
        "ratio": round(ratio, 3),
        "cpu_ratio": round(bare_cpu / run_cpu, 3),
    }


def scenario_rpm(calls: int = 2000, rpm: int = 3000) -> dict[str, Any]:
    from judgepanel.fake.server import FakeServerProcess

    ideal = calls / (rpm / 60)
    with FakeServerProcess("--rpm", str(rpm)) as fake:
        engine, _ = _setup(calls, f"openai:bench-rpm?base_url={fake.url}/v1")
        requests = _requests(engine)
        run = _runner(engine, 64, rpm=rpm)
        st = fake.stats()["by_status"]
        n429 = int(st.get("429", 0))
        total = sum(int(v) for v in st.values())
    time.sleep(1)
    with FakeServerProcess("--rpm", str(rpm)) as fake:
        bare = asyncio.run(_bare(fake.url + "/v1", requests, 64, max_retries=2))
        bst = fake.stats()["by_status"]
        b429 = int(bst.get("429", 0))
        btotal = sum(int(v) for v in bst.values())
    print(
        f"3) server limit {rpm} RPM, {calls} calls: ideal {ideal:.1f} s | runner (rpm={rpm}) "
        f"{run.wall_s:.2f} s = {run.wall_s / ideal:.3f} × ideal, {n429} of {total} requests answered 429 "
        f"({100 * n429 / max(total, 1):.2f} %) | bare loop with SDK retries {bare.wall_s:.2f} s, "
        f"{b429} of {btotal} answered 429 ({100 * b429 / max(btotal, 1):.1f} %), results {bare.status}"
    )
    return {
        "ideal_s": ideal,
        "runner_s": round(run.wall_s, 2),
        "runner_over_ideal": round(run.wall_s / ideal, 3),
        "runner_429_share": round(n429 / max(total, 1), 4),
        "bare_s": round(bare.wall_s, 2),
        "bare_429_share": round(b429 / max(btotal, 1), 4),
    }


def main(argv: list[str] | None = None) -> None:
    os.environ.setdefault("OPENAI_API_KEY", KEY)
    which = set(argv if argv is not None else sys.argv[1:] if __name__ == "__main__" else []) or {
        "1",
        "2",
        "3",
        "4",
    }
    rounds = int(os.environ.get("BENCH_ROUNDS", "5"))
    if "2" in which:
        scenario_zero_latency(rounds=rounds)
    if "1" in which:
        scenario_latency()
    if "3" in which:
        scenario_rpm()
    if "4" in which:
        os.environ.setdefault("ANTHROPIC_API_KEY", KEY)
        scenario_zero_latency(wire="anthropic", rounds=rounds)


if __name__ == "__main__":
    main()
