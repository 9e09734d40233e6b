"""Held-out prediction with fitted models: the logistic regression against scikit-learn, the
battery's features rebuilt by hand, no test label reaching a fit, and the cluster baseline unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss

from judgepanel.errors import BadInput
from judgepanel.metrics.logistic import fit_multinomial, fit_multinomial_many
from judgepanel.metrics.matrix import RatingMatrix
from judgepanel.metrics.prediction import MODELS, choose_methods, heldout_battery
from judgepanel.metrics.summary import heldout_report

# ---------------------------------------------------------------- the regression


@pytest.mark.parametrize("c", [0.05, 1.0, 20.0])
def test_multinomial_fit_matches_sklearn(c: float) -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 6))
    logits = x @ rng.normal(size=(6, 3))
    y = np.array([rng.choice(3, p=np.exp(z) / np.exp(z).sum()) for z in logits])
    ours = fit_multinomial(x, y, 3, c=c, tol=1e-10)
    ref = LogisticRegression(C=c, tol=1e-12, max_iter=10_000).fit(x, y)
    np.testing.assert_allclose(ours.coef, ref.coef_, atol=2e-5)
    # sklearn centres the (unpenalised) intercepts; only their differences are identified
    np.testing.assert_allclose(
        ours.intercept - ours.intercept.mean(), ref.intercept_ - ref.intercept_.mean(), atol=2e-5
    )
    np.testing.assert_allclose(ours.predict_proba(x), ref.predict_proba(x), atol=1e-6)


def test_zero_columns_get_zero_weight_so_zeroing_a_block_equals_dropping_it() -> None:
    rng = np.random.default_rng(4)
    x = rng.normal(size=(200, 5))
    y = (x[:, 0] + rng.normal(size=200) > 0).astype(int) + (x[:, 1] > 1).astype(int)
    padded = np.column_stack([x[:, :2], np.zeros((200, 2)), x[:, 2:]])
    a = fit_multinomial(padded, y, 3, tol=1e-10)
    b = fit_multinomial(x, y, 3, tol=1e-10)
    assert np.all(a.coef[:, 2:4] == 0.0)
    np.testing.assert_allclose(a.predict_proba(padded), b.predict_proba(x), atol=1e-7)


def test_many_independent_fits_equal_separate_fits_and_unused_rows_are_ignored() -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3, 120, 4))
    y = rng.integers(0, 3, size=(3, 120))
    y[1, :30] = -1
    many = fit_multinomial_many(x, y, 3, tol=1e-10)
    for r in range(3):
        used = y[r] >= 0
        one = fit_multinomial(x[r, used], y[r, used], 3, tol=1e-10)
        np.testing.assert_allclose(many[r].predict_proba(x[r]), one.predict_proba(x[r]), atol=1e-6)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="0 … n_classes"):
        fit_multinomial(np.zeros((3, 1)), np.array([0, 1, 3]), 3)
    with pytest.raises(ValueError, match="c must be positive"):
        fit_multinomial(np.zeros((3, 1)), np.array([0, 1, 2]), 3, c=0.0)
    with pytest.raises(ValueError, match="one label per row"):
        fit_multinomial(np.zeros((3, 1)), np.array([0, 1]), 3)


# ---------------------------------------------------------------- the battery


def _panel(n: int = 120, seed: int = 0) -> tuple[RatingMatrix, np.ndarray]:
    """Two human schools and two judges scoring pairs. Each rater sees the true gap plus noise;
    school b calls small gaps ties. A/B/T (0/1/2) from each rater's own score difference."""
    rng = np.random.default_rng(seed)
    gap = rng.normal(scale=1.5, size=n)
    diffs = np.column_stack([gap + rng.normal(scale=s, size=n) for s in (0.4, 0.5, 0.6, 0.5, 0.8, 0.9)])
    diffs[rng.random(size=diffs.shape) < 0.05] = np.nan
    eps = np.array([0.1, 0.1, 0.9, 0.9, 0.3, 0.3])  # tie thresholds
    labels = np.where(diffs > eps, 0.0, np.where(diffs < -eps, 1.0, 2.0))
    labels[np.isnan(diffs)] = np.nan
    m = RatingMatrix(
        values=labels,
        unit_ids=tuple(range(n)),
        rater_names=("a1", "a2", "b1", "b2", "j1", "j2"),
        rater_groups=("a", "a", "b", "b", "llm", "llm"),
        categories=np.array([0.0, 1.0, 2.0]),
        numeric=False,
        category_labels=("A", "B", "T"),
        rater_kinds=("human", "human", "human", "human", "llm", "llm"),
        kind="pair",
        scale_declared=True,
    )
    return m, diffs


def test_cluster_method_is_todays_cluster_baseline_exactly() -> None:
    m, d = _panel()
    bat = heldout_battery(m, d, train=80, n_bootstrap=50)
    today, _, _ = heldout_report(m, train=80)
    for g in today.groups:
        assert bat.accuracy("cluster", g.group) == g.micro["cluster"]
        assert bat.accuracy("majority", g.group) == g.micro["majority"]
        assert bat.accuracy("dawid-skene", g.group) == g.micro["dawid_skene"]
    assert bat.delta["cluster"]["all"] == (0.0, 0.0, 0.0)


def test_model_fits_equal_sklearn_on_features_built_by_hand() -> None:
    m, d = _panel()
    bat = heldout_battery(m, d, train=80, methods=("scores-humans", "labels-joint"), n_bootstrap=20)
    fold = bat.folds[0]
    r = 2  # b1: predicted from a1, a2, b2 under the humans channel
    y = m.values[:, r]
    rows = np.flatnonzero(~np.isnan(y[:80]))
    others = [0, 1, 3]
    feats = []
    for q in others:
        v = np.nan_to_num(d[:, q])
        feats += [v, np.abs(v), np.isnan(d[:, q]).astype(float)]
    x = np.column_stack(feats)
    ref = LogisticRegression(C=1.0, tol=1e-12, max_iter=10_000).fit(x[rows], y[rows].astype(int))
    te = np.arange(80, 120)
    lab = ~np.isnan(y[te])
    ours = fold.probabilities["scores-humans"][:, r][lab]
    np.testing.assert_allclose(ours, ref.predict_proba(x[te][lab]), atol=2e-4)
    assert np.array_equal(fold.predictions["scores-humans"][lab, r], ours.argmax(axis=1))
    # log loss of the pooled group against sklearn's
    sc = bat.scores["scores-humans"]["b"][0]
    truth = m.values[te][:, [2, 3]]
    probs = fold.probabilities["scores-humans"][:, [2, 3]]
    keep = ~np.isnan(truth)
    assert sc.log_loss == pytest.approx(
        log_loss(truth[keep].astype(int), probs[keep], labels=[0, 1, 2]), rel=1e-9
    )


def test_no_fit_sees_a_test_label() -> None:
    m, d = _panel()
    base = heldout_battery(m, d, train=80, n_bootstrap=20)
    rng = np.random.default_rng(9)
    perm = np.concatenate([np.arange(80), 80 + rng.permutation(40)])
    values = m.values.copy()
    values[80:] = rng.permutation(values[80:].ravel()).reshape(values[80:].shape)  # scramble test labels
    dd = d.copy()
    dd[80:] = d[perm[80:]]
    from dataclasses import replace

    shuffled = heldout_battery(replace(m, values=values), dd, train=80, n_bootstrap=20)
    a, b = base.folds[0], shuffled.folds[0]
    assert a.fits.keys() == b.fits.keys() and len(a.fits) == len(MODELS) * m.n_raters
    for key, fit in a.fits.items():
        assert np.array_equal(fit.coef, b.fits[key].coef), key
        assert np.array_equal(fit.intercept, b.fits[key].intercept), key
    assert a.baseline.clusters == b.baseline.clusters


def test_score_magnitudes_help_when_a_rater_calls_small_gaps_ties() -> None:
    full, diffs = _panel(n=600, seed=1)
    m = full.select(["a1", "a2", "b1"])
    d = diffs[:, [0, 1, 2]]
    bat = heldout_battery(m, d, train=400, methods=("scores-humans", "labels-humans"), n_bootstrap=200)
    # b1's ties depend on |gap| < 0.9, which school a's labels (ties only below 0.1) cannot show
    assert bat.accuracy("scores-humans", "b") > bat.accuracy("labels-humans", "b") + 0.05
    value, lo, hi = bat.delta["scores-humans"]["b"]
    assert lo <= value <= hi and lo > 0


def test_folds_report_mean_and_spread() -> None:
    m, d = _panel()
    bat = heldout_battery(m, d, train=80, folds=3, methods=("labels-joint",), n_bootstrap=50, seed=2)
    out = bat.as_dict()
    assert out["folds"]["k"] == 3 and out["folds"]["split"] == "random permutations"
    accs = [s.accuracy for s in bat.scores["labels-joint"]["all"]]
    spread = out["folds"]["accuracy"]["labels-joint"]["all"]
    assert spread["mean"] == pytest.approx(np.mean(accs)) == out["methods"]["labels-joint"]["accuracy"]["all"]
    assert spread["sd"] == pytest.approx(np.std(accs, ddof=1))
    assert spread["min"] == min(accs) and spread["max"] == max(accs)
    # distinct splits, each of 80 train units
    trains = {tuple(sorted(f.train)) for f in bat.folds}
    assert len(trains) == 3 and all(f.train.size == 80 for f in bat.folds)
    assert set(out["methods"]) == {"majority", "cluster", "dawid-skene", "labels-joint"}
    for v in out["methods"].values():
        assert set(v) == {"accuracy", "log_loss", "ece", "delta_vs_cluster"}
        assert set(v["delta_vs_cluster"]["all"]) == {"value", "ci"}


def test_choose_methods() -> None:
    m, _ = _panel()
    assert choose_methods(m, ["all"], have_scores=True) == MODELS
    assert choose_methods(m, ["all"], have_scores=False) == ("labels-humans", "labels-joint", "labels-judges")
    humans = m.select(None, "human")
    assert choose_methods(humans, None, have_scores=True) == ("scores-humans", "labels-humans")
    with pytest.raises(BadInput, match="no judges"):
        choose_methods(humans, ["scores-joint"], have_scores=True)
    with pytest.raises(BadInput, match="unknown --method"):
        choose_methods(m, ["nope"], have_scores=True)
