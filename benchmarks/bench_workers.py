"""Several `judgepanel worker` processes on one PostgreSQL database under one shared rate limit.

1, 2 and 4 workers (the real CLI, each its own process, `--rpm 3000 --concurrency 16`) work one
campaign of 1,000 pointwise calls against the fake server (its own process) at 200 ms latency
that enforces 3,000 RPM itself (a token bucket of one second's burst). The workers share the
judge's budget through the `rate_bucket` table, so adding workers must not add 429s.

Reported per run: throughput from the first to the last stored call as a ratio to the ideal
(3,000 RPM = 50 calls/s), the share of calls answered 429, and the wall time including the
workers' start-up (Python imports; large on a loaded machine).

Needs a PostgreSQL server whose user may CREATE DATABASE: `--db postgresql://…` or the
JUDGEPANEL_TEST_PG_URL variable; skipped with a message otherwise. A throwaway database is made
and dropped per run. Run: `python -m benchmarks workers` (or `python -m benchmarks.bench_workers
[--db URL] [--jobs N] [--workers 1,2,4]`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

RPM = 3000
LATENCY = 0.2
KEY = "sk-bench-not-a-real-key-000000000000"
WORKER = (sys.executable, "-m", "judgepanel")


@contextmanager
def _throwaway_db(admin: str) -> Iterator[str]:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    url = make_url(admin).set(drivername="postgresql+psycopg")
    name = f"jp_bench_{uuid.uuid4().hex[:10]}"
    eng = create_engine(url, isolation_level="AUTOCOMMIT")
    with eng.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        with eng.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        eng.dispose()


def _campaign(url: str, judge: str, jobs: int) -> None:
    from benchmarks.bench_runner import _dataset
    from judgepanel.runner import campaign as api
    from judgepanel.store.engine import make_engine
    from judgepanel.store.migrate import upgrade

    engine = make_engine(url)
    upgrade(engine)
    _dataset(engine, jobs)
    api.create(engine, "w", dataset="bench", protocol="pointwise", judges=[judge])
    engine.dispose()


def run_once(admin: str, workers: int, jobs: int) -> dict[str, Any]:
    from sqlalchemy import text

    from judgepanel.fake.server import FakeServerProcess
    from judgepanel.store.engine import make_engine

    with (
        _throwaway_db(admin) as url,
        FakeServerProcess("--latency", str(LATENCY), "--rpm", str(RPM), "--seed", "1") as fake,
    ):
        _campaign(url, f"openai:bench-workers?base_url={fake.url}/v1", jobs)
        env = {**os.environ, "OPENAI_API_KEY": KEY}
        t0 = time.monotonic()
        procs = [
            subprocess.Popen(
                [*WORKER, "--db", url, "worker", "--json", "--rpm", str(RPM), "--concurrency", "16"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=env,
            )
            for _ in range(workers)
        ]
        codes = []
        for p in procs:
            _, err = p.communicate()
            codes.append(p.returncode)
            if p.returncode != 0:
                print(err.decode()[-500:], file=sys.stderr)
        wall = time.monotonic() - t0
        stats = fake.stats()
        engine = make_engine(url)
        with engine.connect() as c:
            first, last, n = c.execute(
                text(
                    "SELECT min(r.created_at), max(r.created_at), count(*) FROM request r "
                    "JOIN response s ON s.request_id = r.id WHERE s.ok"
                )
            ).one()
        engine.dispose()
    calls = int(stats["by_path"].get("/v1/chat/completions", 0))
    limited = int(stats["by_status"].get("429", 0))
    span = max((last - first).total_seconds(), 1e-9)
    # n calls stored over `span`: n − 1 intervals at the ideal 1/rate apart
    ideal = (n - 1) / (RPM / 60)
    return {
        "workers": workers,
        "exit_codes": codes,
        "ok_calls": int(n),
        "calls": calls,
        "429": limited,
        "share_429": limited / max(calls, 1),
        "span_s": span,
        "ratio_to_ideal": ideal / span,
        "wall_s": wall,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_workers")
    ap.add_argument("--db", default=os.environ.get("JUDGEPANEL_TEST_PG_URL"))
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--workers", default="1,2,4")
    args = ap.parse_args(argv if argv is not None else [])
    if not args.db or not args.db.startswith("postgresql"):
        print("skipped: needs a PostgreSQL server (--db postgresql://… or JUDGEPANEL_TEST_PG_URL)")
        return
    print(
        f"{args.jobs} calls, fake server at {LATENCY * 1000:.0f} ms latency enforcing {RPM} RPM; "
        f"each worker --rpm {RPM} --concurrency 16, the budget shared through PostgreSQL"
    )
    print(f"{'workers':>7} {'calls/s':>8} {'ratio to ideal':>15} {'429s':>6} {'429 share':>10} {'wall s':>7}")
    for n in (int(x) for x in args.workers.split(",")):
        r = run_once(args.db, n, args.jobs)
        print(
            f"{n:>7} {r['ok_calls'] / r['span_s']:>8.1f} {r['ratio_to_ideal']:>15.3f} {r['429']:>6} "
            f"{100 * r['share_429']:>9.2f}% {r['wall_s']:>7.1f}"
            + ("" if set(r["exit_codes"]) == {0} else f"  exit codes {r['exit_codes']}"),
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
