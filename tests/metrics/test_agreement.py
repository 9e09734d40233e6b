"""Every coefficient against its reference library on random matrices with missing cells, and
against published worked examples."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest
from irrCAC.raw import CAC
from irrCAC.table import CAC as TableCAC
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from judgepanel.errors import BadInput
from judgepanel.metrics.agreement import (
    LEVELS,
    AgreementResult,
    agreement,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac1,
    kendall,
    krippendorff_alpha,
    percent_agreement,
    scott_pi,
    spearman,
    weight_matrix,
)

NAN = np.nan
SCALE = np.arange(1.0, 6.0)


def random_ratings(
    seed: int, units: int = 80, raters: int = 4, q: int = 5, missing: float = 0.25, skew: bool = True
) -> np.ndarray:
    """Correlated ratings on 1..q: a latent unit value plus rater noise, with cells knocked out."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, q + 1, size=units) if not skew else rng.choice(np.arange(1, q + 1), units)
    noise = rng.integers(-1, 2, size=(units, raters)) * (rng.random((units, raters)) < 0.4)
    r = np.clip(truth[:, None] + noise, 1, q).astype(float)
    r[rng.random(r.shape) < missing] = NAN
    return r


def irr(ratings: np.ndarray, categories: np.ndarray, weights: str = "identity") -> CAC:
    # irrCAC drops all-missing units itself, but through a pandas chained assignment that warns
    kept = ratings[~np.isnan(ratings).all(axis=1)]
    return CAC(pd.DataFrame(kept), weights=weights, categories=list(categories), digits=14)


# ---------------------------------------------------------------- reference libraries


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_alpha_matches_krippendorff_with_missing(level: str, seed: int) -> None:
    r = random_ratings(seed, units=60, raters=5, missing=0.3)
    expected = krippendorff.alpha(r.T, level_of_measurement=level, value_domain=SCALE)
    assert krippendorff_alpha(r, level, SCALE) == pytest.approx(expected, abs=1e-12)
    # categories only validate: inferring them gives the same α at every level
    assert krippendorff_alpha(r, level) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("level", ["interval", "ratio", "ordinal"])
def test_alpha_on_many_distinct_values(level: str) -> None:
    # 200 distinct values: interval takes the moment path, ratio/ordinal the dense q×q path
    rng = np.random.default_rng(7)
    latent = rng.uniform(1, 10, size=120)
    r = latent[:, None] + rng.normal(0, 1.5, size=(120, 3))
    r = np.round(np.clip(r, 0.5, 12), 2)
    r[rng.random(r.shape) < 0.2] = NAN
    expected = krippendorff.alpha(r.T, level_of_measurement=level)
    assert krippendorff_alpha(r, level) == pytest.approx(expected, abs=1e-10)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_cohen_matches_sklearn_with_missing(weights: str | None, seed: int) -> None:
    r = random_ratings(seed, units=70, raters=2, missing=0.2)
    keep = ~np.isnan(r).any(axis=1)
    expected = cohen_kappa_score(r[keep, 0], r[keep, 1], labels=SCALE, weights=weights)
    assert cohen_kappa(r[:, 0], r[:, 1], SCALE, weights) == pytest.approx(expected, abs=1e-12)


def test_weighted_cohen_on_unequal_spacing_follows_values_as_irrcac() -> None:
    # categories 1, 2, 5: scikit-learn weighs by position (|i − j|), Gwet/irrCAC and we by value
    rng = np.random.default_rng(3)
    cats = np.array([1.0, 2.0, 5.0])
    a = rng.choice(cats, 90)
    b = np.where(rng.random(90) < 0.6, a, rng.choice(cats, 90))
    table = pd.crosstab(pd.Categorical(a, categories=cats), pd.Categorical(b, categories=cats), dropna=False)
    w = weight_matrix(cats, "linear")
    expected = TableCAC(table, weights=w, digits=14).cohen()["est"]["coefficient_value"]
    assert cohen_kappa(a, b, cats, "linear") == pytest.approx(expected, abs=1e-12)
    by_position = cohen_kappa_score(a, b, labels=cats, weights="linear")
    assert cohen_kappa(a, b, cats, "linear") != pytest.approx(by_position, abs=1e-6)
    # and positions are what we get when the caller codes the scale as ranks
    ranks = {1.0: 0.0, 2.0: 1.0, 5.0: 2.0}
    ra, rb = np.vectorize(ranks.get)(a), np.vectorize(ranks.get)(b)
    assert cohen_kappa(ra, rb, [0, 1, 2], "linear") == pytest.approx(by_position, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scott_matches_irrcac(seed: int) -> None:
    r = random_ratings(seed, units=70, raters=2, missing=0.2)
    keep = ~np.isnan(r).any(axis=1)
    table = pd.crosstab(
        pd.Categorical(r[keep, 0], categories=SCALE),
        pd.Categorical(r[keep, 1], categories=SCALE),
        dropna=False,
    )
    expected = TableCAC(table, digits=14).scott()["est"]["coefficient_value"]
    assert scott_pi(r[:, 0], r[:, 1], SCALE) == pytest.approx(expected, abs=1e-12)
    # two raters, complete data: Scott's π is Fleiss' κ
    assert scott_pi(r[keep, 0], r[keep, 1], SCALE) == pytest.approx(fleiss_kappa(r[keep], SCALE), abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fleiss_matches_statsmodels_on_complete_data(seed: int) -> None:
    r = random_ratings(seed, units=50, raters=6, missing=0.0)
    table, _ = aggregate_raters(r.astype(int), n_cat=None)
    assert fleiss_kappa(r, SCALE) == pytest.approx(sm_fleiss_kappa(table), abs=1e-12)


@pytest.mark.parametrize("weights", ["identity", "linear", "quadratic", "ordinal"])
@pytest.mark.parametrize("seed", [0, 1])
def test_fleiss_matches_irrcac_with_missing(weights: str, seed: int) -> None:
    r = random_ratings(seed, units=60, raters=5, missing=0.3)
    expected = irr(r, SCALE, weights).fleiss()["est"]["coefficient_value"]
    w = None if weights == "identity" else weights
    assert fleiss_kappa(r, SCALE, w) == pytest.approx(expected, abs=1e-12)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "weights", ["identity", "linear", "quadratic", "ordinal", "radical", "ratio", "circular", "bipolar"]
)
@pytest.mark.parametrize("seed", [0, 1])
def test_gwet_ac1_ac2_match_irrcac_with_missing(weights: str, seed: int) -> None:
    r = random_ratings(seed, units=60, raters=5, missing=0.3)
    expected = irr(r, SCALE, weights).gwet()["est"]
    w = None if weights == "identity" else weights
    assert gwet_ac1(r, SCALE, w) == pytest.approx(expected["coefficient_value"], abs=1e-12)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("weights", "level"), [("identity", "nominal"), ("quadratic", "interval"), ("ratio", "ratio")]
)
def test_alpha_matches_irrcacs_weighted_alpha(weights: str, level: str) -> None:
    # Gwet's weighted α: quadratic weights are the interval metric, ratio weights the ratio metric.
    # (irrCAC's "ordinal" weights rank category distances, not Krippendorff's marginal-based
    # ordinal metric, so they are a different coefficient and not compared.)
    r = random_ratings(5, units=60, raters=4, missing=0.3)
    expected = irr(r, SCALE, weights).krippendorff()["est"]["coefficient_value"]
    assert krippendorff_alpha(r, level, SCALE) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_percent_agreement_is_irrcacs_observed_agreement(seed: int) -> None:
    r = random_ratings(seed, units=60, raters=4, missing=0.3)
    assert percent_agreement(r) == pytest.approx(irr(r, SCALE).gwet()["est"]["pa"], abs=1e-12)


def test_percent_agreement_pooled_by_hand() -> None:
    r = np.array([[1, 1, 1], [1, 2, NAN], [2, 2, 3], [NAN, NAN, 4]], dtype=float)
    # unit 1: 6 of 6 ordered pairs agree; unit 2: 0 of 2; unit 3: 2 of 6; unit 4 has one rating
    assert percent_agreement(r) == pytest.approx((1 + 0 + 1 / 3) / 3)
    assert percent_agreement(r, pooled=True) == pytest.approx((6 + 0 + 2) / (6 + 2 + 6))
    two = np.array([[1, 1], [1, 2], [3, 3], [2, NAN]], dtype=float)
    assert percent_agreement(two) == percent_agreement(two, pooled=True) == pytest.approx(2 / 3)


@pytest.mark.parametrize("seed", [0, 1])
def test_rank_correlations_match_scipy_with_ties_and_missing(seed: int) -> None:
    r = random_ratings(seed, units=150, raters=2, missing=0.1)
    keep = ~np.isnan(r).any(axis=1)
    assert spearman(r[:, 0], r[:, 1]) == pytest.approx(stats.spearmanr(r[keep, 0], r[keep, 1])[0], abs=1e-12)
    assert kendall(r[:, 0], r[:, 1]) == pytest.approx(stats.kendalltau(r[keep, 0], r[keep, 1])[0], abs=1e-12)


def test_kendall_on_near_continuous_scores_takes_the_sorting_path() -> None:
    rng = np.random.default_rng(11)
    x = rng.normal(size=2500)
    y = np.round(x + rng.normal(size=2500), 3)  # some ties on one side only
    assert np.unique(x).size * np.unique(y).size > 4_000_000
    assert kendall(x, y) == pytest.approx(stats.kendalltau(x, y)[0], abs=1e-12)
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-12)


# ---------------------------------------------------------------- published worked examples


# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", reliability data: 4 observers
# (rows here are units) × 12 units with missing values; published α = .743 nominal, .815 ordinal,
# .849 interval, .797 ratio.
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
).T


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)]
)
def test_krippendorff_2011_example(level: str, published: float) -> None:
    assert round(krippendorff_alpha(KRIPPENDORFF_2011, level), 3) == published


def test_gwet_2014_four_raters_example() -> None:
    # Gwet (2014) Table 2.16 (irrCAC's raw_4raters, the same 12 units): AC1 = 0.77544,
    # Fleiss' κ = 0.76117, AC2 with bipolar weights = 0.90037 (irrCAC's documented output).
    assert round(gwet_ac1(KRIPPENDORFF_2011, SCALE), 5) == 0.77544
    assert round(fleiss_kappa(KRIPPENDORFF_2011, SCALE), 5) == 0.76117
    assert round(gwet_ac1(KRIPPENDORFF_2011, SCALE, "bipolar"), 5) == 0.90037


def _expand(table: np.ndarray) -> np.ndarray:
    """Contingency table → two-column ratings (codes 0..q−1)."""
    rows = [(i, j) for i in range(table.shape[0]) for j in range(table.shape[1]) for _ in range(table[i, j])]
    return np.array(rows, dtype=float)


def test_gwet_2014_abstractors_table() -> None:
    # irrCAC's table_cont3x3abstractors (Gwet 2014): AC1 = 0.84933, AC2 (quadratic) = 0.94024
    r = _expand(np.array([[13, 0, 0], [0, 20, 7], [0, 4, 56]]))
    assert round(gwet_ac1(r, [0, 1, 2]), 5) == 0.84933
    assert round(gwet_ac1(r, [0, 1, 2], "quadratic"), 5) == 0.94024
    # observed agreement (13 + 20 + 56) / 100
    assert percent_agreement(r) == pytest.approx(0.89)


def test_cohen_textbook_example() -> None:
    # 50 proposals, two readers: yes/yes 20, yes/no 5, no/yes 10, no/no 15.
    # p_o = .70, p_e = .5·.6 + .5·.4 = .50, κ = (.70 − .50)/(1 − .50) = .40
    r = _expand(np.array([[20, 5], [10, 15]]))
    assert cohen_kappa(r[:, 0], r[:, 1], [0, 1]) == pytest.approx(0.4)
    # Scott: π = (.55, .45), p_e = .505, π = (.70 − .505)/.495
    assert scott_pi(r[:, 0], r[:, 1], [0, 1]) == pytest.approx(0.195 / 0.495)


# Fleiss (1971): 30 patients, 6 psychiatrists, 5 diagnoses; published κ = .430 (as statsmodels' tests)
FLEISS_1971 = np.array(
    [
        [4, 4, 4, 4, 4, 4],
        [2, 2, 2, 5, 5, 5],
        [2, 3, 3, 3, 3, 5],
        [5, 5, 5, 5, 5, 5],
        [2, 2, 2, 4, 4, 4],
        [1, 1, 3, 3, 3, 3],
        [3, 3, 3, 3, 5, 5],
        [1, 1, 3, 3, 3, 4],
        [1, 1, 4, 4, 4, 4],
        [5, 5, 5, 5, 5, 5],
        [1, 4, 4, 4, 4, 4],
        [1, 2, 4, 4, 4, 4],
        [2, 2, 2, 3, 3, 3],
        [1, 4, 4, 4, 4, 4],
        [2, 2, 4, 4, 4, 5],
        [3, 3, 3, 3, 3, 5],
        [1, 1, 1, 4, 5, 5],
        [1, 1, 1, 1, 1, 2],
        [2, 2, 4, 4, 4, 4],
        [1, 3, 3, 5, 5, 5],
        [5, 5, 5, 5, 5, 5],
        [2, 4, 4, 4, 4, 4],
        [2, 2, 4, 5, 5, 5],
        [1, 1, 4, 4, 4, 4],
        [1, 4, 4, 4, 4, 5],
        [2, 2, 2, 2, 2, 4],
        [1, 1, 1, 1, 5, 5],
        [2, 2, 4, 4, 4, 4],
        [1, 3, 3, 3, 3, 3],
        [5, 5, 5, 5, 5, 5],
    ],
    dtype=float,
)


def test_fleiss_1971_example() -> None:
    assert round(fleiss_kappa(FLEISS_1971, SCALE), 3) == 0.430
    table, _ = aggregate_raters(FLEISS_1971.astype(int))
    assert fleiss_kappa(FLEISS_1971, SCALE) == pytest.approx(sm_fleiss_kappa(table), abs=1e-12)


def test_fleiss_fourteen_raters_example() -> None:
    # the 10 subjects × 14 raters count table of the Wikipedia article on Fleiss' κ: κ = 0.210
    counts = np.array(
        [
            [0, 0, 0, 0, 14],
            [0, 2, 6, 4, 2],
            [0, 0, 3, 5, 6],
            [0, 3, 9, 2, 0],
            [2, 2, 8, 1, 1],
            [7, 7, 0, 0, 0],
            [3, 2, 6, 3, 0],
            [2, 5, 3, 2, 2],
            [6, 5, 2, 1, 0],
            [0, 2, 2, 3, 7],
        ]
    )
    ratings = np.array([np.repeat(SCALE, row) for row in counts])
    assert round(fleiss_kappa(ratings, SCALE), 3) == 0.210


# ---------------------------------------------------------------- dispatch


def test_agreement_dispatches_every_contract_name() -> None:
    r = random_ratings(4, units=50, raters=2, missing=0.1)
    keep = ~np.isnan(r).any(axis=1)
    expected = {
        "percent": percent_agreement(r),
        "cohen": cohen_kappa(r[:, 0], r[:, 1], SCALE),
        "cohen-linear": cohen_kappa(r[:, 0], r[:, 1], SCALE, "linear"),
        "cohen-quadratic": cohen_kappa(r[:, 0], r[:, 1], SCALE, "quadratic"),
        "fleiss": fleiss_kappa(r, SCALE),
        "alpha": krippendorff_alpha(r, "nominal", SCALE),
        "ac1": gwet_ac1(r, SCALE),
        "scott": scott_pi(r[:, 0], r[:, 1], SCALE),
        "spearman": spearman(r[:, 0], r[:, 1]),
        "kendall": kendall(r[:, 0], r[:, 1]),
    }
    for metric, value in expected.items():
        res = agreement(metric, r, SCALE)
        assert isinstance(res, AgreementResult)
        assert res.value == pytest.approx(value, abs=1e-15), metric
        assert res.n_units == int(keep.sum()) and res.n_raters == 2
    assert agreement("cohen-linear", r, SCALE).level == "linear"
    assert agreement("kendall", r, SCALE).level == "ordinal"


def test_agreement_levels_for_alpha_and_ac() -> None:
    r = random_ratings(2, units=60, raters=4, missing=0.2)
    for level in LEVELS:
        assert agreement("alpha", r, SCALE, level).value == krippendorff_alpha(r, level, SCALE)
    assert agreement("ac1", r, SCALE, "interval").value == pytest.approx(gwet_ac1(r, SCALE, "quadratic"))
    assert agreement("ac1", r, SCALE, "ordinal").value == pytest.approx(gwet_ac1(r, SCALE, "ordinal"))
    assert agreement("ac1", r, SCALE, "ratio").value == pytest.approx(gwet_ac1(r, SCALE, "ratio"))
    assert agreement("ac1", r, SCALE).level == "nominal"


@pytest.mark.parametrize(
    ("metric", "level", "message"),
    [
        ("kappa", None, "unknown metric"),
        ("cohen", None, "exactly two raters"),
        ("cohen", "ordinal", "cohen-linear"),
        ("fleiss", "interval", "applies to alpha and ac1"),
        ("alpha", "bogus", "unknown level"),
        ("spearman", "interval", "rank correlation"),
    ],
)
def test_agreement_refuses_bad_requests(metric: str, level: str | None, message: str) -> None:
    r = random_ratings(0, units=10, raters=3)
    with pytest.raises(BadInput, match=message):
        agreement(metric, r, SCALE, level)
