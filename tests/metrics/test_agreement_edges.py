"""Edge cases, one test each, with the documented result and what the reference libraries do."""

from __future__ import annotations

import math
import warnings

import krippendorff
import numpy as np
import pandas as pd
import pytest
from irrCAC.raw import CAC
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from judgepanel.errors import BadInput
from judgepanel.metrics.agreement import (
    LEVELS,
    agreement,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac1,
    kendall,
    krippendorff_alpha,
    percent_agreement,
    scott_pi,
    spearman,
)

NAN = np.nan
SCALE = np.arange(1.0, 6.0)


def test_one_category_used_kappa_family_is_undefined() -> None:
    r = np.full((20, 3), 4.0)
    assert percent_agreement(r) == 1.0
    assert math.isnan(cohen_kappa(r[:, 0], r[:, 1], SCALE))
    assert math.isnan(scott_pi(r[:, 0], r[:, 1], SCALE))
    assert math.isnan(fleiss_kappa(r, SCALE))
    for level in LEVELS:
        assert math.isnan(krippendorff_alpha(r, level, SCALE))
    # the references agree, each in its own way
    with pytest.warns(Warning):
        assert math.isnan(cohen_kappa_score(r[:, 0], r[:, 1], labels=SCALE))
    with pytest.warns(RuntimeWarning):
        assert math.isnan(sm_fleiss_kappa(np.array([[0, 0, 0, 3, 0]] * 20)))
    with pytest.raises(ValueError, match="more than one value"):
        krippendorff.alpha(r.T, level_of_measurement="nominal")
    with pytest.warns(RuntimeWarning):
        assert math.isnan(krippendorff.alpha(r.T, level_of_measurement="nominal", value_domain=SCALE))


def test_one_category_used_ac1_is_defined() -> None:
    # p_e = 0 when every rating is one of q ≥ 2 categories, so AC1 = p_o = 1 (irrCAC agrees)
    r = np.full((20, 3), 4.0)
    assert gwet_ac1(r, SCALE) == 1.0
    ref = CAC(pd.DataFrame(r), categories=list(SCALE)).gwet()["est"]["coefficient_value"]
    assert ref == 1.0
    # a single category (q = 1): nothing to be chance about, NaN
    assert math.isnan(gwet_ac1(r, [4.0]))


def test_perfect_agreement_over_several_categories_is_one() -> None:
    r = np.repeat(np.array([1, 2, 3, 4, 5, 2, 3], dtype=float)[:, None], 3, axis=1)
    r[0, 2] = NAN  # missing cells do not spoil perfect agreement
    for metric in ("percent", "fleiss", "ac1"):
        assert agreement(metric, r, SCALE).value == 1.0, metric
    for level in LEVELS:
        assert agreement("alpha", r, SCALE, level).value == 1.0, level
    for metric in ("cohen", "cohen-linear", "cohen-quadratic", "scott", "spearman", "kendall"):
        assert agreement(metric, r[:, :2], SCALE).value == 1.0, metric


def test_single_rater_gives_nan_everywhere() -> None:
    r = np.array([[1.0], [2.0], [3.0], [5.0]])
    for metric in ("percent", "fleiss", "alpha", "ac1"):
        res = agreement(metric, r, SCALE)
        assert math.isnan(res.value) and res.n_units == 0 and res.n_raters == 1, metric


def test_units_with_a_single_rating() -> None:
    base = np.array([[1, 1, 2], [2, 2, 2], [3, 4, 3], [5, 5, 4], [2, 3, 2]], dtype=float)
    singles = np.array([[NAN, 4, NAN], [1, NAN, NAN], [NAN, NAN, 5]], dtype=float)
    r = np.vstack([base, singles])
    # α and observed agreement ignore units with one rating (no pairable values) ...
    for level in LEVELS:
        assert krippendorff_alpha(r, level, SCALE) == pytest.approx(krippendorff_alpha(base, level, SCALE))
    assert percent_agreement(r) == percent_agreement(base)
    assert agreement("alpha", r, SCALE).n_units == 5
    # ... but Gwet's generalisation of Fleiss and AC1 lets them inform the category shares π_k, as irrCAC
    ref = CAC(pd.DataFrame(r), categories=list(SCALE), digits=14)
    assert fleiss_kappa(r, SCALE) == pytest.approx(ref.fleiss()["est"]["coefficient_value"], abs=1e-12)
    assert gwet_ac1(r, SCALE) == pytest.approx(ref.gwet()["est"]["coefficient_value"], abs=1e-12)
    assert fleiss_kappa(r, SCALE) != pytest.approx(fleiss_kappa(base, SCALE), abs=1e-6)


def test_empty_overlap_is_nan() -> None:
    a = np.array([1, 2, 3, NAN, NAN, NAN])
    b = np.array([NAN, NAN, NAN, 1, 2, 3])
    r = np.column_stack([a, b])
    for metric in (
        "percent",
        "cohen",
        "cohen-quadratic",
        "scott",
        "fleiss",
        "alpha",
        "ac1",
        "spearman",
        "kendall",
    ):
        res = agreement(metric, r, SCALE)
        assert math.isnan(res.value) and res.n_units == 0, metric


def test_all_missing_is_nan() -> None:
    r = np.full((4, 3), NAN)
    for metric in ("percent", "fleiss", "alpha", "ac1"):
        assert math.isnan(agreement(metric, r, SCALE).value)
    assert math.isnan(agreement("alpha", r).value)  # no categories to infer either


def test_unused_scale_levels_change_ac1_not_kappa() -> None:
    """A 1–5 scale where nobody used 5 (or 3): passing the scale changes Gwet's AC1 (q enters p_e),
    while Cohen's κ, Fleiss' κ, Scott's π and α are unchanged (unused levels have zero margins and
    our weights follow values, not positions). scikit-learn's *weighted* κ weighs by position, so
    there inferring the labels does change it: pass the scale explicitly."""
    rng = np.random.default_rng(0)
    a = rng.choice([1.0, 2.0, 4.0], 100)
    b = np.where(rng.random(100) < 0.7, a, rng.choice([1.0, 2.0, 4.0], 100))
    r = np.column_stack([a, b])
    inferred = np.array([1.0, 2.0, 4.0])
    assert gwet_ac1(r, SCALE) != pytest.approx(gwet_ac1(r, inferred), abs=1e-3)
    assert agreement("ac1", r, None).value == pytest.approx(gwet_ac1(r, inferred))
    for w in (None, "linear", "quadratic"):
        assert cohen_kappa(a, b, SCALE, w) == pytest.approx(cohen_kappa(a, b, inferred, w))  # type: ignore[arg-type]
    assert fleiss_kappa(r, SCALE) == pytest.approx(fleiss_kappa(r, inferred))
    assert scott_pi(a, b, SCALE) == pytest.approx(scott_pi(a, b, inferred))
    for level in LEVELS:
        assert krippendorff_alpha(r, level, SCALE) == pytest.approx(krippendorff_alpha(r, level))
    sk_full = cohen_kappa_score(a, b, labels=SCALE, weights="linear")
    sk_inferred = cohen_kappa_score(a, b, weights="linear")
    assert cohen_kappa(a, b, SCALE, "linear") == pytest.approx(sk_full)
    assert sk_inferred != pytest.approx(sk_full, abs=1e-3)


def test_rank_correlations_with_a_constant_side_are_nan() -> None:
    a = np.array([1.0, 2.0, 3.0, 4.0])
    b = np.array([3.0, 3.0, 3.0, 3.0])
    assert math.isnan(spearman(a, b)) and math.isnan(kendall(a, b))
    assert math.isnan(spearman([1.0], [2.0])) and math.isnan(kendall([1.0, NAN], [NAN, 2.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spearman(a, b)  # no warning leaks out, unlike scipy's ConstantInputWarning


def test_rating_outside_the_categories_is_bad_input() -> None:
    r = np.array([[1.0, 2.0], [6.0, 1.0]])
    with pytest.raises(BadInput, match="rating 6 is not one of the categories"):
        fleiss_kappa(r, SCALE)
    with pytest.raises(BadInput, match="distinct"):
        gwet_ac1(r, [1.0, 1.0, 6.0])
    with pytest.raises(BadInput, match="finite"):
        krippendorff_alpha(np.array([[1.0, np.inf]]))
    with pytest.raises(BadInput, match="different lengths"):
        spearman([1.0, 2.0], [1.0])
