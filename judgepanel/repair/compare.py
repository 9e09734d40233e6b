"""Before/after comparison of rubric versions on the same evaluation items.

Inputs: for each version a met tensor `met[item, judge, clause]` (1.0 met, 0.0 not met, NaN no
verdict) over the same items, judges and clause ids (rewrites keep ids), each clause's dimension,
and the human ratings `human[item, dimension]` (the mean over the chosen human annotators).

This module only shapes the data and calls the statistics in `judgepanel.metrics`:

- inter-judge agreement: Krippendorff's α, nominal (`metrics.agreement.unit_statistic`), with
  (item, clause) as units and judges as coders; the units' contributions are summed per item
  (`UnitStatistic.summed_by`), so a bootstrap that resamples items is a matrix product of per-item
  sums with the replicate's item counts;
- agreement with humans: per item and dimension the judge ensemble's score is the mean over judges
  of the share of the dimension's clauses met; against the human rating of that dimension over the
  pooled (item, dimension) units: Spearman's ρ (`metrics.agreement.spearman_weighted`, weighted by
  each unit's item count in a replicate) and Krippendorff's α at the interval level
  (`metrics.agreement.interval_alpha_stat`, two coders per unit) with the score mapped to the
  rating scale as 1 + 4·share, rounded to 1e-9 so equal scores tie. Items lacking a human rating
  or an ensemble score of some dimension in some version are left out.

Confidence intervals: a percentile bootstrap over items (`metrics.bootstrap.count_matrix`,
`percentile_bounds`); the same replicates for every version, so the differences (contested −
original, contested − control) are paired.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgepanel.errors import BadInput
from judgepanel.metrics.agreement import UnitStatistic, interval_alpha_stat, spearman_weighted, unit_statistic
from judgepanel.metrics.bootstrap import count_matrix, percentile_bounds

VERSIONS = ("original", "contested", "control")
DIFFERENCES = {
    "contested_vs_original": ("contested", "original"),
    "contested_vs_control": ("contested", "control"),
}
DEFAULT_CRITERION = "delta>=0.03,ci_low>0"
_BINARY = np.array([0.0, 1.0])

FloatArray = NDArray[np.float64]


def clause_alpha_by_item(met: FloatArray) -> UnitStatistic:
    """Nominal α of the judges over (item, clause) units, its contributions summed per item."""
    n_items, n_judges, n_clauses = met.shape
    units = met.transpose(0, 2, 1).reshape(n_items * n_clauses, n_judges)
    stat = unit_statistic("alpha", units, _BINARY, "nominal")
    return stat.summed_by(np.repeat(np.arange(n_items), n_clauses), n_items)


def ensemble_scores(met: FloatArray, clause_dims: Sequence[int], n_dims: int) -> FloatArray:
    """(n_items, n_dims): mean over judges of the share of the dimension's clauses met."""
    onehot = np.zeros((met.shape[2], n_dims))
    onehot[np.arange(met.shape[2]), np.asarray(clause_dims)] = 1.0
    present = (~np.isnan(met)).astype(np.float64)
    met_sum = np.nan_to_num(met) @ onehot  # (items, judges, dims)
    asked = present @ onehot
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(asked > 0, met_sum / np.where(asked > 0, asked, 1.0), np.nan)
    have = ~np.isnan(share)
    k = have.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(k > 0, np.where(have, share, 0.0).sum(axis=1) / np.where(k > 0, k, 1), np.nan)


# ---------------------------------------------------------------- the comparison


def _ci(reps: FloatArray) -> list[float] | None:
    b = percentile_bounds(reps)
    return None if b is None else [round(b[0], 6), round(b[1], 6)]


def _num(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else round(float(x), 6)


@dataclass(frozen=True)
class Comparison:
    alpha: dict[str, dict[str, Any]]
    delta: dict[str, dict[str, Any]]
    human: dict[str, dict[str, Any]]
    human_delta: dict[str, dict[str, Any]]
    n_items: int
    n_human_items: int
    n_boot: int
    seed: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "delta": self.delta,
            "human": self.human,
            "human_delta": self.human_delta,
            "n_items": self.n_items,
            "n_human_items": self.n_human_items,
            "n_boot": self.n_boot,
            "seed": self.seed,
        }


def _human_agreement(
    scores: FloatArray, human: FloatArray, w: FloatArray
) -> tuple[float, float, FloatArray, FloatArray]:
    """ρ and interval α of pooled (item, dimension) units, and their replicates under item counts
    `w` (replicates × items)."""
    n_items, n_dims = human.shape
    s, h = scores.ravel(), human.ravel()
    unit_item = np.repeat(np.arange(n_items), n_dims)
    rho = float(spearman_weighted(s, h, np.ones(s.size))[0]) if n_items > 1 else float("nan")
    stat = interval_alpha_stat(np.column_stack([s, h])).summed_by(unit_item, n_items)
    alpha = stat.value() if n_items else float("nan")
    rho_reps = spearman_weighted(s, h, w[:, unit_item])
    alpha_reps = stat.finish(w @ stat.contributions)
    return rho, alpha, rho_reps, alpha_reps


def compare_versions(
    met: Mapping[str, FloatArray],
    clause_dims: Sequence[int],
    human: FloatArray,
    *,
    n_boot: int = 1000,
    seed: int = 0,
) -> Comparison:
    """`met[version]` (n_items, n_judges, n_clauses) for original / contested / control; `human`
    (n_items, n_dims) human mean ratings (NaN missing); `clause_dims` each clause's dimension index."""
    missing = [v for v in VERSIONS if v not in met]
    if missing:
        raise BadInput(f"comparison needs the versions {', '.join(missing)}")
    n_items = met["original"].shape[0]
    if any(met[v].shape != met["original"].shape for v in VERSIONS):
        raise BadInput("every version must cover the same items, judges and clauses")
    w = count_matrix(n_items, n_boot, seed)
    alpha: dict[str, dict[str, Any]] = {}
    reps: dict[str, FloatArray] = {}
    for v in VERSIONS:
        stat = clause_alpha_by_item(met[v])
        reps[v] = stat.finish(w @ stat.contributions)
        alpha[v] = {"value": _num(stat.value()), "ci": _ci(reps[v])}
    delta = {}
    for name, (a, b) in DIFFERENCES.items():
        value = (
            (alpha[a]["value"] - alpha[b]["value"])
            if None not in (alpha[a]["value"], alpha[b]["value"])
            else None
        )
        delta[name] = {"value": _num(value) if value is not None else None, "ci": _ci(reps[a] - reps[b])}

    n_dims = human.shape[1]
    # rounded so that scores equal in exact arithmetic tie exactly (the mean of shares otherwise
    # differs in the last bit with the order of summation, and ranks would break such ties at random)
    scores = {v: np.round(1.0 + 4.0 * ensemble_scores(met[v], clause_dims, n_dims), 9) for v in VERSIONS}
    complete = ~np.isnan(human).any(axis=1)
    for v in VERSIONS:
        complete &= ~np.isnan(scores[v]).any(axis=1)
    keep = np.flatnonzero(complete)
    hum_items = int(keep.size)
    h = human[keep]
    hw = count_matrix(hum_items, n_boot, seed + 1)
    human_out: dict[str, dict[str, Any]] = {}
    hreps: dict[str, dict[str, FloatArray]] = {}
    for v in VERSIONS:
        rho, alp, rho_reps, alpha_reps = _human_agreement(scores[v][keep], h, hw)
        hreps[v] = {"spearman": rho_reps, "alpha": alpha_reps}
        human_out[v] = {
            "spearman": _num(rho),
            "alpha": _num(alp),
            "ci": {"spearman": _ci(rho_reps), "alpha": _ci(alpha_reps)},
        }
    human_delta: dict[str, dict[str, Any]] = {}
    for name, (a, b) in DIFFERENCES.items():
        human_delta[name] = {}
        for stat_name in ("spearman", "alpha"):
            va, vb = human_out[a][stat_name], human_out[b][stat_name]
            human_delta[name][stat_name] = {
                "value": _num(va - vb) if va is not None and vb is not None else None,
                "ci": _ci(hreps[a][stat_name] - hreps[b][stat_name]),
            }
    return Comparison(alpha, delta, human_out, human_delta, n_items, hum_items, n_boot, seed)


# ---------------------------------------------------------------- the pre-declared criterion

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}
_TERM = re.compile(r"^\s*([a-z_]+)\s*(>=|<=|>|<)\s*(-?[0-9]*\.?[0-9]+(?:e-?[0-9]+)?)\s*$")
CRITERION_KEYS = ("delta", "ci_low", "ci_high", "control_delta", "control_ci_low")


@dataclass(frozen=True)
class Criterion:
    text: str
    terms: tuple[tuple[str, str, float], ...]

    def holds(self, figures: Mapping[str, float | None]) -> bool:
        for key, op, bound in self.terms:
            x = figures.get(key)
            if x is None or not math.isfinite(x) or not _OPS[op](x, bound):
                return False
        return True


def parse_criterion(text: str) -> Criterion:
    """`delta>=0.03,ci_low>0`: every term must hold. Keys: delta / ci_low / ci_high (contested −
    original), control_delta / control_ci_low (contested − control)."""
    terms = []
    for part in text.split(","):
        m = _TERM.match(part)
        if m is None:
            raise BadInput(f"--criterion: cannot read {part.strip()!r}; write e.g. delta>=0.03,ci_low>0")
        key, op, value = m.group(1), m.group(2), float(m.group(3))
        if key not in CRITERION_KEYS:
            raise BadInput(f"--criterion: unknown key {key!r} (known: {', '.join(CRITERION_KEYS)})")
        terms.append((key, op, value))
    return Criterion(",".join(f"{k}{o}{v:g}" for k, o, v in terms), tuple(terms))


def criterion_figures(diff: Mapping[str, Mapping[str, Any]]) -> dict[str, float | None]:
    """The criterion's keys from a `delta`-shaped dict ({contested_vs_original: {value, ci}, …})."""
    main, ctrl = diff["contested_vs_original"], diff["contested_vs_control"]
    return {
        "delta": main["value"],
        "ci_low": main["ci"][0] if main["ci"] else None,
        "ci_high": main["ci"][1] if main["ci"] else None,
        "control_delta": ctrl["value"],
        "control_ci_low": ctrl["ci"][0] if ctrl["ci"] else None,
    }


def _direction(d: Mapping[str, Any], up: str, down: str, flat: str) -> str:
    ci = d.get("ci")
    if ci and ci[0] > 0:
        return up
    if ci and ci[1] < 0:
        return down
    return flat


def verdicts(c: Comparison, criterion: Criterion) -> tuple[dict[str, str], str]:
    """pass|fail for inter-judge (α deltas) and human agreement (Spearman deltas), and the result
    in plain words."""
    inter = criterion.holds(criterion_figures(c.delta))
    human_diff = {k: v["spearman"] for k, v in c.human_delta.items()}
    human = criterion.holds(criterion_figures(human_diff))
    words = (
        _direction(
            c.delta["contested_vs_original"],
            "judges agree more",
            "judges agree less",
            "judges agree about as much",
        )
        + "; "
        + _direction(
            human_diff["contested_vs_original"], "humans closer", "humans further away", "humans no closer"
        )
        + " (contested-edited vs original; "
        + _direction(c.delta["contested_vs_control"], "beats", "trails", "no clearer than")
        + " the random-clause control on judge agreement)."
        + f" Criterion {criterion.text}: inter-judge {'pass' if inter else 'fail'}, human {'pass' if human else 'fail'}."
    )
    return {"inter_judge": "pass" if inter else "fail", "human": "pass" if human else "fail"}, words
