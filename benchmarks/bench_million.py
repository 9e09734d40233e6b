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
import random
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from sqlalchemy import create_engine, insert, text
from sqlalchemy.engine import make_url

from judgepanel.store.engine import make_engine
from judgepanel.store.migrate import upgrade
from judgepanel.store.models import (
    Campaign,
    CampaignJudge,
    Dataset,
    Item,
    Job,
    Judge,
    Pair,
    PairSet,
    Request,
    Response,
    Verdict,
    table_of,
)

N = int(os.environ.get("JP_BENCH_MILLION_N", "1000000"))
JUDGES = 5
STEP = 50_000

# One CLI invocation, in-process, reporting its own wall time and peak RSS on the last line.
MEASURE = """
import resource, sys, time
t = time.perf_counter()
from judgepanel.cli import main
sys.argv = ["judgepanel", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    if exc.code not in (0, None):
        raise
ru = resource.getrusage(resource.RUSAGE_SELF)
peak = ru.ru_maxrss / 1024
try:  # ru_maxrss survives exec (it starts at the parent's peak); VmHWM is this process's own
    with open("/proc/self/status") as f:
        peak = next(int(ln.split()[1]) / 1024 for ln in f if ln.startswith("VmHWM:"))
except (OSError, StopIteration):
    pass
print("\\nMEASURED", time.perf_counter() - t, ru.ru_utime + ru.ru_stime, peak)
"""


def _flip(v: str) -> str:
    return {"A": "B", "B": "A"}.get(v, v)


def build(url: str, n: int = N, judges: int = JUDGES) -> int:
    """A pairwise campaign `bench` over pair set `bench-pairs`: n verdicts (rounded down to whole
    swapped pairs per judge). Returns the number of verdicts stored."""
    eng = make_engine(url)
    upgrade(eng)
    rng = random.Random(0)
    n_pairs = max(1, n // (2 * judges))
    n_items = 2
    while n_items * (n_items - 1) // 2 < n_pairs:
        n_items *= 2
    with eng.begin() as conn:
        ds_id = conn.execute(
            insert(table_of(Dataset)).values(name="d", kind="items", source_hash="x", meta={})
        ).inserted_primary_key[0]
        for start in range(0, n_items, STEP):
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
                    for k in range(start, min(n_items, start + STEP))
                ],
            )
        item_ids = [r[0] for r in conn.exec_driver_sql("select id from item order by id")]
        ps_id = conn.execute(
            insert(table_of(PairSet)).values(
                name="bench-pairs", dataset_id=ds_id, seed=0, sample=n_pairs, tie_eps=0.0, pairs_total=n_pairs
            )
        ).inserted_primary_key[0]
        # pairs (a, b), a < b, walked row by row of the upper triangle
        pairs: list[tuple[int, int]] = []
        a = 0
        while len(pairs) < n_pairs:
            for b in range(a + 1, n_items):
                pairs.append((a, b))
                if len(pairs) == n_pairs:
                    break
            a += 1
        for start in range(0, n_pairs, STEP):
            conn.execute(
                insert(table_of(Pair)),
                [
                    {
                        "id": p + 1,
                        "pair_set_id": ps_id,
                        "position": p,
                        "item_a_id": item_ids[pairs[p][0]],
                        "item_b_id": item_ids[pairs[p][1]],
                    }
                    for p in range(start, min(n_pairs, start + STEP))
                ],
            )
        judge_ids = [
            conn.execute(
                insert(table_of(Judge)).values(name=f"sim:j{j}", provider="sim", model=f"j{j}", params={})
            ).inserted_primary_key[0]
            for j in range(judges)
        ]
        cid = conn.execute(
            insert(table_of(Campaign)).values(
                name="bench",
                dataset_id=ds_id,
                pair_set_id=ps_id,
                protocol="pairwise",
                condition="none",
                dimension=None,
                repeats=1,
                status="done",
                spec={},
            )
        ).inserted_primary_key[0]
        conn.execute(
            insert(table_of(CampaignJudge)), [{"campaign_id": cid, "judge_id": j} for j in judge_ids]
        )
    truth = [rng.choice("AAABBBT") for _ in range(n_pairs)]
    total = n_pairs * judges * 2
    # job k (1-based): pair (k-1) // (2 * judges), judge ((k-1) // 2) % judges, order AB when k odd
    for start in range(1, total + 1, STEP):
        ids = range(start, min(total, start + STEP - 1) + 1)
        jobs, requests, responses, verdicts = [], [], [], []
        for k in ids:
            p, j, ab = (k - 1) // (2 * judges), ((k - 1) // 2) % judges, k % 2 == 1
            # a judge agrees with the truth 70 % of the time and prefers the front slot a little
            canon = truth[p] if rng.random() < 0.7 else rng.choice("ABT")
            if rng.random() < 0.05:
                canon = "A" if ab else "B"  # answered "A" (front) whatever the order
            presented = canon if ab else _flip(canon)
            jobs.append(
                {
                    "id": k,
                    "campaign_id": cid,
                    "job_key": f"{k:064x}",
                    "judge_id": judge_ids[j],
                    "pair_id": p + 1,
                    "order": "AB" if ab else "BA",
                    "condition": "none",
                    "dimension": None,
                    "repeat": 0,
                    "status": "done",
                    "attempts": 1,
                }
            )
            requests.append(
                {
                    "id": k,
                    "job_id": k,
                    "attempt": 1,
                    "request_hash": f"{k:064x}",
                    "template_name": "pairwise",
                    "template_hash": "t" * 64,
                    "messages": [],
                    "params": {},
                }
            )
            responses.append(
                {
                    "id": k,
                    "request_id": k,
                    "ok": True,
                    "text": f'{{"verdict": "{presented}"}}',
                    "model_returned": "sim/j",
                    "input_tokens": 800,
                    "output_tokens": 60,
                    "latency_ms": 100 + 800 * rng.random(),
                    "cost_usd": 2e-4,
                }
            )
            verdicts.append(
                {
                    "id": k,
                    "job_id": k,
                    "attempt": 1,
                    "request_id": k,
                    "parse_status": "ok",
                    "parse_method": "structured",
                    "value_presented": presented,
                    "value_canonical": canon,
                    "rationale": "Response A states the main facts in order; B omits one.",
                }
            )
        with eng.begin() as conn:
            for model, rows in ((Job, jobs), (Request, requests), (Response, responses), (Verdict, verdicts)):
                conn.execute(insert(table_of(model)), rows)
    eng.dispose()
    return total


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
        ("export csv", ["export", "bench", "--format", "csv", "--out", str(tmp / "v.csv"), "--json"]),
        ("export parquet", ["export", "bench", "--format", "parquet", "--out", str(tmp / "v.parquet"), "--json"]),
    ]  # fmt: skip


def report(label: str, url: str, tmp: Path) -> dict[str, tuple[float, float, float]]:
    t = time.perf_counter()
    stored = build(url)
    print(
        f"[{label}] built {stored:,} verdicts ({JUDGES} judges, AB + BA) in {time.perf_counter() - t:.1f} s"
    )
    out: dict[str, tuple[float, float, float]] = {"judgepanel --help": measure(url, "--help")}
    out.update((name, measure(url, *args)) for name, args in commands(tmp))
    for name, (wall, cpu, rss) in out.items():
        print(f"[{label}] {name:18s} {wall:7.1f} s wall  {cpu:7.1f} s CPU  peak {rss:6.0f} MB", flush=True)
    return out


def main() -> None:
    backends = os.environ.get("JP_BENCH_MILLION_DB", "sqlite,postgresql").split(",")
    if "sqlite" in backends:
        with tempfile.TemporaryDirectory() as tmp:
            report("sqlite", f"sqlite:///{tmp}/million.db", Path(tmp))
    pg = os.environ.get("JUDGEPANEL_TEST_PG_URL")
    if pg and "postgresql" in backends:
        name = f"jp_bench_{uuid.uuid4().hex[:12]}"
        admin = create_engine(make_url(pg).set(drivername="postgresql+psycopg"), isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{name}"'))
        url = make_url(pg).set(database=name).render_as_string(hide_password=False)
        try:
            with tempfile.TemporaryDirectory() as tmp:
                report("postgresql", url, Path(tmp))
        finally:
            with admin.connect() as c:
                c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


if __name__ == "__main__":
    main()
