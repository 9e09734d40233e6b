"""Issue 30 §5: the registered held-out comparisons and the battery split by article.

The peers rule and the second-rater baseline against by-hand loops, ECE against
``metrics.uncertainty``, the K-split interval against the Nadeau–Bengio formula, the one-split
article-level interval against statsmodels' clustered OLS with a t(G−1) reference, and the
declared verdict rules."""

from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

from judgepanel.metrics.group_ci import TOO_FEW_GROUPS
from judgepanel.metrics.matrix import RatingMatrix
from judgepanel.metrics.prediction import heldout_battery, nadeau_bengio
from judgepanel.metrics.registered import (
    MARGIN,
    _verdict,
    group_ceilings,
    peer_rule,
    registered_comparisons,
    weighted_ece,
)
from judgepanel.metrics.summary import _matrix_codes
from judgepanel.metrics.uncertainty import expected_calibration_error

SCORES = ("scores-humans", "scores-joint", "scores-judges")
Panel = tuple[RatingMatrix, np.ndarray, list[str]]


def _panel(n_articles: int = 15, per: int = 10, seed: int = 0) -> Panel:
    """Pairs grouped by article (an article effect on the gap); three exchangeable experts, two
    crowd workers who call small gaps ties, two judges. A/B/T from each rater's score difference."""
    rng = np.random.default_rng(seed)
    n = n_articles * per
    article = np.repeat(np.arange(n_articles), per)
    gap = rng.normal(scale=1.0, size=n_articles)[article] + rng.normal(scale=1.2, size=n)
    noise = (0.7, 0.7, 0.7, 0.5, 0.5, 0.8, 0.9)
    diffs = np.column_stack([gap + rng.normal(scale=s, size=n) for s in noise])
    eps = np.array([0.3, 0.3, 0.3, 0.9, 0.9, 0.3, 0.3])
    labels = np.where(diffs > eps, 0.0, np.where(diffs < -eps, 1.0, 2.0))
    m = RatingMatrix(
        values=labels,
        unit_ids=tuple(range(n)),
        rater_names=("e1", "e2", "e3", "c1", "c2", "j1", "j2"),
        rater_groups=("expert", "expert", "expert", "crowd", "crowd", "llm", "llm"),
        categories=np.array([0.0, 1.0, 2.0]),
        numeric=False,
        category_labels=("A", "B", "T"),
        rater_kinds=("human",) * 5 + ("llm", "llm"),
        kind="pair",
        scale_declared=True,
    )
    return m, diffs, [f"art{a}" for a in article]


def test_peer_rule_by_hand() -> None:
    train = np.array([[0, 0, 1], [0, 0, 1], [0, 0, 0], [1, 1, 1], [2, -1, 2], [0, 1, 2]])
    test = np.array([[0, 0, 1], [1, 1, 1], [2, -1, 2], [2, 2, 1]])
    # target 0 from peers (1, 2): (0,1) -> 0 (twice), (1,1) -> 1, (-1,2) -> 2 (a missing label is a
    # value of its own); (2,1) was never seen: the target's most frequent training label, 0
    assert peer_rule(train, test, 0, [1, 2]).tolist() == [0, 1, 2, 0]
    # target 2 from (0, 1): (0,0) -> {1: 2, 0: 1} -> 1; (1,1) -> 1; (2,-1) -> 2; (2,2) unseen -> 1
    assert peer_rule(train, test, 2, [0, 1]).tolist() == [1, 1, 2, 1]


def test_weighted_ece_is_the_ece_and_weights_repeat_rows() -> None:
    rng = np.random.default_rng(1)
    p = rng.dirichlet([1, 1, 1], size=200)
    y = rng.integers(0, 3, size=200)
    conf, hit = p.max(axis=1), (p.argmax(axis=1) == y).astype(float)
    assert weighted_ece(conf, hit, np.ones((1, 200)))[0] == pytest.approx(
        expected_calibration_error(p, y).ece, abs=1e-12
    )
    w = rng.integers(0, 3, size=200)
    rep = np.repeat(np.arange(200), w)
    assert weighted_ece(conf, hit, w[None, :].astype(float))[0] == pytest.approx(
        expected_calibration_error(p[rep], y[rep]).ece, abs=1e-12
    )


@pytest.fixture(scope="module")
def panel() -> Panel:
    return _panel()


def test_the_battery_split_by_article_never_tests_a_training_article(panel: Panel) -> None:
    m, d, keys = panel
    bat = heldout_battery(
        m, d, train=100, methods=SCORES, folds=3, n_bootstrap=20, split_by="group", unit_groups=keys
    )
    art = np.array(keys)
    for f in bat.folds:
        assert not set(art[f.train]) & set(art[f.test])
        assert len(set(art[f.test])) == 5  # round(15 · 100/150) = 10 articles train
    assert bat.as_dict()["split_by"] == "group"
    assert bat.ci_method == "nadeau-bengio corrected resampled t over 3 splits of articles"
    # the item design on the same units: test pairs share articles with training pairs
    items = heldout_battery(m, d, train=100, methods=SCORES, folds=2, n_bootstrap=20, unit_groups=keys)
    assert all(set(art[f.train]) & set(art[f.test]) for f in items.folds)


def test_k_split_intervals_are_nadeau_bengio_of_per_split_differences(panel: Panel) -> None:
    m, d, keys = panel
    bat = heldout_battery(m, d, train=100, methods=SCORES, folds=3, n_bootstrap=20, unit_groups=keys)
    reg = registered_comparisons(bat, m, n_bootstrap=50)
    assert (reg.model, reg.judges_only, reg.humans_only) == SCORES[1:] + SCORES[:1]
    (expert,) = [g for g in reg.groups if g.group == "expert"]
    assert {g.group for g in reg.groups} == {"expert", "crowd"}  # human groups only
    codes, _ = _matrix_codes(m)
    per = []
    for fi, f in enumerate(bat.folds):
        tr, te = codes[f.train], codes[f.test]
        hits = n = 0
        for r in (0, 1, 2):
            guess = peer_rule(tr, te, r, [q for q in (0, 1, 2) if q != r])
            hits += int(((guess == te[:, r]) & (te[:, r] >= 0)).sum())
            n += int((te[:, r] >= 0).sum())
        per.append(bat.scores["scores-joint"]["expert"][fi].accuracy - hits / n)
    a = expert.model_vs_peers
    assert a is not None
    np.testing.assert_allclose(a.per_split, per, atol=1e-12)
    want = nadeau_bengio(per, 100, 50)
    assert (a.value, a.lo, a.hi) == pytest.approx(want, abs=1e-12)
    assert a.ci_method == "nadeau-bengio corrected resampled t over 3 splits"
    # the second rater: another expert's label, averaged over the two others
    b = expert.judges_vs_second_rater
    assert b is not None and b.extra["margin"] == MARGIN
    f = bat.folds[0]
    te = codes[f.test]
    second = np.mean([(te[:, r] == te[:, s]).mean() for r in range(3) for s in range(3) if s != r])
    judges = bat.scores["scores-judges"]["expert"][0].accuracy
    assert b.per_split[0] == pytest.approx(judges - second, abs=1e-12)
    cal = expert.calibration
    assert cal is not None
    eces = [s.ece for s in bat.scores["scores-joint"]["expert"]]
    np.testing.assert_allclose(cal["ece"].per_split, eces, atol=1e-12)
    lls = [
        j.log_loss - h.log_loss
        for j, h in zip(*(bat.scores[mt]["expert"] for mt in SCORES[1::-1]), strict=True)
    ]
    np.testing.assert_allclose(cal["log_loss_vs_humans"].per_split, lls, atol=1e-9)


def test_one_split_by_article_uses_a_cr1_t_interval_over_the_test_articles(panel: Panel) -> None:
    m, d, keys = panel
    bat = heldout_battery(m, d, train=90, methods=SCORES, n_bootstrap=20, split_by="group", unit_groups=keys)
    (f,) = bat.folds
    art = np.array(keys)[f.test]
    assert len(set(art)) == 6
    reg = registered_comparisons(bat, m, n_bootstrap=50)
    (expert,) = [g for g in reg.groups if g.group == "expert"]
    a = expert.model_vs_peers
    assert a is not None and a.ci_method == "t(5) with the CR1 SE over 6 test articles"
    # statsmodels: one row per (test pair, expert) label, y = model correct − peers correct
    codes, _ = _matrix_codes(m)
    tr, te = codes[f.train], codes[f.test]
    pred = bat.folds[0].predictions["scores-joint"]
    y, groups = [], []
    for r in (0, 1, 2):
        peers = peer_rule(tr, te, r, [q for q in (0, 1, 2) if q != r])
        for u in range(te.shape[0]):
            y.append(float(pred[u, r] == te[u, r]) - float(peers[u] == te[u, r]))
            groups.append(art[u])
    _, g_codes = np.unique(groups, return_inverse=True)
    fit = sm.OLS(np.array(y), np.ones(len(y))).fit(cov_type="cluster", cov_kwds={"groups": g_codes})
    q = stats.t.ppf(0.975, 5)
    assert a.value == pytest.approx(fit.params[0], abs=1e-12)
    assert (a.lo, a.hi) == pytest.approx(
        (fit.params[0] - q * fit.bse[0], fit.params[0] + q * fit.bse[0]), rel=1e-9
    )


def test_below_five_test_articles_no_verdict_is_stated(panel: Panel) -> None:
    m, d, keys = panel
    bat = heldout_battery(m, d, train=120, methods=SCORES, n_bootstrap=20, split_by="group", unit_groups=keys)
    reg = registered_comparisons(bat, m, n_bootstrap=20)
    for g in reg.groups:
        assert g.model_vs_peers is not None and g.model_vs_peers.verdict == TOO_FEW_GROUPS
        assert g.calibration is not None and g.calibration["verdict"] == TOO_FEW_GROUPS


def test_a_comparison_whose_model_was_not_run_says_why(panel: Panel) -> None:
    m, d, _ = panel
    bat = heldout_battery(m, d, train=100, methods=("scores-joint",), n_bootstrap=20)
    reg = registered_comparisons(bat, m, n_bootstrap=20)
    (expert,) = [g for g in reg.groups if g.group == "expert"]
    assert expert.model_vs_peers is not None
    assert (
        expert.judges_vs_second_rater is None and "scores-judges" in expert.reasons["judges_vs_second_rater"]
    )
    assert expert.calibration is None and "scores-humans" in expert.reasons["calibration"]
    none = registered_comparisons(
        heldout_battery(m, d, train=100, methods=("scores-humans",), n_bootstrap=20), m
    )
    assert none.model is None and all(g.model_vs_peers is None for g in none.groups)
    assert none.as_dict()["groups"]["expert"]["accuracy"]["model"] is None


def test_the_declared_verdict_rules() -> None:
    def v(lo: float, hi: float, groups: int | None = None) -> str:
        return _verdict(lo, hi, above=MARGIN, better="non-inferior", worse="inferior", groups=groups)

    assert v(-0.019, 0.05) == "non-inferior"
    assert v(-0.08, -0.021) == "inferior"
    assert v(-0.03, 0.01) == "inconclusive"
    assert v(math.nan, 0.01) == "inconclusive"
    assert v(0.1, 0.2, groups=4) == TOO_FEW_GROUPS
    assert v(0.1, 0.2, groups=5) == "non-inferior"


def test_group_ceilings_need_three_raters(panel: Panel) -> None:
    m, _, _ = panel
    bands = group_ceilings(m)
    assert bands["crowd"] is None and bands["llm"] is None
    expert = bands["expert"]
    assert expert is not None and expert.n_triples == m.n_units
    assert expert.observed_agreement <= expert.low <= expert.high <= 1.0
