"""Property tests: small random matrices (hypothesis), checked against references and invariances."""

from __future__ import annotations

import math
import warnings

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.metrics import cohen_kappa_score

from judgepanel.metrics.agreement import (
    agreement,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha,
)

SCALE = np.arange(1.0, 5.0)
CELL = st.sampled_from([1.0, 2.0, 3.0, 4.0, np.nan])
FAST = settings(max_examples=60, deadline=None)


def matrices(max_units: int = 12, max_raters: int = 4) -> st.SearchStrategy[np.ndarray]:
    return st.tuples(st.integers(1, max_units), st.integers(1, max_raters)).flatmap(
        lambda shape: arrays(np.float64, shape, elements=CELL)
    )


def _pairable_values(r: np.ndarray) -> np.ndarray:
    keep = (~np.isnan(r)).sum(axis=1) >= 2
    v = r[keep]
    return v[~np.isnan(v)]


@FAST
@given(matrices(), st.sampled_from(["nominal", "ordinal", "interval", "ratio"]))
def test_alpha_matches_krippendorff(r: np.ndarray, level: str) -> None:
    mine = krippendorff_alpha(r, level, SCALE)
    values = _pairable_values(r)
    if np.unique(values).size < 2:
        assert math.isnan(mine)
        return
    ref = krippendorff.alpha(r.T, level_of_measurement=level, value_domain=SCALE)
    assert mine == pytest.approx(ref, abs=1e-9)


@FAST
@given(arrays(np.float64, st.tuples(st.integers(1, 15), st.just(2)), elements=CELL))
def test_cohen_matches_sklearn_and_is_symmetric(r: np.ndarray) -> None:
    a, b = r[:, 0], r[:, 1]
    mine = cohen_kappa(a, b, SCALE, "quadratic")
    assert mine == pytest.approx(cohen_kappa(b, a, SCALE, "quadratic"), abs=1e-12, nan_ok=True)
    keep = ~(np.isnan(a) | np.isnan(b))
    if keep.sum() == 0:
        assert math.isnan(mine)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns where κ is undefined; we compare the NaN
        ref = cohen_kappa_score(a[keep], b[keep], labels=SCALE, weights="quadratic")
    assert mine == pytest.approx(ref, abs=1e-9, nan_ok=True)
    assert math.isnan(mine) or mine <= 1.0 + 1e-12


@FAST
@given(matrices(), st.randoms(use_true_random=False))
def test_unit_and_rater_order_do_not_matter(r: np.ndarray, rnd) -> None:  # type: ignore[no-untyped-def]
    units = list(range(r.shape[0]))
    raters = list(range(r.shape[1]))
    rnd.shuffle(units)
    rnd.shuffle(raters)
    shuffled = r[units][:, raters]
    for fn in (fleiss_kappa, gwet_ac1):
        assert fn(shuffled, SCALE) == pytest.approx(fn(r, SCALE), abs=1e-12, nan_ok=True)
    for metric in ("percent", "alpha"):
        assert agreement(metric, shuffled, SCALE).value == pytest.approx(
            agreement(metric, r, SCALE).value, abs=1e-12, nan_ok=True
        )
