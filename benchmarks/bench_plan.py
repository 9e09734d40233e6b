"""`campaign plan` on a 10,000-job campaign, against start-up measured in the same run (issue 20).

The store: 2,500 generated items (250 articles × 10 summaries, 80- and 30-word texts), a
pointwise campaign judged by two judges over two dimensions (2,500 × 2 × 2 = 10,000 jobs): an
OpenAI-wire judge with a `base_url` (a port nothing listens on: plan must not ask it; the served
model a run would have recorded is written into the campaign first, as a run does) and a
simulated one. Each command line runs in a fresh interpreter (`python -m judgepanel …`),
alternating, best of `REPEAT` (wall and CPU):

- `campaign plan NAME --json`: the full estimate (every pending job's prompt rendered and counted,
  the request cache looked up, the prompt-cache forecast);
- `campaign plan nosuch`: the same command's start-up (imports, opening the database, the lookup
  that fails) without the planning;
- `python -c pass`.

"Beyond start-up" is the first minus the second (target 0.5 s wall). The command may not import a
provider SDK (checked in `tests/runner/test_plan_offline.py`). Run: `python -m benchmarks plan`.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
from pathlib import Path

from benchmarks.bench_startup import _once, bench_env

REPEAT = 5
ITEMS_PER_GROUP, GROUPS = 10, 250
JUDGES = ("openai:gpt-4o-mini?base_url=http://127.0.0.1:9/v1&temperature=0", "sim:b")
WORDS = [
    "the",
    "a",
    "cat",
    "sat",
    "on",
    "mat",
    "with",
    "model",
    "judge",
    "rubric",
    "clause",
    "score",
    "article",
    "summary",
    "of",
    "in",
]


def _store(url: str) -> str:
    from judgepanel.datasets.records import ItemRecord, ParsedDataset
    from judgepanel.runner import campaign as api
    from judgepanel.store import campaigns as store
    from judgepanel.store.engine import make_engine
    from judgepanel.store.imports import import_parsed
    from judgepanel.store.migrate import upgrade

    rng = random.Random(5)
    items = []
    for g in range(GROUPS):
        article = " ".join(rng.choice(WORDS) for _ in range(80))
        for k in range(ITEMS_PER_GROUP):
            summary = " ".join(rng.choice(WORDS) for _ in range(30))
            items.append(ItemRecord(f"g{g}-s{k}", len(items), f"g{g}", article, summary))
    eng = make_engine(url)
    upgrade(eng)
    import_parsed(
        eng, "gen", ParsedDataset(kind="items", source_hash="gen", items=items, annotators=[], labels=[])
    )
    info = api.create(
        eng,
        "big",
        dataset="gen",
        protocol="pointwise",
        judges=list(JUDGES),
        dimensions=["coherence", "fluency"],
        conditions=["none"],
    )
    assert info.jobs == 10_000, info.jobs
    base_url_judge = next(j.name for j in info.judges if "base_url" in j.name)
    store.remember_served_models(eng, "big", {base_url_judge: "gpt-4o-mini-2024-07-18"})
    eng.dispose()
    return "big"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'plan.db'}"
        name = _store(url)
        py = sys.executable
        env = bench_env(tmp)
        env.pop("OPENAI_API_KEY", None)
        lines = {
            "plan": [py, "-m", "judgepanel", "--db", url, "campaign", "plan", name, "--json"],
            "start-up": [py, "-m", "judgepanel", "--db", url, "campaign", "plan", "nosuch"],
            "python -c pass": [py, "-c", "pass"],
        }
        for argv in lines.values():  # fills the bytecode cache
            _once(argv, env, None)
        runs: dict[str, list[tuple[float, float]]] = {k: [] for k in lines}
        for _ in range(REPEAT):
            for key, argv in lines.items():
                runs[key].append(_once(argv, env, None))
        best = {k: (min(w for w, _ in r), min(c for _, c in r)) for k, r in runs.items()}
        load = os.getloadavg()[0]
        print(f"load average {load:.1f} on {os.cpu_count()} cores; best of {REPEAT}, alternating")
        for key, (wall, cpu) in best.items():
            print(f"{key:16} {wall:7.3f} s wall {cpu:7.3f} s cpu")
        over_wall = best["plan"][0] - best["start-up"][0]
        over_cpu = best["plan"][1] - best["start-up"][1]
        print(
            f"plan of 10,000 jobs beyond start-up: {over_wall:.3f} s wall, {over_cpu:.3f} s cpu "
            f"(target 0.5 s wall){'' if over_wall <= 0.5 else '  over'}"
        )


if __name__ == "__main__":
    main()
