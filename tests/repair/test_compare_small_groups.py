"""Issue 30 §1–§2 for `repair compare`: the t interval over few articles against a direct
leave-one-article-out loop with `krippendorff` and scipy, verdicts withheld below 5 groups, the
TOST's size with a t reference, and verdicts that read one interval."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.stats import spearmanr

from judgepanel.metrics.bootstrap import resample_indices
from judgepanel.metrics.equivalence import bootstrap_tost, group_tost
from judgepanel.repair.compare import (
    Comparison,
    compare_versions,
    ensemble_scores,
    human_verdict,
    parse_criterion,
    verdicts,
)
from tests.repair.test_compare import _clustered, _kripp_nominal, _met


def _jse(values: list[float]) -> float:
    v = np.asarray(values)
    return math.sqrt((v.size - 1) / v.size * ((v - v.mean()) ** 2).sum())


def test_eight_articles_get_the_t_interval_of_a_direct_leave_one_article_out_loop() -> None:
    rng = np.random.default_rng(21)
    met, human, groups = _clustered(rng, 8, 5)
    dims = [0, 0, 0, 1, 1, 1]
    c = compare_versions(met, dims, human, n_boot=100, seed=3, groups=groups, human_margin=0.1)
    members = [np.arange(g * 5, g * 5 + 5) for g in range(8)]
    q = stats.t.ppf(0.975, 7)
    loo = {v: [_kripp_nominal(np.delete(met[v], members[g], axis=0)) for g in range(8)] for v in met}
    for v in met:
        value = _kripp_nominal(met[v])
        assert c.alpha[v]["ci_method"] == "t-jackknife"
        assert c.alpha[v]["ci"] == pytest.approx(
            [value - q * _jse(loo[v]), value + q * _jse(loo[v])], abs=2e-6
        )
    d = np.subtract(loo["contested"], loo["original"])
    est = c.delta["contested_vs_original"]["value"]
    assert c.delta["contested_vs_original"]["ci"] == pytest.approx(
        [est - q * _jse(list(d)), est + q * _jse(list(d))], abs=2e-6
    )
    rho = {}
    for v in met:
        s = np.round(1 + 4 * ensemble_scores(met[v], dims, 2), 9)
        rho[v] = [
            spearmanr(np.delete(s, members[g], axis=0).ravel(), np.delete(human, members[g], axis=0).ravel())[
                0
            ]
            for g in range(8)
        ]
        value = spearmanr(s.ravel(), human.ravel())[0]
        se = _jse(rho[v])
        assert c.human[v]["ci"]["spearman"] == pytest.approx([value - q * se, value + q * se], abs=2e-6)
        assert c.human[v]["ci_method"] == "t-jackknife"
    # the TOST on Δρ: the same jackknife SE, t with 7 degrees of freedom
    eq = c.human_equivalence
    assert eq is not None and eq["df"] == 7
    assert eq["se"] == pytest.approx(_jse(list(np.subtract(rho["contested"], rho["original"]))), abs=2e-6)
    assert eq["detectable_margin"] == pytest.approx(2 * stats.t.ppf(0.95, 7) * eq["se"], abs=2e-6)
    assert c.groups_in_data == 8 and c.warnings and "only 8 groups" in c.warnings[0]


def test_four_articles_state_the_figures_but_no_verdict() -> None:
    rng = np.random.default_rng(22)
    met, human, groups = _clustered(rng, 4, 10)
    met["contested"] = _met(rng, 40, 0.02)  # the edited clauses: the judges nearly always agree
    c = compare_versions(met, [0, 0, 0, 1, 1, 1], human, n_boot=100, seed=1, groups=groups)
    verdict, words = verdicts(c, parse_criterion("delta>=0.03,ci_low>0"))
    assert verdict == {"inter_judge": "too few groups", "human": "too few groups"}
    assert "from 4 groups" in words and "judges agree more" not in words
    assert c.alpha["contested"]["value"] is not None and c.delta["contested_vs_original"]["ci"] is not None
    # at five groups a verdict is stated again
    met5, human5, groups5 = _clustered(rng, 5, 8)
    c5 = compare_versions(met5, [0, 0, 0, 1, 1, 1], human5, n_boot=100, seed=1, groups=groups5)
    assert verdicts(c5, parse_criterion("delta>=0.03,ci_low>0"))[0]["inter_judge"] in ("pass", "fail")


def _comparison(delta: float, ci: list[float], eq: dict[str, object] | None = None) -> Comparison:
    human = {
        v: {"spearman": 0.3, "alpha": 0.2, "ci": {}, "by_dimension": {}}
        for v in ("original", "contested", "control")
    }
    hd = {
        "contested_vs_original": {"spearman": {"value": delta, "ci": ci}},
        "contested_vs_control": {"spearman": {"value": 0.0, "ci": [-0.1, 0.1]}},
    }
    return Comparison({}, {}, human, hd, 400, 400, 1000, 0, "groups", 50, eq, 50, 50)


def test_closer_needs_the_interval_beyond_zero_and_beyond_a_declared_margin() -> None:
    """Issue 30 §2's two cases: Δρ +0.035 [+0.020, +0.051] with margin ±0.05 was "closer" (now
    "closer within the margin"); Δρ +0.040 [−0.121, +0.194] under a criterion without `ci_low`
    was "closer" on the point estimate (now inconclusive)."""
    within = _comparison(0.035, [0.020, 0.051], {"equivalent": False, "p": 0.2})
    got, words = human_verdict(within, parse_criterion("delta>=0.03,ci_low>0;human_margin=0.05"))
    assert got == "closer within the margin" and "within the declared margin" in words
    assert human_verdict(within, parse_criterion("delta>=0.03,ci_low>0"))[0] == "closer"
    beyond = _comparison(0.09, [0.06, 0.12], {"equivalent": False, "p": 0.9})
    assert human_verdict(beyond, parse_criterion("delta>=0.03,ci_low>0;human_margin=0.05"))[0] == "closer"
    point = _comparison(0.040, [-0.121, 0.194])
    assert human_verdict(point, parse_criterion("delta>=0.03"))[0] == "inconclusive"
    lower = _comparison(-0.03, [-0.045, -0.01], {"equivalent": True, "p": 0.01})
    assert (
        human_verdict(lower, parse_criterion("delta>=0.03;human_margin=0.05"))[0]
        == "farther within the margin"
    )


def test_inconclusive_says_what_the_design_could_have_shown() -> None:
    eq = {"equivalent": False, "p": 0.452, "power": 0.006, "detectable_margin": 0.19}
    c = _comparison(0.04, [-0.05, 0.15], eq)
    got, words = human_verdict(c, parse_criterion("delta>=0.03,ci_low>0;human_margin=0.05"))
    assert got == "inconclusive"
    assert "power 0.006 to show ±0.05" in words and "smallest margin it could show is ±0.19" in words


def test_tost_size_at_the_margin_is_nominal_with_a_t_reference() -> None:
    """At a true difference equal to the margin, with a design that has power (SE ≈ 0.1·margin),
    the TOST must reject in at most 5 % of data sets. 1,000 data sets of 5 articles × 8 items: the
    old normal reference on the group-bootstrap SD rejected 0.101 of them; the t_{G−1} TOST stays
    within 0.05 + 3 binomial SE (0.071). (At 10 articles: 0.063 against 0.040, measured with
    benchmarks/study_small_groups.py.)"""
    n_groups = 5
    rng = np.random.default_rng(n_groups)
    sims, size, margin = 1000, 8, 1.0
    codes = np.repeat(np.arange(n_groups), size)
    draws = resample_indices(n_groups, 200, 7)
    old = new = 0
    for _ in range(sims):
        y = margin + rng.normal(0, 0.2, n_groups)[codes] + rng.normal(0, 0.2, codes.size)
        sums = np.bincount(codes, weights=y)
        est = y.mean()
        jack = (sums.sum() - sums) / (codes.size - size)
        reps = sums[draws].sum(axis=1) / codes.size
        new += int(group_tost(est, margin, n_groups, replicates=reps, jackknife=jack).equivalent)
        old += int(bootstrap_tost(est, reps, margin).equivalent)
    assert new / sims <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / sims), new / sims
    assert old / sims > 0.05 + 3 * math.sqrt(0.05 * 0.95 / sims), old / sims  # the old reference: too often
