"""Planner formulas against direct computation; allocation designs: quotas, coverage, seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from judgepanel.errors import BadInput
from judgepanel.metrics.design import (
    DESIGNS,
    allocate,
    allocate_batch,
    items_per_annotator,
    m_cert,
    m_cert_reason,
    m_rank,
    majority,
    pilot_inputs,
    plan_overlap,
    stratified_pick,
    z_quantile,
)

# ---------------------------------------------------------------- planner


@pytest.mark.parametrize("sigma0", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("mu_d", [-0.03, 0.0, 0.04])
@pytest.mark.parametrize("eps", [0.05, 0.1, 0.2])
@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_m_cert_is_the_formula(sigma0: float, mu_d: float, eps: float, alpha: float) -> None:
    z = norm.ppf(1 - alpha / 2)
    assert m_cert(sigma0, mu_d, eps, alpha) == max(1, math.ceil(z * z * sigma0**2 / (mu_d + eps) ** 2))


def test_z_quantile_is_scipy_norm_ppf_to_the_bit() -> None:
    """z_quantile calls scipy.special.ndtri (norm.ppf without importing scipy.stats): the same
    float64 everywhere, the ends of the scale and a negative-zero-free median included."""
    grid = [*np.linspace(0.0, 1.0, 2001).tolist(), 1e-300, 5e-324, 1 - 1e-16, 0.5, 0.975, 0.995, 0.95]
    for p in grid:
        expected = float(norm.ppf(p))
        assert z_quantile(p) == expected and math.copysign(1, z_quantile(p)) == math.copysign(1, expected), p
    assert math.isnan(z_quantile(1.5)) and math.isnan(norm.ppf(1.5))


def test_m_cert_textbook_value() -> None:
    # z_.975 = 1.95996: σ0 = 1, μ_d + ε = 0.2 → 3.8415 / 0.04 = 96.04 → 97 items
    assert m_cert(1.0, 0.15, 0.05) == 97
    # σ0 = 0.5, gap 0.1: 0.9604 / 0.01 = 96.04 → 97
    assert m_cert(0.5, 0.0, 0.1) == 97
    assert m_cert(0.5, -0.1, 0.1) is None
    with pytest.raises(BadInput):
        m_cert(0.5, 0.0, 0.1, alpha=0.0)
    with pytest.raises(BadInput):
        m_cert(-1.0, 0.0, 0.1)


@pytest.mark.parametrize("mu_d", [-0.06, -0.2, -1.0])
def test_m_cert_is_none_when_the_judge_trails_by_more_than_epsilon(mu_d: float) -> None:
    # (μ_d + ε)² is positive again below −ε, but no overlap certifies a judge whose mean
    # advantage lies under −ε: the formula's finite value would be a false promise
    assert m_cert(0.5, mu_d, 0.05) is None
    reason = m_cert_reason(mu_d, 0.05)
    assert reason is not None and "below -epsilon" in reason
    assert m_cert_reason(-0.05, 0.05) is not None and m_cert_reason(-0.04, 0.05) is None
    plan = plan_overlap(sigma0=0.5, mu_d={"bad": mu_d, "ok": 0.0}, epsilon=0.05, n_items=1000)
    assert plan.m_cert == {"bad": None, "ok": m_cert(0.5, 0.0, 0.05)}
    assert plan.as_dict()["reason"] == {"bad": reason, "ok": None}
    assert plan.coverage_needed == pytest.approx(math.sqrt(m_cert(0.5, 0.0, 0.05) / 1000))  # type: ignore[operator]


@pytest.mark.parametrize("j", [2, 3, 6])
@pytest.mark.parametrize("delta", [0.02, 0.05, 0.1])
def test_m_rank_is_the_bonferroni_formula(j: int, delta: float) -> None:
    sigma0, alpha = 0.4, 0.05
    z = norm.ppf(1 - alpha / (j - 1))
    assert m_rank(sigma0, delta, j, alpha) == math.ceil(2 * z * z * sigma0**2 / delta**2)


def test_m_rank_hand_value_and_edges() -> None:
    # J = 2: z_.95 = 1.64485; 2 · 2.70554 · 0.25 / 0.01 = 135.28 → 136
    assert m_rank(0.5, 0.1, 2) == 136
    assert m_rank(0.5, 0.0, 3) is None
    with pytest.raises(BadInput):
        m_rank(0.5, 0.1, 1)


def test_plan_overlap_reports_expected_overlaps() -> None:
    plan = plan_overlap(
        sigma0=0.5, mu_d={"j": 0.0}, epsilon=0.1, delta_min=0.1, n_judges=2, n_items=500, coverage=0.2
    )
    assert plan.m_cert == {"j": 97}
    assert plan.m_rank == 136
    assert plan.overlap_secondary_pair == pytest.approx(0.2**2 * 500)
    assert plan.overlap_with_primary == pytest.approx(0.2 * 500)
    # ρ² n ≥ 136 ⇔ ρ ≥ √(136/500)
    assert plan.coverage_needed == pytest.approx(math.sqrt(136 / 500))
    d = plan.as_dict()
    assert d["expected_overlap"] == {
        "secondary_pair": pytest.approx(20.0),
        "with_primary": pytest.approx(100.0),
    }
    tiny = plan_overlap(sigma0=0.5, mu_d={"j": 0.0}, epsilon=0.1, n_items=50, coverage=0.5)
    assert tiny.coverage_needed is None  # 97 shared items cannot come from 50
    with pytest.raises(BadInput):
        plan_overlap(sigma0=0.5, mu_d={"j": 0.0}, epsilon=0.1, coverage=1.5)


def test_pilot_inputs_pooled_sd_and_smallest_gap() -> None:
    a = np.array([0.0, 1.0, -1.0, 0.0, 1.0])
    b = np.array([0.5, 0.5, -0.5, 0.5])
    c = np.array([1.0, 0.0, 1.0])
    sigma0, means, delta = pilot_inputs({"a": a, "b": b, "c": c})
    pooled = math.sqrt(
        (((a - a.mean()) ** 2).sum() + ((b - b.mean()) ** 2).sum() + ((c - c.mean()) ** 2).sum())
        / (a.size - 1 + b.size - 1 + c.size - 1)
    )
    assert sigma0 == pytest.approx(pooled)
    assert means == {"a": pytest.approx(0.2), "b": pytest.approx(0.25), "c": pytest.approx(2 / 3)}
    assert delta == pytest.approx(0.05)
    assert pilot_inputs({"a": a})[2] is None
    with pytest.raises(BadInput):
        pilot_inputs({"a": np.array([1.0])})


# ---------------------------------------------------------------- allocation


def test_items_per_annotator_rounds_half_up() -> None:
    assert items_per_annotator(500, 0.05) == 25
    assert items_per_annotator(10, 0.25) == 3  # 2.5 → 3
    assert items_per_annotator(10, 0.01) == 1  # never zero
    with pytest.raises(BadInput):
        items_per_annotator(10, 0.0)


def test_stratified_quotas_by_hand() -> None:
    # strata sizes 6, 3, 1 (n = 10), m = 5: m n_s / n = 3, 1.5, 0.5 → floors 3, 1, 0,
    # one left over → the largest stratum: 4, 1, 0
    strata = np.array([[0, 0, 0, 0, 0, 0, 1, 1, 1, 2]])
    keys = np.random.default_rng(0).random((1, 10))
    picked = stratified_pick(strata, 3, 5, keys)[0]
    assert [int(picked[strata[0] == s].sum()) for s in range(3)] == [4, 1, 0]
    # within a stratum the smallest keys win
    s0 = np.nonzero(strata[0] == 0)[0]
    assert set(s0[np.argsort(keys[0, s0])[:4]]) == set(np.nonzero(picked & (strata[0] == 0))[0])
    # equal sizes 2, 2, 2 with m = 4: floors 1, 1, 1, the remainder to the first of the largest
    eq = np.array([[0, 0, 1, 1, 2, 2]])
    p2 = stratified_pick(eq, 3, 4, np.random.default_rng(1).random((1, 6)))[0]
    assert [int(p2[eq[0] == s].sum()) for s in range(3)] == [2, 1, 1]


def test_majority_ties_go_to_the_primary() -> None:
    primary = np.array([[0, 0, 1, 2]])
    revealed = np.array([[[1, 1], [1, -1], [0, 0], [-1, -1]]])  # R × n × T
    shown = np.ones((1, 4, 2), dtype=bool)
    # item 0: primary 0, two say 1 → 1; item 1: 0 vs one 1 → tie → primary 0;
    # item 2: primary 1, two say 0 → 0; item 3: only the primary → 2
    assert majority(primary, revealed, shown, 3).tolist() == [[1, 0, 0, 2]]
    shown[0, 0, 1] = False  # the second secondary was not given item 0: its label is not known
    assert majority(primary, revealed, shown, 3).tolist() == [[0, 0, 0, 2]]


@pytest.mark.parametrize("design", DESIGNS)
def test_allocations_meet_coverage_and_are_reproducible(design: str) -> None:
    rng = np.random.default_rng(5)
    primary = rng.choice(3, size=200, p=[0.6, 0.3, 0.1])
    revealed = rng.integers(0, 3, (200, 4))
    a = allocate(primary, 4, 0.15, design, seed=9, revealed=revealed)
    b = allocate(primary, 4, 0.15, design, seed=9, revealed=revealed)
    c = allocate(primary, 4, 0.15, design, seed=10, revealed=revealed)
    assert np.array_equal(a.assigned, b.assigned) and np.array_equal(a.order, b.order)
    assert not np.array_equal(a.assigned, c.assigned)
    assert a.items_per_annotator == 30
    assert a.assigned.sum(axis=1).tolist() == [30, 30, 30, 30]
    assert np.array_equal(np.diag(a.overlaps()), [30, 30, 30, 30])
    if design == "strat":
        # every stratum gets its proportional share, give or take the rounding item
        sizes = np.bincount(primary, minlength=3)
        for t in range(4):
            got = np.bincount(primary[a.assigned[t]], minlength=3)
            assert (np.abs(got - 30 * sizes / 200) < 1.0 + 1e-9).all()


def test_seq_coverage_spreads_items_before_repeating_any() -> None:
    primary = np.zeros(100, dtype=np.int64)
    disjoint = allocate(primary, 4, 0.25, "seq-coverage", seed=1)
    assert disjoint.overlaps()[~np.eye(4, dtype=bool)].max() == 0
    assert disjoint.assigned.any(axis=0).all()  # 4 × 25 = 100: every item once
    more = allocate(primary, 4, 0.4, "seq-coverage", seed=1)
    per_item = more.assigned.sum(axis=0)
    assert per_item.max() - per_item.min() <= 1  # 160 labels over 100 items: 1 or 2 each


def test_seq_refined_without_revealed_labels_is_strat() -> None:
    primary = np.random.default_rng(2).integers(0, 4, 150)
    strat = allocate(primary, 3, 0.2, "strat", seed=3)
    refined = allocate(primary, 3, 0.2, "seq-refined", seed=3)
    assert np.array_equal(strat.assigned, refined.assigned)


def test_seq_refined_stratifies_on_the_running_majority() -> None:
    n = 120
    primary = np.zeros(n, dtype=np.int64)
    primary[:40] = 1
    revealed = np.column_stack([np.ones(n), np.ones(n), np.zeros(n)]).astype(np.int64)
    batch_rng = np.random.default_rng(8)
    assigned = allocate_batch(
        primary[None], 3, 60, "seq-refined", batch_rng, n_classes=2, revealed=revealed[None]
    )[0]
    # before the third annotator, items given to both earlier annotators have two 1-votes → stratum 1
    both = assigned[0] & assigned[1]
    strata = primary.copy()
    strata[both] = 1
    sizes = np.bincount(strata, minlength=2)
    got = np.bincount(strata[assigned[2]], minlength=2)
    assert (np.abs(got - 60 * sizes / n) < 1.0 + 1e-9).all()
    assert both.sum() > 0


def test_allocation_rejects_bad_input() -> None:
    with pytest.raises(BadInput):
        allocate(np.zeros(10, dtype=np.int64), 2, 0.5, "clever", seed=0)
    with pytest.raises(BadInput):
        allocate(np.zeros(0, dtype=np.int64), 2, 0.5, "random", seed=0)
    with pytest.raises(BadInput):
        allocate(np.zeros(10, dtype=np.int64), 2, 1.5, "random", seed=0)
