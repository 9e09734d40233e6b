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
from judgepanel.metrics.prediction import (
    C_GRID,
    DEFAULT_MODELS,
    choose_c,
    choose_methods,
    heldout_battery,
    inner_folds,
    nadeau_bengio,
)
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
    assert a.fits.keys() == b.fits.keys() and len(a.fits) == len(DEFAULT_MODELS) * m.n_raters
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
    # the mean accuracy's Nadeau–Bengio interval, by its formula with scipy's t (K = 3, 80/40)
    from scipy import stats

    half = stats.t.ppf(0.975, 2) * np.sqrt((1 / 3 + 40 / 80) * np.var(accs, ddof=1))
    np.testing.assert_allclose(spread["ci"], [np.mean(accs) - half, np.mean(accs) + half], atol=1e-12)
    # distinct splits, each of 80 train units
    trains = {tuple(sorted(f.train)) for f in bat.folds}
    assert len(trains) == 3 and all(f.train.size == 80 for f in bat.folds)
    assert set(out["methods"]) == {"majority", "cluster", "dawid-skene", "labels-joint"}
    for v in out["methods"].values():
        assert set(v) == {"accuracy", "log_loss", "ece", "delta_vs_cluster"}
        assert set(v["delta_vs_cluster"]["all"]) == {"value", "ci", "ci_bootstrap"}


def test_choose_methods() -> None:
    m, _ = _panel()
    assert choose_methods(m, ["all"], have_scores=True) == DEFAULT_MODELS
    assert choose_methods(m, ["dims-joint"], have_scores=True) == ("dims-joint",)
    with pytest.raises(BadInput, match="score differences"):
        choose_methods(m, ["dims-humans"], have_scores=False)
    assert choose_methods(m, ["all"], have_scores=False) == ("labels-humans", "labels-joint", "labels-judges")
    humans = m.select(None, "human")
    assert choose_methods(humans, None, have_scores=True) == ("scores-humans", "labels-humans")
    with pytest.raises(BadInput, match="no judges"):
        choose_methods(humans, ["scores-joint"], have_scores=True)
    with pytest.raises(BadInput, match="unknown --method"):
        choose_methods(m, ["nope"], have_scores=True)


# ---------------------------------------------------------------- issue 18 §3: inner CV, per-dimension features, intervals


def _dims(d: np.ndarray, seed: int = 0) -> np.ndarray:
    """Three dimensions per rater whose mean is the rater's score difference."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(scale=0.7, size=(*d.shape, 3))
    noise -= noise.mean(axis=2, keepdims=True)
    return d[:, :, None] + noise


def test_inner_cv_chooses_the_c_gridsearchcv_chooses() -> None:
    from sklearn.model_selection import GridSearchCV

    m, d = _panel(n=160, seed=3)
    dims = _dims(d, 3)
    bat = heldout_battery(
        m, d, train=120, methods=("dims-humans",), n_bootstrap=20, dimension_differences=dims
    )
    fold = bat.folds[0]
    inner = inner_folds(120, 0)
    for r in (0, 2):  # a1 and b1, predicted from the other humans
        others = [q for q in range(4) if q != r]
        feats = []
        for q in others:
            v = np.nan_to_num(d[:, q])
            feats += [*np.nan_to_num(dims[:, q, :]).T, v, np.abs(v), np.isnan(d[:, q]).astype(float)]
        x = np.column_stack(feats)[:120]
        y = m.values[:120, r]
        rows = np.flatnonzero(~np.isnan(y))
        cv = [(np.flatnonzero(inner[rows] != f), np.flatnonzero(inner[rows] == f)) for f in range(5)]
        ref = GridSearchCV(
            LogisticRegression(tol=1e-10, max_iter=10_000),
            {"C": list(C_GRID)},
            scoring="neg_log_loss",
            cv=cv,
        ).fit(x[rows], y[rows].astype(int))
        assert fold.chosen_c["dims-humans"][r] == ref.best_params_["C"], r
        # and the refit on all training rows predicts as sklearn's refit does
        te = np.arange(120, 160)
        lab = ~np.isnan(m.values[te, r])
        xt = np.column_stack(
            [
                col
                for q in others
                for col in (
                    *np.nan_to_num(dims[te][:, q, :]).T,
                    np.nan_to_num(d[te, q]),
                    np.abs(np.nan_to_num(d[te, q])),
                    np.isnan(d[te, q]).astype(float),
                )
            ]
        )
        np.testing.assert_allclose(
            fold.probabilities["dims-humans"][:, r][lab], ref.predict_proba(xt[lab]), atol=5e-4
        )


def test_choose_c_picks_the_smallest_mean_loss_and_skips_unlabelled_models() -> None:
    rng = np.random.default_rng(11)
    x = rng.normal(size=(2, 90, 3))
    y = (x[..., 0] > 0).astype(np.int64)
    y[1] = -1  # a model without labels
    chosen, loss = choose_c(x, y, 2, inner_folds(90, 4))
    assert chosen[0] == C_GRID[int(np.argmin(loss[0]))] and np.isnan(chosen[1])
    # a separable signal wants little shrinkage: the largest C wins
    assert chosen[0] == max(C_GRID)


def test_dims_fits_never_see_a_test_label() -> None:
    m, d = _panel(n=140, seed=5)
    dims = _dims(d, 5)
    kw = {"train": 100, "methods": ("dims-joint",), "n_bootstrap": 10, "dimension_differences": dims}
    base = heldout_battery(m, d, **kw)
    values = m.values.copy()
    rng = np.random.default_rng(2)
    values[100:] = rng.permutation(values[100:].ravel()).reshape(values[100:].shape)
    from dataclasses import replace

    shuffled = heldout_battery(replace(m, values=values), d, **kw)
    a, b = base.folds[0], shuffled.folds[0]
    assert np.array_equal(a.chosen_c["dims-joint"], b.chosen_c["dims-joint"], equal_nan=True)
    for key, fit in a.fits.items():
        assert np.array_equal(fit.coef, b.fits[key].coef), key


def test_nadeau_bengio_interval_by_its_formula() -> None:
    from scipy import stats

    deltas = np.array([0.02, 0.035, 0.01, 0.05, 0.0, 0.03, 0.025, 0.04, 0.015, 0.02])
    mean, lo, hi = nadeau_bengio(deltas, 800, 200)
    se = np.sqrt((1 / 10 + 200 / 800) * deltas.var(ddof=1))
    half = stats.t.ppf(0.975, 9) * se
    assert mean == pytest.approx(deltas.mean(), rel=1e-12)
    assert (lo, hi) == (pytest.approx(mean - half, rel=1e-12), pytest.approx(mean + half, rel=1e-12))
    # the correction widens the naive t interval by sqrt(1 + K n_test / n_train)
    naive = stats.t.ppf(0.975, 9) * deltas.std(ddof=1) / np.sqrt(10)
    assert half / naive == pytest.approx(np.sqrt(1 + 10 * 200 / 800), rel=1e-12)
    assert np.isnan(nadeau_bengio([0.1], 8, 2)[1]) and np.isnan(nadeau_bengio([], 8, 2)[0])


def test_nadeau_bengio_covers_where_averaged_bootstraps_do_not() -> None:
    """Coverage by simulation: a fixed population of units, K overlapping random splits of one
    sample drawn from it, a true accuracy difference known from the population. The corrected
    interval should cover near 95 %; the averaged per-split bootstrap (the previous CI) much less."""
    rng = np.random.default_rng(0)
    k, n, n_test, reps = 10, 200, 40, 300
    p_a, p_b = 0.70, 0.66  # per-unit correctness of two methods, correlated through the unit
    truth = p_a - p_b
    cover_nb = cover_boot = 0
    for _ in range(reps):
        hard = rng.random(n)
        ca = (hard < p_a).astype(float)
        cb = (hard < p_b).astype(float) * (rng.random(n) < 0.97) + (hard >= p_b) * (rng.random(n) < 0.08)
        cb = np.minimum(cb, 1.0)
        deltas, boots = [], np.zeros(200)
        for _ in range(k):
            te = rng.permutation(n)[:n_test]
            dlt = ca[te] - cb[te]
            deltas.append(dlt.mean())
            idx = rng.integers(0, n_test, size=(200, n_test))
            boots += dlt[idx].mean(axis=1)
        boots /= k
        _, lo, hi = nadeau_bengio(deltas, n - n_test, n_test)
        true_here = p_a - (p_b * 0.97 + (1 - p_b) * 0.08)
        cover_nb += lo <= true_here <= hi
        blo, bhi = np.percentile(boots, [2.5, 97.5])
        cover_boot += blo <= true_here <= bhi
    assert truth > 0
    print(f"coverage: corrected t {cover_nb / reps:.3f}, averaged bootstrap {cover_boot / reps:.3f}")
    assert cover_nb / reps >= 0.88
    assert cover_boot / reps < cover_nb / reps - 0.05


def test_judges_add_compares_joint_with_humans_only_per_split() -> None:
    m, d = _panel(n=150, seed=7)
    bat = heldout_battery(
        m, d, train=110, folds=4, methods=("scores-humans", "scores-joint"), n_bootstrap=20, seed=1
    )
    out = bat.as_dict()
    assert out["ci_method"].startswith("nadeau-bengio")
    ja = out["judges_add"]["scores"]["a"]
    per = [
        j.accuracy - h.accuracy
        for j, h in zip(bat.scores["scores-joint"]["a"], bat.scores["scores-humans"]["a"], strict=True)
    ]
    assert ja["per_split"] == pytest.approx(per, abs=1e-12)
    mean, lo, hi = nadeau_bengio(per, 110, 40)
    assert ja["value"] == pytest.approx(mean) and ja["ci"] == [pytest.approx(lo), pytest.approx(hi)]
    expect = "adds >= 1 point" if lo >= 0.01 else "adds < 1 point" if hi < 0.01 else "inconclusive"
    assert ja["verdict"] == expect


def test_mace_baseline_is_the_mace_argmax_on_the_other_raters() -> None:
    from judgepanel.metrics.truth import mace

    m, d = _panel(n=100, seed=8)
    bat = heldout_battery(m, d, train=70, methods=("labels-humans",), n_bootstrap=10, mace_baseline=True)
    fold = bat.folds[0]
    codes = np.where(np.isnan(m.values), -1, m.values).astype(np.int64)
    r = 1
    fit = mace(codes[:, [0, 2, 3, 4, 5]], 3, seed=0, restarts=3)
    post = fit.posteriors[70:]
    lab = codes[70:, r] >= 0
    np.testing.assert_allclose(fold.probabilities["mace"][:, r], post, atol=1e-12)
    assert np.array_equal(fold.predictions["mace"][lab, r], post[lab].argmax(axis=1))
    assert bat.as_dict()["methods"]["mace"]["ece"]["all"] is not None


# ---------------------------------------------------------------- groups-*: the other raters pooled by group


def _group_features_by_hand(d: np.ndarray, dims: np.ndarray, members_by_group: list[list[int]]) -> np.ndarray:
    """The groups-* design rebuilt with numpy's nan-aware reductions, one group after another."""
    cols = []
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for members in members_by_group:
                dd, dv = dims[:, members, :], d[:, members]
                mean_d = np.nanmean(dv, axis=1)
                cols += [
                    *np.nan_to_num(np.nanmean(dd, axis=1)).T,
                    np.nan_to_num(mean_d),
                    np.nan_to_num(np.abs(mean_d)),
                    np.nan_to_num(np.nanstd(dv, axis=1)),
                    np.nan_to_num(np.nanmean(np.sign(dv), axis=1)),
                    np.isnan(dv).mean(axis=1),
                ]
    return np.column_stack(cols)


def test_group_features_by_hand_on_a_tiny_case() -> None:
    from judgepanel.metrics.prediction import group_features

    nan = np.nan
    d = np.array([[1.0, -1.0, 2.0], [nan, 0.5, nan], [nan, nan, nan]])
    dims = np.stack([d, 2 * d], axis=2)  # two dimensions
    x = group_features(d, dims, ["g", "g", "h"], [0, 1, 2])
    # unit 0, group g (raters 0, 1): dims mean (0, 0), mean d 0, |.| 0, sd 1, sign mean 0, missing 0;
    # group h (rater 2): dims (2, 4), d 2, |d| 2, sd 0, sign 1, missing 0
    np.testing.assert_allclose(x[0], [0, 0, 0, 0, 1, 0, 0, 2, 4, 2, 2, 0, 1, 0], atol=1e-12)
    # unit 1: g has only rater 1 (0.5): dims (0.5, 1), d 0.5, |d| 0.5, sd 0, sign 1, missing 1/2; h all missing
    np.testing.assert_allclose(x[1], [0.5, 1, 0.5, 0.5, 0, 1, 0.5, 0, 0, 0, 0, 0, 0, 1], atol=1e-12)
    # unit 2: nobody scored: zeros with missing 1 in both groups
    np.testing.assert_allclose(x[2], [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1], atol=1e-12)
    assert x.shape == (3, 2 * (2 + 5))


def test_groups_inner_cv_and_fit_match_gridsearchcv() -> None:
    """groups-joint against scikit-learn: the same features rebuilt by hand, GridSearchCV over the
    same C grid and inner folds (neg log loss) picks the same C, and its refit's probabilities on
    the test units equal ours."""
    from sklearn.metrics import make_scorer
    from sklearn.model_selection import GridSearchCV

    m, d = _panel(n=160, seed=7)
    # a1 alone in its group: for it that group contributes zero columns, for the others it is a group
    m = RatingMatrix(
        values=m.values,
        unit_ids=m.unit_ids,
        rater_names=m.rater_names,
        rater_groups=("solo", "a", "b", "b", "llm", "llm"),
        categories=m.categories,
        numeric=False,
        category_labels=m.category_labels,
        rater_kinds=m.rater_kinds,
        kind="pair",
        scale_declared=True,
    )
    dims = _dims(d, 7)
    bat = heldout_battery(
        m, d, train=120, methods=("groups-joint",), n_bootstrap=20, dimension_differences=dims
    )
    fold = bat.folds[0]
    inner = inner_folds(120, 0)
    layouts = {
        0: [[1], [2, 3], [4, 5]],  # a1: its own group is empty (zero columns, dropped here)
        1: [[0], [2, 3], [4, 5]],  # a2: a1's group, then a2's own group (empty), …
        2: [[0], [1], [3], [4, 5]],  # b1: the b group without b1
        5: [[0], [1], [2, 3], [4]],  # j2
    }
    for r, members in layouts.items():
        x = _group_features_by_hand(d, dims, members)
        y = m.values[:, r]
        rows = np.flatnonzero(~np.isnan(y[:120]))
        cv = [(np.flatnonzero(inner[rows] != f), np.flatnonzero(inner[rows] == f)) for f in range(5)]
        ref = GridSearchCV(
            LogisticRegression(tol=1e-10, max_iter=10_000),
            {"C": list(C_GRID)},
            # every class named: an inner fold may hold no tie of a rater who seldom ties
            scoring=make_scorer(
                log_loss, response_method="predict_proba", labels=[0, 1, 2], greater_is_better=False
            ),
            cv=cv,
        ).fit(x[rows], y[rows].astype(int))
        assert fold.chosen_c["groups-joint"][r] == ref.best_params_["C"], r
        te = np.arange(120, 160)
        lab = ~np.isnan(y[te])
        np.testing.assert_allclose(
            fold.probabilities["groups-joint"][:, r][lab], ref.predict_proba(x[te][lab]), atol=5e-4
        )


def test_groups_fits_never_see_a_test_label() -> None:
    m, d = _panel(n=120, seed=9)
    dims = _dims(d, 9)
    kw = {"train": 90, "methods": ("groups-joint",), "n_bootstrap": 10, "dimension_differences": dims}
    base = heldout_battery(m, d, **kw)
    values = m.values.copy()
    rng = np.random.default_rng(4)
    values[90:] = rng.permutation(values[90:].ravel()).reshape(values[90:].shape)
    from dataclasses import replace

    shuffled = heldout_battery(replace(m, values=values), d, **kw)
    a, b = base.folds[0], shuffled.folds[0]
    assert np.array_equal(a.chosen_c["groups-joint"], b.chosen_c["groups-joint"], equal_nan=True)
    for key, fit in a.fits.items():
        assert np.array_equal(fit.coef, b.fits[key].coef), key


def test_groups_methods_are_asked_by_name_and_need_scores() -> None:
    m, _ = _panel()
    assert not any(x.startswith("groups-") for x in choose_methods(m, None, have_scores=True))
    assert choose_methods(m, ["groups-joint"], have_scores=True) == ("groups-joint",)
    with pytest.raises(BadInput, match="pair sets only"):
        choose_methods(m, ["groups-humans"], have_scores=False)


def test_select_joint_reports_its_choice_and_never_sees_a_test_label() -> None:
    """select-joint (nested CV among the model classes and feature families): every labelled test
    unit gets the argmax of its probabilities, the JSON names each rater's chosen candidate, and
    permuting the test labels changes no choice and no probability. (Two battery runs on a small
    panel: the selector tunes seven candidates per target, a few CPU seconds a run.)"""
    from dataclasses import replace

    from judgepanel.metrics.prediction import SELECT_CLASSES

    full, fd = _panel(n=90, seed=12)
    keep = [0, 2, 3, 4]  # a1 alone in its group, the b pair, one judge: four targets keep it cheap
    m = replace(
        full,
        values=full.values[:, keep],
        rater_names=tuple(full.rater_names[q] for q in keep),
        rater_groups=tuple(full.rater_groups[q] for q in keep),
        rater_kinds=tuple(full.rater_kinds[q] for q in keep),
    )
    d = fd[:, keep]
    dims = _dims(d, 12)
    kw = {"train": 75, "methods": ("select-joint",), "n_bootstrap": 10, "dimension_differences": dims}
    base = heldout_battery(m, d, **kw)
    fold = base.folds[0]
    probs = fold.probabilities["select-joint"]
    assert probs is not None
    lab = fold.truth >= 0
    assert np.array_equal(fold.predictions["select-joint"][lab], probs[lab].argmax(axis=1))
    np.testing.assert_allclose(probs[lab].sum(axis=1), 1.0, atol=1e-9)
    chosen = base.as_dict()["methods"]["select-joint"]["chosen_model"]
    assert set(chosen) == set(m.rater_names)
    for name, picks in chosen.items():
        kind, feat = picks[0].split(" ")[:2]
        assert kind in SELECT_CLASSES and feat in ("groups", "dims"), name
    values = m.values.copy()
    rng = np.random.default_rng(8)
    values[75:] = rng.permutation(values[75:].ravel()).reshape(values[75:].shape)
    shuffled = heldout_battery(replace(m, values=values), d, **kw).folds[0]
    assert shuffled.chosen_model == fold.chosen_model
    assert np.array_equal(shuffled.chosen_c["select-joint"], fold.chosen_c["select-joint"], equal_nan=True)
    sp = shuffled.probabilities["select-joint"]
    assert sp is not None
    # the same fits predict the same test rows (where a label existed in both runs)
    both = lab & (shuffled.truth >= 0)
    np.testing.assert_array_equal(sp[both], probs[both])
    for key, fit in fold.fits.items():
        np.testing.assert_array_equal(fit.coef, shuffled.fits[key].coef)
