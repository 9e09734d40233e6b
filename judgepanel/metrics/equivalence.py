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

    def as_dict(self) -> dict[str, object]:
        def r(x: float) -> float | None:
            return round(x, 6) if math.isfinite(x) else None

        return {
            "margin": [r(self.low), r(self.high)] if self.low != -self.high else r(self.high),
            f"ci{round(100 * (1 - 2 * self.alpha))}": [r(self.ci[0]), r(self.ci[1])],
            "p": r(self.p),
            "equivalent": self.equivalent,
            "se": r(self.se),
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
    dist = stats.norm if df is None else stats.t(df)
    if se == 0.0:
        p1 = 0.0 if estimate > low else 1.0
        p2 = 0.0 if estimate < high else 1.0
        return Equivalence(estimate, se, low, high, alpha, df, p1, p2, max(p1, p2), (estimate, estimate))
    p1 = float(dist.sf((estimate - low) / se))
    p2 = float(dist.cdf((estimate - high) / se))
    q = float(dist.ppf(1.0 - alpha))
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
