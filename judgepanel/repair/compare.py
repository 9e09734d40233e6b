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
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgepanel.errors import BadInput
from judgepanel.metrics.agreement import UnitStatistic, interval_alpha_stat, spearman_weighted, unit_statistic
from judgepanel.metrics.bootstrap import group_codes, percentile_bounds, resample_mode, resample_weights
from judgepanel.metrics.equivalence import bootstrap_tost

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


MIN_UNITS = 10  # fewer evaluation items per dimension: "sample too small", no ρ = 1.00 [1.00, 1.00]
TOO_SMALL = "sample too small"


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
    resample: str = "items"
    n_groups: int | None = None
    human_equivalence: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "delta": self.delta,
            "human": self.human,
            "human_delta": self.human_delta,
            "human_equivalence": self.human_equivalence,
            "n_items": self.n_items,
            "n_human_items": self.n_human_items,
            "n_boot": self.n_boot,
            "seed": self.seed,
            "resample": self.resample,
            "n_groups": self.n_groups,
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


def _figures(rho: float, alp: float, reps: Mapping[str, FloatArray], small: bool) -> dict[str, Any]:
    if small:
        return {"spearman": None, "alpha": None, "ci": {"spearman": None, "alpha": None}, "note": TOO_SMALL}
    return {
        "spearman": _num(rho),
        "alpha": _num(alp),
        "ci": {"spearman": _ci(reps["spearman"]), "alpha": _ci(reps["alpha"])},
    }


def _deltas(
    a: Mapping[str, Any], b: Mapping[str, Any], ra: Mapping[str, FloatArray], rb: Mapping[str, FloatArray]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for stat_name in ("spearman", "alpha"):
        va, vb = a[stat_name], b[stat_name]
        small = TOO_SMALL in (a.get("note"), b.get("note"))
        out[stat_name] = {
            "value": _num(va - vb) if va is not None and vb is not None else None,
            "ci": None if small else _ci(ra[stat_name] - rb[stat_name]),
        }
    return out


def compare_versions(
    met: Mapping[str, FloatArray],
    clause_dims: Sequence[int],
    human: FloatArray,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    groups: Sequence[Hashable | None] | None = None,
    resample: str | None = None,
    dimensions: Sequence[str] | None = None,
    human_margin: float | None = None,
) -> Comparison:
    """`met[version]` (n_items, n_judges, n_clauses) for original / contested / control; `human`
    (n_items, n_dims) human mean ratings (NaN missing); `clause_dims` each clause's dimension index.

    `groups` (one key per item, None: the item alone) and `resample` (`groups` | `items`; default
    `groups` when items share groups) choose what a bootstrap replicate draws. `dimensions` names
    the human columns for the per-dimension figures. `human_margin` adds a TOST of the human-ρ
    difference (contested − original) within ±margin (`human_equivalence`)."""
    missing = [v for v in VERSIONS if v not in met]
    if missing:
        raise BadInput(f"comparison needs the versions {', '.join(missing)}")
    n_items = met["original"].shape[0]
    if any(met[v].shape != met["original"].shape for v in VERSIONS):
        raise BadInput("every version must cover the same items, judges and clauses")
    if groups is not None and len(groups) != n_items:
        raise BadInput(f"{len(groups)} group keys for {n_items} items")
    mode = resample_mode(resample, groups or [])
    n_dims = human.shape[1]
    dim_names = list(dimensions) if dimensions is not None else [str(d) for d in range(n_dims)]
    if len(dim_names) != n_dims:
        raise BadInput(f"{len(dim_names)} dimension names for {n_dims} human columns")
    w = resample_weights(groups, n_items, n_boot, seed, mode)
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

    # rounded so that scores equal in exact arithmetic tie exactly (the mean of shares otherwise
    # differs in the last bit with the order of summation, and ranks would break such ties at random)
    scores = {v: np.round(1.0 + 4.0 * ensemble_scores(met[v], clause_dims, n_dims), 9) for v in VERSIONS}
    complete = ~np.isnan(human).any(axis=1)
    for v in VERSIONS:
        complete &= ~np.isnan(scores[v]).any(axis=1)
    keep = np.flatnonzero(complete)
    hum_items = int(keep.size)
    small = hum_items < MIN_UNITS
    h = human[keep]
    hw = resample_weights(
        None if groups is None else [groups[i] for i in keep], hum_items, n_boot, seed + 1, mode
    )
    human_out: dict[str, dict[str, Any]] = {}
    hreps: dict[str, dict[str, FloatArray]] = {}
    dim_reps: dict[str, dict[str, dict[str, FloatArray]]] = {}
    for v in VERSIONS:
        rho, alp, rho_reps, alpha_reps = _human_agreement(scores[v][keep], h, hw)
        hreps[v] = {"spearman": rho_reps, "alpha": alpha_reps}
        human_out[v] = {
            **_figures(rho, alp, hreps[v], small),
            "n_units": hum_items * n_dims,
            "by_dimension": {},
        }
        dim_reps[v] = {}
        for d, dname in enumerate(dim_names):
            r_d, a_d, rr_d, ar_d = _human_agreement(scores[v][keep][:, d : d + 1], h[:, d : d + 1], hw)
            dim_reps[v][dname] = {"spearman": rr_d, "alpha": ar_d}
            human_out[v]["by_dimension"][dname] = {
                **_figures(r_d, a_d, dim_reps[v][dname], small),
                "n": hum_items,
            }
    human_delta: dict[str, dict[str, Any]] = {}
    for name, (a, b) in DIFFERENCES.items():
        human_delta[name] = _deltas(human_out[a], human_out[b], hreps[a], hreps[b])
        human_delta[name]["by_dimension"] = {
            dname: _deltas(
                human_out[a]["by_dimension"][dname],
                human_out[b]["by_dimension"][dname],
                dim_reps[a][dname],
                dim_reps[b][dname],
            )
            for dname in dim_names
        }
    equivalence: dict[str, Any] | None = None
    if human_margin is not None:
        main = human_delta["contested_vs_original"]["spearman"]["value"]
        diff_reps = hreps["contested"]["spearman"] - hreps["original"]["spearman"]
        tested: dict[str, Any] = {
            "margin": human_margin,
            "ci90": None,
            "p": None,
            "equivalent": False,
            "se": None,
        }
        if small:
            tested["note"] = TOO_SMALL
        elif main is not None:
            tested = bootstrap_tost(main, diff_reps, human_margin).as_dict()
        equivalence = {"statistic": "spearman", "comparison": "contested_vs_original", **tested}
    n_groups = group_codes(groups)[1] if groups is not None and mode == "groups" else None
    return Comparison(
        alpha, delta, human_out, human_delta, n_items, hum_items, n_boot, seed, mode, n_groups, equivalence
    )


# ---------------------------------------------------------------- the pre-declared criterion

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}
_TERM = re.compile(r"^\s*([a-z_]+)\s*(>=|<=|>|<)\s*(-?[0-9]*\.?[0-9]+(?:e-?[0-9]+)?)\s*$")
CRITERION_KEYS = ("delta", "ci_low", "ci_high", "control_delta", "control_ci_low")


_MARGIN = re.compile(r"^\s*human_margin\s*=\s*([0-9]*\.?[0-9]+(?:e-?[0-9]+)?)\s*$")
HUMAN_VERDICTS = ("closer", "equivalent", "farther", "inconclusive")


@dataclass(frozen=True)
class Criterion:
    text: str
    terms: tuple[tuple[str, str, float], ...]
    human_margin: float | None = None  # pre-declared equivalence margin for the human-ρ difference

    def holds(self, figures: Mapping[str, float | None]) -> bool:
        for key, op, bound in self.terms:
            x = figures.get(key)
            if x is None or not math.isfinite(x) or not _OPS[op](x, bound):
                return False
        return True


def parse_criterion(text: str) -> Criterion:
    """`delta>=0.03,ci_low>0[;human_margin=0.05]`: every term must hold. Keys: delta / ci_low /
    ci_high (contested − original), control_delta / control_ci_low (contested − control). The
    optional `human_margin` after a `;` declares the equivalence margin of the TOST on the human-ρ
    difference (contested − original): without it, "no detectable change" is all that can be said."""
    head, sep, tail = text.partition(";")
    margin = None
    if sep:
        m = _MARGIN.match(tail)
        if m is None:
            raise BadInput(
                f"--criterion: cannot read {tail.strip()!r} after ';'; write e.g. {DEFAULT_CRITERION};human_margin=0.05"
            )
        margin = float(m.group(1))
        if not 0.0 < margin < 2.0:
            raise BadInput(
                f"--criterion: human_margin must lie in (0, 2) (a difference of ρ), got {margin:g}"
            )
    terms = []
    for part in head.split(","):
        m = _TERM.match(part)
        if m is None:
            raise BadInput(f"--criterion: cannot read {part.strip()!r}; write e.g. delta>=0.03,ci_low>0")
        key, op, value = m.group(1), m.group(2), float(m.group(3))
        if key not in CRITERION_KEYS:
            raise BadInput(f"--criterion: unknown key {key!r} (known: {', '.join(CRITERION_KEYS)})")
        terms.append((key, op, value))
    body = ",".join(f"{k}{o}{v:g}" for k, o, v in terms)
    return Criterion(body + (f";human_margin={margin:g}" if margin is not None else ""), tuple(terms), margin)


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


def human_verdict(c: Comparison, criterion: Criterion) -> tuple[str, str]:
    """closer | equivalent | farther | inconclusive for agreement with humans (Spearman ρ,
    contested − original), and the sentence that says it:

    - closer: the pre-declared criterion holds on the human-ρ difference;
    - farther: its 95 % interval lies below 0;
    - equivalent: the TOST within ±human_margin rejects both one-sided nulls (p < 0.05);
    - inconclusive: none of these — including too small a sample, or no margin declared."""
    human_diff = {k: v["spearman"] for k, v in c.human_delta.items()}
    main = human_diff["contested_vs_original"]
    eq = c.human_equivalence or {}
    margin = criterion.human_margin
    if c.human["original"].get("note") == TOO_SMALL:
        return (
            "inconclusive",
            f"humans: {TOO_SMALL} ({c.n_human_items} items with ratings, fewer than {MIN_UNITS})",
        )
    if criterion.holds(criterion_figures(human_diff)):
        return "closer", "closer to humans"
    if main.get("ci") and main["ci"][1] < 0:
        return "farther", "further from humans"
    if eq.get("equivalent"):
        return (
            "equivalent",
            f"equivalent to the original within ±{margin:g} in ρ with humans (TOST p = {eq['p']:.3g})",
        )
    if margin is None:
        return (
            "inconclusive",
            "humans inconclusive: no detectable change, and no equivalence margin was declared",
        )
    p = eq.get("p")
    return (
        "inconclusive",
        f"humans inconclusive: neither closer nor equivalent within ±{margin:g}"
        + (f" (TOST p = {p:.3g})" if p is not None else ""),
    )


def verdicts(c: Comparison, criterion: Criterion) -> tuple[dict[str, str], str]:
    """pass|fail for inter-judge agreement (α deltas against the criterion), closer | equivalent |
    farther | inconclusive for agreement with humans (:func:`human_verdict`), and the result in
    plain words."""
    inter = criterion.holds(criterion_figures(c.delta))
    human, human_words = human_verdict(c, criterion)
    words = (
        _direction(
            c.delta["contested_vs_original"],
            "judges agree more",
            "judges agree less",
            "judges agree about as much",
        )
        + "; "
        + human_words
        + " (contested-edited vs original; "
        + _direction(c.delta["contested_vs_control"], "beats", "trails", "no clearer than")
        + " the random-clause control on judge agreement)."
        + f" Criterion {criterion.text}: inter-judge {'pass' if inter else 'fail'}, human {human}."
    )
    return {"inter_judge": "pass" if inter else "fail", "human": human}, words
