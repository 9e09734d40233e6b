"""Export speed and peak memory against pandas, measured in the same run.

A bulk-generated pointwise campaign of N stored verdicts (default 200,000; `JP_BENCH_EXPORT_N` to
change, e.g. 1000000) in a SQLite file. Each side runs in its own process so its peak RSS is its
own: `judgepanel export --format parquet` (streamed, one row group per chunk) against the
straightforward `pandas.read_sql(<the same join>)` + `DataFrame.to_parquet` (everything in
memory), and the same for CSV. Reported: seconds, peak RSS in MB, and the ratios.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import insert

from judgepanel.store.engine import make_engine
from judgepanel.store.migrate import upgrade
from judgepanel.store.models import (
    Annotator,
    Campaign,
    CampaignJudge,
    Dataset,
    Item,
    Job,
    Judge,
    Label,
    Request,
    Response,
    Verdict,
    table_of,
)

N = int(os.environ.get("JP_BENCH_EXPORT_N", "200000"))
ITEMS = 2_000

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
r = export_campaign(make_engine(sys.argv[1]), "bench", what="verdicts", fmt=sys.argv[3], out=sys.argv[2])
assert r.rows > 0
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def build(url: str, n: int = N, *, judges: int = 1, humans: int = 0) -> None:
    """A pointwise campaign of `n` verdicts by `judges` judges on n / judges items (repeats when
    there are more verdicts than ITEMS per judge), and `humans` human scores per item."""
    eng = make_engine(url)
    upgrade(eng)
    rng = random.Random(0)
    n_items = min(ITEMS, n) if judges == 1 else n // judges
    with eng.begin() as conn:
        ds = conn.execute(insert(table_of(Dataset)).values(name="d", kind="items", source_hash="x", meta={}))
        ds_id = ds.inserted_primary_key[0]
        conn.execute(
            insert(table_of(Item)),
            [
                {
                    "dataset_id": ds_id,
                    "external_id": f"i{k}",
                    "position": k,
                    "output": f"summary {k}",
                    "meta": {},
                }
                for k in range(n_items)
            ],
        )
        item_ids = [r[0] for r in conn.exec_driver_sql("select id from item order by id")]
        judge_ids = [
            conn.execute(
                insert(table_of(Judge)).values(name=f"sim:j{j}", provider="sim", model=f"j{j}", params={})
            ).inserted_primary_key[0]
            for j in range(judges)
        ]
        camp = conn.execute(
            insert(table_of(Campaign)).values(
                name="bench",
                dataset_id=ds_id,
                protocol="pointwise",
                condition="none",
                dimension="coherence",
                repeats=max(1, n // (n_items * judges)),
                status="done",
                spec={},
            )
        )
        cid = camp.inserted_primary_key[0]
        conn.execute(
            insert(table_of(CampaignJudge)), [{"campaign_id": cid, "judge_id": j} for j in judge_ids]
        )
        truth = [rng.randint(1, 5) for _ in item_ids]
        if humans:
            ann = [
                conn.execute(
                    insert(table_of(Annotator)).values(
                        dataset_id=ds_id, name=f"h{h}", kind="human", group="expert"
                    )
                ).inserted_primary_key[0]
                for h in range(humans)
            ]
            conn.execute(
                insert(table_of(Label)),
                [
                    {
                        "item_id": i,
                        "annotator_id": a,
                        "dimension": "coherence",
                        "value_num": float(v),
                        "value_text": str(v),
                    }
                    for i, t in zip(item_ids, truth, strict=True)
                    for a in ann
                    for v in [min(5, max(1, t + rng.choice((-1, 0, 0, 1))))]
                ],
            )
    step = 50_000
    for start in range(0, n, step):
        ids = range(start + 1, min(n, start + step) + 1)
        with eng.begin() as conn:
            conn.execute(
                insert(table_of(Job)),
                [
                    {
                        "id": k,
                        "campaign_id": cid,
                        "job_key": f"{k:064x}",
                        "judge_id": judge_ids[k % judges],
                        "item_id": item_ids[(k // judges) % n_items],
                        "condition": "none",
                        "dimension": "coherence",
                        "repeat": k // (judges * n_items),
                        "status": "done",
                        "attempts": 1,
                    }
                    for k in ids
                ],
            )
            conn.execute(
                insert(table_of(Request)),
                [
                    {
                        "id": k,
                        "job_id": k,
                        "attempt": 1,
                        "request_hash": f"{k:064x}",
                        "template_name": "pointwise",
                        "template_hash": "t" * 64,
                        "messages": [],
                        "params": {},
                    }
                    for k in ids
                ],
            )
            conn.execute(
                insert(table_of(Response)),
                [
                    {
                        "id": k,
                        "request_id": k,
                        "ok": True,
                        "text": "{}",
                        "model_returned": "sim/j",
                        "input_tokens": 400,
                        "output_tokens": 60,
                        "latency_ms": rng.uniform(100, 900),
                        "cost_usd": 1e-4,
                    }
                    for k in ids
                ],
            )
            conn.execute(
                insert(table_of(Verdict)),
                [
                    {
                        "id": k,
                        "job_id": k,
                        "attempt": 1,
                        "request_id": k,
                        "parse_status": "ok",
                        "parse_method": "structured",
                        "value_presented": str(s),
                        "value_canonical": str(s),
                        "score": float(s),
                        "rationale": "The summary states the main facts in order.",
                    }
                    for k in ids
                    for s in [min(5, max(1, truth[(k // judges) % n_items] + rng.choice((-2, -1, 0, 0, 1))))]
                ],
            )
    eng.dispose()


def run(code: str, url: str, out: Path, fmt: str) -> tuple[float, float]:
    done = subprocess.run(
        [sys.executable, "-c", code, url, str(out), fmt], capture_output=True, text=True, check=True
    )
    seconds, rss = done.stdout.split()
    return float(seconds), float(rss)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        t = time.perf_counter()
        build(url)
        print(f"built {N:,} verdicts in {time.perf_counter() - t:.1f} s")
        for fmt in ("parquet", "csv"):
            ours = run(OURS, url, Path(tmp) / f"ours.{fmt}", fmt)
            ref = run(REFERENCE, url, Path(tmp) / f"ref.{fmt}", fmt)
            print(
                f"{fmt:8s} judgepanel export {ours[0]:6.1f} s, peak {ours[1]:6.0f} MB | "
                f"pandas read_sql + write {ref[0]:6.1f} s, peak {ref[1]:6.0f} MB | "
                f"time ratio {ref[0] / ours[0]:.2f}x, memory ratio {ref[1] / ours[1]:.2f}x"
            )


if __name__ == "__main__":
    main()
