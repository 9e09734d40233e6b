"""Issue 28 §5: under a tight cap one judge got 50 of 80 jobs, another 7, the third none — the
money bought nothing a metric could use. A capped run now buys whole units (every job asked about
an item: each judge, each condition), so what it leaves is complete units and untouched ones."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from sqlalchemy import select

from judgepanel.store.engine import make_engine
from judgepanel.store.models import Job
from tests.helpers import cli
from tests.runner.conftest import create_argv, tiny_db

# three judges at different speeds and prices: the fast, cheap one would run ahead
JUDGES = (
    "sim:fast?price_in=300&price_out=300&latency=0.001",
    "sim:mid?price_in=500&price_out=500&latency=0.02",
    "sim:slow?price_in=800&price_out=800&latency=0.06",
)


def _database(path: Path) -> str:
    url = f"sqlite:///{path}"
    eng = tiny_db(url, n_groups=2, per_group=6)
    eng.dispose()
    return url


def test_a_capped_run_leaves_complete_units(tmp_path: Path) -> None:
    # what the whole campaign costs, measured on a copy in another database (no shared cache)
    probe = _database(tmp_path / "probe.db")
    assert cli(*create_argv("c", *JUDGES), db=probe).code == 0
    full = cli("campaign", "run", "c", "--json", db=probe).json()
    assert full["status"] == "done" and full["spent_usd"] > 0
    cap = 0.45 * full["spent_usd"]

    url = _database(tmp_path / "capped.db")
    assert cli(*create_argv("c", *JUDGES, extra=("--max-cost", f"{cap:.10f}")), db=url).code == 0
    out = cli("campaign", "run", "c", "--concurrency", "4", "--json", db=url)
    assert out.code == 3, out.stderr
    got = out.json(code=3)
    assert got["status"] == "budget" and 0 < got["done"] < got["jobs"]
    assert got["spent_usd"] <= cap + 1e-9

    eng = make_engine(url)
    with eng.connect() as c:
        rows = c.execute(select(Job.item_id, Job.judge_id, Job.status)).all()
    eng.dispose()
    by_item: dict[int, Counter[str]] = defaultdict(Counter)
    per_judge: Counter[int] = Counter()
    for item, judge, status in rows:
        by_item[item][status] += 1
        if status == "done":
            per_judge[judge] += 1
    complete = [i for i, n in by_item.items() if n["done"] == len(JUDGES)]
    untouched = [i for i, n in by_item.items() if n["done"] == 0]
    assert len(complete) + len(untouched) == len(by_item), dict(by_item)  # no partial unit
    assert complete and untouched
    assert len(set(per_judge.values())) == 1  # every judge answered the same items
    # the bought units are worth most of the cap: at least 60 % of it was spent on whole units
    assert got["spent_usd"] >= 0.6 * cap


def test_a_cap_that_buys_no_unit_sends_nothing(tmp_path: Path) -> None:
    url = _database(tmp_path / "tiny-cap.db")
    assert cli(*create_argv("c", *JUDGES, extra=("--max-cost", "0.0001")), db=url).code == 0
    out = cli("campaign", "run", "c", "--json", db=url)
    assert out.code == 3 and out.json(code=3)["done"] == 0 and out.json(code=3)["calls"] == 0
