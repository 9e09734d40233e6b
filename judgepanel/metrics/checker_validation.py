"""Whether a deterministic checker may stand in for the judges on a clause: validated beyond the
base rate (issue 30 §3).

Boundary: pure statistics over two boolean vectors — the checker's verdict and the judges'
majority on the same development items — and the rule's thresholds; no I/O, no knowledge of
which checker or clause it is (the repair step supplies those and stores the result).

Why raw agreement is not enough: a clause the judges almost always call met (SummEval summaries
of 20–120 words: 98.4 %) is matched by a checker that always says met with agreement ≈ 0.98. A
checker is therefore **kept** only when all of these hold:

1. both classes are present in the judges' majority, at least ``min_per_class`` items each (10 by
   default) — otherwise it *cannot be validated on these items* (the judges say "met" on 100 %,
   say);
2. the checker's own verdict varies (it does not give one answer on every item: its agreement
   would be the judges' base rate) — otherwise it cannot be validated either;
3. Cohen's κ between checker and majority, ``(p_o − p_e)/(1 − p_e)`` (Cohen 1960; scikit-learn's
   ``cohen_kappa_score`` in the tests), is at least ``min_kappa`` (0.6 by default: "substantial"
   agreement beyond chance, Landis & Koch 1977);
4. the one-sided ``confidence`` (95 %) Clopper–Pearson lower bound of the agreement,
   ``Beta⁻¹(1 − confidence; k, n − k + 1)`` for k agreements of n (Clopper & Pearson 1934;
   statsmodels' ``proportion_confint(method="beta")`` at twice the tail in the tests), is at least
   ``threshold`` (0.9): agreement shown to be that high, not just observed. A perfect 16 of 16 has
   a lower bound of 0.829; at threshold 0.9 a perfect record needs 29 items.

Otherwise the checker is *refused* (it was testable and fell short). Sensitivity (checker met
among majority met) and specificity (checker not met among majority not met) are reported beside
κ. Undefined values (κ when p_e = 1, a rate without its class) are NaN.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from judgepanel.errors import BadInput

DEFAULT_MIN_PER_CLASS = 10
DEFAULT_MIN_KAPPA = 0.6
DEFAULT_CONFIDENCE = 0.95
KEPT = "kept"
REFUSED = "refused"
NOT_VALIDATED = "cannot be validated"


@dataclass(frozen=True)
class CheckerValidation:
    """The rule's figures and its decision (``kept`` | ``refused`` | ``cannot be validated``)
    with the reason in words."""

    n: int
    agree: int
    agreement: float
    lower_bound: float
    kappa: float
    sensitivity: float
    specificity: float
    n_met: int  # items whose judge majority says met
    n_not_met: int
    checker_met: int  # items the checker calls met
    decision: str
    reason: str

    @property
    def kept(self) -> bool:
        return self.decision == KEPT


def clopper_pearson_lower(k: int, n: int, confidence: float = DEFAULT_CONFIDENCE) -> float:
    """One-sided lower confidence bound of a binomial proportion (0 when k = 0, NaN when n = 0)."""
    from scipy.stats import beta  # on first use: SciPy is slow to import

    if n <= 0:
        return float("nan")
    if k <= 0:
        return 0.0
    return float(beta.ppf(1.0 - confidence, k, n - k + 1))


def cohen_kappa_binary(a: ArrayLike, b: ArrayLike) -> float:
    x = np.asarray(a, dtype=bool).ravel()
    y = np.asarray(b, dtype=bool).ravel()
    n = x.size
    if n == 0:
        return float("nan")
    po = float((x == y).mean())
    px, py = float(x.mean()), float(y.mean())
    pe = px * py + (1 - px) * (1 - py)
    return (po - pe) / (1 - pe) if 1 - pe > 1e-12 else float("nan")


def validate_checker(
    checker: ArrayLike,
    majority: ArrayLike,
    *,
    threshold: float = 0.9,
    min_kappa: float = DEFAULT_MIN_KAPPA,
    min_per_class: int = DEFAULT_MIN_PER_CLASS,
    confidence: float = DEFAULT_CONFIDENCE,
) -> CheckerValidation:
    """The rule of the module docstring on the items that have a judge majority (``checker[i]``
    and ``majority[i]`` the checker's and the majority's verdict on item i, True = met)."""
    if not 0.0 < threshold <= 1.0:
        raise BadInput(f"the agreement threshold must be in (0, 1], got {threshold}")
    if min_per_class < 1:
        raise BadInput(f"the items needed per class must be at least 1, got {min_per_class}")
    if not -1.0 <= min_kappa <= 1.0:
        raise BadInput(f"the κ threshold must lie in [-1, 1], got {min_kappa}")
    c = np.asarray(checker, dtype=bool).ravel()
    m = np.asarray(majority, dtype=bool).ravel()
    if c.shape != m.shape:
        raise BadInput(f"arrays differ in length: {c.size}, {m.size}")
    n = int(c.size)
    agree = int((c == m).sum())
    n_met, n_not = int(m.sum()), int((~m).sum())
    nan = float("nan")
    agreement = agree / n if n else nan
    lower = clopper_pearson_lower(agree, n, confidence)
    kappa = cohen_kappa_binary(c, m)
    sens = float(c[m].mean()) if n_met else nan
    spec = float((~c[~m]).mean()) if n_not else nan
    checker_met = int(c.sum())

    def out(decision: str, reason: str) -> CheckerValidation:
        return CheckerValidation(
            n, agree, agreement, lower, kappa, sens, spec, n_met, n_not, checker_met, decision, reason
        )

    if n == 0:
        return out(NOT_VALIDATED, "no development item has a judge majority on this clause")
    if min(n_met, n_not) < min_per_class:
        share = 100.0 * n_met / n
        return out(
            NOT_VALIDATED,
            f"cannot be validated on these items (the judges say 'met' on {share:.0f} %: {n_met} met, "
            f"{n_not} not met; at least {min_per_class} of each are needed)",
        )
    if checker_met in (0, n):
        said = "met" if checker_met == n else "not met"
        return out(
            NOT_VALIDATED,
            f"cannot be validated: the checker says '{said}' on every item, so its agreement "
            f"({agreement:.3f}) is the judges' base rate",
        )
    if not (math.isfinite(kappa) and kappa >= min_kappa):
        return out(REFUSED, f"κ {kappa:.3f} below {min_kappa:g}")
    if not lower >= threshold:
        return out(
            REFUSED,
            f"agreement {agreement:.3f} ({agree}/{n}), but its {confidence:.0%} lower bound {lower:.3f} "
            f"is below {threshold:g}",
        )
    return out(KEPT, f"κ {kappa:.3f}; agreement {agreement:.3f}, {confidence:.0%} lower bound {lower:.3f}")
