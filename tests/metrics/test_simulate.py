"""The design-study simulator: its vectorised pieces against the one-panel functions and the
`krippendorff` package, and its behaviour on a reduced grid."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest

from judgepanel.errors import BadInput
from judgepanel.metrics.simulate import (
    SimConfig,
    alpha_nominal_batch,
    annotate,
    draw_panel,
    loo_batch,
    simulate_designs,
)
from judgepanel.metrics.validation import loo_rule


def _sparse_panel(seed: int, r: int = 4, n: int = 60, k: int = 4, j: int = 3, classes: int = 3):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, classes, (r, n))
    humans = annotate(rng, truth, np.full(k, 0.8), classes)
    judges = annotate(rng, truth, np.array([0.6, 0.8, 0.95])[:j], classes)
    mask = rng.random((r, n, k)) < 0.5
    mask[..., 0] = True
    return humans, mask, judges


@pytest.mark.parametrize("agreement", ["observed", "cohen"])
def test_loo_batch_matches_loo_rule_per_replication(agreement: str) -> None:
    humans, mask, judges = _sparse_panel(1)
    accept, score = loo_batch(humans, mask, judges, 3, 0.05, agreement)
    for r in range(humans.shape[0]):
        panel = np.where(mask[r], humans[r], np.nan).astype(float)
        for j in range(judges.shape[2]):
            ref = loo_rule(
                panel, judges[r, :, j].astype(float), agreement=agreement, categories=np.arange(3.0)
            )
            assert accept[r, j] == ref.accepted
            ds = [h.d for h in ref.humans if h.d is not None]
            assert score[r, j] == pytest.approx(np.mean(ds), abs=1e-12)


def test_alpha_batch_matches_krippendorff_package() -> None:
    humans, mask, _ = _sparse_panel(2, r=5)
    got = alpha_nominal_batch(humans, mask, 3)
    for r in range(humans.shape[0]):
        data = np.where(mask[r], humans[r], np.nan).T  # raters × units for the package
        assert got[r] == pytest.approx(krippendorff.alpha(data, level_of_measurement="nominal"), abs=1e-12)


def test_annotators_have_their_accuracy_and_spread_errors_evenly() -> None:
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 5, (1, 40_000))
    labels = annotate(rng, truth, np.array([0.85, 0.6]), 5)
    acc = (labels == truth[..., None]).mean(axis=(0, 1))
    np.testing.assert_allclose(acc, [0.85, 0.6], atol=0.01)
    wrong = labels[..., 1][labels[..., 1] != truth]
    assert np.bincount(wrong, minlength=5).min() > 0.18 * wrong.size


SMALL = SimConfig(
    n=200,
    humans=5,
    classes=2,
    judges=(0.75, 0.85, 0.95),
    coverages=(0.05, 0.25, 0.5),
    replications=120,
    seed=3,
)


@pytest.fixture(scope="module")
def small() -> object:
    return simulate_designs(SMALL)


def test_sparser_overlap_decides_worse(small) -> None:  # type: ignore[no-untyped-def]
    for design in SMALL.designs:
        low, high = small.cell(0.05, design), small.cell(0.5, design)
        assert low.wdr > high.wdr
        assert low.top1_error >= high.top1_error
        assert low.alpha_sd > high.alpha_sd
        assert low.alpha_reliability < high.alpha_reliability
        for j in low.judges:
            assert j.wdr == pytest.approx(j.fr + j.fa)


def test_realised_overlaps_follow_the_design(small) -> None:  # type: ignore[no-untyped-def]
    # seq-coverage: 4 secondaries × ρ n items fit without overlap up to ρ = 0.25
    assert small.cell(0.05, "seq-coverage").mean_secondary_overlap == 0.0
    assert small.cell(0.25, "seq-coverage").mean_secondary_overlap == 0.0
    for design in ("random", "strat"):
        for rho in SMALL.coverages:
            m = round(rho * 200)
            expected = m * m / 200  # two independent draws of m out of n share m²/n on average
            assert small.cell(rho, design).mean_secondary_overlap == pytest.approx(expected, rel=0.2, abs=0.5)


def test_reproducible_and_cells_independent_of_the_grid(small) -> None:  # type: ignore[no-untyped-def]
    again = simulate_designs(SimConfig(**{**SMALL.__dict__, "coverages": (0.25,), "designs": ("strat",)}))
    a, b = small.cell(0.25, "strat"), again.cell(0.25, "strat")
    assert a.as_dict() == b.as_dict()
    out = small.as_dict()
    assert {"params", "cells", "runtime_s", "alpha_full_mean"} <= set(out)
    cell = out["cells"][0]
    assert {"fr", "fa", "wdr", "top1_error", "pairwise_rank_error", "alpha"} <= set(cell)
    assert set(cell["alpha"]) == {"bias", "sd", "reliability"}


def test_stratifying_on_the_primary_changes_nothing_under_symmetric_noise() -> None:
    """With uniform classes and errors spread evenly, every primary-label stratum has the same
    mix of agreements, so Strat and Random give the same decision error (up to Monte Carlo noise):
    the simulator must not invent a difference the model does not contain."""
    cfg = SimConfig(
        n=200,
        classes=2,
        judges=(0.8,),
        coverages=(0.05,),
        designs=("random", "strat"),
        replications=400,
        seed=11,
    )
    res = simulate_designs(cfg)
    rnd, strat = res.cell(0.05, "random"), res.cell(0.05, "strat")
    assert abs(rnd.fr - strat.fr) < 0.08
    assert abs(rnd.fa - strat.fa) < 0.08


def test_decisions_depend_on_who_is_right_not_on_which_class() -> None:
    """Errors are spread evenly, so whether two annotators agree depends only on who is right: with
    the same seed, designs that ignore label values decide identically whatever the class shares.
    Only label-driven designs (Strat, Seq-Refined) and α (whose chance term reads the class
    shares) can see the prevalence."""
    base = SimConfig(
        n=150,
        classes=5,
        judges=(0.8, 0.9),
        coverages=(0.25,),
        designs=("random", "seq-coverage", "strat"),
        replications=60,
        seed=5,
    )
    skewed = SimConfig(**{**base.__dict__, "prevalence": (0.5, 0.2, 0.15, 0.1, 0.05)})
    a, b = simulate_designs(base), simulate_designs(skewed)
    for design in ("random", "seq-coverage"):
        x, y = a.cell(0.25, design).as_dict(), b.cell(0.25, design).as_dict()
        for key in ("fr", "fa", "wdr", "judges", "top1_error", "pairwise_rank_error"):
            assert x[key] == y[key]
        assert x["alpha"] != y["alpha"]


def test_config_is_checked() -> None:
    with pytest.raises(BadInput):
        simulate_designs(SimConfig(humans=1))
    with pytest.raises(BadInput):
        simulate_designs(SimConfig(coverages=(0.0,)))
    with pytest.raises(BadInput):
        simulate_designs(SimConfig(designs=("clever",)))
    with pytest.raises(BadInput):
        simulate_designs(SimConfig(classes=2, prevalence=(0.5, 0.2)))
    with pytest.raises(BadInput):
        simulate_designs(SimConfig(agreement="alpha"))


# ---------------------------------------------------------------- class-dependent annotators, hard items


def test_annotators_follow_their_accuracy_per_true_class() -> None:
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 3, (1, 60_000))
    acc = np.array([[0.95, 0.6, 0.3], [0.85, 0.85, 0.85]])
    labels = annotate(rng, truth, acc, 3)
    for c in range(3):
        on_c = truth[0] == c
        np.testing.assert_allclose((labels[0, on_c] == c).mean(axis=0), acc[:, c], atol=0.015)
    # a wrong label is uniform over the other two classes
    wrong = labels[0, :, 0][(truth[0] == 2) & (labels[0, :, 0] != 2)]
    assert abs((wrong == 0).mean() - 0.5) < 0.02


def test_hard_items_replace_every_annotators_accuracy() -> None:
    cfg = SimConfig(
        n=20_000,
        prevalence=(0.7, 0.3),
        accuracy=(0.9, 0.8),
        judges=(0.95, (0.99, 0.5)),
        hard_share=0.25,
        hard_accuracy=0.55,
        hard_judges=(0.7, 0.4),
    )
    rng = np.random.default_rng(2)
    truth, humans, judges = draw_panel(cfg, rng, 2)
    right_h = humans == truth[..., None]
    right_j = judges == truth[..., None]
    # the hard mask is not returned; recover it from the draw order (truth, then the hard flags)
    again = np.random.default_rng(2)
    again.choice(2, size=truth.shape, p=cfg.shares())
    hard = again.random(truth.shape) < 0.25
    assert abs(hard.mean() - 0.25) < 0.01
    np.testing.assert_allclose(right_h[hard].mean(), 0.55, atol=0.01)
    np.testing.assert_allclose(right_j[hard].mean(axis=0), [0.7, 0.4], atol=0.015)
    easy = ~hard
    np.testing.assert_allclose(right_h[easy & (truth == 0)].mean(), 0.9, atol=0.01)
    np.testing.assert_allclose(right_h[easy & (truth == 1)].mean(), 0.8, atol=0.01)
    np.testing.assert_allclose(right_j[easy & (truth == 1)].mean(axis=0), [0.95, 0.5], atol=0.015)
    # expected overall accuracy: (1 − h) Σ_c π_c a_c + h a_hard
    np.testing.assert_allclose(
        cfg.overall_judge_accuracy(), [0.75 * 0.95 + 0.25 * 0.7, 0.75 * (0.7 * 0.99 + 0.3 * 0.5) + 0.25 * 0.4]
    )


def test_a_flat_profile_is_the_same_annotator_as_one_accuracy() -> None:
    """Per-class accuracies equal across classes reproduce the one-accuracy model draw for draw."""
    base = SimConfig(n=120, judges=(0.8, 0.9), coverages=(0.25,), designs=("strat",), replications=40, seed=4)
    flat = SimConfig(**{**base.__dict__, "accuracy": (0.85, 0.85), "judges": ((0.8, 0.8), (0.9, 0.9))})
    a, b = simulate_designs(base).cells[0].as_dict(), simulate_designs(flat).cells[0].as_dict()
    assert list(b["judges"]) == ["0.8/0.8", "0.9/0.9"]
    assert list(a["judges"].values()) == list(b["judges"].values())
    for key in ("fr", "fa", "wdr", "vs_random", "alpha", "top1_error"):
        assert a[key] == b[key]


def test_replications_run_in_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    import judgepanel.metrics.simulate as sim

    monkeypatch.setattr(sim, "BLOCK", 10)
    cfg = SimConfig(n=80, judges=(0.8,), coverages=(0.25,), designs=("random",), replications=10, seed=1)
    one = simulate_designs(cfg).cells[0]
    two = simulate_designs(SimConfig(**{**cfg.__dict__, "replications": 25})).cells[0]
    # the second and third blocks are new replications, not copies of the first
    assert (one.fr, one.fa, one.alpha_sd) != (two.fr, two.fa, two.alpha_sd)
    assert math.isfinite(two.fr_se)


def test_standard_errors_and_paired_contrasts() -> None:
    res = simulate_designs(
        SimConfig(
            n=100, judges=(0.8, 0.9), coverages=(0.1,), designs=("random", "strat"), replications=50, seed=2
        )
    )
    rnd, strat = res.cell(0.1, "random"), res.cell(0.1, "strat")
    assert rnd.vs_random is None and strat.vs_random is not None
    assert strat.vs_random.fr == pytest.approx(strat.fr - rnd.fr)
    assert strat.vs_random.fa == pytest.approx(strat.fa - rnd.fa)
    # a paired difference of two rates in [0, 1] has an SE no larger than both SEs together
    assert 0 <= strat.vs_random.fr_se <= rnd.fr_se + strat.fr_se + 1e-12
    for c in (rnd, strat):
        assert c.fr_se >= 0 and c.fa_se >= 0 and c.wdr == pytest.approx(c.fr + c.fa)
    one = simulate_designs(SimConfig(n=50, judges=(0.8,), coverages=(0.5,), replications=1))
    assert math.isnan(one.cells[0].fr_se)


def test_new_options_are_checked() -> None:
    for bad in (
        SimConfig(judges=((0.9, 0.4, 0.1),)),  # 3 values for 2 classes
        SimConfig(accuracy=(0.9,) * 5),
        SimConfig(judges=((0.9, 1.4),)),
        SimConfig(hard_share=1.5),
        SimConfig(hard_share=0.2, hard_judges=(0.5,)),  # 3 judges
        SimConfig(hard_accuracy=-0.1),
    ):
        with pytest.raises(BadInput):
            simulate_designs(bad)


# ---------------------------------------------------------------- when stratification matters

# Lenient judges on a skewed binary task: right on most majority-class items, miss most minority-class
# items; overall accuracy 0.826, 0.80, 0.774 against humans at 0.85, so the full matrix accepts the
# first almost always, the second mostly and the third about half the time (d = 0.7 (ā − 0.85) is
# −0.017, −0.035, −0.053 against ε = 0.05).
LENIENT = SimConfig(
    prevalence=(0.8, 0.2),
    judges=((0.92, 0.45), (0.9, 0.4), (0.88, 0.35)),
    coverages=(0.05,),
    designs=("random", "strat"),
    replications=10_000,
    seed=0,
)


def test_stratified_allocation_lowers_false_rejects_and_raises_false_accepts_at_low_coverage() -> None:
    """The design-study pattern, in a setting where the mechanism predicts it: the remainder rule
    gives the primary's majority label about half an item more than its share of 25, and these
    judges' advantage over the humans lies on majority-class items, so Strat measures them a little
    more favourably than Random does. Margins: three paired standard errors. (That the effect
    fades by ρ = 0.25, and that fair rounding removes most of it, is measured in
    ``benchmarks/study_stratification.py``.)"""
    res = simulate_designs(LENIENT)
    low = res.cell(0.05, "strat").vs_random
    assert low is not None
    assert low.fr + 3 * low.fr_se < 0
    assert low.fa - 3 * low.fa_se > 0
    # the judges' measured advantage (mean d_k) moves up under Strat, against Random
    for rnd, strat in zip(res.cell(0.05, "random").judges, res.cell(0.05, "strat").judges, strict=True):
        assert strat.score_shift - rnd.score_shift > 0.003


def test_the_pattern_reverses_for_a_judge_whose_advantage_lies_in_the_minority_class() -> None:
    """Same shares, judges better on the minority class than on the majority: the same rounding now
    measures them less favourably, so Strat raises false rejects and lowers false accepts."""
    cfg = SimConfig(
        **{
            **LENIENT.__dict__,
            "judges": ((0.75, 0.95), (0.73, 0.93), (0.71, 0.91)),
            "replications": 4000,
        }
    )
    low = simulate_designs(cfg).cell(0.05, "strat").vs_random
    assert low is not None
    assert low.fr - 3 * low.fr_se > 0
    assert low.fa + 3 * low.fa_se < 0


def test_the_pattern_vanishes_when_strat_and_random_are_the_same_design() -> None:
    """Uniform classes, class-independent accuracies: whether two annotators agree does not depend
    on the primary's label, so Strat draws items distributed exactly like Random's. The paired
    differences stay within 3 SE, and the SE is small enough to see an effect the size of the one
    above."""
    cfg = SimConfig(coverages=(0.05,), designs=("random", "strat"), replications=6000, seed=0)
    res = simulate_designs(cfg)
    low = res.cell(0.05, "strat").vs_random
    assert low is not None
    assert low.fr_se < 0.003 and low.fa_se < 0.003
    assert abs(low.fr) < 3 * low.fr_se
    assert abs(low.fa) < 3 * low.fa_se
    # no shift of the measured advantage either (the lenient setting moves it by about 0.005)
    for rnd, strat in zip(res.cell(0.05, "random").judges, res.cell(0.05, "strat").judges, strict=True):
        assert abs(strat.score_shift - rnd.score_shift) < 0.002
