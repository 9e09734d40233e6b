"""Campaign judges reach `metrics agreement` in a fresh process.

The judges' rater columns come from a source that registers itself when
`store.campaigns.readers` is imported. Since the CLI imports lazily, a fresh
`judgepanel metrics agreement --pairs P --group judge` never imported that module and answered
"no judges here" over a finished pairwise campaign; building a matrix now imports it. The campaign
is the one `benchmarks/bench_million.py` bulk-generates (`benchmarks.bulk.build`, pairwise) (also checked here at a small N), and the
combined AB/BA labels are cross-checked against `krippendorff.alpha`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import krippendorff
import numpy as np
from sqlalchemy import select

from benchmarks.bench_million import measure
from judgepanel.protocol.pairs import as_label, combine_orders
from judgepanel.store.engine import make_engine
from judgepanel.store.models import Job, Judge, Verdict
from tests.helpers import bulk_db


def _cli(url: str, *args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "judgepanel", "--db", url, *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    out: dict[str, object] = json.loads(done.stdout)
    return out


def _reference_alpha(url: str) -> float:
    eng = make_engine(url)
    with eng.connect() as conn:
        rows = conn.execute(
            select(Judge.name, Job.pair_id, Job.order, Verdict.value_canonical)
            .join(Judge, Judge.id == Job.judge_id)
            .join(Verdict, Verdict.job_id == Job.id)
        ).all()
    eng.dispose()
    by: dict[tuple[str, int], dict[str, str]] = {}
    for name, pid, order, canon in rows:
        by.setdefault((name, pid), {})[order] = canon
    judges = sorted({k[0] for k in by})
    pairs = sorted({k[1] for k in by})
    codes = {"A": 0.0, "B": 1.0, "T": 2.0}
    data = np.full((len(judges), len(pairs)), np.nan)
    for (name, pid), o in by.items():
        label = as_label(combine_orders(o.get("AB"), o.get("BA")))
        if label is not None:
            data[judges.index(name), pairs.index(pid)] = codes[label]
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


def test_fresh_agreement_sees_campaign_judges(db_url: str) -> None:
    stored = bulk_db(db_url, 240, judges=3, pairwise=True)
    assert stored == 240
    got = _cli(
        db_url,
        "metrics",
        "agreement",
        "--pairs",
        "bench-pairs",
        "--group",
        "judge",
        "--metric",
        "alpha",
        "--json",
    )
    assert got["raters"] == [f"j{j}@bench" for j in range(3)]  # short names (issue 19 §3)
    assert got["n_units"] == 40
    assert abs(float(got["value"]) - _reference_alpha(db_url)) < 1e-9  # type: ignore[arg-type]
    bias = _cli(db_url, "metrics", "bias", "--campaign", "bench", "--json")
    assert {j: b["pairs"] for j, b in bias["judges"].items()} == {f"j{j}": 40 for j in range(3)}  # type: ignore[attr-defined]


def test_bench_measure_reports_own_peak(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    bulk_db(url, 40, judges=2, pairwise=True)
    wall, cpu, peak = measure(
        url, "export", "bench", "--format", "csv", "--out", str(tmp_path / "v.csv"), "--json"
    )
    assert wall > 0 and cpu > 0 and peak > 0
    assert len((tmp_path / "v.csv").read_text().splitlines()) == 41  # header + 40 verdicts
