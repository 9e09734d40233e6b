"""The comparison: α against the `krippendorff` package, CIs against a direct bootstrap loop."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy.stats import spearmanr

from judgepanel.errors import BadInput
from judgepanel.metrics.bootstrap import resample_indices
from judgepanel.repair.compare import (
    clause_alpha_by_item,
    compare_versions,
    ensemble_scores,
    parse_criterion,
    verdicts,
)


def _met(rng: np.random.Generator, n_items: int, flip: float) -> np.ndarray:
    truth = rng.integers(0, 2, size=(n_items, 1, 6)).astype(float)
    noisy = np.where(rng.random((n_items, 3, 6)) < flip, 1 - truth, truth)
    noisy[rng.random(noisy.shape) < 0.05] = np.nan
    return noisy


def _kripp_nominal(met: np.ndarray) -> float:
    # reliability data: coders x units, units = (item, clause)
    data = met.transpose(1, 0, 2).reshape(met.shape[1], -1)
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


def test_alpha_matches_krippendorff_package() -> None:
    rng = np.random.default_rng(1)
    for flip in (0.05, 0.2, 0.4):
        met = _met(rng, 40, flip)
        assert clause_alpha_by_item(met).value() == pytest.approx(_kripp_nominal(met), abs=1e-10)


def test_cis_match_a_direct_bootstrap() -> None:
    rng = np.random.default_rng(2)
    n = 30
    met = {"original": _met(rng, n, 0.3), "contested": _met(rng, n, 0.1), "control": _met(rng, n, 0.25)}
    dims = [0, 0, 0, 1, 1, 1]
    human = rng.integers(1, 6, size=(n, 2)).astype(float) + rng.random((n, 2))
    human[3, 1] = np.nan  # one item without a human rating: left out of the human figures
    c = compare_versions(met, dims, human, n_boot=200, seed=9)
    idx = resample_indices(n, 200, 9)
    reps = {v: np.array([_kripp_nominal(met[v][row]) for row in idx]) for v in met}
    for v in met:
        assert c.alpha[v]["value"] == pytest.approx(_kripp_nominal(met[v]), abs=1e-6)
        assert c.alpha[v]["ci"] == pytest.approx(list(np.percentile(reps[v], [2.5, 97.5])), abs=1e-6)
    d = reps["contested"] - reps["original"]
    assert c.delta["contested_vs_original"]["ci"] == pytest.approx(
        list(np.percentile(d, [2.5, 97.5])), abs=1e-6
    )
    d = reps["contested"] - reps["control"]
    assert c.delta["contested_vs_control"]["ci"] == pytest.approx(
        list(np.percentile(d, [2.5, 97.5])), abs=1e-6
    )
    # human agreement, the same way by hand
    keep = [i for i in range(n) if i != 3]
    hidx = resample_indices(len(keep), 200, 10)
    h = human[keep]
    rho, alp = {}, {}
    for v in met:
        s = np.round(1 + 4 * ensemble_scores(met[v], dims, 2)[keep], 9)
        assert c.human[v]["spearman"] == pytest.approx(spearmanr(s.ravel(), h.ravel())[0], abs=1e-6)
        point = krippendorff.alpha(
            reliability_data=np.vstack([s.ravel(), h.ravel()]), level_of_measurement="interval"
        )
        assert c.human[v]["alpha"] == pytest.approx(point, abs=1e-6)
        rho[v] = np.array([spearmanr(s[r].ravel(), h[r].ravel())[0] for r in hidx])
        alp[v] = np.array(
            [
                krippendorff.alpha(
                    reliability_data=np.vstack([s[r].ravel(), h[r].ravel()]), level_of_measurement="interval"
                )
                for r in hidx
            ]
        )
        assert c.human[v]["ci"]["spearman"] == pytest.approx(
            list(np.percentile(rho[v], [2.5, 97.5])), abs=1e-6
        )
        assert c.human[v]["ci"]["alpha"] == pytest.approx(list(np.percentile(alp[v], [2.5, 97.5])), abs=1e-6)
    d = rho["contested"] - rho["original"]
    got = c.human_delta["contested_vs_original"]["spearman"]["ci"]
    assert got == pytest.approx(list(np.percentile(d, [2.5, 97.5])), abs=1e-6)
    assert c.n_human_items == n - 1


def test_ensemble_score_is_mean_of_judge_shares() -> None:
    met = np.array([[[1, 0, 1, np.nan], [1, 1, np.nan, 0]]], dtype=float)  # 1 item, 2 judges, 4 clauses
    got = ensemble_scores(met, [0, 0, 1, 1], 2)
    assert got[0] == pytest.approx([(0.5 + 1.0) / 2, (1.0 + 0.0) / 2])


def test_criterion_and_verdicts() -> None:
    crit = parse_criterion("delta>=0.03, ci_low>0")
    assert crit.text == "delta>=0.03,ci_low>0"
    for bad in ("delta>>0", "gain>=1", "delta>=x", ""):
        with pytest.raises(BadInput):
            parse_criterion(bad)
    rng = np.random.default_rng(4)
    met = {"original": _met(rng, 60, 0.35), "contested": _met(rng, 60, 0.02), "control": _met(rng, 60, 0.35)}
    human = rng.random((60, 2)) * 4 + 1
    c = compare_versions(met, [0, 0, 0, 1, 1, 1], human, n_boot=300, seed=1)
    v, words = verdicts(c, crit)
    assert v["inter_judge"] == "pass" and "judges agree more" in words
    human_figures = {
        "delta": c.human_delta["contested_vs_original"]["spearman"]["value"],
        "ci_low": c.human_delta["contested_vs_original"]["spearman"]["ci"][0],
    }
    # humans are noise here: no detectable change, and no margin was declared
    assert not crit.holds(human_figures)
    assert v["human"] == "inconclusive" and "no equivalence margin was declared" in words
    strict = parse_criterion("delta>=0.9")
    assert verdicts(c, strict)[0]["inter_judge"] == "fail"


# ---------------------------------------------------------------- issue 18: referee-grade comparison


def _clustered(
    rng: np.random.Generator, n_groups: int, size: int
) -> tuple[dict[str, np.ndarray], np.ndarray, list[str]]:
    n = n_groups * size
    met = {"original": _met(rng, n, 0.3), "contested": _met(rng, n, 0.1), "control": _met(rng, n, 0.25)}
    article = rng.normal(0, 1, n_groups)[np.repeat(np.arange(n_groups), size)]
    human = np.clip(np.round(3 + article[:, None] + rng.normal(0, 0.7, (n, 2)), 1), 1, 5)
    return met, human, [f"a{g}" for g in np.repeat(np.arange(n_groups), size)]


def test_group_resampling_matches_a_direct_loop_over_articles() -> None:
    # 20 articles: the percentile interval is kept from 20 groups on (below, issue 30's t interval)
    rng = np.random.default_rng(12)
    met, human, groups = _clustered(rng, 20, 5)
    c = compare_versions(met, [0, 0, 0, 1, 1, 1], human, n_boot=150, seed=3, groups=groups)
    assert c.resample == "groups" and c.n_groups == 20
    draws = resample_indices(20, 150, 3)  # articles drawn per replicate
    hdraws = resample_indices(20, 150, 4)
    members = [np.arange(g * 5, g * 5 + 5) for g in range(20)]
    for v in met:
        reps = [_kripp_nominal(met[v][np.concatenate([members[g] for g in row])]) for row in draws]
        assert c.alpha[v]["ci"] == pytest.approx(list(np.percentile(reps, [2.5, 97.5])), abs=1e-6)
        s = np.round(1 + 4 * ensemble_scores(met[v], [0, 0, 0, 1, 1, 1], 2), 9)
        rho = []
        for row in hdraws:
            rows = np.concatenate([members[g] for g in row])
            rho.append(spearmanr(s[rows].ravel(), human[rows].ravel())[0])
        assert c.human[v]["ci"]["spearman"] == pytest.approx(list(np.percentile(rho, [2.5, 97.5])), abs=1e-6)
        # per dimension: the same draws, one column
        d1 = [
            spearmanr(
                s[np.concatenate([members[g] for g in row]), 1],
                human[np.concatenate([members[g] for g in row]), 1],
            )[0]
            for row in hdraws
        ]
        got = c.human[v]["by_dimension"]["1"]
        assert got["spearman"] == pytest.approx(spearmanr(s[:, 1], human[:, 1])[0], abs=1e-6)
        assert got["ci"]["spearman"] == pytest.approx(list(np.percentile(d1, [2.5, 97.5])), abs=1e-6)
        point = krippendorff.alpha(
            reliability_data=np.vstack([s[:, 0], human[:, 0]]), level_of_measurement="interval"
        )
        assert c.human[v]["by_dimension"]["0"]["alpha"] == pytest.approx(point, abs=1e-6)
    # items stay available and give the earlier (narrower here) intervals
    items = compare_versions(
        met, [0, 0, 0, 1, 1, 1], human, n_boot=150, seed=3, groups=groups, resample="items"
    )
    assert items.resample == "items" and items.n_groups is None
    assert items.alpha == compare_versions(met, [0, 0, 0, 1, 1, 1], human, n_boot=150, seed=3).alpha
    with pytest.raises(BadInput):
        compare_versions(met, [0, 0, 0, 1, 1, 1], human, n_boot=50, groups=[None] * 100, resample="groups")
    with pytest.raises(BadInput):
        compare_versions(met, [0, 0, 0, 1, 1, 1], human, n_boot=50, groups=groups[:-1])


def test_too_few_rated_items_say_sample_too_small() -> None:
    """Issue 18: 6 evaluation items printed ρ = 1.00 [1.00, 1.00]; now no figure, a reason."""
    rng = np.random.default_rng(5)
    met = {v: _met(rng, 9, 0.2) for v in ("original", "contested", "control")}
    human = rng.integers(1, 6, size=(9, 2)).astype(float)
    c = compare_versions(
        met, [0, 0, 0, 1, 1, 1], human, n_boot=100, dimensions=["coh", "rel"], human_margin=0.05
    )
    for v in met:
        assert c.human[v]["spearman"] is None and c.human[v]["note"] == "sample too small"
        assert c.human[v]["by_dimension"]["coh"]["ci"]["spearman"] is None
    assert c.human_delta["contested_vs_original"]["spearman"] == {
        "value": None,
        "ci": None,
        "ci_method": None,
    }
    assert c.human_equivalence is not None and c.human_equivalence["p"] is None
    v, words = verdicts(c, parse_criterion("delta>=0.03,ci_low>0;human_margin=0.05"))
    assert v["human"] == "inconclusive" and "sample too small" in words
    assert c.alpha["original"]["value"] is not None  # inter-judge α rests on item × clause units


def test_identical_versions_are_equivalent_with_delta_exactly_zero() -> None:
    rng = np.random.default_rng(6)
    m = _met(rng, 30, 0.2)
    met = {"original": m, "contested": m.copy(), "control": _met(rng, 30, 0.2)}
    human = rng.integers(1, 6, size=(30, 2)).astype(float)
    crit = parse_criterion("delta>=0.03,ci_low>0;human_margin=0.05")
    c = compare_versions(met, [0, 0, 0, 1, 1, 1], human, n_boot=200, human_margin=crit.human_margin)
    assert c.delta["contested_vs_original"] == {"value": 0.0, "ci": [0.0, 0.0], "ci_method": "percentile"}
    assert c.human_delta["contested_vs_original"]["spearman"] == {
        "value": 0.0,
        "ci": [0.0, 0.0],
        "ci_method": "percentile",
    }
    assert c.human_equivalence is not None and c.human_equivalence["equivalent"] is True
    verdict, words = verdicts(c, crit)
    assert verdict == {"inter_judge": "fail", "human": "equivalent"} and "equivalent" in words


def test_human_verdicts_closer_and_farther() -> None:
    rng = np.random.default_rng(8)
    n = 60
    human = rng.integers(1, 6, size=(n, 1)).astype(float)
    good = np.repeat(((human - 1) / 4 > rng.random((n, 6)) * 0.8)[:, None, :], 3, axis=1).astype(float)
    noise = rng.integers(0, 2, size=(n, 3, 6)).astype(float)
    crit = parse_criterion("delta>=0.03,ci_low>0;human_margin=0.05")
    closer = compare_versions(
        {"original": noise, "contested": good, "control": noise},
        [0] * 6,
        human,
        n_boot=300,
        human_margin=0.05,
    )
    assert verdicts(closer, crit)[0]["human"] == "closer"
    farther = compare_versions(
        {"original": good, "contested": noise, "control": noise},
        [0] * 6,
        human,
        n_boot=300,
        human_margin=0.05,
    )
    assert verdicts(farther, crit)[0]["human"] == "farther"


def test_criterion_with_an_equivalence_margin() -> None:
    c = parse_criterion(" delta>=0.03 , ci_low>0 ; human_margin = 0.050 ")
    assert c.text == "delta>=0.03,ci_low>0;human_margin=0.05" and c.human_margin == 0.05
    assert parse_criterion(c.text) == c
    assert parse_criterion("delta>=0.03").human_margin is None
    for bad in (
        "delta>=0;margin=0.1",
        "delta>=0;human_margin=-1",
        "delta>=0;human_margin=0",
        "delta>=0;human_margin=x",
    ):
        with pytest.raises(BadInput):
            parse_criterion(bad)
