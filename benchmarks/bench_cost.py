"""Cost per 1,000 swapped pairwise verdicts: realtime, prompt-cached, and batch + prompt-cached.

The same campaign (SummEval from /work/shared/data, `PAIRS` pairs, coherence with the bundled
summeval rubric, each pair asked in both orders) is run three times against the fake server at zero
latency, into two fresh SQLite stores, with list-price judges (`JUDGES`; their base_url points at
the fake, their prices are the built-in table's):

1. realtime without prompt caching (`--no-prompt-cache` on the server: every prompt token billed
   at the input rate);
2. realtime with prompt caching (the server imitates both providers' caches, see
   `judgepanel.fake.cache`): the costs the runner stored per call, cache reads and writes at their
   own rates;
3. batch + cached: `campaign run --batch` through the fake server's OpenAI Batch and Anthropic
   Message Batches endpoints (the same cache imitation answers a batch's entries in order), costs
   as stored by the batch runner: the cached-token rates, then the batch discount.

A swapped verdict is one pair judged in both orders (two calls). Also printed: what `campaign
plan` forecast for each (`cost_usd`, `cost_cached_usd`, `cost_batch_cached_usd`), the prompt
tokens read from / written to the cache, and `campaign status`'s split of the batch run's list
price (`cost_list_usd` = `cost_usd` + `saved_by_cache_usd` + `saved_by_batch_usd`). Run:
`python -m benchmarks cost`.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

DATA = Path("/work/shared/data/summeval")
PAIRS = 300
CONCURRENCY = 8
JUDGES = ("openai:gpt-4o-mini", "anthropic:claude-sonnet-4-5", "anthropic:claude-haiku-4-5")
KEYS = {"OPENAI_API_KEY": "sk-bench-not-a-real-key-000000000000", "ANTHROPIC_API_KEY": "sk-ant-bench-000000"}


def _store(fake_url: str) -> tuple[Any, list[str]]:
    from judgepanel.datasets.summeval import parse_summeval
    from judgepanel.rubrics import bundled_rubric
    from judgepanel.runner import campaign as api
    from judgepanel.store.engine import make_engine
    from judgepanel.store.imports import import_parsed
    from judgepanel.store.migrate import upgrade
    from judgepanel.store.queries import create_pair_set
    from judgepanel.store.rubrics import add_rubric

    folder = Path(tempfile.mkdtemp(prefix="jp-bench-cost-"))
    engine = make_engine(f"sqlite:///{folder / 'cost.db'}")
    upgrade(engine)
    parsed = parse_summeval(DATA / "model_annotations.reconstructed.jsonl.gz", DATA / "articles.jsonl.gz")
    import_parsed(engine, "summeval", parsed)
    create_pair_set(engine, "summeval", "p", seed=1, sample=PAIRS)
    add_rubric(engine, bundled_rubric("summeval"))
    judges = [
        f"{j}?base_url={fake_url}/v1" if j.startswith("openai:") else f"{j}?base_url={fake_url}"
        for j in JUDGES
    ]
    api.create(
        engine,
        "cost",
        dataset="summeval",
        protocol="pairwise",
        pairs="p",
        judges=judges,
        rubric="summeval",
        dimensions=("coherence",),
    )
    return engine, judges


def _run(*server_args: str, batch: bool = False) -> dict[str, Any]:
    import asyncio

    from judgepanel.fake.server import FakeServerProcess
    from judgepanel.runner import campaign as api
    from judgepanel.runner.batch import BatchOptions, BatchRunner
    from judgepanel.runner.options import RunOptions
    from judgepanel.store import campaigns as store

    with FakeServerProcess("--seed", "5", *server_args) as fake:
        engine, judges = _store(fake.url)
        plan = api.estimate(engine, "cost")
        t0 = time.perf_counter()
        if batch:
            options = BatchOptions(poll_interval=0.2, max_poll_interval=1.0, no_cache=True)
            summary: Any = asyncio.run(BatchRunner(engine, "cost", options).run())
            assert summary.status == "done", summary.as_dict()
        else:
            summary = api.run(engine, "cost", RunOptions(concurrency=CONCURRENCY, no_cache=True))
        wall = time.perf_counter() - t0
    status = store.campaign_status(engine, "cost")
    return {"plan": plan, "summary": summary, "status": status, "wall_s": wall, "judges": judges}


def main() -> None:
    import os

    os.environ.update(KEYS)
    os.environ.pop("JUDGEPANEL_PRICES", None)
    plain = _run("--no-prompt-cache")
    cached = _run()
    batched = _run("--batch-seconds", "0.5", batch=True)
    verdicts = plain["status"].done / 2 / len(JUDGES)  # swapped verdicts per judge
    scale = 1000 / verdicts
    print(f"   {PAIRS} SummEval pairs × 2 orders × {len(JUDGES)} judges, coherence with the summeval rubric")
    plan = cached["plan"].as_dict()
    print(
        f"   plan forecast per 1,000 swapped verdicts (all judges): realtime ${plan['cost_usd'] * scale:.4f}, "
        f"cached ${plan['cost_cached_usd'] * scale:.4f}, batch ${plan['cost_batch_usd'] * scale:.4f}, "
        f"batch + cached ${plan['cost_batch_cached_usd'] * scale:.4f}"
    )
    print("   measured per 1,000 swapped verdicts:")
    print(
        f"   {'judge':<28} {'realtime':>10} {'cached':>10} {'batch+cached':>13} "
        f"{'read/written tok (rt)':>22} {'read/written tok (batch)':>25}"
    )

    def by_short(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {n.split("?")[0]: d for n, d in run["status"].by_judge.items()}

    c_by, b_by = by_short(cached), by_short(batched)
    for short, p in by_short(plain).items():
        c, b = c_by[short], b_by[short]
        print(
            f"   {short:<28} {p['cost_usd'] * scale:>10.4f} {c['cost_usd'] * scale:>10.4f} "
            f"{b['cost_usd'] * scale:>13.4f} {c['cache_read_tokens']:>11}/{c['cache_write_tokens']:<10} "
            f"{b['cache_read_tokens']:>12}/{b['cache_write_tokens']:<12}"
        )
    p_total, c_total, b_total = (r["status"].cost_usd for r in (plain, cached, batched))
    print(
        f"   {'all three':<28} {p_total * scale:>10.4f} {c_total * scale:>10.4f} {b_total * scale:>13.4f}"
        f"   (cached/realtime {c_total / p_total:.3f}, batch+cached/realtime {b_total / p_total:.3f})"
    )
    st = batched["status"]
    print(
        f"   batch run status: cost_list_usd ${st.cost_list_usd:.4f} = cost_usd ${st.cost_usd:.4f} "
        f"+ saved_by_cache_usd ${st.saved_by_cache_usd:.4f} + saved_by_batch_usd ${st.saved_by_batch_usd:.4f}; "
        f"{st.batch_calls} batch calls"
    )
    print(
        f"   saved by the cache (realtime run): ${cached['status'].saved_by_cache_usd:.4f}; "
        f"wall {plain['wall_s']:.1f} s / {cached['wall_s']:.1f} s / {batched['wall_s']:.1f} s (batch)"
    )


if __name__ == "__main__":
    main()
