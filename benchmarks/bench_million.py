"""A campaign of 1,000,000 stored pairwise verdicts: `metrics agreement`, `metrics bias` and
`export` over it, seconds and peak memory, on SQLite and (when `JUDGEPANEL_TEST_PG_URL` is set)
PostgreSQL.

The campaign is bulk-generated with Core inserts (no runner, no HTTP): `JUDGES` judges, each asked
every pair of a pair set in both orders (AB and BA), N verdicts in all (default 1,000,000;
`JP_BENCH_MILLION_N=100000` for a quick run; `JP_BENCH_MILLION_DB=sqlite` or `postgresql` for one
backend). Every verdict has its request and response row, as a
real run stores them. Each command runs as the real CLI (`judgepanel --db URL …`) in its own
process, so its peak RSS is its own (VmHWM from /proc: `ru_maxrss` would carry over the
benchmark process's peak across exec):

- `metrics agreement --pairs P --group judge --metric alpha`: the judges' combined AB/BA verdicts as
  rating columns over N / (2 × JUDGES) pairs;
- `metrics bias --campaign C`: position bias per judge over every swapped pair;
- `export C --format csv` and `--format parquet`: one row per verdict.

Beside them, `judgepanel --help` gives the interpreter + CLI import baseline (what every command
pays before reading a row). CPU seconds are reported beside wall seconds: on a shared machine the
wall time moves with load, the CPU time much less.

Run: `python -m benchmarks million` (or `python -m benchmarks.bench_million`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.backends import on_each_backend
from benchmarks.bulk import build
from benchmarks.timing import PEAK_MEMORY

N = int(os.environ.get("JP_BENCH_MILLION_N", "1000000"))
JUDGES = 5

# One CLI invocation, in-process, reporting its own wall time and peak RSS on the last line.
MEASURE = (
    """
import resource, sys, time
t = time.perf_counter()
from judgepanel.cli import main
sys.argv = ["judgepanel", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    if exc.code not in (0, None):
        raise
"""
    + PEAK_MEMORY
    + """print("\\nMEASURED", time.perf_counter() - t, ru.ru_utime + ru.ru_stime, peak)
"""
)


def measure(url: str, *args: str) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak MB of `judgepanel --db URL ARGS` in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, "--db", url, *args], capture_output=True, text=True, check=False
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("MEASURED ")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"judgepanel {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    _, seconds, cpu, rss = lines[-1].split()
    return float(seconds), float(cpu), float(rss)


def commands(tmp: Path) -> list[tuple[str, list[str]]]:
    return [
        ("metrics agreement", ["metrics", "agreement", "--pairs", "bench-pairs", "--group", "judge",
                               "--metric", "alpha", "--json"]),
        ("metrics bias", ["metrics", "bias", "--campaign", "bench", "--json"]),
        ("export csv", ["export", "bench", "--format", "csv", "--out", str(tmp / "v.csv"), "--force", "--json"]),
        ("export parquet", ["export", "bench", "--format", "parquet", "--out", str(tmp / "v.parquet"), "--force", "--json"]),
    ]  # fmt: skip


def report(label: str, url: str, tmp: Path) -> dict[str, tuple[float, float, float]]:
    t = time.perf_counter()
    stored = build(url, N, judges=JUDGES, pairwise=True)
    print(
        f"[{label}] built {stored:,} verdicts ({JUDGES} judges, AB + BA) in {time.perf_counter() - t:.1f} s"
    )
    out: dict[str, tuple[float, float, float]] = {"judgepanel --help": measure(url, "--help")}
    out.update((name, measure(url, *args)) for name, args in commands(tmp))
    for name, (wall, cpu, rss) in out.items():
        print(f"[{label}] {name:18s} {wall:7.1f} s wall  {cpu:7.1f} s CPU  peak {rss:6.0f} MB", flush=True)
    return out


def main() -> None:
    on_each_backend("JP_BENCH_MILLION_DB", "million.db", report)


if __name__ == "__main__":
    main()
