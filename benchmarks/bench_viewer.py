"""`judgepanel view` over 10⁶ stored verdicts: server time of the verdict table's pages.

The million-verdict campaign of `bench_million` (the same bulk builder: 5 judges, every pair in
both orders; `JP_BENCH_VIEWER_N` to change N, `JP_BENCH_VIEWER_DB=sqlite|postgresql` for one
backend; PostgreSQL when `JUDGEPANEL_TEST_PG_URL` is set). The viewer app runs in-process over the
read-only engine it uses in production, and each request goes through the whole ASGI stack
(routing, the token/host gate, the query, JSON). Reported, median of `REPEATS` requests each:

- the first page of `/api/campaigns/bench/verdicts` (50 rows), and of `/campaigns/bench/verdicts`
  (the HTML page);
- a page 90 % of the way through the table by keyset (`after=`), and a filtered first page
  (one judge, BA order);
- the reference: the same 50 rows fetched with OFFSET 90 % into the table (what paging by page
  number does), measured in the same run; the ratio says what keyset paging saves.

Run: `python -m benchmarks viewer`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from sqlalchemy import text

from benchmarks.backends import median_seconds, on_each_backend, print_server_times
from benchmarks.bulk import build

N = int(os.environ.get("JP_BENCH_VIEWER_N", "1000000"))
JUDGES = 5
REPEATS = 5


def _median(fn: Callable[[], object]) -> float:
    return median_seconds(fn, REPEATS)


def report(label: str, url: str) -> None:
    from starlette.testclient import TestClient

    from judgepanel.store import browse, find
    from judgepanel.store.readonly import read_only_engine
    from judgepanel.view.app import create_app

    t = time.perf_counter()
    stored = build(url, N, judges=JUDGES, pairwise=True)
    print(
        f"[{label}] built {stored:,} verdicts ({JUDGES} judges, AB + BA) in {time.perf_counter() - t:.1f} s"
    )
    eng = read_only_engine(url)
    with eng.connect() as conn:
        ids = [r[0] for r in conn.execute(text("SELECT id FROM verdict ORDER BY id"))]
        judge = conn.execute(text("SELECT name FROM judge ORDER BY id DESC LIMIT 1")).scalar()
    deep = int(len(ids) * 0.9)
    with TestClient(create_app(eng), base_url="http://127.0.0.1") as c:

        def get(path: str) -> None:
            r = c.get(path)
            assert r.status_code == 200, (path, r.text[:200])

        get("/api/campaigns/bench/verdicts")  # warm the page cache and the app
        rows: dict[str, float] = {
            "first page (JSON)": _median(lambda: get("/api/campaigns/bench/verdicts")),
            "first page (HTML)": _median(lambda: get("/campaigns/bench/verdicts")),
            "page at 90 % by keyset": _median(
                lambda: get(f"/api/campaigns/bench/verdicts?after={ids[deep - 1]}")
            ),
            "first page, one judge, BA": _median(
                lambda: get(f"/api/campaigns/bench/verdicts?judge={judge}&order=BA")
            ),
        }
        keyset = _median(lambda: find.search_page(eng, "bench", find.VerdictSearch(), after=ids[deep - 1]))
        offset = _median(lambda: browse.verdict_page_offset(eng, "bench", offset=deep))
        assert browse.verdict_page_offset(eng, "bench", offset=deep) == ids[deep : deep + 50]
    eng.dispose()
    print_server_times(label, rows, 28)
    print(
        f"[{label}] the 90 % page's query: keyset {keyset * 1000:.1f} ms vs OFFSET {offset * 1000:.1f} ms "
        f"(reference) -> OFFSET / keyset = {offset / keyset:.0f}x",
        flush=True,
    )


def main() -> None:
    on_each_backend("JP_BENCH_VIEWER_DB", "viewer.db", lambda label, url, _tmp: report(label, url))


if __name__ == "__main__":
    main()
