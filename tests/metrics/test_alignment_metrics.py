"""`metrics.alignment` against the references: scikit-learn's κ / quadratic κ, scipy's Spearman,
statsmodels' paired TOST; and the edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.weightstats import ttost_paired

from judgepanel.errors import BadInput
from judgepanel.metrics.alignment import SplitPair, gain_gap, paired_exact_tost
from judgepanel.metrics.conditions import Comparisons

CATS = [1.0, 2.0, 3.0, 4.0, 5.0]
TOL = 1e-9


def _stats(j: np.ndarray, h: np.ndarray) -> dict[str, float]:
    return {
        "exact": float(np.mean(j == h)),
        "kappa": float(cohen_kappa_score(j, h)),
        "qwk": float(cohen_kappa_score(j, h, weights="quadratic")),
        "spearman": float(spearmanr(j, h).statistic),
    }


def _pair(
    rng: np.random.Generator, n: int, shift: int, groups: int
) -> tuple[SplitPair, dict[str, np.ndarray]]:
    h = rng.integers(1, 6, n).astype(float)
    o = np.clip(h + rng.integers(-2, 3, n), 1, 5).astype(float)
    a = np.clip(np.where(rng.random(n) < 0.5, h, o + shift), 1, 5).astype(float)
    idx = np.arange(n)
    pair = SplitPair(
        Comparisons.of(o, h, idx), Comparisons.of(a, h, idx), n, [f"g{k % groups}" for k in range(n)]
    )
    return pair, {"h": h, "o": o, "a": a}


def test_gain_gap_point_values_match_sklearn_and_scipy() -> None:
    rng = np.random.default_rng(5)
    dev, d = _pair(rng, 60, 1, 12)
    ev, e = _pair(rng, 50, -1, 10)
    g = gain_gap(dev, ev, CATS, n_boot=300, seed=1)
    sd_a, sd_o = _stats(d["a"], d["h"]), _stats(d["o"], d["h"])
    se_a, se_o = _stats(e["a"], e["h"]), _stats(e["o"], e["h"])
    for s in ("exact", "kappa", "qwk", "spearman"):
        dev_gain, eval_gain = sd_a[s] - sd_o[s], se_a[s] - se_o[s]
        assert g.dev_gain[s].value == pytest.approx(dev_gain, abs=TOL)
        assert g.eval_gain[s].value == pytest.approx(eval_gain, abs=TOL)
        assert g.gap[s].value == pytest.approx(dev_gain - eval_gain, abs=TOL)
        lo, hi = g.gap[s].ci
        assert lo <= g.gap[s].value <= hi
    assert g.resample == "groups"


def test_gain_gap_is_zero_without_change_and_seeded() -> None:
    rng = np.random.default_rng(2)
    dev, _d = _pair(rng, 40, 0, 8)
    same = SplitPair(dev.original, dev.original, dev.n_items, dev.groups)
    g = gain_gap(same, same, CATS, n_boot=200, seed=3)
    for s in ("exact", "kappa", "qwk"):
        assert g.gap[s].value == 0.0 and g.gap[s].ci == (0.0, 0.0)
    a = gain_gap(dev, dev, CATS, n_boot=200, seed=9)
    b = gain_gap(dev, dev, CATS, n_boot=200, seed=9)
    assert a == b
    # one item per group: the group bootstrap is the item bootstrap
    own = SplitPair(dev.original, dev.aligned, dev.n_items, [str(k) for k in range(dev.n_items)])
    x = gain_gap(own, own, CATS, n_boot=200, seed=4, resample="groups")
    y = gain_gap(own, own, CATS, n_boot=200, seed=4, resample="items")
    assert x.gap["qwk"].ci == pytest.approx(y.gap["qwk"].ci, abs=TOL)
    with pytest.raises(BadInput):
        gain_gap(dev, dev, CATS, n_boot=0)


def test_paired_exact_tost_matches_statsmodels() -> None:
    rng = np.random.default_rng(8)
    for n, margin in ((40, 0.1), (200, 0.05), (25, 0.2)):
        h = rng.integers(1, 6, n)
        a = np.where(rng.random(n) < 0.45, h, rng.integers(1, 6, n))
        b = np.where(rng.random(n) < 0.4, h, rng.integers(1, 6, n))
        ours = paired_exact_tost(a, b, h, margin)
        xa, xb = (a == h).astype(float), (b == h).astype(float)
        p, lower, upper = ttost_paired(xa, xb, -margin, margin)
        assert ours.p == pytest.approx(p, abs=1e-10)
        assert ours.p_lower == pytest.approx(lower[1], abs=1e-10)
        assert ours.p_upper == pytest.approx(upper[1], abs=1e-10)
        assert ours.df == n - 1 and ours.estimate == pytest.approx(float(np.mean(xa - xb)), abs=TOL)


def test_paired_exact_tost_edges() -> None:
    h = np.array([1, 2, 3, 4])
    # identical judges: a zero difference with zero spread is equivalent
    t = paired_exact_tost(h, h, h, 0.05)
    assert t.estimate == 0.0 and t.equivalent
    one = paired_exact_tost([1], [2], [1], 0.05)
    assert math.isnan(one.p) and not one.equivalent
    with pytest.raises(BadInput):
        paired_exact_tost(h, h, h, 0.0)
    with pytest.raises(BadInput):
        paired_exact_tost(h, h[:3], h, 0.1)


def test_binary_errors_match_sklearn_confusion_matrix() -> None:
    from sklearn.metrics import confusion_matrix

    from judgepanel.metrics.alignment import binary_errors

    rng = np.random.default_rng(4)
    h = rng.integers(1, 6, 80)
    j = np.clip(h + rng.integers(-2, 3, 80), 1, 5)
    e = binary_errors(j, h, 4)
    tn, fp, fn, tp = confusion_matrix(h >= 4, j >= 4, labels=[False, True]).ravel()
    assert (e.fp, e.fn, e.positives, e.negatives) == (fp, fn, tp + fn, tn + fp)
    assert e.fpr == pytest.approx(fp / (tn + fp), abs=TOL) and e.fnr == pytest.approx(fn / (tp + fn), abs=TOL)
    none = binary_errors([1, 2], [1, 2], 4)  # no human positive: fnr undefined
    assert none.fp == 0 and math.isnan(none.fnr) and none.fpr == 0.0
