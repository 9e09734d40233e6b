"""The HTML report over a large campaign: seconds to render and the page's size.

A bulk-generated pointwise campaign of N stored verdicts (default 100,000: 5 judges × 20,000
items, 3 human scores per item; `JP_BENCH_REPORT_N` to change) in a SQLite file. Reported: the
time `judgepanel report` takes (reading, the statistics with 200 bootstrap replicates, plots,
rendering) next to the time to read the same verdicts with `judgepanel.api.verdicts` (a pandas
frame of every row, the least any report has to do), and the size of the page.

Before/after in the same run: with `JP_BENCH_REPORT_BEFORE=/path/to/another/checkout` (e.g. a
`git archive` of the previous commit), the same report over the same database is also timed with
that checkout's judgepanel, in a fresh process each, alternating, `ROUNDS` times each.
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
from judgepanel import api
from judgepanel.store.engine import make_engine

N = int(os.environ.get("JP_BENCH_REPORT_N", "100000"))
ROUNDS = 3
REPO = Path(__file__).resolve().parents[1]

TIMED = """
import sys, time
t = time.perf_counter()
from judgepanel.report.render import write_report
from judgepanel.store.engine import make_engine
r = write_report(make_engine(sys.argv[1]), ["bench"], sys.argv[2])
print("TOOK", time.perf_counter() - t, r.bytes, r.plots)
"""


def _timed(checkout: Path, url: str, out: Path) -> tuple[float, int, int]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run(
        [sys.executable, "-c", TIMED, url, str(out)], capture_output=True, text=True, env=env, cwd=checkout
    )
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("TOOK ")), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(done.stderr[-2000:])
    _, took, size, n_plots = line.split()
    return float(took), int(size), int(n_plots)


def main() -> None:
    before = os.environ.get("JP_BENCH_REPORT_BEFORE")
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        t = time.perf_counter()
        build(url, N, judges=5, humans=3)
        print(f"built {N:,} verdicts (5 judges) in {time.perf_counter() - t:.1f} s")
        eng = make_engine(url)
        t = time.perf_counter()
        frame = api.verdicts(eng, "bench")
        read = time.perf_counter() - t
        eng.dispose()
        runs: dict[str, list[tuple[float, int, int]]] = {"this checkout": []}
        if before:
            runs["before"] = []
        for _ in range(ROUNDS):
            runs["this checkout"].append(_timed(REPO, url, Path(tmp) / "r.html"))
            if before:
                runs["before"].append(_timed(Path(before), url, Path(tmp) / "before.html"))
        for label, rs in runs.items():
            took = statistics.median(r[0] for r in rs)
            print(
                f"{label}: report over {len(frame):,} verdicts {took:.1f} s (median of {ROUNDS}, a fresh process "
                f"each, imports included), {rs[0][1] / 1e6:.2f} MB, {rs[0][2]} plots | reading the verdicts "
                f"into pandas: {read:.1f} s | ratio {took / read:.1f}x",
                flush=True,
            )


if __name__ == "__main__":
    main()
