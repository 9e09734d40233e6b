"""Equivalence by two one-sided tests (TOST; Schuirmann 1987).

A difference δ is shown *equivalent* to zero within a pre-declared margin ``(low, high)`` (usually
``(−m, m)``) when both one-sided nulls are rejected at level α:

    H0₁: δ ≤ low   rejected when  p₁ = P(T ≥ (δ̂ − low)/se)  < α
    H0₂: δ ≥ high  rejected when  p₂ = P(T ≤ (δ̂ − high)/se) < α

``p = max(p₁, p₂)``; ``T`` is Student's t with ``df`` degrees of freedom, or standard normal when
``df`` is None (a bootstrap standard error). Equivalently (the interval-inclusion principle) the
``1 − 2α`` interval ``δ̂ ± t_{1−α}·se`` — a 90 % interval for α = 0.05 — lies inside the margin.
With ``df = n − 1`` and ``se = sd(d)/√n`` of paired differences ``d`` this is statsmodels'
``ttost_paired`` (cross-checked in the tests). Without equivalence, the absence of a detectable
change is no evidence of no change (seed 002's own caveat); this states the difference.

What the design could show (issue 30 §2): when the true difference is 0, the TOST rejects both
nulls with probability ``power(m) = max(0, 2·F_T(m/se − t_{1−α}) − 1)`` (T as above), so it can
only show a margin much wider than ``t_{1−α}·se``. ``detectable_margin = 2·t_{1−α}·se`` is the
margin the design shows with power ``1 − 2α`` (0.90 at α = 0.05) at a true difference of 0:
reported beside the declared margin, so "inconclusive" can say that the design could not have
shown ±m (power 0.006 at the repair docs' ``--limit 40`` design) rather than leave it bare.

A difference bootstrapped over few groups (:func:`group_tost`) takes ``T = t_{G−1}`` with the
small-group standard error of :mod:`~judgepanel.metrics.group_ci` (the group jackknife below 20
groups, the replicates' standard deviation from 20 on): a normal reference on a group-bootstrap
SE had size 0.116 at 5 groups and 0.092 at 10 at the margin (nominal 0.05).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from judgepanel.errors import BadInput
from judgepanel.metrics.agreement import FloatArray


@dataclass(frozen=True)
class Equivalence:
    """TOST of ``estimate`` against ``(low, high)``: ``p`` the larger one-sided p-value, ``ci`` the
    ``1 − 2·alpha`` interval; ``equivalent`` when ``p < alpha``. NaN p and interval when the
    standard error is undefined."""

    estimate: float
    se: float
    low: float
    high: float
    alpha: float
    df: float | None
    p_lower: float
    p_upper: float
    p: float
    ci: tuple[float, float]

    @property
    def equivalent(self) -> bool:
        return bool(math.isfinite(self.p) and self.p < self.alpha)

    def _quantile(self) -> float:
        from scipy import stats  # on first use: SciPy is slow to import

        dist = stats.norm if self.df is None else stats.t(self.df)
        return float(dist.ppf(1.0 - self.alpha))

    @property
    def detectable_margin(self) -> float:
        """``2·t_{1−α}·se``: the smallest symmetric margin this design shows with power 1 − 2α at
        a true difference of 0 (NaN without a standard error)."""
        if not math.isfinite(self.se) or (self.df is not None and self.df < 1):
            return float("nan")
        return 2.0 * self._quantile() * self.se

    @property
    def power(self) -> float:
        """The probability that the TOST shows equivalence within the declared (symmetric) margin
        when the true difference is 0: ``max(0, 2·F(m/se − t_{1−α}) − 1)``."""
        from scipy import stats

        m = min(-self.low, self.high)
        if not math.isfinite(self.se) or (self.df is not None and self.df < 1):
            return float("nan")
        if self.se == 0.0:
            return 1.0
        dist = stats.norm if self.df is None else stats.t(self.df)
        return max(0.0, 2.0 * float(dist.cdf(m / self.se - self._quantile())) - 1.0)

    def as_dict(self) -> dict[str, object]:
        def r(x: float) -> float | None:
            return round(x, 6) if math.isfinite(x) else None

        return {
            "margin": [r(self.low), r(self.high)] if self.low != -self.high else r(self.high),
            f"ci{round(100 * (1 - 2 * self.alpha))}": [r(self.ci[0]), r(self.ci[1])],
            "p": r(self.p),
            "equivalent": self.equivalent,
            "se": r(self.se),
            "df": None if self.df is None else r(self.df),
            "detectable_margin": r(self.detectable_margin),
            "power": r(self.power),
        }


def tost(
    estimate: float, se: float, low: float, high: float, *, df: float | None = None, alpha: float = 0.05
) -> Equivalence:
    """Two one-sided tests of ``estimate`` (standard error ``se``) against the margin ``(low, high)``."""
    from scipy import stats  # on first use: SciPy is slow to import

    if not low < high:
        raise BadInput(f"an equivalence margin needs low < high, got ({low}, {high})")
    if not 0.0 < alpha < 0.5:
        raise BadInput(f"the TOST level must lie in (0, 0.5), got {alpha}")
    nan = float("nan")
    if not (math.isfinite(estimate) and math.isfinite(se)) or se < 0:
        return Equivalence(estimate, se, low, high, alpha, df, nan, nan, nan, (nan, nan))
    if se == 0.0:
        p1 = 0.0 if estimate > low else 1.0
        p2 = 0.0 if estimate < high else 1.0
        return Equivalence(estimate, se, low, high, alpha, df, p1, p2, max(p1, p2), (estimate, estimate))
    # the distribution's functions with df as an argument: a frozen t is slow to build
    args: tuple[float, ...] = () if df is None else (df,)
    dist = stats.norm if df is None else stats.t
    p1 = float(dist.sf((estimate - low) / se, *args))
    p2 = float(dist.cdf((estimate - high) / se, *args))
    q = float(dist.ppf(1.0 - alpha, *args))
    return Equivalence(
        estimate, se, low, high, alpha, df, p1, p2, max(p1, p2), (estimate - q * se, estimate + q * se)
    )


def bootstrap_tost(
    estimate: float, replicates: FloatArray, margin: float, *, alpha: float = 0.05
) -> Equivalence:
    """TOST of a bootstrapped difference within ``±margin``: the standard error is the standard
    deviation of the defined replicates (paired, so it carries the pairing), the reference
    distribution normal."""
    if not margin > 0:
        raise BadInput(f"an equivalence margin must be positive, got {margin}")
    ok = replicates[np.isfinite(replicates)]
    se = float(np.std(ok, ddof=1)) if ok.size >= 2 else float("nan")
    return tost(estimate, se, -margin, margin, alpha=alpha)


def group_tost(
    estimate: float,
    margin: float,
    n_units: int,
    *,
    replicates: FloatArray | None = None,
    jackknife: FloatArray | None = None,
    se: float | None = None,
    alpha: float = 0.05,
) -> Equivalence:
    """TOST of a difference resampled over ``n_units`` groups (or items) within ``±margin``, with
    ``t_{G−1}`` as the reference: the standard error is ``se`` when given (CR1 for a mean), else
    below 20 units the group jackknife's, from 20 on the standard deviation of the defined
    bootstrap ``replicates``."""
    from judgepanel.metrics.group_ci import jackknife_se, uses_t

    if not margin > 0:
        raise BadInput(f"an equivalence margin must be positive, got {margin}")
    if se is None:
        if uses_t(n_units) and jackknife is not None:
            se = jackknife_se(jackknife)
        else:
            ok = replicates[np.isfinite(replicates)] if replicates is not None else np.zeros(0)
            se = float(np.std(ok, ddof=1)) if ok.size >= 2 else float("nan")
    df = float(n_units - 1)
    if df < 1:
        nan = float("nan")
        return Equivalence(estimate, nan, -margin, margin, alpha, df, nan, nan, nan, (nan, nan))
    return tost(estimate, se, -margin, margin, df=df, alpha=alpha)
