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

Confidence intervals: a percentile bootstrap over items or groups (`metrics.bootstrap.count_matrix`,
`percentile_bounds`); the same replicates for every version, so the differences (contested −
original, contested − control) are paired. Below 20 resampled units (issue 30 §1) every interval is
``θ̂ ± t_{G−1}·SE`` with the group-jackknife SE instead (`metrics.group_ci`): the jackknife's
leave-one-group-out values come from the same code as the replicates, with 0/1 weights that drop
one group at a time. Each interval records its `ci_method`; a t interval is clipped to the statistic's range (α and ρ
at most 1, a difference within ±2). The TOST on Δρ takes the same SE and
``t_{G−1}`` (`metrics.equivalence.group_tost`).

Verdicts (:func:`verdicts`): below 5 groups none is stated ("too few groups"), below 10 a warning
names the groups; "closer" needs the Δρ interval above 0 (and above +margin once a margin is
declared, else "closer within the margin"), "farther" below 0 (below −margin, else "farther
within the margin"); every branch reads the one interval above.
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
from judgepanel.metrics.equivalence import group_tost
from judgepanel.metrics.group_ci import (
    PERCENTILE,
    T_JACKKNIFE,
    TOO_FEW_GROUPS,
    few_groups_warning,
    group_interval,
    jackknife_weights,
    uses_t,
    verdict_allowed,
)

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


@dataclass(frozen=True)
class _Units:
    """What the intervals rest on: ``n`` resampled units (groups, or items) and, below 20, the
    (n, items) weights whose rows leave one unit out."""

    n: int
    jack: FloatArray | None

    @classmethod
    def of(cls, codes: NDArray[np.intp], n: int) -> _Units:
        return cls(n, jackknife_weights(codes, n) if uses_t(n) else None)


def _interval(
    value: float | None,
    reps: FloatArray,
    jack: FloatArray | None,
    units: _Units,
    bounds: tuple[float, float] = (-1.0, 1.0),
) -> dict[str, Any]:
    """`{ci, ci_method}`: the percentile interval of the defined replicates from 20 units on (as
    the comparison always showed it), below the t interval with the jackknife SE
    (`metrics.group_ci.group_interval`)."""
    if not uses_t(units.n):
        b = percentile_bounds(reps)
        return {"ci": None if b is None else [round(b[0], 6), round(b[1], 6)], "ci_method": PERCENTILE}
    if value is None or jack is None:
        return {"ci": None, "ci_method": T_JACKKNIFE}
    gi = group_interval(float(value), units.n, jackknife=jack, se_method=T_JACKKNIFE, bounds=bounds)
    ok = math.isfinite(gi.lo) and math.isfinite(gi.hi)
    return {"ci": [round(gi.lo, 6), round(gi.hi, 6)] if ok else None, "ci_method": gi.method}


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
    groups_in_data: int = 0  # distinct groups among the evaluation items (an item without one: its own)
    human_groups: int = 0  # … among the items with human ratings

    @property
    def warnings(self) -> list[str]:
        w = few_groups_warning(self.groups_in_data, "groups (articles)")
        return [] if w is None else [w]

    def as_dict(self) -> dict[str, Any]:
        return {
            "groups_in_data": self.groups_in_data,
            "human_groups": self.human_groups,
            "warnings": self.warnings,
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


_HUMAN_STATS = ("spearman", "alpha")


def _figures(
    rho: float,
    alp: float,
    reps: Mapping[str, FloatArray],
    jack: Mapping[str, FloatArray | None],
    small: bool,
    units: _Units,
) -> dict[str, Any]:
    if small:
        return {
            "spearman": None,
            "alpha": None,
            "ci": {"spearman": None, "alpha": None},
            "ci_method": None,
            "note": TOO_SMALL,
        }
    values = {"spearman": _num(rho), "alpha": _num(alp)}
    ivs = {k: _interval(values[k], reps[k], jack[k], units) for k in _HUMAN_STATS}
    return {
        **values,
        "ci": {k: ivs[k]["ci"] for k in _HUMAN_STATS},
        "ci_method": ivs["spearman"]["ci_method"],
    }


def _deltas(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    ra: Mapping[str, FloatArray],
    rb: Mapping[str, FloatArray],
    ja: Mapping[str, FloatArray | None],
    jb: Mapping[str, FloatArray | None],
    units: _Units,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for stat_name in _HUMAN_STATS:
        va, vb = a[stat_name], b[stat_name]
        small = TOO_SMALL in (a.get("note"), b.get("note"))
        value = _num(va - vb) if va is not None and vb is not None else None
        xa, xb = ja[stat_name], jb[stat_name]
        iv = _interval(
            value,
            ra[stat_name] - rb[stat_name],
            None if xa is None or xb is None else xa - xb,
            units,
            (-2.0, 2.0),
        )
        out[stat_name] = {
            "value": value,
            "ci": None if small else iv["ci"],
            "ci_method": None if small else iv["ci_method"],
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
    all_codes, groups_in_data = group_codes(groups if groups is not None else [None] * n_items)
    units = _Units.of(*(group_codes(groups) if mode == "groups" and groups is not None else _own(n_items)))
    alpha: dict[str, dict[str, Any]] = {}
    reps: dict[str, FloatArray] = {}
    jacks: dict[str, FloatArray | None] = {}
    for v in VERSIONS:
        stat = clause_alpha_by_item(met[v])
        reps[v] = stat.finish(w @ stat.contributions)
        jacks[v] = None if units.jack is None else stat.finish(units.jack @ stat.contributions)
        value = _num(stat.value())
        alpha[v] = {"value": value, **_interval(value, reps[v], jacks[v], units)}
    delta = {}
    for name, (a, b) in DIFFERENCES.items():
        value = (
            (alpha[a]["value"] - alpha[b]["value"])
            if None not in (alpha[a]["value"], alpha[b]["value"])
            else None
        )
        ja, jb = jacks[a], jacks[b]
        delta[name] = {
            "value": _num(value) if value is not None else None,
            **_interval(
                value, reps[a] - reps[b], None if ja is None or jb is None else ja - jb, units, (-2.0, 2.0)
            ),
        }

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
    kept_groups = None if groups is None else [groups[i] for i in keep]
    hw = resample_weights(kept_groups, hum_items, n_boot, seed + 1, mode)
    human_groups = int(np.unique(all_codes[keep]).size)
    hunits = _Units.of(
        *(group_codes(kept_groups) if mode == "groups" and kept_groups is not None else _own(hum_items))
    )

    def agreement(
        x: FloatArray, y: FloatArray
    ) -> tuple[float, float, dict[str, FloatArray], dict[str, FloatArray | None]]:
        rho, alp, rho_reps, alpha_reps = _human_agreement(x, y, hw)
        jack: dict[str, FloatArray | None] = {"spearman": None, "alpha": None}
        if hunits.jack is not None and hum_items:
            _r, _a, rho_jack, alpha_jack = _human_agreement(x, y, hunits.jack)
            jack = {"spearman": rho_jack, "alpha": alpha_jack}
        return rho, alp, {"spearman": rho_reps, "alpha": alpha_reps}, jack

    human_out: dict[str, dict[str, Any]] = {}
    hreps: dict[str, dict[str, FloatArray]] = {}
    hjack: dict[str, dict[str, FloatArray | None]] = {}
    dim_reps: dict[str, dict[str, dict[str, FloatArray]]] = {}
    dim_jack: dict[str, dict[str, dict[str, FloatArray | None]]] = {}
    for v in VERSIONS:
        rho, alp, hreps[v], hjack[v] = agreement(scores[v][keep], h)
        human_out[v] = {
            **_figures(rho, alp, hreps[v], hjack[v], small, hunits),
            "n_units": hum_items * n_dims,
            "by_dimension": {},
        }
        dim_reps[v], dim_jack[v] = {}, {}
        for d, dname in enumerate(dim_names):
            r_d, a_d, dim_reps[v][dname], dim_jack[v][dname] = agreement(
                scores[v][keep][:, d : d + 1], h[:, d : d + 1]
            )
            human_out[v]["by_dimension"][dname] = {
                **_figures(r_d, a_d, dim_reps[v][dname], dim_jack[v][dname], small, hunits),
                "n": hum_items,
            }
    human_delta: dict[str, dict[str, Any]] = {}
    for name, (a, b) in DIFFERENCES.items():
        human_delta[name] = _deltas(
            human_out[a], human_out[b], hreps[a], hreps[b], hjack[a], hjack[b], hunits
        )
        human_delta[name]["by_dimension"] = {
            dname: _deltas(
                human_out[a]["by_dimension"][dname],
                human_out[b]["by_dimension"][dname],
                dim_reps[a][dname],
                dim_reps[b][dname],
                dim_jack[a][dname],
                dim_jack[b][dname],
                hunits,
            )
            for dname in dim_names
        }
    equivalence: dict[str, Any] | None = None
    if human_margin is not None:
        main = human_delta["contested_vs_original"]["spearman"]["value"]
        diff_reps = hreps["contested"]["spearman"] - hreps["original"]["spearman"]
        jc, jo = hjack["contested"]["spearman"], hjack["original"]["spearman"]
        tested: dict[str, Any] = {
            "margin": human_margin,
            "ci90": None,
            "p": None,
            "equivalent": False,
            "se": None,
            "df": None,
            "detectable_margin": None,
            "power": None,
        }
        if small:
            tested["note"] = TOO_SMALL
        elif main is not None:
            tested = group_tost(
                main,
                human_margin,
                hunits.n,
                replicates=diff_reps,
                jackknife=None if jc is None or jo is None else jc - jo,
            ).as_dict()
        equivalence = {"statistic": "spearman", "comparison": "contested_vs_original", **tested}
    n_groups = group_codes(groups)[1] if groups is not None and mode == "groups" else None
    return Comparison(
        alpha,
        delta,
        human_out,
        human_delta,
        n_items,
        hum_items,
        n_boot,
        seed,
        mode,
        n_groups,
        equivalence,
        groups_in_data,
        human_groups,
    )


def _own(n: int) -> tuple[NDArray[np.intp], int]:
    return np.arange(n, dtype=np.intp), n


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
HUMAN_VERDICTS = (
    "closer",
    "closer within the margin",
    "equivalent",
    "farther",
    "farther within the margin",
    "inconclusive",
    TOO_FEW_GROUPS,
)


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
    """One of :data:`HUMAN_VERDICTS` for agreement with humans (Spearman ρ, contested − original),
    and the sentence that says it. Every branch reads the one Δρ interval (`human_delta`) and the
    TOST built on the same standard error:

    - too few groups: fewer than 5 groups (articles) with human ratings — the figures, no verdict;
    - closer: the pre-declared criterion holds *and* the interval lies above 0; once a margin is
      declared, above +margin (else "closer within the margin": a change no larger than what was
      declared negligible);
    - farther: the interval lies below 0 (below −margin once declared, else "farther within the
      margin");
    - equivalent: the TOST within ±human_margin rejects both one-sided nulls (p < 0.05);
    - inconclusive: none of these — also too small a sample, or no margin declared; with a margin
      it says what the design could have shown (the TOST's power at a true Δ of 0 and the
      detectable margin)."""
    human_diff = {k: v["spearman"] for k, v in c.human_delta.items()}
    main = human_diff["contested_vs_original"]
    eq = c.human_equivalence or {}
    margin = criterion.human_margin
    if c.human["original"].get("note") == TOO_SMALL:
        return (
            "inconclusive",
            f"humans: {TOO_SMALL} ({c.n_human_items} items with ratings, fewer than {MIN_UNITS})",
        )
    if not verdict_allowed(c.human_groups):
        return (
            TOO_FEW_GROUPS,
            f"humans: {TOO_FEW_GROUPS} ({c.human_groups} groups with ratings, fewer than 5): the "
            "figures are shown, no verdict",
        )
    ci = main.get("ci")
    lo, hi = (ci[0], ci[1]) if ci else (None, None)
    if criterion.holds(criterion_figures(human_diff)) and lo is not None and lo > 0:
        if margin is not None and lo <= margin:
            return (
                "closer within the margin",
                f"closer to humans, but within the declared margin ±{margin:g} (Δρ interval {lo:+.3f}..{hi:+.3f})",
            )
        return "closer", "closer to humans"
    if hi is not None and hi < 0:
        if margin is not None and hi >= -margin:
            return (
                "farther within the margin",
                f"further from humans, but within the declared margin ±{margin:g} (Δρ interval {lo:+.3f}..{hi:+.3f})",
            )
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
    words = f"humans inconclusive: neither closer nor equivalent within ±{margin:g}" + (
        f" (TOST p = {p:.3g})" if p is not None else ""
    )
    power, smallest = eq.get("power"), eq.get("detectable_margin")
    if power is not None and smallest is not None:
        words += (
            f"; this design had power {power:.3g} to show ±{margin:g} if the versions were equal, and"
            f" the smallest margin it could show is ±{smallest:.2g}"
        )
    return "inconclusive", words


def inter_judge_verdict(c: Comparison, criterion: Criterion) -> str:
    """pass | fail for the criterion on the inter-judge α differences, or too few groups."""
    if not verdict_allowed(c.groups_in_data):
        return TOO_FEW_GROUPS
    return "pass" if criterion.holds(criterion_figures(c.delta)) else "fail"


def verdicts(c: Comparison, criterion: Criterion) -> tuple[dict[str, str], str]:
    """pass|fail for inter-judge agreement (α deltas against the criterion), closer | equivalent |
    farther | inconclusive for agreement with humans (:func:`human_verdict`), and the result in
    plain words."""
    inter = inter_judge_verdict(c, criterion)
    human, human_words = human_verdict(c, criterion)
    if inter == TOO_FEW_GROUPS:
        words = (
            f"{TOO_FEW_GROUPS} for a verdict: the evaluation items come from {c.groups_in_data} "
            "groups (articles), fewer than 5, so the figures above are shown without one"
            + f" (criterion {criterion.text}: inter-judge {inter}, human {human})."
        )
        return {"inter_judge": inter, "human": human}, words
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
        + f" Criterion {criterion.text}: inter-judge {inter}, human {human}."
    )
    return {"inter_judge": inter, "human": human}, words
