"""The report's hand-written SVG plots (issue 20 §4: matplotlib's import and drawing cost about a
second per report): the box plot draws what matplotlib's `boxplot` would, names are escaped, and
a pointwise report no longer imports matplotlib at all."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
from matplotlib import cbook

from judgepanel.report.plots import box_stats, kappa_heatmap, latency_plot
from tests.conftest import REPO
from tests.helpers import bulk_db


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_box_stats_match_matplotlib(seed: int) -> None:
    rng = np.random.default_rng(seed)
    # a long right tail (as latencies have) and a few low outliers
    d = np.concatenate([rng.lognormal(0.0, 0.6, 400), [0.001, 0.002], rng.uniform(20, 30, 5)])
    ref = cbook.boxplot_stats(d)[0]
    q1, med, q3, lo, hi, fliers = box_stats(d)
    assert (q1, med, q3, lo, hi) == pytest.approx(
        (ref["q1"], ref["med"], ref["q3"], ref["whislo"], ref["whishi"]), rel=1e-12
    )
    assert sorted(fliers) == pytest.approx(sorted(ref["fliers"].tolist()), rel=1e-12)
    assert box_stats([2.0]) == (2.0, 2.0, 2.0, 2.0, 2.0, [])


def test_latency_plot_marks_the_median_and_escapes_names() -> None:
    svg = latency_plot(["<b>j</b>", "k"], [[100.0, 200.0, 300.0, 400.0, 500.0], []])
    assert svg is not None and svg.startswith("<svg") and svg.endswith("</svg>")
    assert "&lt;b&gt;j&lt;/b&gt;" in svg and "<b>" not in svg
    assert svg.count("<rect") == 2  # the frame and one box (the judge without latencies has none)
    # the median line (stroke width 1.6) sits at 0.3 s on an axis whose ticks name 0.1 … 0.5
    ticks = {
        float(t): float(x)
        for x, t in re.findall(
            r'<text x="([\d.]+)" y="[\d.]+" text-anchor="middle" fill="currentColor">([\d.]+)</text>', svg
        )
    }
    median_x = float(re.search(r'<line x1="([\d.]+)"[^>]*stroke-width="1.6"', svg).group(1))  # type: ignore[union-attr]
    assert median_x == pytest.approx(ticks[0.3], abs=0.1)
    assert latency_plot(["a"], [[]]) is None


def test_kappa_heatmap_cells_values_and_escaping() -> None:
    svg = kappa_heatmap(
        ["a", "<script>", "c"], [[1.0, 0.5, None], [0.5, 1.0, -0.25], [None, -0.25, 1.0]], ["x", "y", "judge"]
    )
    assert "<script>" not in svg and "&lt;script&gt; (y)" in svg
    values = re.findall(r">(-?\d\.\d\d)</text>", svg)
    assert sorted(values) == sorted(["1.00", "0.50", "0.50", "1.00", "-0.25", "-0.25", "1.00"])
    # κ = 1 is the palette's darkest purple, −0.25 an orange, 0.5 a light purple
    assert 'fill="rgb(45,0,75)"' in svg and "Cohen κ" in svg


def test_pointwise_report_does_not_import_matplotlib(tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/b.db"
    bulk_db(url, 2_000, judges=2, humans=2)
    code = (
        "import sys\n"
        "from judgepanel.report.render import write_report\n"
        "from judgepanel.store.engine import make_engine\n"
        f"r = write_report(make_engine({url!r}), ['bench'], {str(tmp_path) + '/r.html'!r})\n"
        "assert r.plots >= 2, r\n"
        "print('matplotlib' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
