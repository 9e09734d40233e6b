"""Leave-one-annotator-out rule, alternative annotator test, BY correction and judge ranking.

References: hand computations (written out below), statsmodels' `multipletests(method="fdr_by")`,
scipy's `ttest_1samp`, scikit-learn's `cohen_kappa_score`, the `krippendorff` package, and
synthetic panels whose answer is known by construction.
"""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.multitest import multipletests

from judgepanel.errors import BadInput
from judgepanel.metrics.validation import (
    NegRmse,
    alt_test,
    benjamini_yekutieli,
    loo_differences,
    loo_rule,
    make_scorer,
    normalise_text,
    one_sided_t,
    rank_judges,
    trigram_cosine,
)

NAN = np.nan
X, Y = 0.0, 1.0

# Three humans A, B, C and a judge J on four instances (two classes x, y):
#   i1: A=x B=x C=y J=x     i2: A=x B=y C=y J=y     i3: A=y B=y C=y J=x     i4: all x
TINY_H = np.array([[X, X, Y], [X, Y, Y], [Y, Y, Y], [X, X, X]])
TINY_J = np.array([X, Y, X, X])


# ---------------------------------------------------------------- BY and the t-test


@pytest.mark.parametrize("m", [1, 2, 3, 7, 20, 50])
@pytest.mark.parametrize("q", [0.05, 0.1, 0.25])
def test_benjamini_yekutieli_matches_statsmodels(m: int, q: float) -> None:
    rng = np.random.default_rng(m * 100 + int(q * 100))
    # a mix of tiny, tied and uniform p-values so that some, but not all, are rejected
    p = np.concatenate([rng.uniform(0, 0.01, m // 3), np.full(m // 4, 0.003), rng.uniform(0, 1, m)])[:m]
    rej, adj = benjamini_yekutieli(p, q)
    ref_rej, ref_adj, _, _ = multipletests(p, alpha=q, method="fdr_by")
    assert rej.tolist() == ref_rej.tolist()
    np.testing.assert_allclose(adj, ref_adj, rtol=1e-12)


def test_benjamini_yekutieli_hand_case() -> None:
    # m = 3: c(3) = 1 + 1/2 + 1/3 = 11/6; thresholds k q / (m c) = k · 0.05 / 5.5
    p = [0.001, 0.02, 0.009]
    thresholds = [k * 0.05 / 5.5 for k in (1, 2, 3)]  # 0.00909, 0.01818, 0.02727
    # sorted: 0.001 ≤ 0.00909, 0.009 ≤ 0.01818, 0.02 ≤ 0.02727 → all three rejected
    assert sorted(p)[2] <= thresholds[2]
    rej, adj = benjamini_yekutieli(p, 0.05)
    assert rej.tolist() == [True, True, True]
    # adjusted p of the largest: 3 · (11/6) · 0.02 / 3
    assert adj[1] == pytest.approx(11 / 6 * 0.02)
    rej, _ = benjamini_yekutieli([0.001, 0.03, 0.2], 0.05)
    assert rej.tolist() == [True, False, False]
    assert benjamini_yekutieli([], 0.05)[0].size == 0
    with pytest.raises(BadInput):
        benjamini_yekutieli([0.5], 1.5)


def test_one_sided_t_matches_scipy() -> None:
    rng = np.random.default_rng(3)
    for n in (2, 5, 30, 200):
        x = rng.integers(-1, 2, n).astype(float)
        if x.std() == 0:
            x[0] = 1 - x[0]
        t, p = one_sided_t(x, 0.15)
        ref = stats.ttest_1samp(x, 0.15, alternative="less")
        assert t == pytest.approx(ref.statistic, rel=1e-12)
        assert p == pytest.approx(ref.pvalue, rel=1e-10)


def test_one_sided_t_zero_variance() -> None:
    assert one_sided_t(np.full(10, -1.0), 0.1) == (-math.inf, 0.0)
    assert one_sided_t(np.full(10, 1.0), 0.1)[1] == 1.0
    assert one_sided_t(np.zeros(10), 0.0)[1] == 1.0
    with pytest.raises(BadInput):
        one_sided_t(np.zeros(1), 0.0)


# ---------------------------------------------------------------- alternative annotator test


def test_alt_test_tiny_panel_by_hand() -> None:
    # Held out A (remaining B, C): S_A = .5, 0, 1, 1; S_J = .5, 1, 0, 1
    #   W_J = 1,1,0,1  W_A = 1,0,1,1  D_A = W_A − W_J = 0,−1,1,0
    # Held out B (remaining A, C): S_B = .5, .5, 1, 1; S_J = .5, .5, 0, 1 → D_B = 0,0,1,0; W_J = 1,1,0,1
    # Held out C (remaining A, B): S_C = 0, .5, 1, 1; S_J = 1, .5, 0, 1 → D_C = −1,0,1,0; W_J = 1,1,0,1
    eps = 0.2
    res = alt_test(TINY_H, TINY_J, epsilon=eps, min_instances=4, names=["A", "B", "C"])
    by = {h.name: h for h in res.humans}
    # D_A: mean 0, s = √(2/3): t = (0 − 0.2) / (√(2/3) / 2)
    t_a = -0.2 / (math.sqrt(2 / 3) / 2)
    # D_B: mean 1/4, s = √((3 · 1/16 + 9/16) / 3) = 1/2: t = (1/4 − 0.2) / (1/2 / 2) = 0.2
    t_b = 0.2
    assert by["A"].t == pytest.approx(t_a)
    assert by["B"].t == pytest.approx(t_b)
    assert by["C"].t == pytest.approx(t_a)
    assert by["A"].p_value == pytest.approx(stats.t.cdf(t_a, 3))
    assert by["B"].p_value == pytest.approx(stats.t.cdf(t_b, 3))
    assert [by[k].mean_diff for k in "ABC"] == [0.0, 0.25, 0.0]
    assert [by[k].w_judge for k in "ABC"] == [0.75, 0.75, 0.75]
    assert [by[k].n for k in "ABC"] == [4, 4, 4]
    assert [by[k].n_pairs for k in "ABC"] == [8, 8, 8]
    assert res.rho == 0.75
    # p ≈ 0.33, 0.57, 0.33: nothing survives BY at 0.05
    assert res.omega == 0.0 and not res.passed
    assert res.tested == 3 and res.rejected == 0


def test_alt_test_min_instances_and_min_humans() -> None:
    res = alt_test(TINY_H, TINY_J, epsilon=0.2, min_instances=5)
    assert res.tested == 0 and res.omega is None and res.rho is None and not res.passed
    assert any("untested" in w for w in res.warnings)
    # human 3 is missing on the first two instances: with min_humans = 3 those need A, B and C
    h = TINY_H.copy()
    h[0, 2] = h[1, 2] = NAN
    r2 = alt_test(h, TINY_J, epsilon=0.2, min_instances=2, min_humans=2)
    r3 = alt_test(h, TINY_J, epsilon=0.2, min_instances=2, min_humans=3)
    assert [x.n for x in r2.humans] == [4, 4, 2]
    assert [x.n for x in r3.humans] == [2, 2, 2]
    with pytest.raises(BadInput, match="min-humans"):
        alt_test(h, TINY_J, epsilon=0.2, min_humans=1)
    with pytest.raises(BadInput, match="min-instances"):
        alt_test(h, TINY_J, epsilon=0.2, min_instances=1)


def test_alt_test_judge_always_strictly_better_is_rejected_with_p_zero() -> None:
    # every instance: the judge matches both remaining humans, the held-out one matches neither
    n = 40
    h = np.zeros((n, 3))
    h[:, 0] = 1.0
    j = np.zeros(n)
    res = alt_test(h, j, epsilon=0.1)
    first = res.humans[0]
    assert first.mean_diff == -1.0 and first.p_value == 0.0 and first.rejected


def test_neg_rmse_and_trigram_scorers_by_hand() -> None:
    sc = NegRmse()
    # h = 1 against remaining 2 and 4: −√(((1−2)² + (1−4)²) / 2) = −√5
    assert sc.combine(sc.pairwise(np.array([1.0, 1.0]), np.array([2.0, 4.0])).mean(keepdims=True))[
        0
    ] == pytest.approx(-math.sqrt(5))
    assert normalise_text("A Bird.") == "bird"
    assert trigram_cosine("a bird", "bird") == 1.0
    # " bird " → { bi, bir, ird, rd }; " birds " → { bi, bir, ird, rds, ds }: 3 / (2 · √5)
    assert trigram_cosine("bird", "birds") == pytest.approx(3 / (2 * math.sqrt(5)))
    assert trigram_cosine("cat", "dog") == 0.0
    tri = make_scorer("trigram-cosine", ["bird", "birds", "cat"])
    assert tri.proxy
    np.testing.assert_allclose(
        tri.pairwise(np.array([0.0, 0.0]), np.array([1.0, 2.0])), [3 / (2 * 5**0.5), 0]
    )
    with pytest.raises(BadInput):
        make_scorer("bleu")


def test_alt_test_neg_rmse_tiny_panel_by_hand() -> None:
    # two instances, humans A, B, C, judge J
    #  i1: A=1 B=2 C=4 J=3      i2: A=5 B=5 C=4 J=5
    h = np.array([[1.0, 2, 4], [5, 5, 4]])
    j = np.array([3.0, 5])
    res = alt_test(h, j, epsilon=0.1, scorer=NegRmse(), min_instances=2, names=list("ABC"))
    a = res.humans[0]
    # held out A, i1: S_A = −√((1+9)/2) = −2.236, S_J = −√((1+1)/2) = −1 → W_J = 1, W_A = 0
    # i2: S_A = −√((0+1)/2), S_J = −√((0+1)/2): tie → both 1.  D_A = (−1, 0)
    assert a.mean_diff == -0.5 and a.w_judge == 1.0 and a.w_human == 0.5


def _synthetic(seed: int, n: int = 300, k: int = 5, acc: float = 0.8, classes: int = 3, keep: float = 0.6):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, classes, n)
    correct = rng.random((n, k)) < acc
    wrong = (truth[:, None] + rng.integers(1, classes, (n, k))) % classes
    labels = np.where(correct, truth[:, None], wrong).astype(float)
    shown = rng.random((n, k)) < keep
    shown[np.arange(n), rng.integers(0, k, n)] = True
    shown[np.arange(n), rng.integers(0, k, n)] = True
    labels[~shown] = np.nan
    counts = np.stack([(labels == c).sum(axis=1) for c in range(classes)], axis=1)
    majority = counts.argmax(axis=1).astype(float)
    random_judge = rng.integers(0, classes, n).astype(float)
    return labels, majority, random_judge


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_majority_copying_judge_passes_and_random_judge_fails(seed: int) -> None:
    labels, majority, random_judge = _synthetic(seed)
    good = alt_test(labels, majority, epsilon=0.1)
    bad = alt_test(labels, random_judge, epsilon=0.1)
    assert good.passed and good.omega == 1.0 and good.rho is not None and good.rho > 0.8
    assert not bad.passed and bad.omega == 0.0
    assert loo_rule(labels, majority).accepted
    assert not loo_rule(labels, random_judge).accepted


# ---------------------------------------------------------------- leave-one-annotator-out rule


def test_loo_tiny_panel_by_hand() -> None:
    # Held out A (pool B, C; 8 pairs): J agrees 1+2+0+2 = 5, A agrees 1+0+2+2 = 5 → d_A = 0
    # Held out B (pool A, C): J agrees 1+1+0+2 = 4, B agrees 1+1+2+2 = 6 → d_B = −2/8
    # Held out C (pool A, B): J agrees 2+1+0+2 = 5, C agrees 0+1+2+2 = 5 → d_C = 0
    res = loo_rule(TINY_H, TINY_J, epsilon=0.05, names=list("ABC"))
    assert [h.d for h in res.humans] == [0.0, -0.25, 0.0]
    assert [h.s_judge for h in res.humans] == [5 / 8, 4 / 8, 5 / 8]
    assert [h.n_units for h in res.humans] == [4, 4, 4]
    assert [h.n_pairs for h in res.humans] == [8, 8, 8]
    assert [h.passed for h in res.humans] == [True, False, True]
    assert res.omega == pytest.approx(2 / 3) and res.accepted
    # with ε = 0.3 every d passes; with ε = 0 the −0.25 still fails
    assert loo_rule(TINY_H, TINY_J, epsilon=0.3).omega == 1.0
    assert loo_rule(TINY_H, TINY_J, epsilon=0.0).omega == pytest.approx(2 / 3)


def test_loo_weighs_units_by_their_pool_pairs() -> None:
    # humans A, B, C, D; A held out
    #   u1: pool B, C, D all say x; J = x (3 agreements), A = y (0)
    #   u2: pool B only, says y;    J = x (0),            A = y (1)
    #   u3: nobody but A and J → not used
    h = np.array([[Y, X, X, X], [Y, Y, NAN, NAN], [X, NAN, NAN, NAN]])
    j = np.array([X, X, Y])
    a = loo_rule(h, j, names=list("ABCD")).humans[0]
    # pairs: 3 + 1 = 4; S_J = 3/4, S_A = 1/4 (a per-unit average would give 1/2 and 1/2)
    assert (a.n_units, a.n_pairs) == (2, 4)
    assert a.s_judge == 0.75 and a.s_human == 0.25 and a.d == 0.5


def _stacked(h: np.ndarray, j: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(judge, held-out, pool) labels over the (unit, pool human) pairs, by plain loops."""
    js, ks, ps = [], [], []
    for u in range(h.shape[0]):
        others = [o for o in range(h.shape[1]) if o != k and not np.isnan(h[u, o])]
        if np.isnan(h[u, k]) or np.isnan(j[u]) or not others:
            continue
        for o in others:
            js.append(j[u])
            ks.append(h[u, k])
            ps.append(h[u, o])
    return np.array(js), np.array(ks), np.array(ps)


def test_loo_chance_corrected_options_match_reference_libraries() -> None:
    labels, majority, _ = _synthetic(7, n=120, classes=3)
    rng = np.random.default_rng(0)
    judge = np.where(rng.random(120) < 0.7, majority, rng.integers(0, 3, 120)).astype(float)
    cats = np.arange(3.0)
    cohen = loo_rule(labels, judge, agreement="cohen", categories=cats)
    alpha = loo_rule(labels, judge, agreement="alpha", categories=cats)
    for k in range(labels.shape[1]):
        js, ks, ps = _stacked(labels, judge, k)
        ref_c = cohen_kappa_score(js, ps, labels=cats) - cohen_kappa_score(ks, ps, labels=cats)
        assert cohen.humans[k].d == pytest.approx(ref_c, abs=1e-12)
        ref_a = krippendorff.alpha(np.vstack([js, ps]), level_of_measurement="nominal") - krippendorff.alpha(
            np.vstack([ks, ps]), level_of_measurement="nominal"
        )
        assert alpha.humans[k].d == pytest.approx(ref_a, abs=1e-12)
        assert cohen.humans[k].n_pairs == js.size
    ac1 = loo_rule(labels, judge, agreement="ac1", categories=cats)
    assert all(h.d is not None and -1 <= h.d <= 1 for h in ac1.humans)
    with pytest.raises(BadInput):
        loo_rule(labels, judge, agreement="fleiss")


def test_loo_warns_when_overlap_is_below_the_planner() -> None:
    labels, majority, _ = _synthetic(5, n=40)
    noisy = majority.copy()
    noisy[::3] = (noisy[::3] + 1) % 3
    eps = 0.05
    res = loo_rule(labels, noisy, epsilon=eps)
    z2 = stats.norm.ppf(0.975) ** 2
    for k, h in enumerate(res.humans):
        # per-unit observed-agreement advantage, by loops
        d = []
        for u in range(labels.shape[0]):
            pool = [labels[u, o] for o in range(5) if o != k and not np.isnan(labels[u, o])]
            if np.isnan(labels[u, k]) or not pool:
                continue
            d.append(np.mean([noisy[u] == p for p in pool]) - np.mean([labels[u, k] == p for p in pool]))
        d_arr = np.array(d)
        assert loo_differences(labels, noisy).size >= d_arr.size
        if d_arr.mean() + eps <= 0:  # the judge trails by more than ε: no overlap certifies it
            assert h.m_required is None and not h.overlap_ok
            continue
        need = math.ceil(z2 * d_arr.var(ddof=1) / (d_arr.mean() + eps) ** 2)
        assert h.m_required == max(1, need)
        assert h.overlap_ok == (h.n_units >= need)
    short = [h for h in res.humans if not h.overlap_ok]
    assert short, "this panel is meant to be too small for some held-out human"
    assert len([w for w in res.warnings if "m*_cert" in w]) == len(short)


def test_loo_needs_two_humans_and_matching_shapes() -> None:
    with pytest.raises(BadInput):
        loo_rule(np.zeros((3, 1)), np.zeros(3))
    with pytest.raises(BadInput):
        loo_rule(np.zeros((3, 2)), np.zeros(4))
    none_shared = np.array([[X, NAN], [NAN, Y]])
    res = loo_rule(none_shared, np.array([X, Y]))
    assert res.omega is None and not res.accepted


# ---------------------------------------------------------------- ranking


def test_rank_judges_orders_and_is_reproducible() -> None:
    labels, majority, random_judge = _synthetic(11, n=200)
    rng = np.random.default_rng(1)
    middling = np.where(rng.random(200) < 0.5, majority, random_judge)
    judges = np.column_stack([random_judge, majority, middling])
    names = ["random", "majority", "middling"]
    r1 = rank_judges(labels, judges, judge_names=names, n_boot=300, seed=4)
    r2 = rank_judges(labels, judges, judge_names=names, n_boot=300, seed=4)
    assert r1 == r2
    assert [j.name for j in r1.judges] == ["majority", "middling", "random"]
    top = {j.name: j for j in r1.judges}
    assert sum(j.p_top1 for j in r1.judges) == pytest.approx(1.0)
    assert top["majority"].p_top1 > 0.99
    assert r1.pairwise["majority"]["random"] == 1.0
    for a in names:
        for b in names:
            if a != b:
                assert r1.pairwise[a][b] + r1.pairwise[b][a] == pytest.approx(1.0)
    # the point score is the alt-test's ρ
    assert top["middling"].score == pytest.approx(alt_test(labels, middling, epsilon=0.1).rho)
    lo, hi = top["middling"].ci  # type: ignore[misc]
    assert lo <= top["middling"].score <= hi  # type: ignore[operator]
    by_loo = rank_judges(labels, judges, judge_names=names, by="loo", n_boot=100, seed=4)
    assert [j.name for j in by_loo.judges] == ["majority", "middling", "random"]
    loo = loo_rule(labels, middling)
    expected = np.mean([h.d for h in loo.humans if h.d is not None])
    assert next(j for j in by_loo.judges if j.name == "middling").score == pytest.approx(expected)
