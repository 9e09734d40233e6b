"""Building providers: the CPU each SDK client's TLS context costs, and what sharing one saves.

Every provider's HTTP client used to build its own `ssl.SSLContext` and load the CA bundle again;
now every client of a process shares one (`providers.sdk.shared_ssl_context`). Measured here:

1. In-process, N HTTP clients built the old way (the SDK's default client with its own context,
   as `sdk.http_client` built them before) against N built by `sdk.http_client` now (the shared
   context), alternating, CPU seconds (`time.process_time`), best of REPEAT rounds; then N whole
   providers (`make_provider`, OpenAI and Anthropic in turn) the same way.
2. With `--before DIR` (a judgepanel tree of an older commit: `git archive COMMIT | tar -x -C DIR`),
   also in the same run, alternating between the two trees:
   - N providers built in a fresh process of each tree (CPU of the building alone, the SDK imports
     done before; the first provider pays for the shared context), best of REPEAT;
   - `judgepanel campaign run` of a small campaign with 3 judges (two OpenAI-wire, one
     Anthropic-wire, all `base_url` judges of one fake server process) on a fresh copy of one
     prepared SQLite file: the whole command's CPU (user + system, its own process), best of REPEAT.

    python -m benchmarks.bench_providers [--before DIR] [--n N]
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPEAT = 5
N = 30
ITEMS = 10  # items of the campaign: 3 judges → 30 calls

_BUILD = """
import sys, time
from judgepanel.providers import make_provider, parse_spec
import judgepanel.providers.anthropic_provider, judgepanel.providers.openai_provider  # imports not measured
specs = [parse_spec(f"{'openai' if i % 2 else 'anthropic'}:m{i}?base_url=http://127.0.0.1:9/v1")
         for i in range(int(sys.argv[1]))]
start = time.process_time()
made = [make_provider(s) for s in specs]
print(time.process_time() - start)
"""


def _cpu(fn: Any) -> float:
    gc.collect()  # the clients of the round before are not collected inside this one
    start = time.process_time()
    fn()
    return time.process_time() - start


def in_process(n: int) -> None:
    import anthropic
    import openai

    from judgepanel.providers import make_provider, parse_spec, sdk

    sdks = [(openai.DefaultAsyncHttpxClient, openai.DEFAULT_CONNECTION_LIMITS)] * 2 + [
        (anthropic.DefaultAsyncHttpxClient, anthropic.DEFAULT_CONNECTION_LIMITS)
    ]
    kept: list[Any] = []

    def old_way() -> None:  # what sdk.http_client built before: the library's own context per client
        for i in range(n):
            default, limits = sdks[i % 3]
            kept.append(default(limits=limits, headers={"Accept-Encoding": "gzip, deflate"}))

    def shared() -> None:
        for i in range(n):
            default, limits = sdks[i % 3]
            kept.append(sdk.http_client(default, limits, None))

    specs = [
        parse_spec(f"{'openai' if i % 2 else 'anthropic'}:m{i}?base_url=http://127.0.0.1:9/v1")
        for i in range(n)
    ]

    def providers() -> None:
        kept.extend(make_provider(s) for s in specs)

    first = _cpu(lambda: sdk.shared_ssl_context(openai.DefaultAsyncHttpxClient))
    rounds: dict[str, list[float]] = {"old": [], "shared": [], "providers": []}
    for _ in range(REPEAT):
        for key, fn in (("old", old_way), ("shared", shared), ("providers", providers)):
            rounds[key].append(_cpu(fn))
            kept.clear()
    best = {k: min(v) for k, v in rounds.items()}
    print(f"the shared context's one build: {first * 1000:.1f} ms CPU")
    print(
        f"{n} HTTP clients, best of {REPEAT} (CPU s): old way {best['old']:.3f}, shared context {best['shared']:.3f}"
    )
    print(
        f"  per client: {best['old'] / n * 1000:.2f} ms → {best['shared'] / n * 1000:.2f} ms "
        f"({best['old'] / best['shared']:.1f}x)"
    )
    print(f"{n} providers (make_provider), best of {REPEAT}: {best['providers']:.3f} CPU s, "
          f"{best['providers'] / n * 1000:.2f} ms each")  # fmt: skip


def _env(tmp: str, tree: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": tree, "PYTHONPYCACHEPREFIX": str(Path(tmp) / "pycache"), "COLUMNS": "100"}


def _child_cpu(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:6])}… exited {out.returncode}: {out.stderr.strip()[-500:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), out.stdout


def _prepare(db: Path, fake_url: str) -> None:
    from benchmarks.bench_runner import _dataset
    from judgepanel.runner import campaign as api
    from judgepanel.store.engine import make_engine
    from judgepanel.store.migrate import upgrade

    engine = make_engine(f"sqlite:///{db}")
    upgrade(engine)
    _dataset(engine, ITEMS)
    judges = [
        f"openai:judge-a?base_url={fake_url}/v1",
        f"openai:judge-b?base_url={fake_url}/v1",
        f"anthropic:judge-c?base_url={fake_url}",
    ]
    api.create(engine, "c", dataset="bench", protocol="pointwise", judges=judges)
    engine.dispose()


def compare(before: str, n: int) -> None:
    from judgepanel.fake.server import FakeServerProcess

    here = str(Path(__file__).resolve().parent.parent)
    trees = {"before": str(Path(before).resolve()), "after": here}
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp, FakeServerProcess("--seed", "1") as fake:
        envs = {k: _env(tmp, d) for k, d in trees.items()}
        template = Path(tmp) / "template.db"
        _prepare(template, fake.url)
        build: dict[str, list[float]] = {"before": [], "after": []}
        run: dict[str, list[float]] = {"before": [], "after": []}
        for i in range(REPEAT + 1):  # round 0 fills each tree's bytecode cache, and is not counted
            for key in ("before", "after") if i % 2 else ("after", "before"):
                _, out = _child_cpu([py, "-c", _BUILD, str(n)], envs[key], trees[key])
                db = Path(tmp) / f"run-{key}-{i}.db"
                shutil.copy(template, db)
                cpu, _ = _child_cpu(
                    [py, "-m", "judgepanel", "--db", f"sqlite:///{db}", "campaign", "run", "c"],
                    envs[key],
                    trees[key],
                )
                if i:
                    build[key].append(float(out.strip()))
                    run[key].append(cpu)
        stats = fake.stats()
    print(f"{n} providers in a fresh process (CPU s of the building, best of {REPEAT}, alternating):")
    b, a = min(build["before"]), min(build["after"])
    print(
        f"  before {b:.3f}  after {a:.3f}  ratio {b / a:.1f}x  ({(b - a) / n * 1000:.1f} ms less per provider)"
    )
    print(
        f"`campaign run` of {ITEMS * 3} calls, 3 judges (CPU s, user + system, best of {REPEAT}, alternating):"
    )
    b, a = min(run["before"]), min(run["after"])
    print(f"  before {b:.3f}  after {a:.3f}  ratio {b / a:.3f}  ({b - a:.3f} s less)")
    print(
        f"  all rounds: before {[round(x, 3) for x in run['before']]}, after {[round(x, 3) for x in run['after']]}"
    )
    print(f"fake server: {stats['requests']} requests, {stats['by_status']}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench_providers")
    parser.add_argument("--before", help="a judgepanel tree of an older commit, measured in the same run")
    parser.add_argument("--n", type=int, default=N)
    args = parser.parse_args(argv if argv is not None else [])
    print(f"load average {os.getloadavg()[0]:.1f}")
    in_process(args.n)
    if args.before:
        compare(args.before, args.n)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
