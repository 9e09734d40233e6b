"""Cost per 1,000 swapped pairwise verdicts: realtime, prompt-cached, and batch + prompt-cached.

The same campaign (SummEval from /work/shared/data, `PAIRS` pairs, coherence with the bundled
summeval rubric, each pair asked in both orders) is run twice against the fake server at zero
latency, into two fresh SQLite stores, with list-price judges (`JUDGES`; their base_url points at
the fake, their prices are the built-in table's):

1. realtime without prompt caching (`--no-prompt-cache` on the server: every prompt token billed
   at the input rate);
2. realtime with prompt caching (the server imitates both providers' caches, see
   `providers.fakecache`): the costs the runner stored per call, cache reads and writes at their
   own rates;
3. batch + cached: run 2's stored costs × (1 − batch discount) from the price table. The batch API
   is not part of this branch, so this figure is computed, not run; a batch run's cache hit rate
   may differ (requests in one batch are not answered in order).

A swapped verdict is one pair judged in both orders (two calls). Also printed: what `campaign
plan` forecast for each (`cost_usd`, `cost_cached_usd`, `cost_batch_cached_usd`) and the prompt
tokens read from / written to the cache. Run: `python -m benchmarks cost`.
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


def _run(*server_args: str) -> dict[str, Any]:
    from judgepanel.providers.fakeserver import FakeServerProcess
    from judgepanel.runner import campaign as api
    from judgepanel.runner.executor import RunOptions
    from judgepanel.store import campaigns as store

    with FakeServerProcess("--seed", "5", *server_args) as fake:
        engine, judges = _store(fake.url)
        plan = api.estimate(engine, "cost")
        t0 = time.perf_counter()
        summary = api.run(engine, "cost", RunOptions(concurrency=CONCURRENCY, no_cache=True))
        wall = time.perf_counter() - t0
    status = store.campaign_status(engine, "cost")
    return {"plan": plan, "summary": summary, "status": status, "wall_s": wall, "judges": judges}


def _batch(by_judge: dict[str, dict[str, Any]]) -> float | None:
    from judgepanel.providers.pricing import default_table
    from judgepanel.providers.spec import parse_spec

    table = default_table()
    total = 0.0
    for name, d in by_judge.items():
        price = table.for_spec(parse_spec(name))
        cost = price.batch(d["cost_usd"]) if price is not None else None
        if cost is None:
            return None
        total += cost
    return total


def main() -> None:
    import os

    os.environ.update(KEYS)
    os.environ.pop("JUDGEPANEL_PRICES", None)
    plain = _run("--no-prompt-cache")
    cached = _run()
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
        f"   {'judge':<28} {'realtime':>10} {'cached':>10} {'batch+cached':>13} {'read tok':>10} {'written tok':>12}"
    )
    cached_by = {n.split("?")[0]: (n, d) for n, d in cached["status"].by_judge.items()}
    for name, p in plain["status"].by_judge.items():
        short = name.split("?")[0]
        full, c = cached_by[short]
        batch = _batch({full: c})
        print(
            f"   {short:<28} {p['cost_usd'] * scale:>10.4f} {c['cost_usd'] * scale:>10.4f} "
            f"{(batch or 0) * scale:>13.4f} {c['cache_read_tokens']:>10} {c['cache_write_tokens']:>12}"
        )
    p_total, c_total = plain["status"].cost_usd, cached["status"].cost_usd
    b_total = _batch(cached["status"].by_judge)
    print(
        f"   {'all three':<28} {p_total * scale:>10.4f} {c_total * scale:>10.4f} {(b_total or 0) * scale:>13.4f}"
        f"   (cached/realtime {c_total / p_total:.3f}, batch+cached/realtime {(b_total or 0) / p_total:.3f})"
    )
    print(
        f"   saved by the cache: ${cached['status'].saved_by_cache_usd:.4f} over the run; "
        f"wall {plain['wall_s']:.1f} s / {cached['wall_s']:.1f} s; batch+cached computed from the price table"
    )


if __name__ == "__main__":
    main()
