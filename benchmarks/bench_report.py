"""The HTML report over a large campaign: seconds, CPU seconds and peak memory to render it.

A bulk-generated pointwise campaign of N stored verdicts (default 100,000: 5 judges × 20,000
items, 3 human scores per item; `JP_BENCH_REPORT_N=1000000` for 10⁶: 5 × 200,000) in a SQLite
file. Timed, each in a fresh process (imports included), alternating, `JP_BENCH_REPORT_ROUNDS`
rounds (default 5), medians reported:

- `judgepanel report` with this checkout (reading, the statistics with 200 bootstrap replicates,
  plots, rendering);
- the reference: reading the same verdicts with `judgepanel.api.verdicts` into a pandas frame
  (every row, the least any report over them has to do);
- with `JP_BENCH_REPORT_BEFORE=/path/to/another/checkout` (e.g. a `git archive` of the previous
  commit), the same report over the same database with that checkout's judgepanel.

Peak memory is the process's own high-water mark (VmHWM from /proc), as in `bench_million`. The
machine's load average is printed beside the figures: on the shared 2-core machine wall times
move with it, CPU seconds much less.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bulk import build
from benchmarks.timing import PEAK_MEMORY

N = int(os.environ.get("JP_BENCH_REPORT_N", "100000"))
ROUNDS = int(os.environ.get("JP_BENCH_REPORT_ROUNDS", "5"))
REPO = Path(__file__).resolve().parents[1]

_MEASURED = (
    PEAK_MEMORY
    + """print("MEASURED", time.perf_counter() - t, ru.ru_utime + ru.ru_stime, peak, extra)
"""
)

REPORT = (
    """
import resource, sys, time
t = time.perf_counter()
from judgepanel.report.render import write_report
from judgepanel.store.engine import make_engine
r = write_report(make_engine(sys.argv[1]), ["bench"], sys.argv[2])
extra = r.bytes
"""
    + _MEASURED
)

PANDAS = (
    """
import resource, sys, time
t = time.perf_counter()
from judgepanel import api
from judgepanel.store.engine import make_engine
extra = len(api.verdicts(make_engine(sys.argv[1]), "bench"))
"""
    + _MEASURED
)

Run = tuple[float, float, float, int]  # wall s, CPU s, peak MB, bytes or rows


def _timed(checkout: Path, script: str, *args: str) -> Run:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, cwd=checkout
    )
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("MEASURED ")), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(done.stderr[-2000:])
    _, wall, cpu, peak, extra = line.split()
    return float(wall), float(cpu), float(peak), int(extra)


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    before = os.environ.get("JP_BENCH_REPORT_BEFORE")
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        t = time.perf_counter()
        build(url, N, judges=5, humans=3)
        print(f"built {N:,} verdicts (5 judges) in {time.perf_counter() - t:.1f} s; load {_load()}")
        out = str(Path(tmp) / "r.html")
        jobs = {
            "report (this checkout)": (REPO, REPORT, url, out),
            "reference: verdicts into pandas": (REPO, PANDAS, url),
        }
        if before:
            jobs["report (before)"] = (Path(before), REPORT, url, str(Path(tmp) / "before.html"))
        runs: dict[str, list[Run]] = {k: [] for k in jobs}
        for _ in range(ROUNDS):  # alternating: each round times every job once
            for label, (checkout, script, *args) in jobs.items():
                runs[label].append(_timed(checkout, script, *args))
        med = {
            k: (
                statistics.median(r[0] for r in rs),
                statistics.median(r[1] for r in rs),
                max(r[2] for r in rs),
            )
            for k, rs in runs.items()
        }
        print(f"median of {ROUNDS} alternating rounds, a fresh process each; load after: {_load()}")
        for label, (wall, cpu, peak) in med.items():
            print(f"  {label:34s} {wall:6.1f} s wall  {cpu:6.1f} s CPU  peak {peak:5.0f} MB", flush=True)
        mine = med["report (this checkout)"]
        ref = med["reference: verdicts into pandas"]
        print(
            f"report page {runs['report (this checkout)'][0][3] / 1e6:.2f} MB; "
            f"report / pandas read: {mine[0] / ref[0]:.2f}x wall, {mine[1] / ref[1]:.2f}x CPU"
        )
        if before:
            old = med["report (before)"]
            print(
                f"before / now: {old[0] / mine[0]:.2f}x wall, {old[1] / mine[1]:.2f}x CPU, "
                f"{old[2] / mine[2]:.2f}x peak memory"
            )


if __name__ == "__main__":
    main()
