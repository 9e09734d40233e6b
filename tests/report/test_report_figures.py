"""The report's figures do not move when its reading and statistics get faster (issue 20 §4).

`data/report_figures.json.gz` holds what `campaign_report` returned (every field of every
dataclass: facts, usage, agreement with bootstrap CIs, κ matrix, clusters, bias, confusion
matrices, the disagreement cases) before the report was rewritten for 10⁶ verdicts (commit
9f46b58), for the demo's two campaigns and two seeded bulk campaigns of 10⁴ verdicts (pointwise
with humans, pairwise in both orders). The new code must give the same figures at 1e-9 relative;
the demo's latencies are timed by the clock when the demo runs, so they are checked against a
direct read of the stored responses instead. The bulk campaigns are also read from PostgreSQL
(server-side cursor).

One figure was changed on purpose since: the demo campaigns' `cached` count per judge (0 → 4),
when identical requests inside one run began to be asked once and answered from the store
(issue 28 §2); every statistic stayed as it was.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from judgepanel.demo import PAIRWISE, POINTWISE
from judgepanel.report.build import campaign_report
from judgepanel.store.engine import make_engine
from judgepanel.store.report import LATENCY_SAMPLE
from tests.helpers import bulk_db

GOLDEN = Path(__file__).with_name("data") / "report_figures.json.gz"
REL = 1e-9


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    with gzip.open(GOLDEN, "rt", encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


def _as_json(x: Any) -> Any:
    """A report as plain JSON values (tuples as lists), as the golden file stores it."""
    return json.loads(json.dumps(dataclasses.asdict(x)))


def _diff(a: Any, b: Any, path: str = "") -> list[str]:
    """Where `a` (new) and `b` (golden) differ; floats at `REL` relative."""
    if isinstance(b, dict):  # fields added since (e.g. `cases_total`) are checked elsewhere
        if not isinstance(a, dict) or not set(b) <= set(a):
            return [f"{path}: keys {sorted(a) if isinstance(a, dict) else a!r} != {sorted(b)}"]
        return [d for k in b for d in _diff(a[k], b[k], f"{path}/{k}")]
    if isinstance(b, list):
        if not isinstance(a, list) or len(a) != len(b):
            return [f"{path}: {len(a) if isinstance(a, list) else a!r} items != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _diff(x, y, f"{path}[{i}]")]
    if isinstance(b, float) and isinstance(a, (int, float)) and not isinstance(a, bool):
        if math.isclose(a, b, rel_tol=REL, abs_tol=1e-12):
            return []
        return [f"{path}: {a!r} != {b!r}"]
    return [] if a == b and type(a) is type(b) else [f"{path}: {a!r} != {b!r}"]


def test_diff_catches_a_last_digit_beyond_tolerance() -> None:
    assert _diff({"x": [1.0, "a"]}, {"x": [1.0 + 1e-12, "a"]}) == []
    assert _diff({"x": [1.0 + 1e-6]}, {"x": [1.0]}) != []
    assert _diff({"x": [1]}, {"x": [1, 2]}) != [] and _diff({"x": "a"}, {"x": "b"}) != []
    assert _diff({"x": 1}, {"x": 1, "y": 2}) != [] and _diff({"x": 1, "new": 0}, {"x": 1}) == []


BULK: dict[str, dict[str, Any]] = {
    "bulk-pointwise": {"judges": 5, "humans": 3},
    "bulk-pairwise": {"judges": 3, "pairwise": True},
}


def _bulk_copy(folder: Path, which: str) -> str:
    """A copy of the bulk campaign `which`, built once per test run whichever xdist worker asks
    first (a module fixture built both campaigns on every worker that ran one of these tests)."""
    url = f"sqlite:///{folder / 'bulk.db'}"
    bulk_db(url, 10_000, **BULK[which])
    return url


@pytest.mark.parametrize("which", ["bulk-pointwise", "bulk-pairwise"])
def test_bulk_report_figures_unchanged(which: str, tmp_path: Path, golden: dict[str, Any]) -> None:
    eng = make_engine(_bulk_copy(tmp_path, which))
    try:
        new = _as_json(campaign_report(eng, "bench", n_boot=200, seed=0, cases=200))
    finally:
        eng.dispose()
    assert _diff(new, golden[which]["bench"]) == []


@pytest.mark.postgres
@pytest.mark.parametrize("pairwise", [False, True], ids=["pointwise", "pairwise"])
def test_bulk_report_figures_unchanged_on_postgres(pairwise: bool, golden: dict[str, Any]) -> None:
    """The same figures when the verdicts stream through PostgreSQL's server-side cursor."""
    from tests.conftest import fresh_pg_database

    which = "bulk-pairwise" if pairwise else "bulk-pointwise"
    with fresh_pg_database() as url:
        bulk_db(url, 10_000, **BULK[which])  # a copy of the run's template of it
        eng = make_engine(url)
        try:
            new = _as_json(campaign_report(eng, "bench", n_boot=200, seed=0, cases=200))
        finally:
            eng.dispose()
    assert _diff(new, golden[which]["bench"]) == []


@pytest.mark.parametrize("campaign", [PAIRWISE, POINTWISE])
def test_demo_report_figures_unchanged(campaign: str, demo_url: str, golden: dict[str, Any]) -> None:
    eng = make_engine(demo_url)
    try:
        report = campaign_report(eng, campaign, n_boot=200, seed=0, cases=200)
        new = _as_json(report)
        # the latencies: every answered, uncached call's, in request order (a reference read)
        with eng.connect() as conn:
            rows = conn.execute(
                text(
                    "select j.name, r.latency_ms from response r join request q on q.id = r.request_id "
                    "join job on job.id = q.job_id join judge j on j.id = job.judge_id "
                    "join campaign c on c.id = job.campaign_id "
                    "where c.name = :c and r.ok and r.cached_from is null and r.latency_ms is not null "
                    "order by q.id"
                ),
                {"c": campaign},
            ).all()
    finally:
        eng.dispose()
    for u in new["facts"]["usage"]:
        expected = [float(lat) for j, lat in rows if j == u["judge"]]
        assert len(expected) <= LATENCY_SAMPLE and u["latencies_ms"] == pytest.approx(expected, rel=REL)
        u["latencies_ms"] = None
    assert _diff(new, golden["demo"][campaign]) == []


def test_page_says_how_many_disagreeing_units_it_leaves_out(tmp_path: Path) -> None:
    from judgepanel.report.render import write_report

    eng = make_engine(_bulk_copy(tmp_path, "bulk-pointwise"))
    try:
        every = campaign_report(eng, "bench", n_boot=20, cases=100_000)
        few = campaign_report(eng, "bench", n_boot=20, cases=10)
        assert few.cases_total == every.cases_total == len(every.cases) > 10
        assert [c.unit for c in few.cases] == [c.unit for c in every.cases[:10]]
        html = write_report(eng, ["bench"], tmp_path / "r.html", n_boot=20, cases=10)
        md = write_report(eng, ["bench"], tmp_path / "r.md", fmt_="md", n_boot=20, cases=10)
    finally:
        eng.dispose()
    omitted = f"{every.cases_total - 10} more where the judges disagree are not"
    for r in (html, md):
        page = Path(r.path).read_text(encoding="utf-8")
        assert omitted in page and "--cases N" in page and "judgepanel view" in page


@pytest.mark.parametrize("pairwise", [False, True], ids=["pointwise", "pairwise"])
def test_campaign_without_accepted_verdicts(pairwise: bool, tmp_path: Path) -> None:
    """Empty arrays all the way through: no judge column, no case, bias over no pair; the humans'
    agreement is still reported (pointwise)."""
    url = f"sqlite:///{tmp_path / 'e.db'}"
    bulk_db(url, 400, judges=2, humans=3, pairwise=pairwise)
    eng = make_engine(url)
    try:
        with eng.begin() as conn:
            conn.execute(text("update verdict set parse_status = 'failed'"))
        r = campaign_report(eng, "bench", n_boot=20)
    finally:
        eng.dispose()
    assert r.versus == [] and r.cases == [] and r.cases_total == 0
    assert not any(n.startswith("j") for n in r.kappa_names)
    assert [u.parse_failures for u in r.facts.usage] == [200, 200]
    if pairwise:
        assert [(b["pairs"], b["back_wins"], b["front_wins"]) for b in r.bias] == [(0, 0, 0), (0, 0, 0)]
    else:
        assert [a.raters for a in r.agreement] == ["humans (3)", "expert (3)"]
