"""Issue 30 §3: a checker validated beyond the base rate — κ against scikit-learn, the
Clopper–Pearson bound against statsmodels, and the rule's edge cases (one class, a constant
checker, no item, a perfect record on few items)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from judgepanel.errors import BadInput
from judgepanel.metrics.checker_validation import (
    KEPT,
    NOT_VALIDATED,
    REFUSED,
    clopper_pearson_lower,
    cohen_kappa_binary,
    validate_checker,
)


@pytest.mark.parametrize(("k", "n"), [(16, 16), (29, 29), (27, 30), (5, 40), (0, 7), (1, 1)])
def test_clopper_pearson_lower_equals_statsmodels(k: int, n: int) -> None:
    # one-sided 95 % = the lower end of the two-sided 90 % interval
    want = proportion_confint(k, n, alpha=0.10, method="beta")[0]
    assert clopper_pearson_lower(k, n) == pytest.approx(want, abs=1e-12)


def test_perfect_records_on_few_items() -> None:
    assert clopper_pearson_lower(16, 16) == pytest.approx(0.05 ** (1 / 16), abs=1e-12)  # 0.829
    assert clopper_pearson_lower(28, 28) < 0.9 <= clopper_pearson_lower(29, 29)
    assert math.isnan(clopper_pearson_lower(0, 0))


def test_kappa_equals_sklearn() -> None:
    rng = np.random.default_rng(0)
    for p in (0.5, 0.9, 0.2):
        a = rng.random(50) < p
        b = np.where(rng.random(50) < 0.8, a, ~a)
        assert cohen_kappa_binary(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert math.isnan(cohen_kappa_binary([True] * 5, [True] * 5))  # p_e = 1: undefined


def test_a_checker_that_always_says_met_is_not_validated_by_the_base_rate() -> None:
    """The issue's case: 98 % of the judges' majority says met, the checker always does: raw
    agreement 0.98 passed the old 0.9 rule; the classes are not there to test it."""
    majority = np.array([True] * 196 + [False] * 4)
    v = validate_checker(np.ones(200, bool), majority)
    assert v.agreement == pytest.approx(0.98) and v.decision == NOT_VALIDATED and not v.kept
    assert "the judges say 'met' on 98 %" in v.reason and "196 met, 4 not met" in v.reason
    # the same base rate with both classes large enough: the constant checker still is not validated
    balanced = np.array([True] * 100 + [False] * 12)
    c = validate_checker(np.ones(112, bool), balanced)
    assert c.decision == NOT_VALIDATED and "says 'met' on every item" in c.reason


def test_kept_needs_kappa_and_the_lower_bound() -> None:
    m = np.array([True] * 20 + [False] * 20)
    good = validate_checker(m.copy(), m)
    assert good.decision == KEPT and good.kappa == pytest.approx(1.0) and good.lower_bound > 0.9
    assert (good.sensitivity, good.specificity) == (1.0, 1.0)
    few = validate_checker(m[:24].copy() | np.r_[np.zeros(10, bool), np.ones(14, bool)], m[:24])
    assert few.decision in (REFUSED, NOT_VALIDATED)
    one_off = m.copy()
    one_off[0] = False  # 39/40: agreement 0.975, lower bound 0.888 < 0.9
    v = validate_checker(one_off, m)
    assert v.decision == REFUSED and "lower bound" in v.reason and v.agreement == pytest.approx(0.975)
    assert v.sensitivity == pytest.approx(19 / 20) and v.specificity == 1.0
    # a lax threshold keeps it; a strict κ refuses it
    assert validate_checker(one_off, m, threshold=0.85).kept
    assert validate_checker(one_off, m, threshold=0.85, min_kappa=0.99).decision == REFUSED
    assert validate_checker([], []).decision == NOT_VALIDATED
    with pytest.raises(BadInput):
        validate_checker([True], [True, False])
    with pytest.raises(BadInput):
        validate_checker([True], [True], threshold=0)
    with pytest.raises(BadInput):
        validate_checker([True], [True], min_per_class=0)
