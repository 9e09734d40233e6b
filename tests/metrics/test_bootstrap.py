"""Unit-resampling bootstrap: replicates equal the reference computed on explicit resamples,
intervals cover, BCa agrees with percentile where it should, paired differences, determinism."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pandas as pd
import pytest
from irrCAC.raw import CAC
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from judgepanel.errors import BadInput
from judgepanel.metrics.agreement import UnitStatistic, agreement, unit_statistic
from judgepanel.metrics.bootstrap import (
    ConfidenceInterval,
    bootstrap_ci,
    bootstrap_replicates,
    count_matrix,
    interval,
    jackknife,
    paired_bootstrap,
    paired_bootstrap_ci,
    statistic_ci,
)
from tests.metrics.test_agreement import random_ratings

SCALE = np.arange(1.0, 6.0)


def _resampled(ratings: np.ndarray, counts: np.ndarray) -> np.ndarray:
    return np.repeat(ratings, counts.astype(int), axis=0)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_replicates_equal_krippendorff_on_the_same_resamples(level: str) -> None:
    r = random_ratings(1, units=40, raters=4, missing=0.3)
    reps = bootstrap_replicates(unit_statistic("alpha", r, SCALE, level), 15, seed=3)
    counts = count_matrix(r.shape[0], 15, seed=3)
    for b in range(15):
        sample = _resampled(r, counts[b])
        expected = krippendorff.alpha(sample.T, level_of_measurement=level, value_domain=SCALE)
        assert reps[b] == pytest.approx(expected, abs=1e-10)


def test_kappa_family_replicates_equal_references_on_the_same_resamples() -> None:
    r = random_ratings(2, units=50, raters=3, missing=0.2)
    counts = count_matrix(r.shape[0], 8, seed=5)
    fleiss = bootstrap_replicates(unit_statistic("fleiss", r, SCALE), 8, seed=5)
    ac1 = bootstrap_replicates(unit_statistic("ac1", r, SCALE, "interval"), 8, seed=5)
    cohen = bootstrap_replicates(unit_statistic("cohen-quadratic", r[:, :2], SCALE), 8, seed=5)
    for b in range(8):
        sample = _resampled(r, counts[b])
        kept = sample[~np.isnan(sample).all(axis=1)]
        cac = CAC(pd.DataFrame(kept), categories=list(SCALE), digits=14)
        assert fleiss[b] == pytest.approx(cac.fleiss()["est"]["coefficient_value"], abs=1e-12)
        wac = CAC(pd.DataFrame(kept), weights="quadratic", categories=list(SCALE), digits=14)
        assert ac1[b] == pytest.approx(wac.gwet()["est"]["coefficient_value"], abs=1e-12)
        two = sample[:, :2][~np.isnan(sample[:, :2]).any(axis=1)]
        ref = cohen_kappa_score(two[:, 0], two[:, 1], labels=SCALE, weights="quadratic")
        assert cohen[b] == pytest.approx(ref, abs=1e-12)


def test_counts_are_multinomial_resamples() -> None:
    counts = count_matrix(37, 500, seed=0)
    assert counts.shape == (500, 37)
    assert (counts.sum(axis=1) == 37).all()
    assert counts.mean() == pytest.approx(1.0)
    assert counts.var() == pytest.approx(1 - 1 / 37, rel=0.1)  # multinomial variance n·p(1−p)


def test_jackknife_leaves_each_unit_out() -> None:
    r = random_ratings(3, units=25, raters=3, missing=0.2)
    stat = unit_statistic("alpha", r, SCALE, "ordinal")
    jack = jackknife(stat)
    for i in (0, 7, 24):
        expected = agreement("alpha", np.delete(r, i, axis=0), SCALE, "ordinal").value
        assert jack[i] == pytest.approx(expected, abs=1e-12)


def test_same_seed_same_interval_other_seed_other_interval() -> None:
    r = random_ratings(4, units=120, raters=4, missing=0.2)
    one = bootstrap_ci("alpha", r, SCALE, level="interval", n_boot=300, seed=11, method="bca")
    two = bootstrap_ci("alpha", r, SCALE, level="interval", n_boot=300, seed=11, method="bca")
    other = bootstrap_ci("alpha", r, SCALE, level="interval", n_boot=300, seed=12, method="bca")
    assert one == two
    assert (one.lo, one.hi) != (other.lo, other.hi)
    assert isinstance(one, ConfidenceInterval) and one.n_boot == 300 and one.level == 0.95


def _two_raters(rng: np.random.Generator, n: int) -> np.ndarray:
    """Binary raters with P(copy) = 0.6 and fair coins otherwise: population κ = 0.6."""
    a = rng.integers(0, 2, n)
    b = np.where(rng.random(n) < 0.6, a, rng.integers(0, 2, n))
    return np.column_stack([a, b]).astype(float)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_coverage_of_kappa_on_synthetic_raters(method: str) -> None:
    rng = np.random.default_rng(2024)
    hits = 0
    sims = 120
    for i in range(sims):
        ci = bootstrap_ci("cohen", _two_raters(rng, 300), [0, 1], n_boot=300, seed=i, method=method)
        hits += ci.contains(0.6)
    # nominal 95 %: with 120 simulations the binomial 99 % range is roughly 0.90–0.99
    assert 0.88 <= hits / sims <= 0.995


def test_bca_and_percentile_agree_on_a_symmetric_case() -> None:
    # observed agreement near 0.5 over many units: a nearly symmetric, unbiased sampling distribution
    rng = np.random.default_rng(9)
    a = rng.integers(0, 2, 3000).astype(float)
    b = rng.integers(0, 2, 3000).astype(float)
    r = np.column_stack([a, b])
    pct = bootstrap_ci("percent", r, n_boot=2000, seed=1)
    bca = bootstrap_ci("percent", r, n_boot=2000, seed=1, method="bca")
    assert bca.lo == pytest.approx(pct.lo, abs=0.003)
    assert bca.hi == pytest.approx(pct.hi, abs=0.003)


def test_bca_matches_scipy_on_a_skewed_mean() -> None:
    # the mean as a unit statistic (Σx / Σ1): our BCa against scipy.stats.bootstrap's, both with
    # many replicates, on a skewed sample where BCa and percentile differ a lot
    x = np.random.default_rng(5).lognormal(sigma=1.2, size=40)
    stat = UnitStatistic(np.column_stack([x, np.ones_like(x)]), lambda s: s[:, 0] / s[:, 1], 40)
    ours = statistic_ci(stat, n_boot=20000, method="bca", seed=2)
    ref = stats.bootstrap(
        (x,), np.mean, n_resamples=20000, method="BCa", random_state=np.random.default_rng(3)
    )
    assert ours.lo == pytest.approx(ref.confidence_interval.low, rel=0.03)
    assert ours.hi == pytest.approx(ref.confidence_interval.high, rel=0.03)
    pct = statistic_ci(stat, n_boot=20000, method="percentile", seed=2)
    assert ours.hi - pct.hi > 0.1  # the correction matters here


def test_paired_difference_of_identical_conditions_is_zero() -> None:
    r = random_ratings(6, units=100, raters=4, missing=0.2)
    for method in ("percentile", "bca"):
        d = paired_bootstrap("alpha", r, r.copy(), SCALE, n_boot=300, seed=0, method=method)
        assert d.estimate == 0.0 and d.ci.lo == 0.0 and d.ci.hi == 0.0
    # two conditions from one process, different noise: the CI still contains 0
    rng = np.random.default_rng(8)
    truth = rng.integers(1, 6, 400)
    a = np.clip(truth[:, None] + rng.integers(-1, 2, (400, 3)), 1, 5).astype(float)
    b = np.clip(truth[:, None] + rng.integers(-1, 2, (400, 3)), 1, 5).astype(float)
    ci = paired_bootstrap_ci("alpha", a, b, SCALE, level="interval", n_boot=500, seed=1)
    assert ci.contains(0.0)


def test_paired_difference_detects_a_better_condition_and_beats_unpaired() -> None:
    # condition b is condition a with a fifth of the ratings scrambled: both depend on the same
    # units (which are easy, which are hard), which a paired resample holds fixed
    rng = np.random.default_rng(10)
    truth = rng.integers(1, 6, 300)
    easy = rng.random(300) < 0.5
    a = np.clip(truth[:, None] + rng.integers(-1, 2, (300, 3)) * ~easy[:, None], 1, 5).astype(float)
    b = np.where(rng.random((300, 3)) < 0.2, rng.integers(1, 6, (300, 3)), a).astype(float)
    d = paired_bootstrap("fleiss", a, b, SCALE, n_boot=500, seed=2)
    assert d.estimate > 0 and d.ci.lo > 0
    # resampling the two conditions independently ignores what the units share: a wider interval
    ra = bootstrap_replicates(unit_statistic("fleiss", a, SCALE), 500, seed=3)
    rb = bootstrap_replicates(unit_statistic("fleiss", b, SCALE), 500, seed=4)
    unpaired = interval(ra - rb, d.estimate)
    assert d.ci.hi - d.ci.lo < 0.8 * (unpaired.hi - unpaired.lo)


@pytest.mark.parametrize("metric", ["spearman", "kendall"])
def test_rank_correlations_bootstrap_by_loop(metric: str) -> None:
    r = random_ratings(7, units=80, raters=2, missing=0.1)
    ci = bootstrap_ci(metric, r, n_boot=200, seed=4, method="bca")
    assert ci == bootstrap_ci(metric, r, n_boot=200, seed=4, method="bca")
    assert ci.contains(agreement(metric, r).value)
    d = paired_bootstrap(metric, r, r, n_boot=50, seed=0)
    assert d.estimate == 0.0 and d.ci.as_list() == [0.0, 0.0]


def test_undefined_estimate_gives_nan_interval() -> None:
    r = np.full((30, 3), 2.0)
    ci = bootstrap_ci("fleiss", r, SCALE, n_boot=100, seed=0)
    assert math.isnan(ci.lo) and math.isnan(ci.hi)
    # perfect agreement on two categories: every replicate is 1 (or undefined) -> [1, 1]
    r2 = np.repeat(np.array([[1.0], [2.0]] * 20), 3, axis=1)
    for method in ("percentile", "bca"):
        ci2 = bootstrap_ci("alpha", r2, SCALE, n_boot=200, seed=0, method=method)
        assert (ci2.lo, ci2.hi) == (1.0, 1.0)


def test_bad_arguments() -> None:
    r = random_ratings(0, units=10, raters=2)
    with pytest.raises(BadInput, match="at least 1"):
        bootstrap_ci("alpha", r, SCALE, n_boot=0)
    with pytest.raises(BadInput, match="between 0 and 1"):
        bootstrap_ci("alpha", r, SCALE, confidence=95)
    with pytest.raises(BadInput, match="unknown interval method"):
        bootstrap_ci("alpha", r, SCALE, method="studentized")
    with pytest.raises(BadInput, match="same units"):
        paired_bootstrap_ci("alpha", r, r[:5], SCALE)
