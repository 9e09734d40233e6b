"""Bootstrap confidence intervals that resample units (items or pairs), never single ratings.

Every coefficient in ``metrics.agreement`` except the rank correlations is ``finish(Σ_u c_u)`` over
per-unit contributions ``c_u`` (:class:`~judgepanel.metrics.agreement.UnitStatistic`). A bootstrap
sample draws n units with replacement, i.e. multinomial counts ``w_b`` (how often each unit was
drawn), so replicate ``b`` is ``finish(w_b @ C)``: one matrix product for all replicates, no loop
over resamples and no recomputation of per-unit work (for α: the coincidences). The jackknife that
BCa needs is ``finish(Σ C − c_i)`` for every unit ``i``, also one vectorised call. Spearman and
Kendall do not decompose; they are resampled in a plain loop (:func:`function_replicates`).

Intervals (Efron & Tibshirani 1993, *An Introduction to the Bootstrap*, ch. 13–14):

- percentile: the ``(1 − c)/2`` and ``(1 + c)/2`` quantiles of the replicates;
- BCa: quantiles at ``Φ(z₀ + (z₀ + z_α)/(1 − a (z₀ + z_α)))``, bias ``z₀ = Φ⁻¹(share of replicates
  below the estimate, ties counted half)``, acceleration ``a = Σ d_i³ / (6 (Σ d_i²)^{3/2})`` with
  ``d_i = mean(θ₍·₎) − θ₍ᵢ₎`` from the leave-one-unit-out jackknife (Efron 1987).

Undefined replicates (a resample where the coefficient is NaN, e.g. every drawn rating in one
category) are dropped; if fewer than half the replicates are defined, or the estimate itself is
NaN, the interval is (NaN, NaN). BCa is also (NaN, NaN) when every replicate lies on one side of
the estimate (z₀ infinite); a jackknife with no spread gives ``a = 0``.

All randomness comes from ``np.random.default_rng(seed)``; the same seed, data and ``n_boot`` give
the same interval.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgepanel.errors import BadInput
from judgepanel.metrics.agreement import (
    AgreementResult,
    FloatArray,
    UnitStatistic,
    agreement,
    as_ratings,
    unit_statistic,
)
from judgepanel.metrics.names import METHODS, RESAMPLE_MODES

Method = Literal["percentile", "bca"]
RANK_METRICS: tuple[str, ...] = ("spearman", "kendall")
# metrics that read an order into the values, refused on label codes (A/B/T, text labels)
ORDERED_METRICS: tuple[str, ...] = ("cohen-linear", "cohen-quadratic", "spearman", "kendall")
# resample counts are drawn in blocks of at most this many cells, so memory stays flat
_BLOCK_CELLS = 4_000_000


@dataclass(frozen=True)
class ConfidenceInterval:
    """``[lo, hi]`` at confidence ``level`` (e.g. 0.95) by ``method`` from ``n_boot`` replicates."""

    lo: float
    hi: float
    level: float
    method: str
    n_boot: int

    def as_list(self) -> list[float]:
        return [self.lo, self.hi]

    def contains(self, value: float) -> bool:
        return bool(self.lo <= value <= self.hi)


def _check(n_boot: int, confidence: float, method: str) -> None:
    if n_boot < 1:
        raise BadInput(f"the number of bootstrap replicates must be at least 1, got {n_boot}")
    if not 0.0 < confidence < 1.0:
        raise BadInput(f"the confidence level must lie strictly between 0 and 1, got {confidence}")
    if method not in METHODS:
        raise BadInput(f"unknown interval method {method!r}; use one of {', '.join(METHODS)}")


def _index_blocks(n_units: int, n_boot: int, rng: np.random.Generator) -> Iterator[NDArray[np.int64]]:
    block = max(1, min(n_boot, _BLOCK_CELLS // max(1, n_units)))
    done = 0
    while done < n_boot:
        b = min(block, n_boot - done)
        yield rng.integers(0, n_units, size=(b, n_units))
        done += b


def counts_of(draws: NDArray[np.int64], n_units: int) -> FloatArray:
    """Multinomial counts (replicates × units) of index draws (replicates × draws)."""
    b = draws.shape[0]
    flat = draws + (np.arange(b) * n_units)[:, None]
    return np.bincount(flat.ravel(), minlength=b * n_units).reshape(b, n_units).astype(np.float64)


def resample_counts(n_units: int, n_boot: int, rng: np.random.Generator) -> Iterator[FloatArray]:
    """Blocks of multinomial counts (replicates × units): row ``b`` says how often each unit was
    drawn in replicate ``b`` (each row sums to ``n_units``)."""
    if n_units == 0:
        for _ in range(n_boot):
            yield np.zeros((1, 0))
        return
    for draws in _index_blocks(n_units, n_boot, rng):
        yield counts_of(draws, n_units)


def resample_indices(n_units: int, n_boot: int, seed: int) -> NDArray[np.int64]:
    """(n_boot, n_units) unit indices drawn with replacement: the very draws that
    :func:`count_matrix` counts for this seed (for direct-loop cross-checks and for callers that
    index their own arrays)."""
    if n_units == 0:
        return np.zeros((n_boot, 0), dtype=np.int64)
    return np.vstack(list(_index_blocks(n_units, n_boot, np.random.default_rng(seed))))


def _unit_counts(
    n_units: int, n_boot: int, rng: np.random.Generator, groups: Sequence[Hashable | None] | None
) -> Iterator[FloatArray]:
    """Blocks of replicate counts over units: units drawn (``groups`` None) or whole groups drawn,
    each unit counted as often as its group (the cluster bootstrap)."""
    if groups is None:
        yield from resample_counts(n_units, n_boot, rng)
        return
    if len(groups) != n_units:
        raise BadInput(f"{len(groups)} group keys for {n_units} units")
    codes, n_groups = group_codes(groups)
    for counts in resample_counts(n_groups, n_boot, rng):
        yield counts[:, codes] if n_units else np.zeros((counts.shape[0], 0))


def bootstrap_replicates(
    stats: UnitStatistic | tuple[UnitStatistic, ...],
    n_boot: int,
    seed: int,
    groups: Sequence[Hashable | None] | None = None,
) -> FloatArray:
    """Replicate values ``finish(w_b @ C)``; several statistics over the same units share each
    resample (a tuple gives a replicates × statistics array, for paired differences). With
    ``groups`` (one key per unit) a replicate draws whole groups instead of units."""
    group = stats if isinstance(stats, tuple) else (stats,)
    n_units = group[0].contributions.shape[0]
    if any(s.contributions.shape[0] != n_units for s in group):
        raise BadInput("paired statistics must cover the same units")
    rng = np.random.default_rng(seed)
    out = []
    for counts in _unit_counts(n_units, n_boot, rng, groups):
        out.append(np.column_stack([s.finish(counts @ s.contributions) for s in group]))
    reps = np.vstack(out) if out else np.zeros((0, len(group)))
    return reps if isinstance(stats, tuple) else reps[:, 0]


def jackknife(stat: UnitStatistic) -> FloatArray:
    """Leave-one-unit-out values ``finish(Σ C − c_i)`` for every unit ``i``."""
    c = stat.contributions
    total = c.sum(axis=0, keepdims=True)
    block = max(1, _BLOCK_CELLS // max(1, c.shape[1]))
    parts = [stat.finish(total - c[i : i + block]) for i in range(0, c.shape[0], block)]
    return np.concatenate(parts) if parts else np.zeros(0)


def function_replicates(
    fn: Callable[[FloatArray], float],
    ratings: ArrayLike,
    n_boot: int,
    seed: int,
    groups: Sequence[Hashable | None] | None = None,
) -> FloatArray:
    """Replicates of any statistic of the rating matrix by an explicit loop over resampled rows
    (for statistics that do not decompose over units, such as rank correlations); with ``groups``
    each replicate stacks the rows of whole groups drawn with replacement."""
    arr = as_ratings(ratings)
    rng = np.random.default_rng(seed)
    out = np.empty(n_boot)
    if groups is None:
        for b in range(n_boot):
            out[b] = fn(arr[rng.integers(0, arr.shape[0], size=arr.shape[0])])
        return out
    if len(groups) != arr.shape[0]:
        raise BadInput(f"{len(groups)} group keys for {arr.shape[0]} units")
    codes, n_groups = group_codes(groups)
    members = [np.flatnonzero(codes == g) for g in range(n_groups)]
    for b in range(n_boot):
        drawn = rng.integers(0, n_groups, size=n_groups)
        out[b] = fn(arr[np.concatenate([members[g] for g in drawn])])
    return out


def function_jackknife(fn: Callable[[FloatArray], float], ratings: ArrayLike) -> FloatArray:
    arr = as_ratings(ratings)
    keep = np.ones(arr.shape[0], dtype=bool)
    out = np.empty(arr.shape[0])
    for i in range(arr.shape[0]):
        keep[i] = False
        out[i] = fn(arr[keep])
        keep[i] = True
    return out


def interval(
    replicates: FloatArray,
    estimate: float,
    *,
    confidence: float = 0.95,
    method: str = "percentile",
    jackknife_values: FloatArray | None = None,
) -> ConfidenceInterval:
    """The percentile or BCa interval from replicate values (see the module docstring)."""
    from scipy.special import ndtr, ndtri  # on first use: SciPy is slow to import

    _check(max(1, replicates.size), confidence, method)
    n_boot = int(replicates.size)
    nan = ConfidenceInterval(float("nan"), float("nan"), confidence, method, n_boot)
    reps = replicates[np.isfinite(replicates)]
    if not np.isfinite(estimate) or reps.size == 0 or reps.size < n_boot / 2:
        return nan
    tail = (1.0 - confidence) / 2.0
    if method == "percentile":
        lo, hi = np.quantile(reps, [tail, 1.0 - tail])
        return ConfidenceInterval(float(lo), float(hi), confidence, method, n_boot)
    if jackknife_values is None:
        raise BadInput("the BCa interval needs jackknife values")
    below = (np.sum(reps < estimate) + 0.5 * np.sum(reps == estimate)) / reps.size
    if below <= 0.0 or below >= 1.0:
        return nan
    z0 = float(ndtri(below))
    jack = jackknife_values[np.isfinite(jackknife_values)]
    d = jack.mean() - jack if jack.size else np.zeros(1)
    den = 6.0 * float((d**2).sum()) ** 1.5
    a = float((d**3).sum()) / den if den > 0 else 0.0
    z = ndtri(np.array([tail, 1.0 - tail]))
    adjusted = ndtr(z0 + (z0 + z) / (1.0 - a * (z0 + z)))
    lo, hi = np.quantile(reps, np.clip(adjusted, 0.0, 1.0))
    return ConfidenceInterval(float(lo), float(hi), confidence, method, n_boot)


@dataclass(frozen=True)
class _Resampling:
    """How an interval is resampled, as every public function below takes it (its keywords)."""

    n_boot: int
    confidence: float
    method: str
    seed: int
    groups: Sequence[Hashable | None] | None

    def interval(
        self, reps: FloatArray, estimate: float, jack: Callable[[], FloatArray]
    ) -> ConfidenceInterval:
        """The interval from `reps`; `jack()` (the jackknife values) is computed for BCa only."""
        jk = jack() if self.method == "bca" else None
        return interval(reps, estimate, confidence=self.confidence, method=self.method, jackknife_values=jk)


def _checked(
    n_boot: int, confidence: float, method: str, seed: int, groups: Sequence[Hashable | None] | None
) -> _Resampling:
    _check(n_boot, confidence, method)
    return _Resampling(n_boot, confidence, method, seed, groups)


def _statistic_ci(stat: UnitStatistic, r: _Resampling) -> ConfidenceInterval:
    _no_bca_with_groups(r.method, r.groups)
    reps = bootstrap_replicates(stat, r.n_boot, r.seed, r.groups)
    return r.interval(reps, stat.value(), lambda: jackknife(stat))


def _function_ci(fn: Callable[[FloatArray], float], ratings: ArrayLike, r: _Resampling) -> ConfidenceInterval:
    _no_bca_with_groups(r.method, r.groups)
    arr = as_ratings(ratings)
    estimate = fn(arr)
    reps = function_replicates(fn, arr, r.n_boot, r.seed, r.groups)
    return r.interval(reps, estimate, lambda: function_jackknife(fn, arr))


# A deliberate mirror (issue 31 §4): the public functions below take the same resampling keywords
# (n_boot, confidence, method, seed, groups), one interface for every interval; each hands them on
# as one `_Resampling`.
def statistic_ci(
    stat: UnitStatistic,
    *,
    n_boot: int = 1000,
    confidence: float = 0.95,
    method: str = "percentile",
    seed: int = 0,
    groups: Sequence[Hashable | None] | None = None,
) -> ConfidenceInterval:
    """The CI of any unit-decomposed statistic (vectorised); ``groups``: resample whole groups."""
    return _statistic_ci(stat, _checked(n_boot, confidence, method, seed, groups))


def function_ci(
    fn: Callable[[FloatArray], float],
    ratings: ArrayLike,
    *,
    n_boot: int = 1000,
    confidence: float = 0.95,
    method: str = "percentile",
    seed: int = 0,
    groups: Sequence[Hashable | None] | None = None,
) -> ConfidenceInterval:
    """The CI of any statistic of the rating matrix, resampled in a loop (:func:`function_replicates`)."""
    return _function_ci(fn, ratings, _checked(n_boot, confidence, method, seed, groups))


def _no_bca_with_groups(method: str, groups: Sequence[Hashable | None] | None) -> None:
    # BCa's acceleration comes from a leave-one-unit-out jackknife; with clusters it would have to
    # leave groups out, which is not implemented: refuse rather than mix the two
    if groups is not None and method == "bca":
        raise BadInput("the BCa interval resamples units; with groups use the percentile interval")


def _rank_fn(metric: str, categories: ArrayLike | None, level: str | None) -> Callable[[FloatArray], float]:
    def fn(r: FloatArray) -> float:
        return agreement(metric, r, categories, level).value

    return fn


def bootstrap_ci(
    metric: str,
    ratings: ArrayLike,
    categories: ArrayLike | None = None,
    *,
    level: str | None = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    method: str = "percentile",
    seed: int = 0,
    groups: Sequence[Hashable | None] | None = None,
) -> ConfidenceInterval:
    """Unit-resampling CI of ``agreement(metric, ratings, categories, level)``. ``level`` is the
    level of measurement as in :func:`~judgepanel.metrics.agreement.agreement`; ``confidence`` the
    coverage. Vectorised for every metric but ``spearman``/``kendall`` (looped). ``groups`` (one key
    per unit): resample whole groups (articles, dialogues) instead of units."""
    r = _checked(n_boot, confidence, method, seed, groups)
    if metric in RANK_METRICS:
        return _function_ci(_rank_fn(metric, categories, level), ratings, r)
    return _statistic_ci(unit_statistic(metric, ratings, categories, level), r)


@dataclass(frozen=True)
class PairedDifference:
    """``estimate = metric(a) − metric(b)`` on the same units, with its paired-bootstrap CI."""

    estimate: float
    ci: ConfidenceInterval


def paired_bootstrap(
    metric: str,
    ratings_a: ArrayLike,
    ratings_b: ArrayLike,
    categories: ArrayLike | None = None,
    *,
    level: str | None = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    method: str = "percentile",
    seed: int = 0,
    groups: Sequence[Hashable | None] | None = None,
) -> PairedDifference:
    """The difference ``metric(a) − metric(b)`` between two conditions rated on the same units
    (row ``u`` of both matrices is the same unit; the raters may differ), with a CI from resampling
    units jointly: each replicate draws one set of units and evaluates both conditions on it, so
    whatever the conditions share through the units cancels out of the difference. ``groups`` (one
    key per unit): each replicate draws whole groups (articles) instead of units."""
    return _paired(
        metric, ratings_a, ratings_b, categories, level, _checked(n_boot, confidence, method, seed, groups)
    )


def _paired(
    metric: str,
    ratings_a: ArrayLike,
    ratings_b: ArrayLike,
    categories: ArrayLike | None,
    level: str | None,
    r: _Resampling,
) -> PairedDifference:
    _no_bca_with_groups(r.method, r.groups)
    a, b = as_ratings(ratings_a), as_ratings(ratings_b)
    if a.shape[0] != b.shape[0]:
        raise BadInput(f"paired conditions must rate the same units: {a.shape[0]} and {b.shape[0]} rows")
    if metric in RANK_METRICS:
        fa, fb = _rank_fn(metric, categories, level), _rank_fn(metric, categories, level)
        width = a.shape[1]
        joint = np.hstack([a, b])

        def diff(m: FloatArray) -> float:
            return fa(m[:, :width]) - fb(m[:, width:])

        return PairedDifference(diff(joint), _function_ci(diff, joint, r))
    sa = unit_statistic(metric, a, categories, level)
    sb = unit_statistic(metric, b, categories, level)
    estimate = sa.value() - sb.value()
    both = bootstrap_replicates((sa, sb), r.n_boot, r.seed, r.groups)
    reps = both[:, 0] - both[:, 1]
    return PairedDifference(estimate, r.interval(reps, estimate, lambda: jackknife(sa) - jackknife(sb)))


def paired_bootstrap_ci(
    metric: str,
    ratings_a: ArrayLike,
    ratings_b: ArrayLike,
    categories: ArrayLike | None = None,
    *,
    level: str | None = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    method: str = "percentile",
    seed: int = 0,
) -> ConfidenceInterval:
    """The CI of ``metric(a) − metric(b)`` from :func:`paired_bootstrap`."""
    r = _checked(n_boot, confidence, method, seed, None)
    return _paired(metric, ratings_a, ratings_b, categories, level, r).ci


def count_matrix(n_units: int, n_boot: int, seed: int) -> NDArray[np.float64]:
    """All resample counts at once (replicates × units), the same draws :func:`bootstrap_replicates`
    makes for this seed; for tests and for callers that resample their own statistics alongside."""
    if n_units == 0:
        return np.zeros((n_boot, 0))
    blocks = list(resample_counts(n_units, n_boot, np.random.default_rng(seed)))
    return np.vstack(blocks) if blocks else np.zeros((0, n_units))


# ---------------------------------------------------------------- clustered resampling


def group_codes(groups: Sequence[Hashable | None]) -> tuple[NDArray[np.intp], int]:
    """Codes 0 … G−1 of each unit's group, in order of first appearance, and G. A unit whose group
    is None is a group of its own (an item without an article resamples alone)."""
    seen: dict[Hashable, int] = {}
    codes = np.empty(len(groups), dtype=np.intp)
    for u, g in enumerate(groups):
        key: Hashable = ("\0own", u) if g is None else g
        codes[u] = seen.setdefault(key, len(seen))
    return codes, len(seen)


def resample_mode(mode: str | None, groups: Sequence[Hashable | None]) -> str:
    """`groups` or `items`: the mode asked for, or by default `groups` when the units carry group
    keys (a dataset with articles, dialogues), else `items`. With one unit per group the two draw
    exactly the same replicates. `groups` where no unit has a group is refused: it would silently
    be the item bootstrap."""
    if mode is not None and mode not in RESAMPLE_MODES:
        raise BadInput(f"--resample must be one of {', '.join(RESAMPLE_MODES)}, got {mode!r}")
    grouped = any(g is not None for g in groups)
    if mode is None:
        return "groups" if grouped else "items"
    if mode == "groups" and groups and not grouped:
        raise BadInput(
            "--resample groups: these items carry no group (article, dialogue); use --resample items"
        )
    return mode


def cluster_count_matrix(codes: ArrayLike, n_groups: int, n_boot: int, seed: int) -> FloatArray:
    """(n_boot, n_units) counts of the cluster bootstrap: each replicate draws ``n_groups`` groups
    with replacement (:func:`count_matrix` over groups, the same draws for the same seed) and a
    unit enters as often as its group was drawn, so a group's units always move together and the
    replicate's size varies with the sizes of the groups drawn (Davison & Hinkley 1997, §3.8,
    resampling clusters at the top stage). With one unit per group this is :func:`count_matrix`."""
    idx = np.asarray(codes, dtype=np.intp).ravel()
    return count_matrix(n_groups, n_boot, seed)[:, idx]


def resample_weights(
    groups: Sequence[Hashable | None] | None, n_units: int, n_boot: int, seed: int, mode: str = "items"
) -> FloatArray:
    """Replicate counts over units for `mode` `items` (:func:`count_matrix`) or `groups`
    (:func:`cluster_count_matrix` on the units' groups)."""
    if mode == "items" or groups is None:
        return count_matrix(n_units, n_boot, seed)
    if len(groups) != n_units:
        raise BadInput(f"{len(groups)} group keys for {n_units} units")
    codes, n_groups = group_codes(groups)
    return cluster_count_matrix(codes, n_groups, n_boot, seed)


def percentile_bounds(replicates: FloatArray, confidence: float = 0.95) -> tuple[float, float] | None:
    """The percentile interval of the defined replicates (NaN dropped), or None when fewer than two
    are defined. Unlike :func:`interval` it asks no point estimate and no majority of defined
    replicates: the repair comparison reports an interval for differences whose ends are NaN in
    a few resamples."""
    ok = replicates[~np.isnan(replicates)]
    if ok.size < 2:
        return None
    tail = 100.0 * (1.0 - confidence) / 2.0
    lo, hi = np.percentile(ok, [tail, 100.0 - tail])
    return float(lo), float(hi)


@dataclass(frozen=True)
class AgreementEstimate:
    """A coefficient and, when a bootstrap was asked for, its CI."""

    result: AgreementResult
    ci: ConfidenceInterval | None

    def as_dict(self) -> dict[str, object]:
        return {
            **self.result.as_dict(),
            "ci": None if self.ci is None else self.ci.as_list(),
            "ci_method": None if self.ci is None else self.ci.method,
            "confidence": None if self.ci is None else self.ci.level,
            "n_boot": None if self.ci is None else self.ci.n_boot,
        }


def agreement_with_ci(
    metric: str,
    ratings: ArrayLike,
    categories: ArrayLike | None = None,
    level: str | None = None,
    *,
    ordered: bool = True,
    n_boot: int = 0,
    confidence: float = 0.95,
    method: str = "percentile",
    seed: int = 0,
) -> AgreementEstimate:
    """``agreement(...)`` plus a unit-bootstrap CI when ``n_boot`` > 0. ``ordered=False`` says the
    values are codes of unordered labels: weighted κ, rank correlations and any level but nominal
    are then refused rather than computed on an order that the codes do not have."""
    if not ordered and (metric in ORDERED_METRICS or level not in (None, "nominal")):
        what = f"--level {level}" if level not in (None, "nominal") else metric
        raise BadInput(f"{what} needs ordered scores; these labels are nominal (use a nominal metric)")
    if n_boot < 0:
        raise BadInput(f"--bootstrap must not be negative, got {n_boot}")
    result = agreement(metric, ratings, categories, level)
    ci = None
    if n_boot > 0:
        ci = bootstrap_ci(
            metric,
            ratings,
            categories,
            level=level,
            n_boot=n_boot,
            confidence=confidence,
            method=method,
            seed=seed,
        )
    return AgreementEstimate(result, ci)
