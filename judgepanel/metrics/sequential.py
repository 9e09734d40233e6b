"""The alternative annotator test, made safe to look at after every label (anytime-valid).

The fixed-sample alt-test (`metrics.validation.alt_test`; Calderon, Reichart & Dror, ACL 2025)
asks, for each held-out human h, whether the judge's per-instance advantage
``D = W_h − W_judge ∈ {−1, 0, 1}`` has mean below ε, with a one-sided t-test, and certifies the
judge when the Benjamini–Yekutieli procedure at level q rejects for at least half of the humans.
Its error rate holds for *one* look at a sample size fixed in advance. An annotation queue looks
after every label and may stop as soon as the answer is "certified": run at every look, the
t-test's false certification rate grows with the number of looks (`tests/metrics/
test_sequential.py` measures it), so the queue uses this version instead.

Per human h and hypothesis H0_h: E[D] ≥ ε (h cannot be replaced), the instances arrive in the
order their units were completed, ``D_1, D_2, …``. For a bet size λ ∈ [0, 1/(1 − ε)) the wealth

    K_t(λ) = Π_{i ≤ t} (1 + λ (ε − D_i))

is a non-negative supermartingale under H0 (each factor has conditional mean ≤ 1), and so is the
mixture M_t = mean_k K_t(λ_k) over a fixed grid of λ_k (Waudby-Smith & Ramdas 2024, §5; Shafer
2021). Ville's inequality gives P(sup_t M_t ≥ 1/α) ≤ α, so

    p_t = min(1, 1 / max_{s ≤ t} M_s)

is an *anytime-valid p-value*: P(p_τ ≤ α) ≤ α at every stopping time τ, however the stop was
chosen. The humans' p_t go through the same BY procedure at level q (valid for p-values under any
dependence), ω = rejected / H over the H humans of the panel (a human with fewer than
``min_instances`` instances counts with p = 1), and the judge is **certified** when ω ≥ ½.

**Fails** is the mirror decision: H0'_h: E[D] ≤ ε (h can be replaced) tested with the wealth
Π(1 + λ (D_i − ε)), λ < 1/(1 + ε), BY at q; once more than H − ⌈H/2⌉ humans are shown *not*
replaceable, certification is out of reach and the judge fails. Otherwise it is **undecided**.

Error rates, at any stopping time: when every H0_h holds (the judge trails every human by at
least ε), P(certified) ≤ q, because a certification needs a rejection and BY keeps the chance of
any rejection under the global null at q; in general the rejections' false discovery rate is ≤ q.
The same holds for "fails" under the mirror global null. The guarantee assumes the instances of
a human are exchangeable draws (units handed out in random order); an order chosen from the data
(stratified, disagreement first) is documented as advisory in docs/annotation.md. An edit of an
earlier label changes the recomputed path: edits are rare, and the state is recomputed from the
labels as they stand.

ε at which the judge would be certified now (``certified_at``) and each human's anytime-valid
bounds on E[D] come from the same tests by bisection (certification is monotone in ε: a larger ε
raises every factor 1 + λ (ε − D)).

References: Ville (1939); Waudby-Smith, A. & Ramdas, A. (2024), Estimating means of bounded random
variables by betting, JRSS-B 86(1); Benjamini & Yekutieli (2001); Calderon, Reichart & Dror (2025).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgepanel.errors import BadInput
from judgepanel.metrics.design import m_cert
from judgepanel.metrics.validation import Scorer, benjamini_yekutieli

FloatArray = NDArray[np.float64]

GRID = 10  # bet sizes in the mixture
_CAP = 0.5  # the largest bet, as a share of the largest the bounds allow (as in WSR 2024)
_TOL = 1e-12  # alignments this close are a tie (as in metrics.validation)
_BISECT = 7  # halvings of [−1, 1] for a bound: to 2/2⁷ < 0.016
EPSILON_MAX = 0.99  # the largest ε `certified_at` looks at


def advantages(humans: Any, judge: Any, scorer: Scorer) -> FloatArray:
    """Per (unit, human): D = W_h − W_judge where the unit has the human's, the judge's and at
    least one other human's label (NaN elsewhere). W compares the scorer's alignment of the human
    and of the judge with the *other* humans on the unit (ties count for both), as in the alt-test."""
    h = np.asarray(humans, dtype=np.float64)
    j = np.asarray(judge, dtype=np.float64)
    if h.ndim != 2 or j.shape != (h.shape[0],):
        raise BadInput("humans must be units × humans and the judge one label per unit")
    n, k = h.shape
    obs = ~np.isnan(h)
    out = np.full((n, k), np.nan)
    for c in range(k):
        others = obs.copy()
        others[:, c] = False
        pool = others.sum(axis=1)
        rows = np.nonzero(obs[:, c] & ~np.isnan(j) & (pool >= 1))[0]
        if rows.size == 0:
            continue
        sum_h = np.zeros(rows.size)
        sum_j = np.zeros(rows.size)
        for o in range(k):
            if o == c:
                continue
            ok = others[rows, o]
            if not ok.any():
                continue
            r = rows[ok]
            sum_h[ok] += scorer.pairwise(h[r, c], h[r, o])
            sum_j[ok] += scorer.pairwise(j[r], h[r, o])
        s_h = scorer.combine(sum_h / pool[rows])
        s_j = scorer.combine(sum_j / pool[rows])
        out[rows, c] = (s_h >= s_j - _TOL).astype(float) - (s_j >= s_h - _TOL).astype(float)
    return out


def _bets(bound: float) -> FloatArray:
    """The mixture's bet sizes: GRID values evenly up to _CAP × the largest allowed."""
    return np.linspace(_CAP * bound / GRID, _CAP * bound, GRID)


_VALUES = np.array([-1.0, 0.0, 1.0])


_HULL_FROM = 256  # streams at least this long evaluate p at the extreme times only


def _extreme_times(counts: FloatArray) -> NDArray[np.intp]:
    """The times whose count vectors c(t) are vertices of the convex hull of {c(t)}: the only times
    at which the mixture's log-wealth can reach its maximum. log M is a log-sum-exp of functions
    linear in c(t) (``log_wealth``), hence convex in c, and a convex function's maximum over a
    finite set is reached at a vertex of the set's hull; so one hull, for every ε, direction and
    bisection step, replaces the whole path (a few hundred vertices for 10⁴–10⁵ instances). The
    hull is taken in the coordinates that vary (a stream with no ties lies in a plane); where qhull
    cannot build it (too few or degenerate points) every time is kept."""
    n = counts.shape[1]
    every = np.arange(n)
    if n < _HULL_FROM:
        return every
    points = counts[counts[:, -1] > 0].T  # the values that occur: the others stay 0 throughout
    if points.shape[1] == 1:  # one value only: c(t) runs along a ray, from its first to its last point
        return np.array([0, n - 1])
    from scipy.spatial import ConvexHull, QhullError

    try:
        vertices = ConvexHull(points).vertices
    except (QhullError, ValueError):
        return every
    return np.sort(np.asarray(vertices, dtype=np.intp))


class _Path:
    """A stream of advantages prepared for many tests: D takes the values −1, 0 and 1 only, so the
    log-wealth after t instances is the running count of each value times its log factor (one
    small matrix product instead of a logarithm per instance and bet); other values fall back to
    the direct sum. A long ternary stream keeps only its extreme times for the p-value
    (:func:`_extreme_times`): the maximum over time is the same, computed from the same numbers."""

    def __init__(self, d: Any) -> None:
        self.d = np.asarray(d, dtype=np.float64)
        self.ternary = bool(np.isin(self.d, _VALUES).all())
        self.counts = (
            np.cumsum(self.d[None, :] == _VALUES[:, None], axis=1, dtype=np.float64) if self.ternary else None
        )
        # the count vectors at the extreme times, for `p` (the wealth's maximum over time)
        self.extreme = None if self.counts is None else self.counts[:, _extreme_times(self.counts)]

    @property
    def size(self) -> int:
        return int(self.d.size)

    def log_wealth(self, epsilon: float, below: bool, *, extreme: bool = False) -> FloatArray:
        """GRID × n: the log-wealth of each bet size after each instance (`extreme`: at the
        extreme times only, GRID × their number)."""
        largest = 1.0 / (1.0 - epsilon) if below else 1.0 / (1.0 + epsilon)
        lam = _bets(largest)
        if self.counts is not None:
            counts = self.extreme if extreme and self.extreme is not None else self.counts
            y = (epsilon - _VALUES) if below else (_VALUES - epsilon)
            return np.asarray(np.log1p(lam[:, None] * y[None, :]) @ counts, dtype=np.float64)
        y = (epsilon - self.d) if below else (self.d - epsilon)
        return np.asarray(np.cumsum(np.log1p(lam[:, None] * y[None, :]), axis=1), dtype=np.float64)

    def p(self, epsilon: float, *, below: bool = True) -> float:
        if self.size == 0:
            return 1.0
        log_w = self.log_wealth(epsilon, below, extreme=True)
        top = log_w.max(axis=0)  # the best bet at each time: the mixture is within log GRID of it
        peak = float(top.max())
        if peak <= 0.0:
            return 1.0
        # the mixture's maximum over time, exactly: only times whose best bet comes within log GRID
        # of the overall best can hold it (the mixture lies between best − log GRID and best)
        near = top >= peak - math.log(GRID)
        cols = log_w[:, near]
        t = top[near]
        log_m = t + np.log(np.exp(cols - t).mean(axis=0))
        best = float(log_m.max())
        return float(min(1.0, math.exp(-best))) if best > 0 else 1.0


def anytime_p(d: Any, epsilon: float, *, below: bool = True) -> float:
    """Anytime-valid p-value of H0: E[D] ≥ ε (``below``: evidence that the mean is below ε) or,
    with ``below=False``, of H0: E[D] ≤ ε, from the stream ``d`` (in arrival order) with values in
    [−1, 1]: min(1, 1 / max_t M_t) of the bet mixture M (module docstring). 1.0 for an empty
    stream."""
    return _Path(d).p(epsilon, below=below)


@dataclass(frozen=True)
class HumanStream:
    name: str
    n: int
    mean_diff: float | None  # mean of D = W_h − W_judge
    p_value: float  # anytime, H0: E[D] ≥ ε
    p_fail: float  # anytime, H0: E[D] ≤ ε
    rejected: bool  # shown replaceable (BY at q)
    not_replaceable: bool  # shown not replaceable (BY at q)
    lower: float | None  # anytime-valid bounds on E[D] at level q (each one-sided)
    upper: float | None
    m_required: int | None  # the planner's m*_cert for this human (metrics.design.m_cert)
    more_instances: int | None  # m_required − n, at least 0; None when no overlap certifies

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "mean_diff": self.mean_diff,
            "p_value": self.p_value,
            "p_fail": self.p_fail,
            "rejected": self.rejected,
            "not_replaceable": self.not_replaceable,
            "interval": [self.lower, self.upper],
            "m_required": self.m_required,
            "more_instances": self.more_instances,
        }


@dataclass(frozen=True)
class SequentialAltTest:
    state: str  # certified | fails | undecided
    epsilon: float
    q: float
    omega: float | None  # rejected / humans
    rho: float | None  # mean over humans of mean W_judge
    humans: tuple[HumanStream, ...]
    certified_at: float | None  # smallest ε (to 0.01) at which the judge is certified now
    labels_needed: int | None  # the planner's estimate of further labels to a certification
    min_instances: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "epsilon": self.epsilon,
            "q": self.q,
            "omega": self.omega,
            "rho": self.rho,
            "certified_at": self.certified_at,
            "labels_needed": self.labels_needed,
            "min_instances": self.min_instances,
            "humans": {h.name: h.as_dict() for h in self.humans},
        }


def _decide(
    streams: Sequence[_Path], epsilon: float, q: float, min_instances: int
) -> tuple[NDArray[np.bool_], NDArray[np.bool_], list[float], list[float]]:
    """BY-rejection masks (replaceable, not replaceable) of the humans at this ε, and the p-values."""
    p = [s.p(epsilon) if s.size >= min_instances else 1.0 for s in streams]
    pf = [s.p(epsilon, below=False) if s.size >= min_instances else 1.0 for s in streams]
    return benjamini_yekutieli(p, q)[0], benjamini_yekutieli(pf, q)[0], p, pf


def certification_state(
    streams: Sequence[Any], *, epsilon: float, q: float = 0.05, min_instances: int = 30
) -> str:
    """Only the decision of :func:`sequential_alt_test` (certified, fails or undecided), without its
    intervals and planner figures: what a simulation of many runs needs."""
    paths = [_Path(np.asarray(x, dtype=np.float64).ravel()) for x in streams]
    if not paths:
        return "undecided"
    rejected, failed, _, _ = _decide(paths, epsilon, q, min_instances)
    return _state(int(rejected.sum()), int(failed.sum()), len(paths))


def _state(rejected: int, failed: int, humans: int) -> str:
    need = math.ceil(humans / 2)
    return "certified" if rejected >= need else "fails" if failed > humans - need else "undecided"


def _certified(streams: Sequence[_Path], epsilon: float, q: float, min_instances: int) -> bool:
    rejected = benjamini_yekutieli([s.p(epsilon) if s.size >= min_instances else 1.0 for s in streams], q)[0]
    return bool(2 * int(rejected.sum()) >= len(streams))


def _bound(stream: _Path, q: float, *, upper: bool) -> float | None:
    """The anytime-valid one-sided bound on E[D] at level q: the smallest m whose H0 (E[D] ≥ m)
    is rejected (upper), or the largest m whose H0 (E[D] ≤ m) is (lower); None when none in
    [−1, 1] is."""
    if stream.size == 0:
        return None
    lo, hi = -1.0, 1.0
    if upper:
        if stream.p(hi - 1e-9) > q:
            return None
        for _ in range(_BISECT):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if stream.p(mid) <= q else (mid, hi)
        return hi
    if stream.p(lo + 1e-9, below=False) > q:
        return None
    for _ in range(_BISECT):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if stream.p(mid, below=False) <= q else (lo, mid)
    return lo


def sequential_alt_test(
    streams: Sequence[Any],
    *,
    epsilon: float,
    q: float = 0.05,
    names: Sequence[str] | None = None,
    w_judge: Sequence[float | None] | None = None,
    min_instances: int = 30,
) -> SequentialAltTest:
    """The anytime-valid alt-test (module docstring) of one judge from each human's stream of
    advantages D (values in {−1, 0, 1}, in arrival order; see :func:`advantages`)."""
    if not 0.0 <= epsilon < 1.0:
        raise BadInput(f"epsilon must be in [0, 1), got {epsilon}")
    if not 0.0 < q < 1.0:
        raise BadInput(f"q must be in (0, 1), got {q}")
    if min_instances < 1:
        raise BadInput(f"min-instances must be at least 1, got {min_instances}")
    arrays = [np.asarray(x, dtype=np.float64).ravel() for x in streams]
    if any(np.isnan(x).any() or (np.abs(x) > 1).any() for x in arrays):
        raise BadInput("advantages must lie in [-1, 1]")
    s = [_Path(x) for x in arrays]
    labels = list(names) if names is not None else [f"human_{i + 1}" for i in range(len(s))]
    if len(labels) != len(s):
        raise BadInput(f"{len(labels)} names for {len(s)} humans")
    if not s:
        return SequentialAltTest("undecided", epsilon, q, None, None, (), None, None, min_instances)
    rejected, failed, p, pf = _decide(s, epsilon, q, min_instances)
    h = len(s)
    need = math.ceil(h / 2)
    state = (
        "certified"
        if int(rejected.sum()) >= need
        else "fails"
        if int(failed.sum()) > h - need
        else "undecided"
    )
    rows = []
    for i, (x, path) in enumerate(zip(arrays, s, strict=True)):
        m = None
        if x.size >= 2:
            m = m_cert(float(x.std(ddof=1)), float(-x.mean()), epsilon, q)
        rows.append(
            HumanStream(
                name=labels[i],
                n=int(x.size),
                mean_diff=float(x.mean()) if x.size else None,
                p_value=float(p[i]),
                p_fail=float(pf[i]),
                rejected=bool(rejected[i]),
                not_replaceable=bool(failed[i]),
                lower=_bound(path, q, upper=False),
                upper=_bound(path, q, upper=True),
                m_required=m,
                more_instances=None if m is None else max(0, m - int(x.size)),
            )
        )
    certified_at = None
    if _certified(s, EPSILON_MAX, q, min_instances):
        lo, hi = 0.0, EPSILON_MAX
        if _certified(s, 0.0, q, min_instances):
            hi = 0.0
        else:
            for _ in range(7):  # to 0.99/128 < 0.01
                mid = (lo + hi) / 2
                lo, hi = (lo, mid) if _certified(s, mid, q, min_instances) else (mid, hi)
        certified_at = min(EPSILON_MAX, math.ceil(hi * 100 - 1e-9) / 100)
    labels_needed = None
    if state == "undecided":
        more = sorted(r.more_instances for r in rows if r.more_instances is not None)
        if len(more) >= need:
            # each further instance of a human comes with one label of each of the H humans on
            # average (a unit gives its K humans one instance each)
            labels_needed = max(1, more[need - 1]) * h
    wj = [w for w in (w_judge or []) if w is not None]
    omega = float(rejected.sum()) / h
    return SequentialAltTest(
        state=state,
        epsilon=epsilon,
        q=q,
        omega=omega,
        rho=float(np.mean(wj)) if wj else None,
        humans=tuple(rows),
        certified_at=certified_at,
        labels_needed=labels_needed,
        min_instances=min_instances,
    )
