"""The condition study's statistics: κ/QWK against scikit-learn, Spearman against scipy, the CIs
and paired differences against a direct item bootstrap, and the edge cases in the docstring."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from judgepanel.errors import BadInput
from judgepanel.metrics.conditions import (
    Comparisons,
    condition_study,
    item_tables,
    rounded_mean,
    table_statistics,
)

SCALES = [np.arange(0.0, 2.0), np.arange(1.0, 4.0), np.arange(1.0, 6.0)]


def _reference(judge: np.ndarray, human: np.ndarray, cats: np.ndarray) -> dict[str, float]:
    """scikit-learn and scipy on the expanded comparisons (warnings: they warn where undefined)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "exact": float(np.mean(judge == human)) if judge.size else math.nan,
            "kappa": float(cohen_kappa_score(judge, human, labels=cats)),
            "qwk": float(cohen_kappa_score(judge, human, labels=cats, weights="quadratic")),
            "spearman": float(spearmanr(judge, human).statistic) if judge.size >= 2 else math.nan,
        }


def _noisy(rng: np.random.Generator, cats: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    human = rng.choice(cats, size=n)
    shift = rng.integers(-1, 2, size=n)
    judge = np.clip(human + shift * (rng.random(n) < 0.5), cats[0], cats[-1])
    return judge, human


@pytest.mark.parametrize("cats", SCALES, ids=["0-1", "1-3", "1-5"])
@pytest.mark.parametrize("seed", range(4))
def test_statistics_match_sklearn_and_scipy(cats: np.ndarray, seed: int) -> None:
    rng = np.random.default_rng(seed)
    judge, human = _noisy(rng, cats, 40 + seed)
    c = Comparisons.of(judge, human, np.arange(judge.size))
    got = table_statistics(item_tables(c, cats, judge.size).sum(axis=0, keepdims=True), cats)
    ref = _reference(judge, human, cats)
    for name, value in ref.items():
        assert got[name][0] == pytest.approx(value, abs=1e-12), name


def test_qwk_equals_kappa_on_a_two_level_scale() -> None:
    rng = np.random.default_rng(5)
    judge, human = _noisy(rng, SCALES[0], 60)
    st = condition_study({"none": Comparisons.of(judge, human, np.arange(60))}, SCALES[0], n_boot=50)
    r = st.conditions["none"]
    assert r.qwk.value == pytest.approx(r.kappa.value, abs=1e-12)


def test_per_human_comparisons_are_the_expanded_pairs() -> None:
    rng = np.random.default_rng(7)
    cats = SCALES[1]
    n, k = 30, 3
    humans = rng.choice(cats, size=(n, k))
    judge = rng.choice(cats, size=n)
    c = Comparisons.of(np.repeat(judge, k), humans.ravel(), np.repeat(np.arange(n), k))
    st = condition_study({"none": c}, cats, n_boot=20)
    ref = _reference(np.repeat(judge, k), humans.ravel(), cats)
    assert st.conditions["none"].n == n * k and st.conditions["none"].items == n
    for name, value in ref.items():
        assert getattr(st.conditions["none"], name).value == pytest.approx(value, abs=1e-12)


def _direct_bootstrap(
    judge: np.ndarray,
    human: np.ndarray,
    item: np.ndarray,
    n_items: int,
    cats: np.ndarray,
    n_boot: int,
    seed: int,
) -> dict[str, list[float]]:
    """Resample items with replacement, expand each drawn item to its comparisons, recompute with
    the reference packages: the plain loop the vectorised bootstrap must equal."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_items, size=(n_boot, n_items))  # the draws resample_counts makes
    by_item = [np.nonzero(item == u)[0] for u in range(n_items)]
    out: dict[str, list[float]] = {"exact": [], "kappa": [], "qwk": [], "spearman": []}
    for row in draws:
        idx = np.concatenate([by_item[u] for u in row]) if row.size else np.zeros(0, dtype=int)
        ref = _reference(judge[idx], human[idx], cats)
        for k, v in ref.items():
            out[k].append(v)
    return out


def _percentile(reps: list[float]) -> tuple[float, float]:
    arr = np.asarray(reps)
    arr = arr[np.isfinite(arr)]
    lo, hi = np.quantile(arr, [0.025, 0.975])
    return float(lo), float(hi)


def test_cis_and_paired_deltas_match_a_direct_bootstrap() -> None:
    rng = np.random.default_rng(11)
    cats = SCALES[2]
    n = 25
    human = rng.choice(cats, size=n)
    conds = {
        "none": np.clip(human + rng.integers(-2, 3, size=n), 1, 5),
        "rubric": np.clip(human + rng.integers(-1, 2, size=n), 1, 5),
    }
    # the rubric condition misses two items: the delta pairs only the shared ones
    keep = np.ones(n, dtype=bool)
    keep[[3, 17]] = False
    comps = {
        "none": Comparisons.of(conds["none"], human, np.arange(n)),
        "rubric": Comparisons.of(conds["rubric"][keep], human[keep], np.arange(n)[keep]),
    }
    n_boot, seed = 200, 4
    st = condition_study(comps, cats, n_items=n, n_boot=n_boot, seed=seed)
    direct = {
        name: _direct_bootstrap(c.judge, c.human, c.item, n, cats, n_boot, seed) for name, c in comps.items()
    }
    for name in comps:
        for stat in ("exact", "kappa", "qwk", "spearman"):
            got = getattr(st.conditions[name], stat).ci
            assert got == pytest.approx(_percentile(direct[name][stat]), abs=1e-9), (name, stat)
    # paired: both conditions on the same draws, over the items both judged
    shared = np.arange(n)[keep]
    none_shared = Comparisons.of(conds["none"][keep], human[keep], shared)
    d_none = _direct_bootstrap(none_shared.judge, none_shared.human, none_shared.item, n, cats, n_boot, seed)
    delta = st.deltas["rubric_vs_none"]
    assert delta.items == n - 2
    for stat in ("exact", "kappa", "qwk", "spearman"):
        a = np.asarray(direct["rubric"][stat])
        b = np.asarray(d_none[stat])
        assert getattr(delta, stat).ci == pytest.approx(_percentile(list(a - b)), abs=1e-9), stat
        ra = _reference(conds["rubric"][keep], human[keep], cats)[stat]
        rb = _reference(conds["none"][keep], human[keep], cats)[stat]
        assert getattr(delta, stat).value == pytest.approx(ra - rb, abs=1e-12)
    assert set(st.deltas) == {"rubric_vs_none"}


def test_same_seed_same_intervals_and_the_seed_matters() -> None:
    rng = np.random.default_rng(2)
    judge, human = _noisy(rng, SCALES[2], 50)
    c = {"none": Comparisons.of(judge, human, np.arange(50))}
    a = condition_study(c, SCALES[2], n_boot=100, seed=1)
    b = condition_study(c, SCALES[2], n_boot=100, seed=1)
    other = condition_study(c, SCALES[2], n_boot=100, seed=2)
    assert a == b
    assert a.conditions["none"].kappa.ci != other.conditions["none"].kappa.ci


# ---------------------------------------------------------------- edge cases


def test_one_category_only_is_undefined_except_exact() -> None:
    cats = SCALES[2]
    c = Comparisons.of([3.0] * 6, [3.0] * 6, np.arange(6))
    r = condition_study({"none": c}, cats, n_boot=50).conditions["none"]
    assert r.exact.value == 1.0
    assert math.isnan(r.kappa.value) and math.isnan(r.qwk.value) and math.isnan(r.spearman.value)
    assert all(math.isnan(x) for x in r.kappa.ci)
    ref = _reference(np.full(6, 3.0), np.full(6, 3.0), cats)
    assert math.isnan(ref["kappa"]) and math.isnan(ref["spearman"])  # the reference agrees
    # the judge constant on one level, humans spread: κ is 0 (p_o = p_e), ρ undefined
    c2 = Comparisons.of([3.0] * 6, [1.0, 2.0, 3.0, 3.0, 4.0, 5.0], np.arange(6))
    r2 = condition_study({"none": c2}, cats, n_boot=50).conditions["none"]
    assert r2.kappa.value == pytest.approx(0.0, abs=1e-12)
    assert r2.kappa.value == pytest.approx(_reference(np.full(6, 3.0), c2.human, cats)["kappa"], abs=1e-12)
    assert math.isnan(r2.spearman.value)


def test_perfect_agreement_is_one_everywhere() -> None:
    human = np.array([1.0, 2.0, 3.0, 1.0, 2.0, 3.0, 3.0])
    r = condition_study(
        {"rubric": Comparisons.of(human, human, np.arange(7))}, SCALES[1], n_boot=200
    ).conditions["rubric"]
    for stat in ("exact", "kappa", "qwk", "spearman"):
        assert getattr(r, stat).value == pytest.approx(1.0, abs=1e-12)
        lo, hi = getattr(r, stat).ci
        assert lo == pytest.approx(1.0) and hi == pytest.approx(1.0)  # resamples with one level drop out


@pytest.mark.parametrize(("judge", "exact", "kappa"), [(2.0, 1.0, math.nan), (3.0, 0.0, 0.0)])
def test_a_single_comparison(judge: float, exact: float, kappa: float) -> None:
    cats = SCALES[1]
    r = condition_study({"none": Comparisons.of([judge], [2.0], [0])}, cats, n_boot=20).conditions["none"]
    assert r.n == 1 and r.exact.value == exact
    ref = _reference(np.array([judge]), np.array([2.0]), cats)
    assert (math.isnan(r.kappa.value) and math.isnan(ref["kappa"])) or r.kappa.value == ref["kappa"] == kappa
    assert math.isnan(r.spearman.value)


def test_an_empty_condition_is_all_nan_and_no_delta_without_a_baseline() -> None:
    empty = Comparisons.of([], [], [])
    full = Comparisons.of([1.0, 2.0, 3.0], [1.0, 2.0, 2.0], [0, 1, 2])
    st = condition_study({"criteria": empty, "rubric": full}, SCALES[1], n_items=3, n_boot=20)
    assert st.conditions["criteria"].n == 0 and math.isnan(st.conditions["criteria"].exact.value)
    assert st.deltas == {}
    none_empty = condition_study({"none": empty}, SCALES[1], n_boot=10)
    assert math.isnan(none_empty.conditions["none"].kappa.value)


def test_rounded_mean_rounds_half_up() -> None:
    assert rounded_mean([2.0, 3.0]) == 3.0  # numpy's round would give 2
    assert rounded_mean([1.0, 2.0]) == 2.0
    assert rounded_mean([1.0, 1.0, 2.0]) == 1.0
    assert rounded_mean([0.0, 1.0, 1.0]) == 1.0
    with pytest.raises(BadInput):
        rounded_mean([])


def test_bad_input() -> None:
    with pytest.raises(BadInput, match="differ in length"):
        Comparisons.of([1.0, 2.0], [1.0], [0, 1])
    with pytest.raises(BadInput, match="missing"):
        Comparisons.of([1.0, math.nan], [1.0, 2.0], [0, 1])
    with pytest.raises(BadInput, match="not one of the categories"):
        condition_study({"none": Comparisons.of([7.0], [1.0], [0])}, SCALES[2], n_boot=5)
    ok = {"none": Comparisons.of([1.0], [1.0], [4])}
    with pytest.raises(BadInput, match="n_items"):
        condition_study(ok, SCALES[2], n_items=2)
    with pytest.raises(BadInput, match="replicates"):
        condition_study(ok, SCALES[2], n_boot=0)


def test_group_resampling_equals_a_direct_loop_over_groups() -> None:
    """`resample="groups"`: each replicate draws whole groups (articles) with replacement; the
    exact-agreement interval equals one computed by concatenating the drawn groups' items. (20
    groups: the percentile interval is kept from 20 groups on; below, issue 30's t interval.)"""
    from judgepanel.metrics.bootstrap import resample_indices

    rng = np.random.default_rng(3)
    n, size = 60, 3  # 20 groups of 3 items
    group = [f"g{i // size}" for i in range(n)]
    judge = rng.integers(1, 4, n).astype(float)
    human = np.where(rng.random(n) < 0.5, judge, rng.integers(1, 4, n)).astype(float)
    study = condition_study(
        {"none": Comparisons.of(judge, human, np.arange(n))},
        [1.0, 2.0, 3.0],
        n_boot=200,
        seed=4,
        groups=group,
    )
    assert study.resample == "groups" and study.n_groups == 20
    reps = []
    for row in resample_indices(20, 200, 4):
        idx = np.concatenate([np.arange(g * size, g * size + size) for g in row])
        reps.append(float(np.mean(judge[idx] == human[idx])))
    lo, hi = study.conditions["none"].exact.ci
    assert (lo, hi) == pytest.approx(tuple(np.quantile(reps, [0.025, 0.975])), abs=1e-12)
    items = condition_study(
        {"none": Comparisons.of(judge, human, np.arange(n))}, [1.0, 2.0, 3.0], n_boot=200, seed=4, groups=group,
        resample="items",
    )  # fmt: skip
    plain = condition_study(
        {"none": Comparisons.of(judge, human, np.arange(n))}, [1.0, 2.0, 3.0], n_boot=200, seed=4
    )
    assert items.resample == plain.resample == "items" and items.conditions == plain.conditions
