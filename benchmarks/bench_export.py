"""Export speed and peak memory against pandas, measured in the same run.

A bulk-generated pointwise campaign of N stored verdicts (default 200,000; `JP_BENCH_EXPORT_N` to
change, e.g. 1000000) in a SQLite file. Each side runs in its own process so its peak RSS is its
own: `judgepanel export --format parquet` (streamed, one row group per chunk) against the
straightforward `pandas.read_sql(<the same join>)` + `DataFrame.to_parquet` (everything in
memory), and the same for CSV. Reported: seconds, peak RSS in MB, and the ratios.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bulk import build

N = int(os.environ.get("JP_BENCH_EXPORT_N", "200000"))

REFERENCE = """
import resource, sys, time
import pandas as pd
from sqlalchemy import create_engine
t = time.perf_counter()
eng = create_engine(sys.argv[1])
sql = '''select c.name as campaign, jd.name as judge, j.job_key, i.external_id as unit, j.condition,
 j.dimension, j."repeat", v.attempt, v.parse_status, v.value_canonical as value, v.score, v.rationale,
 r.input_tokens, r.output_tokens, r.cost_usd, r.latency_ms, rq.template_hash, r.model_returned
 from verdict v join job j on j.id = v.job_id join campaign c on c.id = j.campaign_id
 join judge jd on jd.id = j.judge_id join item i on i.id = j.item_id join request rq on rq.id = v.request_id
 left join response r on r.request_id = rq.id order by j.id, v.attempt'''
df = pd.read_sql(sql, eng)
if sys.argv[3] == "parquet":
    df.to_parquet(sys.argv[2])
else:
    df.to_csv(sys.argv[2], index=False)
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""

OURS = """
import resource, sys, time
t = time.perf_counter()
from judgepanel.report.export import export_campaign
from judgepanel.store.engine import make_engine
r = export_campaign(
    make_engine(sys.argv[1]), "bench", what="verdicts", fmt=sys.argv[3], out=sys.argv[2], raw=sys.argv[4:] == ["raw"]
)
assert r.rows > 0
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def run(code: str, url: str, out: Path, fmt: str, *extra: str) -> tuple[float, float]:
    done = subprocess.run(
        [sys.executable, "-c", code, url, str(out), fmt, *extra], capture_output=True, text=True, check=True
    )
    seconds, rss = done.stdout.split()
    return float(seconds), float(rss)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        t = time.perf_counter()
        build(url, N)
        print(f"built {N:,} verdicts in {time.perf_counter() - t:.1f} s")
        for fmt in ("parquet", "csv"):
            ours = run(OURS, url, Path(tmp) / f"ours.{fmt}", fmt)
            ref = run(REFERENCE, url, Path(tmp) / f"ref.{fmt}", fmt)
            print(
                f"{fmt:8s} judgepanel export {ours[0]:6.1f} s, peak {ours[1]:6.0f} MB | "
                f"pandas read_sql + write {ref[0]:6.1f} s, peak {ref[1]:6.0f} MB | "
                f"time ratio {ref[0] / ours[0]:.2f}x, memory ratio {ref[1] / ours[1]:.2f}x"
            )
        # what neutralising formula cells costs: the default CSV export against --raw, same run
        raw = run(OURS, url, Path(tmp) / "raw.csv", "csv", "raw")
        safe = run(OURS, url, Path(tmp) / "safe.csv", "csv")
        print(
            f"csv      default (neutralised) {safe[0]:6.1f} s | --raw {raw[0]:6.1f} s | ratio {safe[0] / raw[0]:.2f}x"
        )


if __name__ == "__main__":
    main()
