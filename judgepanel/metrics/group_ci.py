"""Intervals that hold at small numbers of groups (articles, dialogues), and the rule that says
when a verdict may be stated at all.

Boundary: pure statistics over arrays (replicates, leave-one-group-out values, per-unit values and
their group codes); no resampling of its own (the draws come from
:mod:`~judgepanel.metrics.bootstrap`), no I/O. Every interval a comparison reports goes through
:func:`group_interval`, so ``ci_method`` is recorded beside it.

Why: a percentile interval over G resampled groups is too narrow when G is small. For a mean of
G equal, normal group means it is about ``ȳ ± z·sqrt((G−1)/G)·s/√G`` where the exact interval is
``ȳ ± t_{G−1}·s/√G``: coverage 0.81 at G = 4, 0.84 at G = 5, 0.91 at G = 10 (simulated in
:mod:`~judgepanel.metrics.coverage`; BCa with a group jackknife does not repair it). The rule:

- G ≥ 20 resampled units (``T_BELOW``): the percentile interval of the bootstrap replicates
  (``ci_method = "percentile"``), as before;
- 2 ≤ G < 20: ``θ̂ ± t_{G−1, (1+c)/2} · SE`` (Cameron, Gelbach & Miller 2008, §IV; Bell &
  McCaffrey 2002 for the t_{G−1} reference), with

  * for a mean (exact agreement, a difference of indicator means) the CR1 cluster-robust
    standard error of the intercept-only regression, ``SE² = G/(G−1) · Σ_g (Σ_{i∈g} e_i)² / N²``,
    ``e_i = y_i − ȳ`` — statsmodels' ``OLS(y, 1).fit(cov_type="cluster")`` (``ci_method =
    "t-cr1"``, cross-checked in the tests); a ratio of sums (a mean over comparisons of unequal
    group sizes) uses its linearisation ``(a_g − p̂·n_g)/N`` for the group's contribution;
  * for any other statistic (κ, QWK, Spearman ρ, Krippendorff α) the group jackknife,
    ``SE² = (G−1)/G · Σ_g (θ̂₍₋g₎ − θ̄₍·₎)²`` over the G leave-one-group-out values
    (``ci_method = "t-jackknife"``; for a mean of equal-size groups it equals CR1 exactly);
- G < 2: no interval (NaN, JSON null): one group carries no information on its own spread.

A t interval is clipped to the statistic's range (κ, QWK, ρ, α at most 1; exact agreement in
[0, 1]; a relative change at least −100 %): the symmetric interval of a bounded statistic can
otherwise reach past what the statistic can take, which says nothing.

Verdicts: below ``VERDICT_MIN`` (5) groups a comparison states its figures but no criterion verdict
(``TOO_FEW_GROUPS``); below ``WARN_BELOW`` (10) it warns, naming G (:func:`few_groups_warning`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgepanel.errors import BadInput
from judgepanel.metrics.bootstrap import group_codes
from judgepanel.metrics.names import TOO_FEW_GROUPS as TOO_FEW_GROUPS  # re-exported

FloatArray = NDArray[np.float64]

T_BELOW = 20  # fewer resampled units than this: the t_{G−1} interval
WARN_BELOW = 10  # fewer groups: a warning naming them
VERDICT_MIN = 5  # fewer groups: the statistics, but no verdict
PERCENTILE = "percentile"
T_JACKKNIFE = "t-jackknife"
T_CR1 = "t-cr1"
CI_METHODS = (PERCENTILE, T_JACKKNIFE, T_CR1)


@dataclass(frozen=True)
class GroupInterval:
    """``[lo, hi]`` at ``confidence`` by ``method``; ``se`` and ``df`` for the t intervals (None
    for the percentile interval). NaN ends where the interval is undefined."""

    lo: float
    hi: float
    method: str
    se: float | None = None
    df: float | None = None

    def as_list(self) -> list[float | None]:
        return [_finite(self.lo), _finite(self.hi)]


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def uses_t(n_units: int) -> bool:
    """Whether ``n_units`` resampled units (groups, or items when items are resampled) call for
    the t interval rather than the percentile interval."""
    return n_units < T_BELOW


def method_for(n_units: int, *, mean: bool = False) -> str:
    """The ``ci_method`` an interval over ``n_units`` resampled units gets."""
    if not uses_t(n_units):
        return PERCENTILE
    return T_CR1 if mean else T_JACKKNIFE


def verdict_allowed(n_groups: int) -> bool:
    return n_groups >= VERDICT_MIN


def few_groups_warning(n_groups: int, what: str = "groups") -> str | None:
    """The warning for fewer than ``WARN_BELOW`` groups, or None."""
    if n_groups >= WARN_BELOW:
        return None
    tail = f"; below {VERDICT_MIN} no verdict is stated ({TOO_FEW_GROUPS})" if n_groups < VERDICT_MIN else ""
    if n_groups < 2:
        return f"only {n_groups} of the {what}: no interval can be computed{tail}"
    return (
        f"only {n_groups} {what}: intervals over so few {what} are wide and rest on a t({n_groups - 1}) "
        f"reference{tail}"
    )


def jackknife_weights(codes: ArrayLike, n_groups: int) -> FloatArray:
    """(G, n_units) 0/1 weights: row g keeps every unit but those of group g — a statistic that
    takes replicate counts (``w @ contributions``, a weighted table) gives its G leave-one-group-out
    values from these rows."""
    c = np.asarray(codes, dtype=np.intp).ravel()
    out: FloatArray = (c[None, :] != np.arange(n_groups)[:, None]).astype(np.float64)
    return out


def jackknife_se(values: ArrayLike) -> float:
    """``sqrt((G−1)/G · Σ (θ₍₋g₎ − mean)²)`` over the defined leave-one-group-out values; NaN
    with fewer than two defined (or when any is undefined: a group the statistic cannot do
    without)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size < 2 or not np.isfinite(v).all():
        return float("nan")
    g = v.size
    return float(math.sqrt((g - 1) / g * float(((v - v.mean()) ** 2).sum())))


def cr1_ratio_se(num: ArrayLike, den: ArrayLike) -> float:
    """CR1 standard error of ``p̂ = Σ num_g / Σ den_g`` from per-group sums (``num_g`` the sum of
    the values, ``den_g`` the number of units of group g): ``sqrt(G/(G−1) · Σ (num_g − p̂ den_g)²) /
    Σ den``. With ``num_g`` the group sums of y and ``den_g`` the group sizes this is the clustered
    standard error of the intercept-only OLS (statsmodels, ``cov_type="cluster"``)."""
    a = np.asarray(num, dtype=np.float64).ravel()
    n = np.asarray(den, dtype=np.float64).ravel()
    keep = n > 0
    a, n = a[keep], n[keep]
    g, total = a.size, float(n.sum())
    if g < 2 or total <= 0:
        return float("nan")
    p = float(a.sum()) / total
    return float(math.sqrt(g / (g - 1) * float(((a - p * n) ** 2).sum())) / total)


def cr1_difference_se(num_a: ArrayLike, den_a: ArrayLike, num_b: ArrayLike, den_b: ArrayLike) -> float:
    """CR1 standard error of ``Σa/Σn_a − Σb/Σn_b`` over the same G groups (paired): each group's
    linearised contribution ``(a_g − p̂_a n_ag)/N_a − (b_g − p̂_b n_bg)/N_b``, scaled by G/(G−1)."""
    a, na = np.asarray(num_a, float).ravel(), np.asarray(den_a, float).ravel()
    b, nb = np.asarray(num_b, float).ravel(), np.asarray(den_b, float).ravel()
    keep = (na > 0) | (nb > 0)
    a, na, b, nb = a[keep], na[keep], b[keep], nb[keep]
    g = a.size
    ta, tb = float(na.sum()), float(nb.sum())
    if g < 2 or ta <= 0 or tb <= 0:
        return float("nan")
    infl = (a - a.sum() / ta * na) / ta - (b - b.sum() / tb * nb) / tb
    return float(math.sqrt(g / (g - 1) * float((infl**2).sum())))


def cluster_mean(y: ArrayLike, groups: Sequence[Hashable | None]) -> tuple[float, float, int]:
    """The mean of ``y``, its CR1 cluster-robust standard error and the number of groups."""
    v = np.asarray(y, dtype=np.float64).ravel()
    codes, g = group_codes(groups)
    if codes.size != v.size:
        raise BadInput(f"{codes.size} group keys for {v.size} values")
    if v.size == 0:
        return float("nan"), float("nan"), 0
    sums = np.bincount(codes, weights=v, minlength=g)
    sizes = np.bincount(codes, minlength=g).astype(np.float64)
    return float(v.mean()), cr1_ratio_se(sums, sizes), g


def t_quantile(df: float, confidence: float = 0.95) -> float:
    from scipy import stats  # on first use: SciPy is slow to import

    return float(stats.t.ppf((1.0 + confidence) / 2.0, df))


def t_interval(estimate: float, se: float, df: float, confidence: float = 0.95) -> tuple[float, float]:
    if not (math.isfinite(estimate) and math.isfinite(se)) or df < 1:
        return float("nan"), float("nan")
    q = t_quantile(df, confidence)
    return estimate - q * se, estimate + q * se


def percentile(replicates: ArrayLike, confidence: float = 0.95) -> tuple[float, float]:
    """The percentile interval of the defined replicates; NaN with fewer than half defined (as
    :func:`~judgepanel.metrics.bootstrap.interval`) or fewer than two."""
    r = np.asarray(replicates, dtype=np.float64).ravel()
    ok = r[np.isfinite(r)]
    if ok.size < 2 or ok.size < r.size / 2:
        return float("nan"), float("nan")
    tail = 100.0 * (1.0 - confidence) / 2.0
    lo, hi = np.percentile(ok, [tail, 100.0 - tail])
    return float(lo), float(hi)


def group_interval(
    estimate: float,
    n_units: int,
    *,
    replicates: ArrayLike | None = None,
    jackknife: ArrayLike | None = None,
    se: float | None = None,
    confidence: float = 0.95,
    df: float | None = None,
    se_method: str = T_CR1,
    bounds: tuple[float, float] = (-math.inf, math.inf),
) -> GroupInterval:
    """The interval by the rule in the module docstring. ``n_units``: the resampled units (groups,
    or items when items are resampled). Below ``T_BELOW`` the t interval with ``se`` when given
    (CR1 for a mean) or the jackknife SE of ``jackknife`` (G leave-one-group-out values); at or
    above it the percentile interval of ``replicates``. ``df`` overrides G − 1 (a difference of
    independent splits, Welch–Satterthwaite); ``se_method`` names where a given ``se`` came from.
    ``bounds``: the statistic's range (κ, ρ: [−1, 1]); a t interval is clipped to it (the
    percentile interval lies inside it by construction)."""
    nan = float("nan")
    if not math.isfinite(estimate):
        return GroupInterval(
            nan, nan, PERCENTILE if not uses_t(n_units) else (se_method if se is not None else T_JACKKNIFE)
        )
    if not uses_t(n_units):
        if replicates is None:
            raise BadInput("the percentile interval needs bootstrap replicates")
        lo, hi = percentile(replicates, confidence)
        return GroupInterval(lo, hi, PERCENTILE)
    if se is None:
        if jackknife is None:
            raise BadInput("the t interval needs a standard error or leave-one-group-out values")
        s, method = jackknife_se(jackknife), T_JACKKNIFE
    else:
        s, method = se, se_method
    d = float(n_units - 1) if df is None else df
    lo, hi = t_interval(estimate, s, d, confidence) if n_units >= 2 else (nan, nan)
    if math.isfinite(lo) and math.isfinite(hi):
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    return GroupInterval(lo, hi, method, s if math.isfinite(s) else None, d)


def welch_df(se_a: float, df_a: float, se_b: float, df_b: float) -> float:
    """Welch–Satterthwaite degrees of freedom of a difference of two independent estimates."""
    va, vb = se_a**2, se_b**2
    den = (va**2 / df_a if df_a > 0 else math.inf) + (vb**2 / df_b if df_b > 0 else math.inf)
    if not math.isfinite(den) or den <= 0:
        return float(min(df_a, df_b))
    return float((va + vb) ** 2 / den)
