"""How much human overlap a judge validation needs, and how to allocate re-annotation to get it.

Planner
-------
A judge is certified when its per-item advantage ``d`` over a held-out human (judge's agreement
with the other humans minus the held-out human's) is shown to exceed ``−ε``. With per-item standard
deviation ``σ0`` and mean ``μ_d``, a normal-approximation interval of half-width
``z_{1−α/2} σ0 / √m`` separates ``μ_d`` from ``−ε`` once

    m*_cert = ⌈ z²_{1−α/2} σ0² / (μ_d + ε)² ⌉

items are shared. Choosing the best of J judges whose mean scores differ by at least ``Δ_min``
compares two means of variance ``σ0²/m`` each, with a Bonferroni split of α over the J − 1 rivals
of the leader:

    m*_rank = ⌈ 2 z²_{1−α/(J−1)} σ0² / Δ_min² ⌉.

Two secondary annotators who each label a share ρ of n items independently share ``ρ² n`` items in
expectation; each shares ``ρ n`` with a primary annotator who labels everything.

Allocation designs (each secondary annotator gets m = round(ρ n) items)
-----------------------------------------------------------------------
- ``random``: a uniform sample without replacement, independently per annotator.
- ``strat``: strata are the primary annotator's labels; each secondary draws
  ``⌊m n_s / n⌋`` items from stratum s and the remaining items one each to the largest strata.
- ``seq-refined``: as ``strat``, but the strata are the per-item majority of all labels collected so
  far (the primary's and those of earlier secondaries on the items they were given), recomputed
  before each next annotator; a tie goes to the primary's label, then to the lowest code.
- ``seq-coverage``: each next annotator takes the items covered least so far (random among equals).

All designs take their randomness from one ``numpy.random.Generator`` seeded by the caller, and
are vectorised over a leading replication axis so the simulator (``metrics.simulate``) runs many
replications at once; :func:`allocate` is the single-run form used by ``plan allocate``.

References: Calderon, Reichart & Dror (ACL 2025) for the leave-one-out test these overlaps serve;
Cochran, *Sampling Techniques* (3rd ed., 1977), ch. 5 for proportional stratified allocation.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgepanel.errors import BadInput

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

DESIGNS: tuple[str, ...] = ("random", "strat", "seq-refined", "seq-coverage")


# ---------------------------------------------------------------- planner


def z_quantile(p: float) -> float:
    """The standard normal quantile z_p: `scipy.stats.norm.ppf(p)`, which is `ndtri(p) * 1 + 0`;
    called directly, so planning does not import `scipy.stats` (slow to import)."""
    from scipy.special import ndtri

    return float(ndtri(p)) + 0.0  # + 0.0 as in norm.ppf: no negative zero


def _check_alpha(alpha: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise BadInput(f"alpha must be in (0, 1), got {alpha}")


def m_cert(sigma0: float, mu_d: float, epsilon: float, alpha: float = 0.05) -> int | None:
    """⌈z²_{1−α/2} σ0² / (μ_d + ε)²⌉; None when μ_d ≤ −ε: the judge's mean advantage does not
    exceed −ε, so no overlap certifies it (more items only show it more surely below the margin).
    :func:`m_cert_reason` says why in words."""
    _check_alpha(alpha)
    if sigma0 < 0:
        raise BadInput(f"sigma0 must not be negative, got {sigma0}")
    gap = mu_d + epsilon
    if gap <= 0.0:
        return None
    return max(1, math.ceil(z_quantile(1.0 - alpha / 2.0) ** 2 * sigma0**2 / gap**2))


def m_cert_reason(mu_d: float, epsilon: float) -> str | None:
    """Why :func:`m_cert` is None for this μ_d and ε (None when it is finite)."""
    gap = mu_d + epsilon
    if gap > 0.0:
        return None
    if gap == 0.0:
        return (
            f"mu_d = {mu_d:g} equals -epsilon = {-epsilon:g}: no finite overlap separates it from the margin"
        )
    return (
        f"mu_d = {mu_d:g} is below -epsilon = {-epsilon:g}: the judge trails the humans by more than "
        "the margin, so no overlap can certify it"
    )


def m_rank(sigma0: float, delta_min: float, n_judges: int, alpha: float = 0.05) -> int | None:
    """⌈2 z²_{1−α/(J−1)} σ0² / Δ_min²⌉ (Bonferroni over the J − 1 rivals); None when Δ_min = 0."""
    _check_alpha(alpha)
    if n_judges < 2:
        raise BadInput(f"ranking needs at least 2 judges, got {n_judges}")
    if sigma0 < 0:
        raise BadInput(f"sigma0 must not be negative, got {sigma0}")
    if delta_min == 0.0:
        return None
    z = z_quantile(1.0 - alpha / (n_judges - 1))
    return max(1, math.ceil(2.0 * z**2 * sigma0**2 / delta_min**2))


@dataclass(frozen=True)
class OverlapPlan:
    sigma0: float
    mu_d: dict[str, float]  # judge (or "judge") -> mean per-item advantage
    epsilon: float
    alpha: float
    m_cert: dict[str, int | None]  # None: no overlap certifies this judge (see `reason`)
    delta_min: float | None
    n_judges: int
    m_rank: int | None
    n_items: int | None
    coverage: float | None
    overlap_secondary_pair: float | None  # ρ² n
    overlap_with_primary: float | None  # ρ n
    coverage_needed: float | None  # smallest ρ whose ρ² n reaches the largest requirement
    source: str  # "given" or "estimated from DATASET"
    reason: dict[str, str | None] = field(default_factory=dict)  # judge -> why m_cert is None

    def as_dict(self) -> dict[str, Any]:
        return {
            "sigma0": self.sigma0,
            "mu_d": self.mu_d,
            "epsilon": self.epsilon,
            "alpha": self.alpha,
            "m_cert": self.m_cert,
            "reason": self.reason,
            "delta_min": self.delta_min,
            "n_judges": self.n_judges,
            "m_rank": self.m_rank,
            "n_items": self.n_items,
            "coverage": self.coverage,
            "expected_overlap": {
                "secondary_pair": self.overlap_secondary_pair,
                "with_primary": self.overlap_with_primary,
            },
            "coverage_needed_pairwise": self.coverage_needed,
            "source": self.source,
        }


def plan_overlap(
    *,
    sigma0: float,
    mu_d: dict[str, float],
    epsilon: float,
    delta_min: float | None = None,
    n_judges: int | None = None,
    alpha: float = 0.05,
    n_items: int | None = None,
    coverage: float | None = None,
    source: str = "given",
) -> OverlapPlan:
    """Certification overlap per judge, the ranking overlap, and the overlaps a coverage yields."""
    if coverage is not None and not 0.0 < coverage <= 1.0:
        raise BadInput(f"coverage must be in (0, 1], got {coverage}")
    if n_items is not None and n_items < 1:
        raise BadInput(f"n must be at least 1, got {n_items}")
    certs = {name: m_cert(sigma0, mu, epsilon, alpha) for name, mu in mu_d.items()}
    j = n_judges if n_judges is not None else len(mu_d)
    rank = m_rank(sigma0, delta_min, j, alpha) if delta_min is not None and j >= 2 else None
    pair = coverage**2 * n_items if coverage is not None and n_items is not None else None
    primary = coverage * n_items if coverage is not None and n_items is not None else None
    needed: float | None = None
    wanted = [m for m in [*certs.values(), rank] if m is not None]
    if n_items is not None and wanted:
        # ρ² n ≥ m  ⇔  ρ ≥ √(m / n); above 1 no coverage suffices
        r = math.sqrt(max(wanted) / n_items)
        needed = r if r <= 1.0 else None
    return OverlapPlan(
        sigma0=sigma0,
        mu_d=dict(mu_d),
        epsilon=epsilon,
        alpha=alpha,
        m_cert=certs,
        delta_min=delta_min,
        n_judges=j,
        m_rank=rank,
        n_items=n_items,
        coverage=coverage,
        overlap_secondary_pair=pair,
        overlap_with_primary=primary,
        coverage_needed=needed,
        source=source,
        reason={name: m_cert_reason(mu, epsilon) for name, mu in mu_d.items()},
    )


def pilot_inputs(differences: dict[str, FloatArray]) -> tuple[float, dict[str, float], float | None]:
    """σ0, μ_d per judge and Δ_min from per-item advantages ``d`` of each judge (a pilot):
    σ0 is the pooled within-judge standard deviation, Δ_min the smallest gap between two judges'
    mean advantage (None for a single judge)."""
    if not differences:
        raise BadInput("no judge to estimate from")
    means: dict[str, float] = {}
    ss, dof = 0.0, 0
    for name, d in differences.items():
        d = d[np.isfinite(d)]
        if d.size < 2:
            raise BadInput(f"judge {name}: fewer than 2 comparable items to estimate from")
        means[name] = float(d.mean())
        ss += float(((d - d.mean()) ** 2).sum())
        dof += d.size - 1
    sigma0 = math.sqrt(ss / dof)
    values = sorted(means.values())
    delta = min(b - a for a, b in itertools.pairwise(values)) if len(values) > 1 else None
    return sigma0, means, delta


# ---------------------------------------------------------------- allocation


def items_per_annotator(n: int, coverage: float) -> int:
    if not 0.0 < coverage <= 1.0:
        raise BadInput(f"coverage must be in (0, 1], got {coverage}")
    return max(1, min(n, math.floor(coverage * n + 0.5)))


def _pick_smallest(keys: FloatArray, m: int) -> BoolArray:
    """Mask of the m smallest keys along the last axis."""
    idx = np.argpartition(keys, m - 1, axis=-1)[..., :m]
    out = np.zeros(keys.shape, dtype=bool)
    np.put_along_axis(out, idx, True, axis=-1)
    return out


def stratum_sizes(strata: IntArray, n_strata: int) -> IntArray:
    """R × L: how many items of each row fall in each stratum."""
    r, n = strata.shape
    sizes = np.zeros((r, n_strata), dtype=np.int64)
    np.add.at(sizes, (np.repeat(np.arange(r), n), strata.ravel()), 1)
    return sizes


def pick_within_strata(strata: IntArray, quota: IntArray, keys: FloatArray) -> BoolArray:
    """Mask of ``quota[r, s]`` items from each stratum s of each row: the smallest ``keys`` win."""
    r, n = strata.shape
    sizes = stratum_sizes(strata, quota.shape[1])
    srt = np.argsort(strata + keys, axis=1, kind="stable")
    sorted_strata = np.take_along_axis(strata, srt, axis=1)
    start = np.cumsum(sizes, axis=1) - sizes
    within = np.arange(n)[None, :] - np.take_along_axis(start, sorted_strata, axis=1)
    picked = within < np.take_along_axis(quota, sorted_strata, axis=1)
    out = np.zeros((r, n), dtype=bool)
    np.put_along_axis(out, srt, picked, axis=1)
    return out


def stratified_pick(strata: IntArray, n_strata: int, m: int, keys: FloatArray) -> BoolArray:
    """Proportional stratified sample of m items per row of ``strata`` (R × n codes 0..L−1):
    ``⌊m n_s / n⌋`` from each stratum, then one more from each of the largest strata until m
    (ties between equal sizes go to the lower code); within a stratum the smallest ``keys`` win."""
    n = strata.shape[1]
    sizes = stratum_sizes(strata, n_strata)
    base = (m * sizes) // n
    remainder = m - base.sum(axis=1)
    order = np.argsort(-sizes, axis=1, kind="stable")
    rank_of = np.empty_like(order)
    np.put_along_axis(rank_of, order, np.broadcast_to(np.arange(n_strata), order.shape), axis=1)
    quota = base + (rank_of < remainder[:, None])
    return pick_within_strata(strata, quota, keys)


def majority(primary: IntArray, revealed: IntArray, shown: BoolArray, n_classes: int) -> IntArray:
    """Per-item majority of the primary's label and the revealed labels (R × n × T codes, −1 where
    unknown) on the shown items; ties go to the primary's label, then to the lowest code."""
    r, n = primary.shape
    counts = np.zeros((r, n, n_classes))
    np.put_along_axis(counts, primary[..., None], 1.5, axis=2)
    for t in range(revealed.shape[2]):
        lab = revealed[:, :, t]
        ok = shown[:, :, t] & (lab >= 0)
        rows, cols = np.nonzero(ok)
        np.add.at(counts, (rows, cols, lab[rows, cols]), 1.0)
    return np.asarray(np.argmax(counts, axis=2), dtype=np.int64)


def allocate_batch(
    primary: IntArray,
    n_secondaries: int,
    m: int,
    design: str,
    rng: np.random.Generator,
    *,
    n_classes: int,
    revealed: IntArray | None = None,
) -> BoolArray:
    """Assignments for R replications at once: ``primary`` is R × n label codes; the result is
    R × T × n (item given to secondary t). ``revealed`` (R × n × T codes, −1 unknown) are the labels
    secondaries will give, read only by ``seq-refined`` and only on items already assigned."""
    if design not in DESIGNS:
        raise BadInput(f"unknown design {design!r}; use one of {', '.join(DESIGNS)}")
    r, n = primary.shape
    if not 1 <= m <= n:
        raise BadInput(f"items per annotator must be in 1..{n}, got {m}")
    if n_secondaries < 1:
        raise BadInput("at least one secondary annotator is needed")
    keys = rng.random((r, n_secondaries, n))
    out = np.zeros((r, n_secondaries, n), dtype=bool)
    if design == "random":
        return _pick_smallest(keys, m)
    if design == "strat":
        for t in range(n_secondaries):
            out[:, t] = stratified_pick(primary, n_classes, m, keys[:, t])
        return out
    if design == "seq-refined":
        hidden = revealed if revealed is not None else np.full((r, n, n_secondaries), -1, dtype=np.int64)
        for t in range(n_secondaries):
            shown = np.moveaxis(out[:, :t], 1, 2)
            strata = majority(primary, hidden[:, :, :t], shown, n_classes)
            out[:, t] = stratified_pick(strata, n_classes, m, keys[:, t])
        return out
    covered = np.zeros((r, n))
    for t in range(n_secondaries):
        out[:, t] = _pick_smallest(covered + keys[:, t], m)
        covered += out[:, t]
    return out


@dataclass(frozen=True)
class Allocation:
    design: str
    coverage: float
    seed: int
    items_per_annotator: int
    assigned: BoolArray  # T × n
    order: IntArray  # T × n: a random presentation order within each annotator's list

    def overlaps(self) -> IntArray:
        a = self.assigned.astype(np.int64)
        return a @ a.T


def allocate(
    primary: IntArray,
    n_secondaries: int,
    coverage: float,
    design: str,
    seed: int,
    *,
    revealed: IntArray | None = None,
) -> Allocation:
    """One seeded allocation of n items (``primary`` label codes 0..L−1) to T secondaries."""
    primary = np.asarray(primary, dtype=np.int64)
    if primary.ndim != 1 or primary.size == 0:
        raise BadInput("the primary annotator has no labels to stratify on")
    n = primary.size
    m = items_per_annotator(n, coverage)
    rng = np.random.default_rng(seed)
    n_classes = int(primary.max()) + 1
    if revealed is not None:
        revealed = np.asarray(revealed, dtype=np.int64)
        n_classes = max(n_classes, int(revealed.max()) + 1)
        revealed = revealed[None]
    assigned = allocate_batch(
        primary[None], n_secondaries, m, design, rng, n_classes=n_classes, revealed=revealed
    )[0]
    order = np.argsort(rng.random(assigned.shape), axis=1).astype(np.int64)
    return Allocation(design, coverage, seed, m, assigned, order)
