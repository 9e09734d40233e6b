"""How well could anything predict one rater? Identification bounds on the Bayes ceiling.

Boundary: pure statistics — a rating matrix of one group's raters in, a frozen :class:`CeilingBand`
out; one linear programme solved with SciPy's HiGHS (``scipy.optimize.linprog``); no I/O.

**The model.** Every rater of a group labels a unit by drawing from the same unit-specific
distribution ``θ_u`` over the K categories, independently of the other raters given the unit (the
raters are exchangeable and conditionally independent given the unit). Whatever a predictor knows
about the unit — other raters' labels, judges' scores, the texts themselves — it cannot foresee the
draw, so no predictor of a withheld rater's label does better on average than

    ceiling = E_u[max_k θ_uk]                       (the Bayes ceiling)

and two raters agree with probability ``E_u[Σ_k θ_uk²]`` (the expert–expert agreement).

**What three raters identify.** Three raters' labels of a unit have the distribution of three
independent draws from ``θ_u``, so the frequency of each *pattern* (the multiset of the three
labels, e.g. {A, A, T}) is a third moment of the mixing distribution μ of θ:

    P({a, b, c}) = m({a, b, c}) · E_μ[θ_a θ_b θ_c]      (m: the number of orderings of the multiset)

Many μ give the same C(K+2, 3) pattern frequencies and different ceilings: the ceiling is only
*partially identified*. Its sharp bounds are two linear programmes over μ: with μ restricted to a
grid of the simplex (step 1/N, the weights ``w_g ≥ 0`` of the grid points θ_g),

    low / high = min / max Σ_g w_g max_k θ_gk
                 s.t. Σ_g w_g m(p) Π_{k∈p} θ_gk = f_p for every pattern p,  Σ_g w_g = 1.

Observed frequencies carry sampling noise and may lie just outside what any mixture can produce
(e.g. fewer unanimous ties than independent draws allow). So the frequencies are matched in L1
with slack: first the least possible mismatch ``δ* = min Σ_p |Σ_g w_g m(p) Π θ_gk − f_p|`` is found
(``mismatch``; 0 when the frequencies are a mixture's), then the bounds are taken over the mixtures
whose mismatch is at most ``δ* + τ``, with ``τ = 1/n`` (``tolerance``; n the number of counted
unit-triples) by default: one observation's worth of frequency, which keeps the bounds from
jumping with the degenerate choice of the least-mismatch point without widening them by the
frequencies' sampling error (which is not included: these are identification bounds, the
frequencies taken as known).

**How the frequencies are counted.** Over every unit that all three raters of a triple labelled,
for every triple of the group's raters (one triple for three experts; C(m, 3) for m raters, each
unit-triple counting once). **Grid.** Step 1/N with N = 60 for K ≤ 3, smaller for more categories
so the grid stays under 5,000 points (N = 16 for a 1–5 scale, 0.7 CPU s; N = 23 moves such bounds
by about 1e-3 at five times the cost); on sel1000's experts steps of 1/30, 1/60 and 1/90 give
bounds within 1e-4 of each other. **Undefined** (NaN bounds, ``n_triples`` 0): fewer
than three raters, or no unit labelled by three of them.

**What it says.** A held-out accuracy near ``low`` may be all a predictor can reach; one above
``high`` would mean the raters are not exchangeable draws (a rater is predictable beyond the
shared noise, e.g. copied labels). On sel1000's three SummEval experts the band is about
[0.68, 0.75] while two experts agree on 0.63 of pairs.

References: C. F. Manski, *Partial Identification of Probability Distributions*, Springer 2003
(identification regions by linear programming); the moment problem of mixtures of i.i.d. draws,
B. G. Lindsay, *Mixture Models: Theory, Geometry and Applications*, IMS/ASA 1995, ch. 2.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]

GRID_POINTS = 5_000  # largest grid of the simplex the LP is given
GRID_STEPS = 60  # the finest step, 1/60, used whenever the grid stays under GRID_POINTS


@dataclass(frozen=True)
class CeilingBand:
    """Bounds on the Bayes ceiling of predicting one rater of a group (module docstring)."""

    low: float
    high: float
    agreement_low: float  # the band of E[Σθ²] over the same mixtures (two raters' agreement)
    agreement_high: float
    observed_agreement: float  # pairwise agreement in the counted triples
    mismatch: float  # δ*, the least L1 distance of the frequencies from any mixture's
    tolerance: float  # τ: the bounds are over mixtures within δ* + τ
    n_units: int  # units with at least one complete triple
    n_triples: int  # unit-triples counted
    n_raters: int
    grid_steps: int
    patterns: dict[str, float]  # "A,A,T" -> frequency

    def as_dict(self) -> dict[str, Any]:
        def f(x: float) -> float | None:
            return float(x) if math.isfinite(x) else None

        return {
            "low": f(self.low),
            "high": f(self.high),
            "agreement_band": [f(self.agreement_low), f(self.agreement_high)],
            "observed_agreement": f(self.observed_agreement),
            "mismatch": f(self.mismatch),
            "tolerance": f(self.tolerance),
            "n_units": self.n_units,
            "n_triples": self.n_triples,
            "n_raters": self.n_raters,
            "grid_steps": self.grid_steps,
            "patterns": self.patterns,
            "method": "lp-identification-bounds",
        }


def grid_steps(k: int, points: int = GRID_POINTS, finest: int = GRID_STEPS) -> int:
    """The largest N ≤ ``finest`` whose simplex grid (C(N+K−1, K−1) points) stays within ``points``."""
    n = finest
    while n > 1 and math.comb(n + k - 1, k - 1) > points:
        n -= 1
    return n


def simplex_grid(k: int, steps: int) -> FloatArray:
    """Every point of the K-simplex with coordinates in multiples of 1/steps (stars and bars)."""
    rows = []
    for bars in itertools.combinations(range(steps + k - 1), k - 1):
        edges = (-1, *bars, steps + k - 1)
        rows.append([edges[i + 1] - edges[i] - 1 for i in range(k)])
    return np.asarray(rows, dtype=np.float64) / steps


def patterns(k: int) -> list[tuple[int, ...]]:
    """The multisets of three labels, sorted, in a fixed order."""
    return list(itertools.combinations_with_replacement(range(k), 3))


def orderings(pattern: Sequence[int]) -> int:
    """How many ordered triples give this multiset (6, 3 or 1)."""
    counts = np.bincount(np.asarray(pattern), minlength=1)
    return math.factorial(len(pattern)) // math.prod(math.factorial(int(c)) for c in counts)


def pattern_frequencies(codes: ArrayLike, k: int) -> tuple[FloatArray, int, int, float]:
    """(frequency of each of :func:`patterns`, unit-triples counted, units counted, pairwise
    agreement within them) over every triple of the columns of ``codes`` (units × raters, −1
    missing)."""
    c = np.asarray(codes, dtype=np.int64)
    index = {p: i for i, p in enumerate(patterns(k))}
    counts = np.zeros(len(index))
    agree = 0.0
    units = np.zeros(c.shape[0], dtype=bool)
    for cols in itertools.combinations(range(c.shape[1]), 3):
        sub = c[:, list(cols)]
        full = (sub >= 0).all(axis=1)
        units |= full
        for row in np.sort(sub[full], axis=1):
            counts[index[tuple(int(x) for x in row)]] += 1
            agree += (int(row[0] == row[1]) + int(row[0] == row[2]) + int(row[1] == row[2])) / 3.0
    total = int(counts.sum())
    freq = counts / total if total else counts
    return freq, total, int(units.sum()), (agree / total if total else float("nan"))


def _moment_rows(grid: FloatArray, k: int) -> FloatArray:
    """m(p) Π_{k∈p} θ_gk for every pattern p (rows) and grid point g (columns)."""
    return np.asarray(
        [orderings(p) * np.prod(grid[:, list(p)], axis=1) for p in patterns(k)], dtype=np.float64
    )


def moment_bounds(
    frequencies: ArrayLike,
    k: int,
    objectives: Sequence[Callable[[FloatArray], FloatArray]] | None = None,
    *,
    steps: int | None = None,
    tolerance: float = 0.0,
) -> tuple[list[tuple[float, float]], float]:
    """For each objective (a function of θ on the grid; default ``max_k θ_k``) its least and
    greatest mean over the grid mixtures whose pattern frequencies are within ``δ* + tolerance``
    (L1) of ``frequencies``; and δ*. The LP of the module docstring."""
    from scipy.optimize import linprog  # on first use: SciPy is slow to import

    f = np.asarray(frequencies, dtype=np.float64)
    n_steps = grid_steps(k) if steps is None else steps
    grid = simplex_grid(k, n_steps)
    a = _moment_rows(grid, k)
    n_g, n_p = grid.shape[0], a.shape[0]
    # variables: w (grid), s+ (patterns), s- (patterns)
    a_eq = np.vstack(
        [
            np.hstack([a, np.eye(n_p), -np.eye(n_p)]),
            np.r_[np.ones(n_g), np.zeros(2 * n_p)][None, :],
        ]
    )
    b_eq = np.r_[f, 1.0]
    slack = np.r_[np.zeros(n_g), np.ones(2 * n_p)]
    first = linprog(slack, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if first.status != 0:  # pragma: no cover - the slack LP is always feasible and bounded
        raise ValueError(f"the mismatch LP failed: {first.message}")
    delta = max(float(first.fun), 0.0)
    budget = delta * (1.0 + 1e-9) + tolerance + 1e-12
    objs = [grid.max(axis=1)] if objectives is None else [np.asarray(o(grid)) for o in objectives]
    out: list[tuple[float, float]] = []
    for obj in objs:
        c = np.r_[np.asarray(obj, dtype=np.float64), np.zeros(2 * n_p)]
        ends = []
        for sign in (1.0, -1.0):
            res = linprog(
                sign * c,
                A_ub=slack[None, :],
                b_ub=[budget],
                A_eq=a_eq,
                b_eq=b_eq,
                bounds=(0, None),
                method="highs",
            )
            if res.status != 0:  # pragma: no cover - feasible by the first stage
                raise ValueError(f"the bound LP failed: {res.message}")
            ends.append(sign * float(res.fun))
        out.append((ends[0], ends[1]))
    return out, delta


def ceiling_band(
    codes: ArrayLike,
    n_categories: int,
    *,
    labels: Sequence[str] | None = None,
    tolerance: float | None = None,
    steps: int | None = None,
) -> CeilingBand:
    """The band of the Bayes ceiling for predicting one rater of the group whose labels are the
    columns of ``codes`` (units × raters, category codes 0 … K−1, −1 missing). ``tolerance``
    defaults to 1/n (n the unit-triples counted); ``labels`` name the categories in ``patterns``."""
    c = np.asarray(codes, dtype=np.int64)
    k = int(n_categories)
    if c.ndim != 2:
        raise ValueError("codes must be units × raters")
    if k < 2:
        raise ValueError("the ceiling needs at least two categories")
    names = [str(x) for x in (labels if labels is not None else range(k))]
    n_steps = grid_steps(k) if steps is None else steps
    nan = float("nan")
    if c.shape[1] < 3:
        return CeilingBand(nan, nan, nan, nan, nan, nan, nan, 0, 0, c.shape[1], n_steps, {})
    freq, total, units, agree = pattern_frequencies(c, k)
    shown = {",".join(names[i] for i in p): float(v) for p, v in zip(patterns(k), freq, strict=True)}
    if total == 0:
        return CeilingBand(nan, nan, nan, nan, agree, nan, nan, 0, 0, c.shape[1], n_steps, shown)
    tau = 1.0 / total if tolerance is None else float(tolerance)
    (ceil_b, agree_b), delta = moment_bounds(
        freq, k, [lambda g: g.max(axis=1), lambda g: (g**2).sum(axis=1)], steps=n_steps, tolerance=tau
    )
    return CeilingBand(
        ceil_b[0],
        ceil_b[1],
        agree_b[0],
        agree_b[1],
        agree,
        delta,
        tau,
        units,
        total,
        c.shape[1],
        n_steps,
        shown,
    )
