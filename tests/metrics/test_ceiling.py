"""The ceiling band: LP identification bounds on E[max θ] from three raters' pattern frequencies,
cross-checked against a direct scipy.optimize.linprog formulation on worked examples, with the
cases whose answer is known in closed form and the edge cases."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import linprog

from judgepanel.metrics.ceiling import (
    ceiling_band,
    grid_steps,
    moment_bounds,
    pattern_frequencies,
    patterns,
    simplex_grid,
)


def exact_frequencies(points: list[tuple[float, ...]], weights: list[float]) -> np.ndarray:
    """The pattern frequencies three i.i.d. draws from a mixture of the θ ``points`` give."""
    k = len(points[0])
    out = np.zeros(len(patterns(k)))
    for i, p in enumerate(patterns(k)):
        for ordered in set(itertools.permutations(p)):
            out[i] += sum(
                w * math.prod(th[c] for c in ordered) for th, w in zip(points, weights, strict=True)
            )
    return out


def direct_lp(points: list[tuple[float, ...]], weights: list[float], steps: int) -> tuple[float, float]:
    """An independent formulation: a grid built by meshgrid, one equality per *ordered* triple
    E[θ_a θ_b θ_c] = Σ_mixture w θ_a θ_b θ_c (27 for K = 3), no slack (the data are a mixture's)."""
    k = len(points[0])
    axes = np.meshgrid(*[np.arange(steps + 1)] * (k - 1), indexing="ij")
    free = np.stack([a.ravel() for a in axes], axis=1)
    free = free[free.sum(axis=1) <= steps]
    grid = np.column_stack([free, steps - free.sum(axis=1)]) / steps
    rows, rhs = [], []
    for triple in itertools.product(range(k), repeat=3):
        rows.append(grid[:, triple[0]] * grid[:, triple[1]] * grid[:, triple[2]])
        rhs.append(
            sum(
                w * th[triple[0]] * th[triple[1]] * th[triple[2]]
                for th, w in zip(points, weights, strict=True)
            )
        )
    rows.append(np.ones(grid.shape[0]))
    rhs.append(1.0)
    obj = grid.max(axis=1)
    lo = linprog(obj, A_eq=np.array(rows), b_eq=rhs, bounds=(0, None), method="highs-ipm")
    hi = linprog(-obj, A_eq=np.array(rows), b_eq=rhs, bounds=(0, None), method="highs-ipm")
    assert lo.status == 0 and hi.status == 0
    return float(lo.fun), float(-hi.fun)


MIXTURE = ([(0.9, 0.05, 0.05), (0.1, 0.6, 0.3)], [0.5, 0.5])  # on the 1/20 grid; ceiling 0.75


def test_bounds_equal_a_direct_linprog_formulation_on_a_worked_example() -> None:
    points, weights = MIXTURE
    (band,), delta = moment_bounds(exact_frequencies(points, weights), 3, steps=20)
    ref = direct_lp(points, weights, 20)
    assert delta == pytest.approx(0.0, abs=1e-9)
    assert band == pytest.approx(ref, abs=1e-6)
    # the mixture's own ceiling lies inside (this two-point mixture happens to pin it)
    assert band[0] - 1e-6 <= 0.75 <= band[1] + 1e-6


def test_independent_raters_with_equal_shares_put_the_lower_bound_at_the_largest_share() -> None:
    # θ constant at π: E[max θ] ≥ max E[θ] = max π (Jensen), attained by the point mass
    pi = (0.5, 0.3, 0.2)
    (band,), delta = moment_bounds(exact_frequencies([pi], [1.0]), 3, steps=20)
    assert delta == pytest.approx(0.0, abs=1e-9)
    assert band[0] == pytest.approx(0.5, abs=1e-7)
    assert band == pytest.approx(direct_lp([pi], [1.0], 20), abs=1e-6)


def test_two_mixtures_with_the_same_third_moments_both_lie_inside_the_band() -> None:
    # binary: ½δ(0.2) + ½δ(0.8) and a·δ(0.5) + (1−a)/2·(δ(0.05) + δ(0.95)) with (1−a)·0.45² = 0.09
    # share mean, variance and (by symmetry) third moment, hence every pattern frequency; their
    # ceilings are 0.8 and 0.7
    a = 1 - 0.09 / 0.45**2
    f1 = exact_frequencies([(0.2, 0.8), (0.8, 0.2)], [0.5, 0.5])
    f2 = exact_frequencies([(0.5, 0.5), (0.05, 0.95), (0.95, 0.05)], [a, (1 - a) / 2, (1 - a) / 2])
    np.testing.assert_allclose(f1, f2, atol=1e-12)
    (band,), _ = moment_bounds(f1, 2, steps=40)
    assert band[0] <= 0.7 + 1e-9 and band[1] >= 0.8 - 1e-9


def test_unanimous_raters_pin_the_ceiling_at_one() -> None:
    codes = np.repeat(np.array([[0], [1], [2], [0]]), 3, axis=1)
    band = ceiling_band(codes, 3, labels=("A", "B", "T"), tolerance=0.0)
    assert band.low == pytest.approx(1.0, abs=1e-9) and band.high == pytest.approx(1.0, abs=1e-9)
    # the default slack is one observation's worth of frequency: 1/4 here, so the band widens
    loose = ceiling_band(codes, 3)
    assert loose.tolerance == 0.25 and loose.low < 1.0 and loose.high == pytest.approx(1.0, abs=1e-9)
    assert band.observed_agreement == 1.0
    assert band.patterns["A,A,A"] == 0.5 and band.patterns["B,B,B"] == 0.25


def test_the_identified_agreement_equals_the_observed_one() -> None:
    # Σθ² is a combination of third moments (Σθ² = Σθ²·Σθ), so the LP pins it to what the triples show
    rng = np.random.default_rng(0)
    theta = rng.dirichlet([0.6, 0.6, 0.6], size=400)
    codes = np.stack([[rng.choice(3, p=t) for _ in range(3)] for t in theta])
    band = ceiling_band(codes, 3)
    assert band.agreement_low == pytest.approx(band.observed_agreement, abs=2e-3)
    assert band.agreement_high == pytest.approx(band.observed_agreement, abs=2e-3)
    assert band.low >= band.observed_agreement - 1e-9  # max θ ≥ Σθ² pointwise


def test_frequencies_no_mixture_can_give_report_their_mismatch() -> None:
    # every unit labelled A, B and T by its three raters: three i.i.d. draws cannot avoid repeats
    codes = np.tile(np.array([0, 1, 2]), (30, 1))
    band = ceiling_band(codes, 3)
    assert band.mismatch > 0.5
    assert 1 / 3 - 1e-9 <= band.low <= band.high <= 1.0


def test_patterns_are_counted_over_every_triple_of_raters() -> None:
    codes = np.array([[0, 0, 1, -1], [0, 0, 0, 0], [2, 1, -1, -1]])
    freq, total, units, agree = pattern_frequencies(codes, 3)
    # unit 0: one complete triple (0,0,1); unit 1: four triples (0,0,0); unit 2: none
    assert (total, units) == (5, 2)
    index = {p: i for i, p in enumerate(patterns(3))}
    assert freq[index[(0, 0, 1)]] == pytest.approx(1 / 5) and freq[index[(0, 0, 0)]] == pytest.approx(4 / 5)
    assert agree == pytest.approx((1 / 3 + 4) / 5)


def test_undefined_cases_give_nan_not_a_number() -> None:
    two = ceiling_band(np.zeros((10, 2), dtype=int), 3)
    assert math.isnan(two.low) and two.n_triples == 0
    sparse = ceiling_band(np.array([[0, -1, 1], [-1, 0, 1]]), 3)
    assert math.isnan(sparse.high) and sparse.n_triples == 0
    with pytest.raises(ValueError, match="two categories"):
        ceiling_band(np.zeros((3, 3), dtype=int), 1)


def test_the_grid() -> None:
    assert grid_steps(3) == 60 and grid_steps(5) == 16
    g = simplex_grid(3, 4)
    assert g.shape == (15, 3)
    np.testing.assert_allclose(g.sum(axis=1), 1.0)
    assert len({tuple(r) for r in g.tolist()}) == 15
