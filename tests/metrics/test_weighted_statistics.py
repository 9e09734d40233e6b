"""The vectorised forms the repair comparison and the condition study share with `metrics agreement`:
weighted Spearman, interval α from moments, contributions summed per group, index draws and
percentile bounds — each against scipy / `krippendorff` on the explicitly expanded resample."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy.stats import spearmanr

from judgepanel.errors import BadInput
from judgepanel.metrics.agreement import (
    interval_alpha_stat,
    krippendorff_alpha,
    spearman,
    spearman_weighted,
    unit_statistic,
)
from judgepanel.metrics.bootstrap import count_matrix, counts_of, percentile_bounds, resample_indices


def test_weighted_spearman_equals_scipy_on_the_expanded_resample() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(1, 6, 40).astype(float)  # many ties
    y = x + rng.normal(0, 1.5, 40).round(1)
    idx = resample_indices(40, 50, 11)
    got = spearman_weighted(x, y, counts_of(idx, 40))
    want = [spearmanr(x[r], y[r])[0] for r in idx]
    assert got == pytest.approx(want, abs=1e-10)


def test_spearman_is_weighted_spearman_with_unit_weights() -> None:
    rng = np.random.default_rng(4)
    x, y = rng.random(25), rng.random(25)
    assert spearman(x, y) == pytest.approx(spearmanr(x, y)[0], abs=1e-12)
    assert spearman_weighted(x, y, np.ones(25))[0] == pytest.approx(spearman(x, y), abs=1e-15)


def test_weighted_spearman_edges() -> None:
    x = np.array([1.0, 2.0, 3.0])
    # total weight below two, a constant side, zero weights elsewhere
    w = np.array([[1.0, 0.0, 0.0], [0.0, 3.0, 0.0], [2.0, 0.0, 1.0]])
    got = spearman_weighted(x, x, w)
    assert np.isnan(got[0]) and np.isnan(got[1]) and got[2] == pytest.approx(1.0)
    assert np.isnan(spearman_weighted(np.zeros(0), np.zeros(0), np.zeros((2, 0)))).all()
    with pytest.raises(BadInput):
        spearman_weighted(x, np.array([1.0, np.nan, 2.0]), np.ones(3))
    with pytest.raises(BadInput):
        spearman_weighted(x, x, np.ones(4))


@pytest.mark.parametrize("missing", [0.0, 0.2])
def test_interval_alpha_from_moments_equals_krippendorff(missing: float) -> None:
    rng = np.random.default_rng(5)
    r = rng.normal(3, 1, size=(60, 3))
    r[rng.random(r.shape) < missing] = np.nan
    want = krippendorff.alpha(reliability_data=r.T, level_of_measurement="interval")
    assert interval_alpha_stat(r).value() == pytest.approx(want, abs=1e-9)
    # > 64 distinct values: krippendorff_alpha takes the same moments path
    assert krippendorff_alpha(r, "interval") == pytest.approx(want, abs=1e-9)


def test_interval_alpha_of_one_value_is_undefined() -> None:
    assert np.isnan(interval_alpha_stat(np.full((5, 2), 2.5)).value())
    assert np.isnan(interval_alpha_stat(np.zeros((0, 2))).value())


def test_contributions_summed_by_group_resample_whole_groups() -> None:
    rng = np.random.default_rng(6)
    units = rng.integers(0, 2, size=(30, 4)).astype(float)  # 10 groups × 3 units, 4 coders
    units[rng.random(units.shape) < 0.1] = np.nan
    group = np.repeat(np.arange(10), 3)
    stat = unit_statistic("alpha", units, [0.0, 1.0], "nominal")
    by = stat.summed_by(group, 10)
    assert by.value() == pytest.approx(stat.value(), abs=1e-12)
    idx = resample_indices(10, 40, 2)
    reps = by.finish(counts_of(idx, 10) @ by.contributions)
    for b, row in enumerate(idx):
        drawn = np.vstack([units[group == g] for g in row])
        want = krippendorff.alpha(reliability_data=drawn.T, level_of_measurement="nominal")
        assert reps[b] == pytest.approx(want, abs=1e-9)
    with pytest.raises(BadInput):
        stat.summed_by(group[:-1], 10)


def test_index_draws_are_the_counted_draws() -> None:
    idx = resample_indices(7, 30, 5)
    assert idx.shape == (30, 7)
    assert (counts_of(idx, 7) == count_matrix(7, 30, 5)).all()
    assert resample_indices(0, 3, 1).shape == (3, 0)
    assert count_matrix(0, 3, 1).shape == (3, 0)


def test_percentile_bounds() -> None:
    reps = np.r_[np.arange(101.0), np.nan, np.nan]
    assert percentile_bounds(reps) == pytest.approx((2.5, 97.5))
    assert percentile_bounds(reps, 0.5) == pytest.approx((25.0, 75.0))
    assert percentile_bounds(np.array([1.0, np.nan])) is None
