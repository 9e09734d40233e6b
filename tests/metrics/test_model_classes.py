"""The held-out model classes against their references: elastic-net against scikit-learn's saga
(coefficients, probabilities, GridSearchCV's inner choice), the cumulative-link model against
statsmodels' OrderedModel, the additive basis against a direct loop, their edge cases (all-zero
features, a class absent from the training rows or from an inner fold), and the nested-CV choice
among classes never reading a test label."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss, make_scorer
from sklearn.model_selection import GridSearchCV

from judgepanel.metrics.elasticnet import fit_enet, fit_enet_many
from judgepanel.metrics.model_classes import (
    C_GRID,
    L1_RATIOS,
    additive_design,
    grid,
    hinge_basis,
    inner_cv,
    tune_and_predict,
)
from judgepanel.metrics.ordinal import fit_ordinal, fit_ordinal_many
from judgepanel.metrics.prediction import inner_folds, pair_ranks

RANKS = (2, 0, 1)  # codes A=0, B=1, T=2 ordered B < T < A


def _multiclass(n: int = 240, p: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, p))
    w = rng.normal(size=(3, p))
    w[:, p // 2 :] = 0.0  # half the features carry nothing: L1 should drop some
    z = x @ w.T
    pr = np.exp(z - z.max(axis=1, keepdims=True))
    pr /= pr.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(3, p=q) for q in pr])
    return x, y


def _ordered(n: int = 300, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """A/B/T codes from a logistic latent preference for A (B < T < A)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4))
    latent = x @ np.array([1.2, -0.6, 0.3, 0.0]) + rng.logistic(size=n)
    rank = np.digitize(latent, [-0.6, 0.8])
    code_of_rank = np.array([1, 2, 0])
    return x, code_of_rank[rank]


def _saga(c: float, l1_ratio: float) -> LogisticRegression:
    # scikit-learn ≥ 1.8 reads l1_ratio alone as the elastic-net penalty (penalty= is deprecated)
    return LogisticRegression(C=c, l1_ratio=l1_ratio, solver="saga", tol=1e-10, max_iter=200_000)


# ---------------------------------------------------------------- elastic net


@pytest.mark.parametrize(("c", "l1_ratio"), [(0.05, 0.25), (0.1, 0.5), (1.0, 1.0)])
def test_enet_matches_sklearn_saga(c: float, l1_ratio: float) -> None:
    x, y = _multiclass()
    ours = fit_enet(x, y, 3, c=c, l1_ratio=l1_ratio, tol=1e-10)
    ref = _saga(c, l1_ratio).fit(x, y)
    np.testing.assert_allclose(ours.coef, ref.coef_, atol=1e-5)
    np.testing.assert_allclose(ours.predict_proba(x), ref.predict_proba(x), atol=1e-5)
    # the L1 part zeroes weights exactly, and the same ones as saga's
    assert np.array_equal(ours.coef == 0.0, np.abs(ref.coef_) < 1e-8)
    assert (ours.coef == 0.0).any()


def test_enet_with_no_l1_is_the_l2_fit() -> None:
    from judgepanel.metrics.logistic import fit_multinomial

    x, y = _multiclass(seed=2)
    a = fit_enet(x, y, 3, c=0.3, l1_ratio=0.0, tol=1e-10)
    b = fit_multinomial(x, y, 3, c=0.3, tol=1e-10)
    np.testing.assert_allclose(a.predict_proba(x), b.predict_proba(x), atol=1e-6)


def test_enet_all_zero_features_give_the_base_rates() -> None:
    """No feature carries anything: every weight is exactly 0 and the probabilities are the
    training shares (the intercepts are unpenalised), as sklearn's."""
    _, y = _multiclass(seed=3)
    x = np.zeros((y.size, 4))
    ours = fit_enet(x, y, 3, c=1.0, l1_ratio=0.5, tol=1e-10)
    assert np.all(ours.coef == 0.0)
    share = np.bincount(y, minlength=3) / y.size
    np.testing.assert_allclose(ours.predict_proba(x[:1])[0], share, atol=1e-6)
    # (saga's step size is set by the largest row norm, 0 here, so the reference is lbfgs: with no
    # feature the penalty plays no part)
    ref = LogisticRegression(tol=1e-12, max_iter=10_000).fit(x, y)
    np.testing.assert_allclose(ours.predict_proba(x[:1]), ref.predict_proba(x[:1]), atol=1e-6)


def test_enet_class_absent_from_training_gets_a_vanishing_probability() -> None:
    x, y = _multiclass(seed=4)
    keep = y != 2
    fit = fit_enet(x[keep], y[keep], 3, c=0.5, l1_ratio=0.5)
    p = fit.predict_proba(x)
    assert np.all(np.isfinite(p)) and p[:, 2].max() < 1e-3
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)


def test_enet_inner_cv_matches_gridsearchcv() -> None:
    """Every (C, ρ) setting's loss equals a direct loop over the same folds with scikit-learn's saga,
    and the choice is GridSearchCV's, with one inner fold missing a class entirely. Where the
    penalty zeroes every weight, saga stops after an epoch or two with its intercepts unconverged
    (its stopping rule watches the weights), so there the reference is the exact optimum of an
    intercept-only model: the inner training fold's class shares."""
    x, y = _multiclass(n=150, p=4, seed=5)
    fold = inner_folds(150, 1)
    y = y.copy()
    y[(fold == 2) & (y == 2)] = 0  # inner fold 2 holds no label 2
    ours = inner_cv("enet", x[None], y[None], 3, fold)[0]
    cv = [(np.flatnonzero(fold != f), np.flatnonzero(fold == f)) for f in range(5)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # saga warns on convergence; the tolerance is tight anyway
        for j, s in enumerate(grid("enet")):
            per = []
            for tr, te in cv:
                ref = _saga(s["c"], s["l1_ratio"]).fit(x[tr], y[tr])
                p = ref.predict_proba(x[te])
                if np.all(ref.coef_ == 0.0):
                    p = np.tile(np.bincount(y[tr], minlength=3) / tr.size, (te.size, 1))
                per.append(log_loss(y[te], p, labels=[0, 1, 2]))
            assert ours[j] == pytest.approx(np.mean(per), abs=2e-5), s
        search = GridSearchCV(
            _saga(1.0, 0.5),
            {"C": list(C_GRID), "l1_ratio": list(L1_RATIOS)},
            scoring=make_scorer(
                log_loss, response_method="predict_proba", labels=[0, 1, 2], greater_is_better=False
            ),
            cv=cv,
        ).fit(x, y)
    best = grid("enet")[int(np.argmin(ours))]
    assert (best["c"], best["l1_ratio"]) == (search.best_params_["C"], search.best_params_["l1_ratio"])


def test_enet_many_equals_separate_fits_and_warm_start_changes_nothing() -> None:
    rng = np.random.default_rng(6)
    x = rng.normal(size=(2, 100, 3))
    y = rng.integers(0, 3, size=(2, 100))
    y[1, :20] = -1
    many = fit_enet_many(x, y, 3, c=0.5, l1_ratio=0.5, tol=1e-10)
    warm = fit_enet_many(x, y, 3, c=0.5, l1_ratio=0.5, tol=1e-10, init=fit_enet_many(x, y, 3, c=0.1))
    for r in range(2):
        one = fit_enet(x[r, y[r] >= 0], y[r, y[r] >= 0], 3, c=0.5, l1_ratio=0.5, tol=1e-10)
        np.testing.assert_allclose(many[r].predict_proba(x[r]), one.predict_proba(x[r]), atol=1e-6)
        np.testing.assert_allclose(warm[r].predict_proba(x[r]), one.predict_proba(x[r]), atol=1e-6)


# ---------------------------------------------------------------- cumulative link


def test_ordinal_matches_statsmodels_orderedmodel() -> None:
    from statsmodels.miscmodels.ordinal_model import OrderedModel

    x, y = _ordered()
    ours = fit_ordinal(x, y, RANKS, c=1e8, tol=1e-11)  # C → ∞: the maximum-likelihood fit
    rank = np.asarray(RANKS)[y]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = OrderedModel(rank, x, distr="logit").fit(method="bfgs", disp=False, maxiter=5000, gtol=1e-10)
    np.testing.assert_allclose(ours.coef, ref.params[:4], atol=1e-5)
    thresholds = ref.model.transform_threshold_params(ref.params)[1:-1]
    np.testing.assert_allclose(ours.thresholds, thresholds, atol=1e-5)
    # statsmodels' columns are ranks (B, T, A); ours are codes (A, B, T)
    np.testing.assert_allclose(ours.predict_proba(x)[:, [1, 2, 0]], ref.predict(x), atol=1e-6)


def test_ordinal_gradient_is_exact_under_the_penalty() -> None:
    """The penalised fit is a stationary point: moving any parameter a little raises the objective
    (checked through the probabilities: a finite-difference check on the refitted objective)."""
    x, y = _ordered(n=120, seed=3)
    c = 0.2
    fit = fit_ordinal(x, y, RANKS, c=c, tol=1e-11)

    def objective(beta: np.ndarray, th: np.ndarray) -> float:
        from judgepanel.metrics.ordinal import OrdinalFit

        f = OrdinalFit(beta, th, np.asarray(RANKS), 0, True)
        p = f.predict_proba(x)[np.arange(y.size), y]
        return float(-c * np.log(p).sum() + 0.5 * beta @ beta)

    base = objective(fit.coef, fit.thresholds)
    h = 1e-5
    for j in range(4):
        e = np.zeros(4)
        e[j] = h
        g = (objective(fit.coef + e, fit.thresholds) - objective(fit.coef - e, fit.thresholds)) / (2 * h)
        assert abs(g) < 1e-4, j
    for j in range(2):
        e = np.zeros(2)
        e[j] = h
        g = (objective(fit.coef, fit.thresholds + e) - objective(fit.coef, fit.thresholds - e)) / (2 * h)
        assert abs(g) < 1e-4, j
    assert base < objective(fit.coef * 1.01, fit.thresholds)


def test_ordinal_all_zero_features_give_the_cumulative_shares() -> None:
    _, y = _ordered(seed=4)
    x = np.zeros((y.size, 3))
    fit = fit_ordinal(x, y, RANKS, c=1.0, tol=1e-11)
    assert np.all(fit.coef == 0.0)
    share = np.bincount(np.asarray(RANKS)[y], minlength=3) / y.size
    cum = np.cumsum(share)[:-1]
    np.testing.assert_allclose(fit.thresholds, np.log(cum / (1 - cum)), atol=1e-6)
    np.testing.assert_allclose(fit.predict_proba(x[:1])[0][[1, 2, 0]], share, atol=1e-7)


def test_ordinal_with_one_class_only_stays_finite() -> None:
    x, _ = _ordered(n=60, seed=5)
    y = np.zeros(60, dtype=np.int64)  # all A
    fit = fit_ordinal_many(x[None], y[None], RANKS, c=1.0)[0]
    p = fit.predict_proba(x)
    assert np.all(np.isfinite(p)) and p[:, 0].min() > 0.9
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)


def test_pair_ranks_orders_b_tie_a() -> None:
    assert pair_ranks(("A", "B", "T")) == RANKS
    assert pair_ranks(("T", "A", "B")) == (1, 2, 0)
    assert pair_ranks(("1", "2", "3")) is None


# ---------------------------------------------------------------- additive


def test_hinge_basis_by_hand() -> None:
    rng = np.random.default_rng(7)
    tr = np.column_stack([rng.normal(size=50), np.zeros(50), rng.integers(0, 2, 50)])
    x = rng.normal(size=(8, 3))
    got = hinge_basis(tr, x)
    q = np.quantile(tr[:, 0], [0.25, 0.5, 0.75])
    want = np.column_stack([x[:, 0], *[np.maximum(0, x[:, 0] - k) for k in q], x[:, 1], x[:, 2]])
    np.testing.assert_allclose(got, want)  # the constant and the 0/1 columns get no hinge


def test_additive_inner_cv_equals_a_direct_loop_with_sklearn() -> None:
    """Knots from each inner fold's training rows, then the L2 fit: the loss table equals a
    direct loop over folds and C with scikit-learn's LogisticRegression on the same basis."""
    rng = np.random.default_rng(8)
    x = rng.normal(size=(100, 2))
    y = np.where(np.abs(x[:, 0]) < 0.5, 2, np.where(x[:, 1] > 0, 0, 1))  # a tie in the middle: nonlinear
    fold = inner_folds(100, 2)
    ours = inner_cv("additive", x[None], y[None], 3, fold)[0]
    for j, c in enumerate(C_GRID[::3]):
        per = []
        for f in range(5):
            tr, te = fold != f, fold == f
            ref = LogisticRegression(C=c, tol=1e-10, max_iter=10_000).fit(hinge_basis(x[tr], x[tr]), y[tr])
            per.append(log_loss(y[te], ref.predict_proba(hinge_basis(x[tr], x[te])), labels=[0, 1, 2]))
        assert ours[3 * j] == pytest.approx(np.mean(per), abs=1e-4), c
    # the hinges let a tie in the middle be learned: better than the linear model
    lin = inner_cv("l2", x[None], y[None], 3, fold)[0]
    assert np.nanmin(ours) < np.nanmin(lin) - 0.1


# ---------------------------------------------------------------- nested choice


def _candidates(seed: int = 9) -> tuple[list[tuple[str, np.ndarray]], np.ndarray]:
    rng = np.random.default_rng(seed)
    xo, yo = _ordered(n=130, seed=seed)
    x = np.stack([xo, xo[:, ::-1]])  # two targets
    y = np.stack([yo, rng.permutation(yo)])
    y[1, :10] = -1
    noise = np.concatenate([x, rng.normal(size=(2, 130, 3))], axis=2)
    return [("l2", x), ("enet", noise), ("ordinal", x), ("additive", x)], y


def test_select_takes_the_lowest_inner_cv_loss_and_refits_it() -> None:
    cands, y = _candidates()
    tr, te = np.arange(100), np.arange(100, 130)
    fold = inner_folds(100, 3)
    ch = tune_and_predict(cands, y, 3, tr, te, fold, RANKS)
    tables = [inner_cv(k, x[:, tr], y[:, tr], 3, fold, RANKS) for k, x in cands]
    for r in range(2):
        best = [np.nanmin(t[r]) for t in tables]
        assert ch.candidate[r] == int(np.argmin(best))
        assert ch.inner_loss[r] == pytest.approx(min(best), abs=1e-12)
        kind, x = cands[int(ch.candidate[r])]
        alone = tune_and_predict([(kind, x)], y, 3, tr, te, fold, RANKS)
        np.testing.assert_allclose(ch.proba[r], alone.proba[r], atol=1e-12)
    # an ordered signal: the cumulative-link model wins for the first target
    assert cands[int(ch.candidate[0])][0] == "ordinal"


def test_select_never_sees_a_test_label() -> None:
    cands, y = _candidates(seed=10)
    tr, te = np.arange(100), np.arange(100, 130)
    fold = inner_folds(100, 4)
    a = tune_and_predict(cands, y, 3, tr, te, fold, RANKS)
    shuffled = y.copy()
    rng = np.random.default_rng(1)
    shuffled[:, te] = rng.permutation(shuffled[:, te].ravel()).reshape(2, te.size)
    b = tune_and_predict(cands, shuffled, 3, tr, te, fold, RANKS)
    assert np.array_equal(a.candidate, b.candidate) and a.setting == b.setting
    assert np.array_equal(a.proba, b.proba)


def test_additive_design_pads_targets_to_one_width() -> None:
    rng = np.random.default_rng(11)
    x = np.stack([rng.normal(size=(40, 2)), np.column_stack([rng.normal(size=40), np.zeros(40)])])
    out = additive_design(x, np.arange(30))
    assert out.shape == (2, 40, 8)
    assert np.all(out[1, :, 4:] == 0.0)
