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
- `campaign create NAME …` of the same campaign on a fresh copy of the store with only the
  dataset (the copy is made before the clock starts): since `create` renders each distinct prompt
  once and stores its figures for plan (`runner.shape`), what plan no longer does, create does;
- `python -c pass`;
- `campaign plan cond --json` (issue 28 §5): a rubric-conditioned campaign — 800 items whose
  articles are long enough (about 1,100 words) that the stable prefix of most prompts reaches the
  OpenAI judge's 1,024-token prompt-cache floor, the same two judges, conditions none, criteria and
  rubric, two dimensions (9,600 jobs). Plan forecasts the prompt cache from each job's stable
  prefixes; it used to render every job whose prefix reached the floor (the figures `create`
  stored did not include the prefixes), and now reads their digests (`job.prompt_prefixes`).

"Beyond start-up" is plan minus start-up (target 0.5 s wall). The command may not import a
provider SDK (checked in `tests/runner/test_plan_offline.py`). Run: `python -m benchmarks plan`;
`python -m benchmarks.bench_plan --before DIR` also times the tree in DIR (e.g. `git archive main`
unpacked there) in the same rounds, on a store built by that tree's own code.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
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


DIMENSIONS = ("coherence", "fluency")


def _generated(seed: int, groups: int, per_group: int, article_words: int, prefix: str) -> list[object]:
    """`groups` articles of `article_words` random words, each with `per_group` 30-word summaries."""
    from judgepanel.datasets.records import ItemRecord

    rng = random.Random(seed)
    items: list[object] = []
    for g in range(groups):
        article = " ".join(rng.choice(WORDS) for _ in range(article_words))
        for k in range(per_group):
            summary = " ".join(rng.choice(WORDS) for _ in range(30))
            items.append(ItemRecord(f"{prefix}{g}-s{k}", len(items), f"{prefix}{g}", article, summary))
    return items


def _items() -> list[object]:
    return _generated(5, GROUPS, ITEMS_PER_GROUP, 80, "g")


def _dataset(url: str) -> None:
    """The generated dataset in a new store at `url` (by the code of the tree on `sys.path`)."""
    from judgepanel.datasets.records import ParsedDataset
    from judgepanel.store.engine import make_engine
    from judgepanel.store.imports import import_parsed
    from judgepanel.store.migrate import upgrade

    eng = make_engine(url)
    upgrade(eng)
    parsed = ParsedDataset(kind="items", source_hash="gen", items=_items(), annotators=[], labels=[])  # type: ignore[arg-type]
    import_parsed(eng, "gen", parsed)
    eng.dispose()


LONG_GROUPS, LONG_PER_GROUP, LONG_WORDS = 100, 8, 1100
CONDITIONS = ("none", "criteria", "rubric")


def _long_items() -> list[object]:
    return _generated(7, LONG_GROUPS, LONG_PER_GROUP, LONG_WORDS, "l")


def _conditioned(url: str) -> str:
    """The rubric-conditioned campaign with long cacheable prefixes (9,600 jobs) at `url`."""
    from judgepanel.datasets.records import ParsedDataset
    from judgepanel.rubrics import bundled_rubric
    from judgepanel.runner import campaign as api
    from judgepanel.store import campaigns as store
    from judgepanel.store.engine import make_engine
    from judgepanel.store.imports import import_parsed
    from judgepanel.store.rubrics import add_rubric

    eng = make_engine(url)
    parsed = ParsedDataset(kind="items", source_hash="long", items=_long_items(), annotators=[], labels=[])  # type: ignore[arg-type]
    import_parsed(eng, "long", parsed)
    add_rubric(eng, bundled_rubric("summeval"))
    info = api.create(
        eng,
        "cond",
        dataset="long",
        protocol="pointwise",
        judges=list(JUDGES),
        rubric="summeval",
        dimensions=list(DIMENSIONS),
        conditions=list(CONDITIONS),
    )
    assert info.jobs == LONG_GROUPS * LONG_PER_GROUP * 2 * 2 * 3, info.jobs
    base_url_judge = next(j.name for j in info.judges if "base_url" in j.name)
    store.remember_served_models(eng, "cond", {base_url_judge: "gpt-4o-mini-2024-07-18"})
    eng.dispose()
    return "cond"


def _campaign(url: str) -> str:
    """The 10,000-job campaign in the store at `url`, with the served model a run would record."""
    from judgepanel.runner import campaign as api
    from judgepanel.store import campaigns as store
    from judgepanel.store.engine import make_engine

    eng = make_engine(url)
    info = api.create(
        eng,
        "big",
        dataset="gen",
        protocol="pointwise",
        judges=list(JUDGES),
        dimensions=list(DIMENSIONS),
        conditions=["none"],
    )
    assert info.jobs == 10_000, info.jobs
    base_url_judge = next(j.name for j in info.judges if "base_url" in j.name)
    store.remember_served_models(eng, "big", {base_url_judge: "gpt-4o-mini-2024-07-18"})
    eng.dispose()
    return "big"


def _store(url: str) -> str:
    _dataset(url)
    return _campaign(url)


def _build(tree: Path, tmp: Path, env: dict[str, str]) -> tuple[str, str]:
    """(store with the campaign, store with only the dataset), built by `tree`'s code."""
    data, plan = tmp / f"{tree.name}-data.db", tmp / f"{tree.name}-plan.db"
    # this file's builders, run on the judgepanel of `tree`
    script = (
        "import importlib.util, shutil, sys\n"
        f"spec = importlib.util.spec_from_file_location('bench_plan_here', {str(Path(__file__).resolve())!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "m._dataset(sys.argv[1]); shutil.copy(sys.argv[2], sys.argv[3]); m._campaign(sys.argv[1])\n"
        "m._conditioned(sys.argv[1])\n"
    )
    argv = [sys.executable, "-c", script, f"sqlite:///{plan}", str(plan), str(data)]
    # run in `tmp`: `python -c` and `-m` put the working directory first on sys.path
    subprocess.run(argv, env={**env, "PYTHONPATH": str(tree)}, cwd=tmp, check=True)
    return f"sqlite:///{plan}", str(data)


def main(before: str | None = None) -> None:
    here = Path(__file__).resolve().parent.parent
    trees = {"": here} if before is None else {"before ": Path(before).resolve(), "after ": here}
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        py = sys.executable
        base_env = bench_env(tmpdir)
        base_env.pop("OPENAI_API_KEY", None)
        lines: dict[str, tuple[list[str], dict[str, str], tuple[str, str] | None]] = {}
        for label, tree in trees.items():
            env = {
                **base_env,
                "PYTHONPATH": str(tree),
                "PYTHONPYCACHEPREFIX": str(tmp / f"pycache-{tree.name}"),
            }
            url, data = _build(tree, tmp, env)
            fresh = str(tmp / f"{tree.name}-create.db")
            jp = [py, "-m", "judgepanel", "--db"]
            create = ["campaign", "create", "big", "--dataset", "gen", "--protocol", "pointwise"]
            create += [a for j in JUDGES for a in ("--judge", j)] + [
                a for d in DIMENSIONS for a in ("--dimension", d)
            ]
            lines[f"{label}plan"] = ([*jp, url, "campaign", "plan", "big", "--json"], env, None)
            lines[f"{label}plan cond"] = ([*jp, url, "campaign", "plan", "cond", "--json"], env, None)
            lines[f"{label}start-up"] = ([*jp, url, "campaign", "plan", "nosuch"], env, None)
            lines[f"{label}create"] = ([*jp, f"sqlite:///{fresh}", *create], env, (data, fresh))
        lines["python -c pass"] = ([py, "-c", "pass"], base_env, None)

        def once(argv: list[str], env: dict[str, str], copy: tuple[str, str] | None) -> tuple[float, float]:
            if copy is not None:
                shutil.copy(*copy)  # a store with the dataset and no campaign, before the clock starts
            return _once(argv, env, tmpdir)  # not in a tree: the working directory comes first on sys.path

        for line in lines.values():  # fills the bytecode caches
            once(*line)
        runs: dict[str, list[tuple[float, float]]] = {k: [] for k in lines}
        for _ in range(REPEAT):
            for key, line in lines.items():
                runs[key].append(once(*line))
        best = {k: (min(w for w, _ in r), min(c for _, c in r)) for k, r in runs.items()}
        med = {
            k: (sorted(w for w, _ in r)[len(r) // 2], sorted(c for _, c in r)[len(r) // 2])
            for k, r in runs.items()
        }
        load = os.getloadavg()[0]
        print(
            f"load average {load:.1f} on {os.cpu_count()} cores; {REPEAT} alternating rounds, best (median)"
        )
        for key, (wall, cpu) in best.items():
            print(f"{key:20} {wall:7.3f} ({med[key][0]:.3f}) s wall {cpu:7.3f} ({med[key][1]:.3f}) s cpu")
        for label in trees:
            over_wall = best[f"{label}plan"][0] - best[f"{label}start-up"][0]
            over_cpu = best[f"{label}plan"][1] - best[f"{label}start-up"][1]
            print(
                f"{label}plan of 10,000 jobs beyond start-up: {over_wall:.3f} s wall, {over_cpu:.3f} s cpu "
                f"(target 0.5 s wall){'' if over_wall <= 0.5 else '  over'}"
            )
            cond_wall = best[f"{label}plan cond"][0] - best[f"{label}start-up"][0]
            cond_cpu = best[f"{label}plan cond"][1] - best[f"{label}start-up"][1]
            print(
                f"{label}plan of the 9,600-job rubric-conditioned campaign (long cacheable prefixes) beyond "
                f"start-up: {cond_wall:.3f} s wall, {cond_cpu:.3f} s cpu (target 0.5 s wall)"
                f"{'' if cond_wall <= 0.5 else '  over'}"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="a tree to time in the same rounds (e.g. main, unpacked)")
    main(parser.parse_args().before)
