"""TOST against statsmodels, and its edge cases."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.weightstats import ttost_paired

from judgepanel.errors import BadInput
from judgepanel.metrics.equivalence import bootstrap_tost, tost


@pytest.mark.parametrize("shift", [0.0, 0.05, 0.3])
def test_tost_equals_statsmodels_ttost_paired(shift: float) -> None:
    rng = np.random.default_rng(int(shift * 100))
    x2 = rng.normal(0, 1, 40)
    x1 = x2 + shift + rng.normal(0, 0.4, 40)
    d = x1 - x2
    p, (_t1, p1, df1), (_t2, p2, _df2) = ttost_paired(x1, x2, -0.2, 0.2)
    assert df1 == d.size - 1
    got = tost(float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size)), -0.2, 0.2, df=d.size - 1)
    assert got.p == pytest.approx(p, abs=1e-12)
    assert (got.p_lower, got.p_upper) == pytest.approx((p1, p2), abs=1e-12)
    # the interval-inclusion principle: equivalent exactly when the 90 % interval lies in the margin
    assert got.equivalent == (got.ci[0] > -0.2 and got.ci[1] < 0.2)


def test_tost_edges() -> None:
    assert tost(0.0, 0.0, -0.1, 0.1).equivalent  # no spread, inside the margin
    assert not tost(0.2, 0.0, -0.1, 0.1).equivalent
    nan = tost(float("nan"), 0.1, -0.1, 0.1)
    assert np.isnan(nan.p) and not nan.equivalent
    assert np.isnan(tost(0.0, float("nan"), -0.1, 0.1).p)
    with pytest.raises(BadInput):
        tost(0.0, 0.1, 0.1, -0.1)
    with pytest.raises(BadInput):
        bootstrap_tost(0.0, np.zeros(10), 0.0)
    d = tost(0.01, 0.02, -0.05, 0.05).as_dict()
    assert d["margin"] == 0.05 and set(d) == {
        "margin",
        "ci90",
        "p",
        "equivalent",
        "se",
        "df",
        "detectable_margin",
        "power",
    }


def test_bootstrap_tost_uses_the_replicates_spread() -> None:
    rng = np.random.default_rng(1)
    reps = rng.normal(0.01, 0.02, 4000)
    reps[:5] = np.nan
    got = bootstrap_tost(0.01, reps, 0.05)
    assert got.se == pytest.approx(np.nanstd(reps, ddof=1), rel=1e-12)
    assert got.equivalent and got.p == pytest.approx(tost(0.01, got.se, -0.05, 0.05).p)
    assert not bootstrap_tost(0.01, reps * 5, 0.05).equivalent
