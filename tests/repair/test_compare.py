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
    assert v["human"] == (
        "pass"
        if crit.holds(
            {
                "delta": c.human_delta["contested_vs_original"]["spearman"]["value"],
                "ci_low": c.human_delta["contested_vs_original"]["spearman"]["ci"][0],
            }
        )
        else "fail"
    )
    strict = parse_criterion("delta>=0.9")
    assert verdicts(c, strict)[0]["inter_judge"] == "fail"
