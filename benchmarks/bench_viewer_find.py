"""The working viewer at scale (issue 33 §4, §1): the campaign page's server time and the verdict
table's search and sort.

A pointwise campaign of N verdicts (`benchmarks.bulk`, 5 judges, 3 human scores per item;
`JP_BENCH_FIND_N`, default 10⁵) with a rationale of three words from a 2,000-word vocabulary on
every verdict; `JP_BENCH_FIND_DB=sqlite|postgresql` for one backend (PostgreSQL when
`JUDGEPANEL_TEST_PG_URL` is set). Requests go through the whole ASGI stack over the read-only
engine; median of `REPEATS`. Reported:

- `/api/campaigns/bench` cold (the first request computes the figures: agreement with 200
  bootstrap replicates, κ matrix, distributions) and warm (from the cache keyed by the results);
- the first page of `?q=` for a common word (in ~0.15 % of the rationales), a rare one (~0.005 %)
  and a word in no rationale, and the reference measured in the same run: the same rare-word
  page by a LIKE scan (the fallback without the full-text index); ratio LIKE / index;
- the first page sorted by latency, descending, and by disagreement with the humans.

Run: `python -m benchmarks viewer_find`.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable

from sqlalchemy import create_engine, text

from benchmarks.backends import median_seconds, on_each_backend, print_server_times
from benchmarks.bulk import build

N = int(os.environ.get("JP_BENCH_FIND_N", "100000"))
REPEATS = 5
VOCABULARY = [f"w{k:04d}" for k in range(2000)]


def _median(fn: Callable[[], object]) -> float:
    return median_seconds(fn, REPEATS)


def _rationales(url: str) -> None:
    eng = create_engine(url)
    rng = random.Random(1)
    with eng.begin() as conn:
        ids = [r[0] for r in conn.execute(text("SELECT id FROM verdict"))]
        step = 20_000
        for k in range(0, len(ids), step):
            conn.execute(
                text("UPDATE verdict SET rationale = :r WHERE id = :i"),
                [
                    {"i": i, "r": " ".join(rng.choice(VOCABULARY) for _ in range(3)) + f" v{i}"}
                    for i in ids[k : k + step]
                ],
            )
    eng.dispose()


def report(label: str, url: str) -> None:
    from starlette.testclient import TestClient

    from judgepanel.store import find
    from judgepanel.store.readonly import read_only_engine
    from judgepanel.view.app import create_app

    t = time.perf_counter()
    stored = build(url, N, judges=5, humans=3)
    _rationales(url)
    print(
        f"[{label}] built {stored:,} verdicts with rationales in {time.perf_counter() - t:.1f} s", flush=True
    )
    eng = read_only_engine(url)
    rare = f"v{N // 2}"  # one verdict's own word
    with TestClient(create_app(eng), base_url="http://127.0.0.1") as c:

        def get(path: str) -> None:
            r = c.get(path)
            assert r.status_code == 200, (path, r.text[:200])

        t = time.perf_counter()
        get("/api/campaigns/bench")
        cold = time.perf_counter() - t
        rows = {
            "campaign page, cold": cold,
            "campaign page, warm (JSON)": _median(lambda: get("/api/campaigns/bench")),
            "campaign page, warm (HTML)": _median(lambda: get("/campaigns/bench")),
            "search, common word": _median(lambda: get("/api/campaigns/bench/verdicts?q=w0007")),
            "search, one verdict's word": _median(lambda: get(f"/api/campaigns/bench/verdicts?q={rare}")),
            "search, no match": _median(lambda: get("/api/campaigns/bench/verdicts?q=nothinglikethis")),
            "sort by latency, desc": _median(
                lambda: get("/api/campaigns/bench/verdicts?sort=latency&desc=1")
            ),
            "sort by disagreement": _median(
                lambda: get("/api/campaigns/bench/verdicts?sort=disagreement&desc=1")
            ),
        }
        mode = find.search_mode(eng)
    with eng.connect() as conn:
        like = _median(
            lambda: conn.execute(
                text(
                    "SELECT v.id FROM verdict v JOIN job j ON j.id = v.job_id WHERE j.campaign_id = 1 "
                    "AND lower(coalesce(v.rationale, '')) LIKE :p ORDER BY v.id LIMIT 51"
                ),
                {"p": f"%{rare}%"},
            ).all()
        )
        indexed = _median(lambda: find.search_page(eng, "bench", find.VerdictSearch(q=rare), limit=50))
    eng.dispose()
    print_server_times(label, rows, 30)
    print(
        f"[{label}] one verdict's word: {mode} {indexed * 1000:.1f} ms vs a LIKE scan {like * 1000:.1f} ms "
        f"(reference, rationales only) -> LIKE / index = {like / indexed:.1f}x",
        flush=True,
    )


def main() -> None:
    on_each_backend("JP_BENCH_FIND_DB", "find.db", lambda label, url, _tmp: report(label, url))


if __name__ == "__main__":
    main()
