"""Rogan–Gladen corrected prevalence, cross-checked against `judgy` and by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from judgy import estimate_success_rate

from judgepanel.errors import BadInput
from judgepanel.metrics.prevalence import corrected_prevalence, rogan_gladen


def _panel(seed: int, n_l: int, n_u: int, theta: float, tpr: float, tnr: float):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    truth = rng.random(n_l + n_u) < theta
    judge = np.where(truth, rng.random(truth.size) < tpr, rng.random(truth.size) >= tnr)
    return truth[:n_l].astype(int), judge[:n_l].astype(int), judge[n_l:].astype(int)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_point_estimate_equals_judgy_and_ci_agrees(seed: int) -> None:
    h, jl, ju = _panel(seed, 300, 2000, 0.35, 0.85, 0.8)
    ours = corrected_prevalence(h, jl, ju, n_boot=20000, seed=seed, resample_unlabelled=False)
    np.random.seed(seed)  # judgy draws from numpy's global generator
    theta, lo, hi = estimate_success_rate(h, jl, np.concatenate([jl, ju]), bootstrap_iterations=20000)
    assert ours.corrected_rate == pytest.approx(theta, abs=1e-12)
    assert ours.ci is not None
    assert ours.ci[0] == pytest.approx(lo, abs=0.01) and ours.ci[1] == pytest.approx(hi, abs=0.01)


def test_resampling_the_unlabelled_items_widens_the_interval() -> None:
    h, jl, ju = _panel(5, 200, 300, 0.5, 0.9, 0.85)
    fixed = corrected_prevalence(h, jl, ju, n_boot=5000, resample_unlabelled=False)
    both = corrected_prevalence(h, jl, ju, n_boot=5000)
    assert fixed.ci and both.ci
    assert both.ci[1] - both.ci[0] > fixed.ci[1] - fixed.ci[0]
    assert both.corrected_rate == fixed.corrected_rate


def test_formula_by_hand() -> None:
    # 2×2: TP 40, FN 10, FP 15, TN 35 → TPR 0.8, TNR 0.7; unlabelled: 30 pass of 100
    h = [1] * 50 + [0] * 50
    jl = [1] * 40 + [0] * 10 + [1] * 15 + [0] * 35
    ju = [1] * 30 + [0] * 70
    est = corrected_prevalence(h, jl, ju, n_boot=0)
    raw = (55 + 30) / 200
    assert (est.tpr, est.tnr, est.raw_rate) == (pytest.approx(0.8), pytest.approx(0.7), pytest.approx(raw))
    assert est.corrected_rate == pytest.approx((raw + 0.7 - 1) / (0.8 + 0.7 - 1))
    assert est.ci is None and est.warning is None
    assert rogan_gladen(0.05, 0.9, 0.9) == 0.0  # clipped below
    assert rogan_gladen(0.99, 0.9, 0.9) == 1.0  # clipped above


def test_coverage_by_simulation() -> None:
    """The bootstrap interval covers the true pass rate of the population about 95 % of the time."""
    hits, runs = 0, 150
    for seed in range(runs):
        h, jl, ju = _panel(100 + seed, 200, 800, 0.3, 0.85, 0.9)
        est = corrected_prevalence(h, jl, ju, n_boot=800, seed=seed)
        assert est.ci is not None
        hits += est.ci[0] <= 0.3 <= est.ci[1]
    assert 0.88 <= hits / runs <= 0.99


def test_undefined_and_unstable_cases_say_so() -> None:
    one_class = corrected_prevalence([1, 1, 1], [1, 0, 1], [1, 0], n_boot=100)
    assert math.isnan(one_class.corrected_rate) and one_class.ci is None
    assert "only one human class" in (one_class.warning or "")
    chance = corrected_prevalence([1, 1, 0, 0], [1, 0, 1, 0], [1], n_boot=100)
    assert math.isnan(chance.corrected_rate) and "no better than chance" in (chance.warning or "")
    h, jl, ju = _panel(9, 400, 400, 0.5, 0.58, 0.55)
    weak = corrected_prevalence(h, jl, ju, n_boot=200)
    assert "near 0" in (weak.warning or "") or "no better than chance" in (weak.warning or "")
    perfect = corrected_prevalence([1, 0, 1, 0], [1, 0, 1, 0], [1, 1, 0], n_boot=200)
    assert perfect.corrected_rate == pytest.approx(perfect.raw_rate)
    assert perfect.as_dict()["ci"] is not None


def test_bad_input() -> None:
    with pytest.raises(BadInput):
        corrected_prevalence([1, 0], [1], [0])
    with pytest.raises(BadInput):
        corrected_prevalence([1, 2], [1, 0], [0])
    with pytest.raises(BadInput):
        corrected_prevalence([1, 0], [1, 0], [0], n_boot=-1)
