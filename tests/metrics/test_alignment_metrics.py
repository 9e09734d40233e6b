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


def test_gain_gap_over_few_groups_uses_welch_t_on_direct_leave_one_group_out_ses() -> None:
    """Issue 30 §1: 6 groups per split — the gap's interval is gap ± t_ν·sqrt(se_dev² + se_eval²),
    each SE the group jackknife of the paired QWK gain recomputed with scikit-learn by leaving
    each group out, ν Welch–Satterthwaite."""
    from scipy.stats import t as student

    rng = np.random.default_rng(31)
    dev, dv = _pair(rng, 48, 1, 6)
    ev, evv = _pair(rng, 42, 0, 6)
    gg = gain_gap(dev, ev, CATS, n_boot=100, seed=2)

    def jse(p: SplitPair, v: dict[str, np.ndarray]) -> tuple[float, float]:
        keys = np.array(p.groups)
        gain = lambda m: (  # noqa: E731
            cohen_kappa_score(v["a"][m], v["h"][m], weights="quadratic", labels=CATS)
            - cohen_kappa_score(v["o"][m], v["h"][m], weights="quadratic", labels=CATS)
        )
        loo = np.array([gain(keys != g) for g in np.unique(keys)])
        return gain(np.ones(keys.size, bool)), math.sqrt(5 / 6 * ((loo - loo.mean()) ** 2).sum())

    (gd, sd), (ge, se) = jse(dev, dv), jse(ev, evv)
    df = (sd**2 + se**2) ** 2 / (sd**4 / 5 + se**4 / 5)
    q = student.ppf(0.975, df)
    want = (gd - ge - q * math.hypot(sd, se), gd - ge + q * math.hypot(sd, se))
    assert gg.gap["qwk"].method == "t-jackknife"
    assert gg.gap["qwk"].ci == pytest.approx(want, abs=1e-9)
    assert gg.dev_gain["qwk"].ci == pytest.approx(
        (gd - student.ppf(0.975, 5) * sd, gd + student.ppf(0.975, 5) * sd), abs=1e-9
    )


def test_paired_error_change_against_a_direct_loop_and_statsmodels_mcnemar() -> None:
    """The relative change of false positives: below 20 groups the jackknife-t interval of the
    ratio of sums (a direct loop), from 20 the percentile interval of a group bootstrap of the ratio
    (a direct loop over the same draws); McNemar's exact p against statsmodels."""
    from scipy.stats import t as student
    from statsmodels.stats.contingency_tables import mcnemar

    from judgepanel.metrics.alignment import paired_error_change
    from judgepanel.metrics.bootstrap import resample_indices

    rng = np.random.default_rng(32)
    for n_groups in (8, 25):
        size = 6
        keys = np.repeat(np.arange(n_groups), size)
        eb = rng.random(keys.size) < 0.3
        ea = np.where(rng.random(keys.size) < 0.6, eb, rng.random(keys.size) < 0.15)
        r = paired_error_change(ea, eb, groups=[f"a{k}" for k in keys], n_boot=300, seed=4)
        assert r.change == pytest.approx(ea.sum() / eb.sum() - 1, abs=1e-12)
        if n_groups < 20:
            loo = np.array([ea[keys != g].sum() / eb[keys != g].sum() - 1 for g in range(n_groups)])
            se = math.sqrt((n_groups - 1) / n_groups * ((loo - loo.mean()) ** 2).sum())
            q = student.ppf(0.975, n_groups - 1)
            assert r.method == "t-jackknife" and r.ci == pytest.approx((r.change - q * se, r.change + q * se))
        else:
            reps = []
            for row in resample_indices(n_groups, 300, 4):
                idx = np.concatenate([np.flatnonzero(keys == g) for g in row])
                reps.append(ea[idx].sum() / eb[idx].sum() - 1)
            assert r.method == "percentile"
            assert r.ci == pytest.approx(tuple(np.percentile(reps, [2.5, 97.5])), abs=1e-12)
        table = [
            [int((ea & eb).sum()), int((ea & ~eb).sum())],
            [int((~ea & eb).sum()), int((~ea & ~eb).sum())],
        ]
        assert r.p_exact == pytest.approx(mcnemar(table, exact=True).pvalue, abs=1e-12)
        assert (r.only_a, r.only_b) == (table[0][1], table[1][0])
