"""Entropies, rank correlations and expected calibration error, against hand computations and
scipy/sklearn references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import entropy, kendalltau, spearmanr
from sklearn.calibration import calibration_curve

from judgepanel.metrics.uncertainty import (
    expected_calibration_error,
    posterior_entropy,
    rank_correlation,
    vote_entropy,
)


def test_vote_entropy_by_hand() -> None:
    values = np.array([[0, 0, 0], [0, 1, np.nan], [0, 1, 2], [np.nan, np.nan, np.nan], [2, 2, 1]])
    h = vote_entropy(values, 3)
    assert h[0] == 0.0
    assert h[1] == pytest.approx(math.log(2))
    assert h[2] == pytest.approx(math.log(3))
    assert np.isnan(h[3])
    assert h[4] == pytest.approx(-(2 / 3) * math.log(2 / 3) - (1 / 3) * math.log(1 / 3))
    # unused categories do not change an entropy
    assert np.allclose(vote_entropy(values, 5)[[0, 1, 2, 4]], h[[0, 1, 2, 4]])


def test_posterior_entropy_matches_scipy() -> None:
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(4), size=50)
    p[0] = [1, 0, 0, 0]
    assert np.allclose(posterior_entropy(p), entropy(p, axis=1))
    assert posterior_entropy(np.array([[np.nan, np.nan]]))[0] != posterior_entropy(np.array([[0.5, 0.5]]))[0]


def test_rank_correlation_matches_scipy_and_drops_nan() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=80)
    y = -x + rng.normal(scale=0.7, size=80)
    x[3] = np.nan
    y[10] = np.inf
    rc = rank_correlation(x, y)
    ok = np.isfinite(x) & np.isfinite(y)
    rho, rho_p = spearmanr(x[ok], y[ok])
    tau, tau_p = kendalltau(x[ok], y[ok])
    assert rc.n == 78
    assert rc.spearman == pytest.approx(rho) and rc.spearman_p == pytest.approx(rho_p)
    assert rc.kendall == pytest.approx(tau) and rc.kendall_p == pytest.approx(tau_p)
    assert rc.spearman < -0.5
    # constant input or too few units: NaN, without scipy's ConstantInputWarning
    flat = rank_correlation(np.ones(10), np.arange(10.0))
    assert math.isnan(flat.spearman) and flat.n == 10
    assert math.isnan(rank_correlation([1.0, 2.0], [2.0, 1.0]).kendall)


def test_ece_by_hand() -> None:
    # five units, three bins; confidences 0.9, 0.8, 0.6, 0.5, 0.4
    post = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.5, 0.5], [0.4, 0.3]])
    post[4] = [0.4, 0.6]  # confidence 0.6 on category 1
    labels = np.array([0, 0, 0, 1, 1])
    cal = expected_calibration_error(post, labels, n_bins=3)
    # bins (0, 1/3], (1/3, 2/3], (2/3, 1]:
    #   bin 2: units 0 (0.9, right) and 1 (0.8, wrong: predicted 1): acc 0.5, conf 0.85
    #   bin 1: units 2 (0.6, right), 3 (0.5, predicted 0 on the tie, wrong), 4 (0.6, right):
    #          acc 2/3, conf 1.7/3
    expected = 2 / 5 * abs(0.5 - 0.85) + 3 / 5 * abs(2 / 3 - 1.7 / 3)
    assert cal.ece == pytest.approx(expected)
    assert list(cal.bin_counts) == [0, 3, 2]
    assert cal.n == 5
    d = cal.as_dict()
    assert [b["n"] for b in d["bins"]] == [3, 2]  # type: ignore[index]


def test_ece_edges() -> None:
    post = np.array([[0.3, 0.7], [0.7, 0.3], [0.5, 0.5]])
    # a confidence on a bin edge (0.7 · 10 = 7.000000000000001) goes to the bin it closes
    cal = expected_calibration_error(post, [1, 0, -1], n_bins=10)
    assert cal.bin_counts[6] == 2 and cal.n == 2
    assert cal.ece == pytest.approx(0.3)
    assert math.isnan(expected_calibration_error(post, [np.nan, np.nan, np.nan]).ece)
    perfect = expected_calibration_error(np.array([[1.0, 0.0], [0.0, 1.0]]), [0, 1])
    assert perfect.ece == 0.0
    with pytest.raises(ValueError):
        expected_calibration_error(post, [0, 1])


def test_ece_agrees_with_sklearn_reliability_curve() -> None:
    # binary case: sklearn's calibration_curve bins P(class 1); with equal-width bins over the
    # positive-class probability and confidence >= 0.5 everywhere the reliability table differs,
    # so compare the per-bin means on the positive class instead
    rng = np.random.default_rng(4)
    p1 = rng.uniform(0.5, 1.0, size=400)
    y = (rng.random(400) < p1).astype(int)
    post = np.stack([1 - p1, p1], axis=1)
    cal = expected_calibration_error(post, y, n_bins=10)
    frac_pos, mean_pred = calibration_curve(y, p1, n_bins=10, strategy="uniform")
    ours = cal.bin_counts > 0
    assert np.allclose(cal.bin_accuracy[ours], frac_pos, atol=1e-12)
    assert np.allclose(cal.bin_confidence[ours], mean_pred, atol=1e-12)
