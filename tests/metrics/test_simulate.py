"""The design-study simulator: its vectorised pieces against the one-panel functions and the
`krippendorff` package, and its behaviour on a reduced grid."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from judgepanel.errors import BadInput
from judgepanel.metrics.simulate import (
    SimConfig,
    alpha_nominal_batch,
    annotate,
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
