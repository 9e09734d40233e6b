"""The HTML report over a large campaign: seconds to render and the page's size.

A bulk-generated pointwise campaign of N stored verdicts (default 100,000: 5 judges × 20,000
items, 3 human scores per item; `JP_BENCH_REPORT_N` to change) in a SQLite file. Reported: the
time `judgepanel report` takes (reading, the statistics with 200 bootstrap replicates, plots,
rendering) next to the time to read the same verdicts with `judgepanel.api.verdicts` (a pandas
frame of every row, the least any report has to do), and the size of the page.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from benchmarks.bulk import build
from judgepanel import api
from judgepanel.report.render import write_report
from judgepanel.store.engine import make_engine

N = int(os.environ.get("JP_BENCH_REPORT_N", "100000"))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        t = time.perf_counter()
        build(url, N, judges=5, humans=3)
        print(f"built {N:,} verdicts (5 judges) in {time.perf_counter() - t:.1f} s")
        eng = make_engine(url)
        t = time.perf_counter()
        frame = api.verdicts(eng, "bench")
        read = time.perf_counter() - t
        t = time.perf_counter()
        result = write_report(eng, ["bench"], Path(tmp) / "r.html")
        took = time.perf_counter() - t
        eng.dispose()
        print(
            f"report over {len(frame):,} verdicts: {took:.1f} s, {result.bytes / 1e6:.2f} MB, {result.plots} plots | "
            f"reading the verdicts into pandas: {read:.1f} s | ratio {took / read:.1f}x"
        )


if __name__ == "__main__":
    main()
