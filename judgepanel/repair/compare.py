"""Before/after comparison of rubric versions on the same evaluation items (pure numpy).

Inputs: for each version a met tensor `met[item, judge, clause]` (1.0 met, 0.0 not met, NaN no
verdict) over the same items, judges and clause ids (rewrites keep ids), each clause's dimension,
and the human ratings `human[item, dimension]` (the mean over the chosen human annotators).

Inter-judge agreement: Krippendorff's α, nominal, with (item, clause) as units and judges as
coders. For binary values, per unit u with m_u ≥ 2 verdicts of which n1_u are met,

    α = 1 − (n − 1) · Σ_u 2·n1_u·n0_u/(m_u − 1)  /  (2 · n1 · n0)

with n = Σ m_u, n1 = Σ n1_u, n0 = n − n1 over pairable units (Krippendorff 2011, "Computing
Krippendorff's alpha-reliability"). The three sums add over items, so a bootstrap that resamples
items is a matrix product of per-item sums with the replicate's item counts.

Agreement with humans: per item and dimension the judge ensemble's score is the mean over judges
of the share of the dimension's clauses met; against the human rating of that dimension over the
pooled (item, dimension) units: Spearman's ρ and Krippendorff's α (interval) with the score mapped
to the rating scale as 1 + 4·share, rounded to 1e-9 so equal scores tie (two coders per unit:
α = 1 − (n − 1)·Σ_u (a_u − b_u)² / (n · Σ_v (v − v̄)²), n = 2·units).
Items lacking a human rating or an ensemble score of some dimension in some version are left out.

Confidence intervals: a percentile bootstrap over items; the same replicates for every version, so
the differences (contested − original, contested − control) are paired.
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
from scipy.stats import rankdata

from judgepanel.errors import BadInput

VERSIONS = ("original", "contested", "control")
DIFFERENCES = {
    "contested_vs_original": ("contested", "original"),
    "contested_vs_control": ("contested", "control"),
}
DEFAULT_CRITERION = "delta>=0.03,ci_low>0"

FloatArray = NDArray[np.float64]


def bootstrap_indices(n_items: int, n_boot: int, seed: int) -> NDArray[np.int64]:
    """(n_boot, n_items) item indices drawn with replacement; the draws every statistic shares."""
    return np.random.default_rng(seed).integers(0, n_items, size=(n_boot, n_items))


def _counts(idx: NDArray[np.int64], n_items: int) -> FloatArray:
    b = idx.shape[0]
    flat = (idx + np.arange(b)[:, None] * n_items).ravel()
    return np.bincount(flat, minlength=b * n_items).reshape(b, n_items).astype(np.float64)


# ---------------------------------------------------------------- inter-judge α (nominal, binary)


def alpha_parts(met: FloatArray) -> FloatArray:
    """Per item: (Σ 2·n1·n0/(m−1), Σ m, Σ n1) over its pairable (item, clause) units; (n_items, 3)."""
    present = ~np.isnan(met)
    m = present.sum(axis=1).astype(np.float64)  # (items, clauses)
    n1 = np.where(present, met, 0.0).sum(axis=1)
    pairable = m >= 2
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(pairable, 2.0 * n1 * (m - n1) / np.where(pairable, m - 1.0, 1.0), 0.0)
    return np.stack(
        [d.sum(axis=1), np.where(pairable, m, 0.0).sum(axis=1), np.where(pairable, n1, 0.0).sum(axis=1)],
        axis=1,
    )


def alpha_from_parts(parts: FloatArray) -> FloatArray:
    """α from summed parts (…, 3); NaN where the expected disagreement is 0."""
    d, n, n1 = parts[..., 0], parts[..., 1], parts[..., 2]
    denom = 2.0 * n1 * (n - n1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1.0 - (n - 1.0) * d / denom
    return np.where(denom > 0, out, np.nan)


def nominal_alpha(met: FloatArray) -> float:
    return float(alpha_from_parts(alpha_parts(met).sum(axis=0)))


# ---------------------------------------------------------------- ensemble vs humans


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


def spearman_rows(a: FloatArray, b: FloatArray) -> FloatArray:
    """Spearman's ρ of each row pair (ties: average ranks); NaN for a constant row."""
    ra, rb = rankdata(a, axis=-1), rankdata(b, axis=-1)
    ra = ra - ra.mean(axis=-1, keepdims=True)
    rb = rb - rb.mean(axis=-1, keepdims=True)
    den = np.sqrt((ra * ra).sum(axis=-1) * (rb * rb).sum(axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, (ra * rb).sum(axis=-1) / den, np.nan)


def interval_alpha_rows(a: FloatArray, b: FloatArray) -> FloatArray:
    """Krippendorff's α (interval) for two coders on every unit, row-wise."""
    n = 2.0 * a.shape[-1]
    v = np.concatenate([a, b], axis=-1)
    ss = ((v - v.mean(axis=-1, keepdims=True)) ** 2).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1.0 - (n - 1.0) * ((a - b) ** 2).sum(axis=-1) / (n * ss)
    return np.where(ss > 0, out, np.nan)


# ---------------------------------------------------------------- the comparison


def _ci(reps: FloatArray) -> list[float] | None:
    ok = reps[~np.isnan(reps)]
    if ok.size < 2:
        return None
    lo, hi = np.percentile(ok, [2.5, 97.5])
    return [round(float(lo), 6), round(float(hi), 6)]


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
    idx = bootstrap_indices(n_items, n_boot, seed) if n_items else np.zeros((n_boot, 0), dtype=np.int64)
    w = _counts(idx, n_items)
    alpha: dict[str, dict[str, Any]] = {}
    reps: dict[str, FloatArray] = {}
    for v in VERSIONS:
        parts = alpha_parts(met[v])
        reps[v] = alpha_from_parts(w @ parts)
        alpha[v] = {"value": _num(float(alpha_from_parts(parts.sum(axis=0)))), "ci": _ci(reps[v])}
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
    hidx = (
        bootstrap_indices(hum_items, n_boot, seed + 1) if hum_items else np.zeros((n_boot, 0), dtype=np.int64)
    )
    human_out: dict[str, dict[str, Any]] = {}
    hreps: dict[str, dict[str, FloatArray]] = {}
    for v in VERSIONS:
        s = scores[v][keep]
        point_rho = spearman_rows(s.reshape(1, -1), h.reshape(1, -1))[0] if hum_items > 1 else np.nan
        point_a = interval_alpha_rows(s.reshape(1, -1), h.reshape(1, -1))[0] if hum_items else np.nan
        bs, bh = s[hidx].reshape(n_boot, -1), h[hidx].reshape(n_boot, -1)
        hreps[v] = {"spearman": spearman_rows(bs, bh), "alpha": interval_alpha_rows(bs, bh)}
        human_out[v] = {
            "spearman": _num(float(point_rho)),
            "alpha": _num(float(point_a)),
            "ci": {"spearman": _ci(hreps[v]["spearman"]), "alpha": _ci(hreps[v]["alpha"])},
        }
    human_delta: dict[str, dict[str, Any]] = {}
    for name, (a, b) in DIFFERENCES.items():
        human_delta[name] = {}
        for stat in ("spearman", "alpha"):
            va, vb = human_out[a][stat], human_out[b][stat]
            human_delta[name][stat] = {
                "value": _num(va - vb) if va is not None and vb is not None else None,
                "ci": _ci(hreps[a][stat] - hreps[b][stat]),
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
