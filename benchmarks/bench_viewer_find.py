"""The working viewer at scale (issue 33 §4, §1): the campaign page's server time and the verdict
table's search and sort.

A pointwise campaign of N verdicts (`benchmarks.bulk`, 5 judges, 3 human scores per item;
`JP_BENCH_FIND_N`, default 10⁵) with a rationale of three words from a 2,000-word vocabulary on
every verdict; `JP_BENCH_FIND_DB=sqlite|postgresql` for one backend (PostgreSQL when
`JUDGEPANEL_TEST_PG_URL` is set; `JP_BENCH_FIND_SQLITE_FILE=PATH` builds the SQLite database
there once and measures it again on later runs). Requests go through the whole ASGI stack over the read-only
engine; median of `REPEATS`. Reported:

- `/api/campaigns/bench` cold (the first request computes the figures: agreement with 200
  bootstrap replicates, κ matrix, distributions) and warm (from the cache keyed by the results);
- the first page of `?q=` for a common word (in ~0.15 % of the rationales), a rare one (~0.005 %)
  and a word in no rationale, and the reference measured in the same run: the same rare-word
  page by a LIKE scan (the fallback without the full-text index); ratio LIKE / index;
- the first page sorted by latency, descending, and by disagreement with the humans: the first
  request (which reads the campaign's order, `store.find_order`), later ones and a page deep in
  the list; reference in the same run: the same first page as one SQL top-N sort over the
  campaign (what every sorted page cost before the order was kept); ratio top-N / kept.

Run: `python -m benchmarks viewer_find`.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from collections.abc import Callable

from sqlalchemy import create_engine, text

from benchmarks.backends import median_seconds, on_postgresql, print_server_times
from benchmarks.bulk import build

N = int(os.environ.get("JP_BENCH_FIND_N", "100000"))
REPEATS = 5
VOCABULARY = [f"w{k:04d}" for k in range(2000)]


def _median(fn: Callable[[], object]) -> float:
    return median_seconds(fn, REPEATS)


def _once(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _load() -> str:
    return "load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg())


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


def report(label: str, url: str, reuse: bool = False) -> None:
    from starlette.testclient import TestClient

    from judgepanel.store import browse, find
    from judgepanel.store.readonly import read_only_engine
    from judgepanel.view.app import create_app

    t = time.perf_counter()
    if reuse:
        print(f"[{label}] the database built by an earlier run ({url})", flush=True)
    else:
        stored = build(url, N, judges=5, humans=3)
        _rationales(url)
        print(
            f"[{label}] built {stored:,} verdicts with rationales in {time.perf_counter() - t:.1f} s",
            flush=True,
        )
    eng = read_only_engine(url)
    rare = f"v{N // 2}"  # one verdict's own word
    with eng.connect() as conn:
        deep = int(conn.execute(text("SELECT max(id) FROM verdict")).scalar() or 0) // 2
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
            "sort by latency, first request": _once(
                lambda: get("/api/campaigns/bench/verdicts?sort=latency&desc=1")
            ),
            "sort by latency, desc": _median(
                lambda: get("/api/campaigns/bench/verdicts?sort=latency&desc=1")
            ),
            "sort by latency, a deep page": _median(
                lambda: get(f"/api/campaigns/bench/verdicts?sort=latency&desc=1&after={deep}")
            ),
            "sort by disagreement, first": _once(
                lambda: get("/api/campaigns/bench/verdicts?sort=disagreement&desc=1")
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
    # reference for the sorts: the page as one SQL top-N sort over the campaign (what each sorted
    # page cost before the kept order), beside the kept order's page
    info = browse.campaign_row(eng, "bench")
    sorted_sql, key = find._base(eng, info, find.VerdictSearch(sort="latency", descending=True))
    sorted_sql = sorted_sql.order_by(key.desc(), text("1")).limit(51)
    with eng.connect() as conn:
        top_n = _median(lambda: conn.execute(sorted_sql).all())
    kept = _median(
        lambda: find.search_page(eng, "bench", find.VerdictSearch(sort="latency", descending=True), limit=50)
    )
    eng.dispose()
    print_server_times(label, rows, 30)
    print(
        f"[{label}] one verdict's word: {mode} {indexed * 1000:.1f} ms vs a LIKE scan {like * 1000:.1f} ms "
        f"(reference, rationales only) -> LIKE / index = {like / indexed:.1f}x",
        flush=True,
    )
    print(
        f"[{label}] sorted by latency: kept order {kept * 1000:.1f} ms vs an SQL top-N sort {top_n * 1000:.1f} ms "
        f"(reference) -> top-N / kept = {top_n / kept:.1f}x ({_load()})",
        flush=True,
    )


def main() -> None:
    backends = os.environ.get("JP_BENCH_FIND_DB", "sqlite,postgresql").split(",")
    keep = os.environ.get("JP_BENCH_FIND_SQLITE_FILE")  # build it once, then measure it again
    if "sqlite" in backends and keep:
        report("sqlite", f"sqlite:///{keep}", reuse=os.path.exists(keep))
    elif "sqlite" in backends:
        with tempfile.TemporaryDirectory() as tmp:
            report("sqlite", f"sqlite:///{tmp}/find.db")
    if "postgresql" in backends:
        on_postgresql(lambda url: report("postgresql", url))


if __name__ == "__main__":
    main()
