"""Inter-rater agreement coefficients over a rating matrix.

Conventions
-----------
``ratings`` is a 2-D float array, one row per unit (item or pair), one column per rater, NaN where
the rater gave no rating. ``categories`` is the explicit 1-D array of allowed values, e.g.
``np.arange(1, 6)`` for a 1–5 scale: levels nobody used are kept, because they change chance
agreement for κ, π and AC1 (see ``tests/metrics/test_agreement_edges.py``). Ratings are matched to
categories by equality; a rating outside them is a ``BadInput``. Categories are sorted ascending, and
that order is the scale order for ordinal measures: nominal text labels are encoded to codes by the
caller (``store.matrices`` does it), ordinal text scales must be coded in scale order.

Notation: unit ``u`` has ``r_u`` ratings, ``n_uk`` of them in category ``k``; ``W`` is a q×q
agreement-weight matrix (identity for unweighted coefficients, see :func:`weight_matrix`).

Every chance-corrected coefficient here is ``(p_o − p_e) / (1 − p_e)`` or Krippendorff's
``1 − D_o / D_e``, and each is computed as a function of sums over units of per-unit
contributions (:func:`unit_statistic`). The bootstrap in ``metrics.bootstrap`` resamples those
contributions, so point estimates and bootstrap replicates run through the very same code.

Undefined values (returned as NaN, which the CLI prints as JSON ``null``)
--------------------------------------------------------------------------
- No unit with two or more ratings (a single rater, or raters who never overlap): every coefficient
  is NaN; so is percent agreement. For Cohen/Scott/Spearman/Kendall: no unit rated by both.
- Expected agreement ``p_e = 1`` (κ, π, Fleiss): every rating in one category, so ``0/0``. This
  includes perfect agreement on one category. scikit-learn returns NaN with a warning
  (``replace_undefined_by=nan``); statsmodels returns NaN with a RuntimeWarning.
- Krippendorff's α with a single value among the pairable values (``D_e = 0``): NaN. The
  ``krippendorff`` package raises ``ValueError`` unless ``value_domain`` is given, then NaN.
- Gwet's AC1/AC2 stays defined when everyone uses one category out of q ≥ 2 (``p_e = 0`` there, so
  AC1 = ``p_o`` = 1): this is the paradox-resistance Gwet designed it for, and irrCAC agrees. With
  a single category (q = 1) AC1 is NaN (irrCAC substitutes ``p_e = 1 − 1e−15`` and returns noise).
- Spearman and Kendall: NaN when fewer than two complete pairs or one side is constant (scipy
  returns NaN with a ``ConstantInputWarning``).
- Perfect agreement over at least two categories: every coefficient is exactly 1.

References
----------
- Cohen, J. (1960). A coefficient of agreement for nominal scales. *Educ. Psychol. Meas.* 20, 37–46.
- Cohen, J. (1968). Weighted kappa. *Psychol. Bull.* 70, 213–220.
- Scott, W. A. (1955). Reliability of content analysis. *Public Opinion Quarterly* 19, 321–325.
- Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. *Psychol. Bull.* 76.
- Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Annenberg School papers 43.
- Gwet, K. L. (2008). Computing inter-rater reliability and its variance in the presence of high
  agreement. *Br. J. Math. Stat. Psychol.* 61, 29–48.
- Gwet, K. L. (2014). *Handbook of Inter-Rater Reliability*, 4th ed. (formulas for missing ratings
  and weights; implemented by the irrCAC package).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgepanel.errors import BadInput
from judgepanel.metrics.names import LEVELS, METRICS, WEIGHT_NAMES

FloatArray = NDArray[np.float64]
Level = Literal["nominal", "ordinal", "interval", "ratio"]
WeightName = Literal["identity", "linear", "quadratic", "ordinal", "radical", "ratio", "circular", "bipolar"]
Weights = WeightName | FloatArray | None

TWO_RATER_METRICS: tuple[str, ...] = (
    "cohen",
    "cohen-linear",
    "cohen-quadratic",
    "scott",
    "spearman",
    "kendall",
)
# Gwet (2014, ch. 3) pairs a weight family with each level of measurement; `agreement("ac1", level=…)`
# uses it, so AC2 is reachable from the one CLI name.
AC_WEIGHTS_BY_LEVEL: dict[str, WeightName] = {
    "nominal": "identity",
    "ordinal": "ordinal",
    "interval": "quadratic",
    "ratio": "ratio",
}
_COHEN_WEIGHTS: dict[str, WeightName | None] = {
    "cohen": None,
    "cohen-linear": "linear",
    "cohen-quadratic": "quadratic",
}
_EPS = 1e-12
# above this many categories, interval α sums moments instead of a q×q distance matrix
_MAX_DENSE_Q = 64


# ---------------------------------------------------------------- inputs


def _f(x: object) -> FloatArray:
    """numpy arithmetic is typed as Any; pin it to a float64 array."""
    return np.asarray(x, dtype=np.float64)


def as_ratings(ratings: ArrayLike) -> FloatArray:
    """A float64 copy-free view of a units × raters matrix; a 1-D array is one rater."""
    arr = np.asarray(ratings, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise BadInput(f"ratings must be a units × raters matrix, got {arr.ndim} dimensions")
    if np.isinf(arr).any():
        raise BadInput("ratings must be finite numbers or NaN for missing")
    return arr


def as_categories(categories: ArrayLike | None, ratings: FloatArray) -> FloatArray:
    """Sorted explicit categories; None infers the distinct observed values (drops unused levels)."""
    if categories is None:
        return _f(np.unique(ratings[~np.isnan(ratings)]))
    cats = np.asarray(categories, dtype=np.float64).ravel()
    if not np.isfinite(cats).all():
        raise BadInput("categories must be finite numbers")
    cats = np.sort(cats)
    if cats.size and (np.diff(cats) == 0).any():
        raise BadInput("categories must be distinct")
    return cats


def category_codes(ratings: FloatArray, categories: FloatArray) -> NDArray[np.intp]:
    """Index of each rating in ``categories`` (sorted), −1 where missing; BadInput if a rating is
    not a category."""
    present = ~np.isnan(ratings)
    codes = np.full(ratings.shape, -1, dtype=np.intp)
    if not present.any():
        return codes
    values = ratings[present]
    if categories.size == 0:
        raise BadInput(f"rating {values[0]:g} is not one of the categories []")
    idx = np.clip(np.searchsorted(categories, values), 0, categories.size - 1)
    bad = categories[idx] != values
    if bad.any():
        shown = ", ".join(f"{c:g}" for c in categories[:12]) + (", …" if categories.size > 12 else "")
        raise BadInput(f"rating {values[bad][0]:g} is not one of the categories [{shown}]")
    codes[present] = idx
    return codes


def category_counts(ratings: FloatArray, categories: FloatArray) -> FloatArray:
    """``n_uk``: how many raters put unit ``u`` in category ``k`` (units × q)."""
    codes = category_codes(ratings, categories)
    n, q = ratings.shape[0], categories.size
    rows, cols = np.nonzero(codes >= 0)
    flat = rows * q + codes[rows, cols]
    return np.bincount(flat, minlength=n * q).reshape(n, q).astype(np.float64)


def weight_matrix(categories: ArrayLike, weights: Weights = None) -> FloatArray:
    """Agreement weights ``w_kl`` in [0, 1] with ``w_kk = 1``, Gwet (2014) / irrCAC formulas on the
    category values ``x`` (sorted), ``x_min``/``x_max`` their range:

    - identity (None): ``w_kl = [k = l]``
    - linear: ``1 − |x_k − x_l| / (x_max − x_min)``
    - quadratic: ``1 − (x_k − x_l)² / (x_max − x_min)²``
    - ordinal: ``1 − m_kl / max m``, ``m_kl = C(|k − l| + 1, 2)`` on ranks
    - radical: ``1 − √|x_k − x_l| / √(x_max − x_min)``
    - ratio: ``1 − ((x_k − x_l)/(x_k + x_l))² / ((x_max − x_min)/(x_max + x_min))²`` (x > 0)
    - circular: ``1 − s_kl / max s``, ``s_kl = sin²(π (x_k − x_l) / (x_max − x_min + 1))``
    - bipolar: ``1 − b_kl / max b``, ``b_kl = (x_k − x_l)² / ((x_k + x_l − 2x_min)(2x_max − x_k − x_l))``

    For equally spaced categories linear and quadratic weights equal scikit-learn's, which uses
    category positions; for unequal spacing they follow the values, as Gwet and irrCAC do.
    A q×q array is taken as given (it must have a unit diagonal and values in [0, 1]).
    """
    x = np.sort(np.asarray(categories, dtype=np.float64).ravel())
    q = x.size
    if weights is None or (isinstance(weights, str) and weights == "identity"):
        return np.eye(q)
    if not isinstance(weights, str):
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (q, q):
            raise BadInput(f"a weight matrix must be {q}×{q} for {q} categories, got {w.shape}")
        if not np.allclose(np.diag(w), 1.0) or (w < 0).any() or (w > 1).any():
            raise BadInput("a weight matrix must have a unit diagonal and values in [0, 1]")
        return w
    if weights not in WEIGHT_NAMES:
        raise BadInput(f"unknown weights {weights!r}; use one of {', '.join(WEIGHT_NAMES)}")
    if q < 2:
        return np.eye(q)
    d = x[:, None] - x[None, :]
    span = x[-1] - x[0]
    s = x[:, None] + x[None, :]
    if weights == "linear":
        return _f(1.0 - np.abs(d) / span)
    if weights == "quadratic":
        return _f(1.0 - (d / span) ** 2)
    if weights == "radical":
        return _f(1.0 - np.sqrt(np.abs(d)) / np.sqrt(span))
    if weights == "ordinal":
        k = np.arange(q)
        m = np.abs(k[:, None] - k[None, :]) + 1.0
        m = m * (m - 1.0) / 2.0
        return _f(1.0 - m / m.max())
    if weights == "ratio":
        if (x <= 0).any():
            raise BadInput("ratio weights need positive category values")
        return _f(1.0 - (d / s) ** 2 / (span / (x[-1] + x[0])) ** 2)
    if weights == "circular":
        c = np.sin(np.pi * d / (span + 1.0)) ** 2
        return _f(1.0 - c / c.max())
    # bipolar
    with np.errstate(divide="ignore", invalid="ignore"):
        b = d**2 / ((s - 2 * x[0]) * (2 * x[-1] - s))
    b[np.eye(q, dtype=bool)] = 0.0
    b[~np.isfinite(b)] = 0.0
    return _f(1.0 - b / b.max())


# ---------------------------------------------------------------- unit-decomposed statistics


@dataclass(frozen=True)
class UnitStatistic:
    """A coefficient written as ``finish(Σ_u c_u)``: ``contributions`` holds one row ``c_u`` per unit,
    ``finish`` maps a (B × k) array of sums to B values. Resampling units with multinomial counts
    ``w`` gives ``finish(w @ contributions)``, which is how the bootstrap stays vectorised."""

    contributions: FloatArray
    finish: Callable[[FloatArray], FloatArray]
    n_units: int  # units that carry information (≥ 2 ratings, or both raters for two-rater measures)

    def value(self) -> float:
        return float(self.finish(self.contributions.sum(axis=0, keepdims=True))[0])

    def summed_by(self, codes: ArrayLike, n_groups: int) -> UnitStatistic:
        """The same statistic with one row per group: row ``g`` sums the contributions of the units
        whose code is ``g`` (0 ≤ g < n_groups). Resampling these rows resamples whole groups (an
        item's clauses, an article's items), and ``value()`` is unchanged."""
        idx = np.asarray(codes, dtype=np.intp).ravel()
        if idx.size != self.contributions.shape[0]:
            raise BadInput(f"{idx.size} group codes for {self.contributions.shape[0]} units")
        out = np.zeros((n_groups, self.contributions.shape[1]))
        np.add.at(out, idx, self.contributions)
        return UnitStatistic(out, self.finish, self.n_units)


def _ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    out = np.full(num.shape, np.nan)
    ok = den > _EPS
    np.divide(num, den, out=out, where=ok)
    return out


def _chance_corrected(po: FloatArray, pe: FloatArray) -> FloatArray:
    """(p_o − p_e)/(1 − p_e), NaN where p_e = 1 or p_o is undefined."""
    out = np.full(po.shape, np.nan)
    ok = (1.0 - pe > _EPS) & np.isfinite(po) & np.isfinite(pe)
    np.divide(po - pe, 1.0 - pe, out=out, where=ok)
    # floating point can put a perfect-agreement coefficient a hair off 1
    return np.where(ok & (np.abs(po - 1.0) <= 1e-12), 1.0, out)


def _percent_stat(ratings: FloatArray, pooled: bool) -> UnitStatistic:
    present = ratings[~np.isnan(ratings)]
    counts = category_counts(ratings, np.unique(present))
    r = counts.sum(axis=1)
    pairs = r * (r - 1.0)
    agree = (counts * (counts - 1.0)).sum(axis=1)
    multi = r >= 2
    if pooled:
        c = np.column_stack([agree, pairs])
    else:
        c = np.column_stack([_ratio(agree, pairs) * multi, multi.astype(np.float64)])
        c[~multi, 0] = 0.0

    def finish(s: FloatArray) -> FloatArray:
        return _ratio(s[:, 0], s[:, 1])

    return UnitStatistic(c, finish, int(multi.sum()))


def _multi_rater_stat(
    ratings: FloatArray, categories: FloatArray, w: FloatArray, chance: Literal["fleiss", "gwet"]
) -> UnitStatistic:
    """Per unit: ``p_o,u = Σ_k n_uk (n*_uk − 1) / (r_u (r_u − 1))`` with ``n*_uk = Σ_l w_kl n_ul``
    (units with r_u ≥ 2), and ``n_uk / r_u`` (units with r_u ≥ 1); Gwet (2014), as irrCAC."""
    counts = category_counts(ratings, categories)
    q = categories.size
    r = counts.sum(axis=1)
    multi = r >= 2
    rated = r >= 1
    sum_q = (counts * (counts @ w.T - 1.0)).sum(axis=1)
    pa_u = np.zeros_like(r)
    pa_u[multi] = sum_q[multi] / (r[multi] * (r[multi] - 1.0))
    p_u = np.zeros_like(counts)
    p_u[rated] = counts[rated] / r[rated, None]
    c = np.column_stack([pa_u, multi.astype(np.float64), rated.astype(np.float64), p_u])
    w_total = float(w.sum())

    def finish(s: FloatArray) -> FloatArray:
        po = _ratio(s[:, 0], s[:, 1])
        pi = s[:, 3:] / np.where(s[:, 2:3] > 0, s[:, 2:3], np.nan)
        if chance == "fleiss":
            pe = np.einsum("bk,kl,bl->b", pi, w, pi)
        elif q >= 2:
            pe = w_total * (pi * (1.0 - pi)).sum(axis=1) / (q * (q - 1.0))
        else:
            pe = np.full(s.shape[0], np.nan)
        return _chance_corrected(po, pe)

    return UnitStatistic(c, finish, int(multi.sum()))


def _two_rater_stat(
    ratings: FloatArray, categories: FloatArray, w: FloatArray, chance: Literal["cohen", "scott"]
) -> UnitStatistic:
    """Per complete unit: the one-hot cell of the q×q contingency table ``(a_u, b_u)``."""
    if ratings.shape[1] != 2:
        raise BadInput(f"{chance} compares exactly two raters, got {ratings.shape[1]}")
    codes = category_codes(ratings, categories)
    q = categories.size
    both = (codes >= 0).all(axis=1)
    c = np.zeros((ratings.shape[0], q * q))
    c[np.nonzero(both)[0], codes[both, 0] * q + codes[both, 1]] = 1.0

    def finish(s: FloatArray) -> FloatArray:
        t = s.reshape(-1, q, q)
        n = t.sum(axis=(1, 2))
        nn = np.where(n > 0, n, np.nan)
        po = np.einsum("bkl,kl->b", t, w) / nn
        row = t.sum(axis=2) / nn[:, None]
        col = t.sum(axis=1) / nn[:, None]
        if chance == "cohen":
            pe = np.einsum("bk,kl,bl->b", row, w, col)
        else:
            pi = (row + col) / 2.0
            pe = np.einsum("bk,kl,bl->b", pi, w, pi)
        return _chance_corrected(po, pe)

    return UnitStatistic(c, finish, int(both.sum()))


def interval_alpha_stat(ratings: FloatArray, *, shift: float | None = None) -> UnitStatistic:
    """Krippendorff's α at the interval level from moments, without a category table: with
    ``δ² = (x_c − x_k)²`` the disagreements expand into ``D_o ∝ Σ_u 2(m_u S2_u − S1_u²)/(m_u − 1)``
    and ``D_e ∝ 2(n Σ S2_u − (Σ S1_u)²)``, ``S1_u``/``S2_u`` the sums of a pairable unit's values
    and squares. Values are shifted by ``shift`` (default: their mean) first, which changes nothing
    but the rounding. Per-unit contributions ``(d_u, m_u, S1_u, S2_u)``; for continuous scores
    (an ensemble's mean share, a mean human rating), where a q × q table would not fit."""
    present = ~np.isnan(ratings)
    m = present.sum(axis=1).astype(np.float64)
    pairable = m >= 2
    if shift is None:
        shift = float(ratings[present].mean()) if present.any() else 0.0
    v = np.where(present & pairable[:, None], ratings - shift, 0.0)
    m = np.where(pairable, m, 0.0)
    s1 = v.sum(axis=1)
    s2 = (v * v).sum(axis=1)
    d_u = 2.0 * (m * s2 - s1**2) / np.where(pairable, m - 1.0, 1.0)
    c = np.column_stack([d_u, m, s1, s2])

    def finish_moments(s: FloatArray) -> FloatArray:
        n = s[:, 1]
        de = 2.0 * (n * s[:, 3] - s[:, 2] ** 2)
        # the difference of two large sums is only noise when one value is used throughout
        de = np.where(de > 1e-9 * n * s[:, 3], de, 0.0)
        return 1.0 - (n - 1.0) * _ratio(s[:, 0], de)

    return UnitStatistic(c, finish_moments, int(pairable.sum()))


def _alpha_stat(ratings: FloatArray, categories: FloatArray, level: str) -> UnitStatistic:
    """Krippendorff's α from coincidences. Pairable values only (units with m_u ≥ 2):

    ``o_ck = Σ_u (n_uc n_uk − [c = k] n_uc) / (m_u − 1)``, ``n_c = Σ_k o_ck``, ``n = Σ_c n_c``,
    ``α = 1 − (n − 1) Σ_ck o_ck δ²_ck / Σ_ck n_c n_k δ²_ck``, with
    nominal ``δ² = [c ≠ k]``; interval ``(x_c − x_k)²``; ratio ``((x_c − x_k)/(x_c + x_k))²``;
    ordinal ``(Σ_{g=c..k} n_g − (n_c + n_k)/2)²`` on the category order (Krippendorff 2011).
    """
    if level == "interval" and categories.size > _MAX_DENSE_Q:
        category_codes(ratings, categories)  # validates; the moments need no units × q table
        return interval_alpha_stat(ratings, shift=float(categories.mean()))
    counts = category_counts(ratings, categories)
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts[~pairable] = 0.0
    m = np.where(pairable, m, 0.0)
    denom = np.where(pairable, m - 1.0, 1.0)
    x = categories - (categories.mean() if categories.size else 0.0)  # δ² is shift-free for interval

    if level == "ordinal":
        q = categories.size
        o_u = counts[:, :, None] * counts[:, None, :]
        o_u[:, np.arange(q), np.arange(q)] -= counts
        c = (o_u / denom[:, None, None]).reshape(-1, q * q)

        def finish(s: FloatArray) -> FloatArray:
            o = s.reshape(-1, q, q)
            nc = o.sum(axis=2)
            n = nc.sum(axis=1)
            mid = np.cumsum(nc, axis=1) - nc / 2.0
            d2 = (mid[:, :, None] - mid[:, None, :]) ** 2
            do = np.einsum("bkl,bkl->b", o, d2)
            de = np.einsum("bk,bkl,bl->b", nc, d2, nc)
            return _f(1.0 - (n - 1.0) * _ratio(do, de))

        return UnitStatistic(c, finish, int(pairable.sum()))

    if level == "nominal":
        d2 = 1.0 - np.eye(categories.size)
    elif level == "interval":
        d2 = (x[:, None] - x[None, :]) ** 2
    elif level == "ratio":
        if (categories < 0).any():
            raise BadInput("the ratio level needs non-negative values")
        xs = categories[:, None] + categories[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            d2 = ((categories[:, None] - categories[None, :]) / xs) ** 2
        d2[xs == 0] = 0.0
    else:
        raise BadInput(f"unknown level {level!r}; use one of {', '.join(LEVELS)}")
    d_u = np.einsum("uk,kl,ul->u", counts, d2, counts) / denom
    c = np.column_stack([d_u, counts])

    def finish_fixed(s: FloatArray) -> FloatArray:
        nc = s[:, 1:]
        n = nc.sum(axis=1)
        de = np.einsum("bk,kl,bl->b", nc, d2, nc)
        return _f(1.0 - (n - 1.0) * _ratio(s[:, 0], de))

    return UnitStatistic(c, finish_fixed, int(pairable.sum()))


def _resolve_level(metric: str, level: str | None) -> str:
    if level is not None and level not in LEVELS:
        raise BadInput(f"unknown level {level!r}; use one of {', '.join(LEVELS)}")
    if metric in ("alpha", "ac1"):
        return level or "nominal"
    if metric in ("spearman", "kendall"):
        if level not in (None, "ordinal"):
            raise BadInput(f"{metric} is a rank correlation; --level does not apply")
        return "ordinal"
    if level not in (None, "nominal"):
        hint = " (use cohen-linear or cohen-quadratic)" if metric.startswith("cohen") else ""
        raise BadInput(f"--level applies to alpha and ac1, not {metric}{hint}")
    if metric == "cohen-linear":
        return "linear"
    if metric == "cohen-quadratic":
        return "quadratic"
    return "nominal"


def unit_statistic(
    metric: str, ratings: ArrayLike, categories: ArrayLike | None = None, level: str | None = None
) -> UnitStatistic:
    """The per-unit decomposition of any contract metric except ``spearman`` and ``kendall`` (rank
    statistics do not decompose over units; the bootstrap loops for them)."""
    arr = as_ratings(ratings)
    lvl = _resolve_level(metric, level)
    if metric == "percent":
        return _percent_stat(arr, pooled=False)
    if metric in ("spearman", "kendall"):
        raise BadInput(f"{metric} does not decompose over units")
    if metric not in METRICS:
        raise BadInput(f"unknown metric {metric!r}; use one of {', '.join(METRICS)}")
    cats = as_categories(categories, arr)
    if metric == "alpha":
        return _alpha_stat(arr, cats, lvl)
    if metric in _COHEN_WEIGHTS:
        return _two_rater_stat(arr, cats, weight_matrix(cats, _COHEN_WEIGHTS[metric]), "cohen")
    if metric == "scott":
        return _two_rater_stat(arr, cats, np.eye(cats.size), "scott")
    if metric == "fleiss":
        return _multi_rater_stat(arr, cats, np.eye(cats.size), "fleiss")
    return _multi_rater_stat(arr, cats, weight_matrix(cats, AC_WEIGHTS_BY_LEVEL[lvl]), "gwet")


# ---------------------------------------------------------------- public coefficients


def percent_agreement(ratings: ArrayLike, *, pooled: bool = False) -> float:
    """Observed agreement: the share of agreeing rater pairs.

    Default (per-unit mean, Fleiss' ``P̄``): ``p_o = (1/n₂) Σ_{u: r_u≥2} Σ_k n_uk (n_uk − 1) /
    (r_u (r_u − 1))`` over the ``n₂`` units with at least two ratings. ``pooled=True`` pools pairs
    across units instead: ``Σ_u Σ_k n_uk (n_uk − 1) / Σ_u r_u (r_u − 1)`` (units with more raters
    weigh more). Both equal the plain share of identical pairs for two raters without missing
    values. Values are compared by equality; no categories are needed. NaN when no unit has two
    ratings.
    """
    return _percent_stat(as_ratings(ratings), pooled).value()


def cohen_kappa(a: ArrayLike, b: ArrayLike, categories: ArrayLike, weights: Weights = None) -> float:
    """Cohen's κ between two raters (Cohen 1960; weighted, Cohen 1968).

    Pairs where either rating is NaN are dropped. With ``p_kl`` the joint proportions over the q×q
    categories, ``p_k·``/``p_·l`` the margins and ``w`` from :func:`weight_matrix`:
    ``p_o = Σ w_kl p_kl``, ``p_e = Σ w_kl p_k· p_·l``, ``κ = (p_o − p_e)/(1 − p_e)``.
    ``weights`` None/"linear"/"quadratic" match scikit-learn's ``cohen_kappa_score(…, labels=
    categories, weights=…)`` for equally spaced categories. NaN when no complete pair exists or
    ``p_e = 1`` (both raters used one and the same category).
    """
    pair = np.column_stack([as_ratings(a)[:, 0], as_ratings(b)[:, 0]])
    cats = as_categories(categories, pair)
    return _two_rater_stat(pair, cats, weight_matrix(cats, weights), "cohen").value()


def scott_pi(a: ArrayLike, b: ArrayLike, categories: ArrayLike, weights: Weights = None) -> float:
    """Scott's π between two raters (Scott 1955): as :func:`cohen_kappa` but chance agreement uses
    the pooled margins ``π_k = (p_k· + p_·k)/2``: ``p_e = Σ w_kl π_k π_l``. Pairs with a NaN are
    dropped. Equals irrCAC's ``table.CAC(...).scott()``; for two raters without missing values it
    also equals Fleiss' κ. NaN when no complete pair exists or ``p_e = 1``."""
    pair = np.column_stack([as_ratings(a)[:, 0], as_ratings(b)[:, 0]])
    cats = as_categories(categories, pair)
    return _two_rater_stat(pair, cats, weight_matrix(cats, weights), "scott").value()


def fleiss_kappa(ratings: ArrayLike, categories: ArrayLike, weights: Weights = None) -> float:
    """Fleiss' κ (Fleiss 1971) for any number of raters, generalised to missing ratings as in Gwet
    (2014) and irrCAC's ``CAC.fleiss()``:

    ``p_o`` = mean over units with r_u ≥ 2 of ``Σ_k n_uk (n*_uk − 1) / (r_u (r_u − 1))``,
    ``π_k`` = mean over units with r_u ≥ 1 of ``n_uk / r_u``, ``p_e = Σ_kl w_kl π_k π_l``,
    ``κ = (p_o − p_e)/(1 − p_e)``. Without missing ratings this is statsmodels' ``fleiss_kappa``
    on the units × categories count table. NaN when no unit has two ratings or ``p_e = 1``.
    """
    arr = as_ratings(ratings)
    cats = as_categories(categories, arr)
    return _multi_rater_stat(arr, cats, weight_matrix(cats, weights), "fleiss").value()


def krippendorff_alpha(
    ratings: ArrayLike, level: str = "nominal", categories: ArrayLike | None = None
) -> float:
    """Krippendorff's α at the nominal, ordinal, interval or ratio level, missing data allowed.

    Coincidences over pairable values (units with at least two ratings; single ratings are
    ignored): ``o_ck = Σ_u (number of c–k pairs in u) / (m_u − 1)``, ``n_c = Σ_k o_ck``, and
    ``α = 1 − (n − 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck`` (Krippendorff 2011). ``δ²`` is
    ``[c ≠ k]`` (nominal), ``(Σ_{g=c..k} n_g − (n_c + n_k)/2)²`` (ordinal, category order),
    ``(x_c − x_k)²`` (interval), ``((x_c − x_k)/(x_c + x_k))²`` (ratio). Unused categories change
    nothing at any level (their n_c is 0), so ``categories`` only validates the ratings; None uses
    the observed values. Matches ``krippendorff.alpha(ratings.T, level_of_measurement=level)``.
    NaN when there are no pairable values or only one distinct value among them (``D_e = 0``).
    """
    arr = as_ratings(ratings)
    return _alpha_stat(arr, as_categories(categories, arr), _resolve_level("alpha", level)).value()


def gwet_ac1(ratings: ArrayLike, categories: ArrayLike, weights: Weights = None) -> float:
    """Gwet's AC1 (Gwet 2008), AC2 when weighted, for any number of raters with missing ratings,
    as Gwet (2014) gives it and irrCAC's ``CAC.gwet()`` implements it:

    ``p_o`` as in :func:`fleiss_kappa`; ``π_k`` = mean over units with r_u ≥ 1 of ``n_uk / r_u``;
    ``p_e = (Σ_kl w_kl) / (q (q − 1)) · Σ_k π_k (1 − π_k)``; ``AC = (p_o − p_e)/(1 − p_e)``.
    q is the number of categories, so unused levels matter. With every rating in one of q ≥ 2
    categories, ``p_e = 0`` and AC1 = ``p_o`` (defined, unlike κ). NaN when no unit has two ratings
    or q < 2.
    """
    arr = as_ratings(ratings)
    cats = as_categories(categories, arr)
    return _multi_rater_stat(arr, cats, weight_matrix(cats, weights), "gwet").value()


def _complete_pairs(a: ArrayLike, b: ArrayLike) -> tuple[FloatArray, FloatArray]:
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise BadInput(f"the two raters have different lengths ({x.size} and {y.size})")
    keep = ~(np.isnan(x) | np.isnan(y))
    return x[keep], y[keep]


def _weighted_average_ranks(v: FloatArray, w: FloatArray) -> FloatArray:
    """Average ranks of ``v`` (n,) in the sample where unit ``u`` appears ``w[r, u]`` times, for each
    row ``r`` of ``w`` (B × n): value ``x`` ranks ``W(< x) + (W(= x) + 1)/2`` with ``W`` the summed
    weights, which is the tie-averaged rank every copy of ``x`` gets in the expanded sample."""
    distinct, inv = np.unique(v, return_inverse=True)
    q, b = distinct.size, w.shape[0]
    flat = (inv[None, :] + (np.arange(b) * q)[:, None]).ravel()
    per_value = np.bincount(flat, weights=w.ravel(), minlength=b * q).reshape(b, q)
    below = np.cumsum(per_value, axis=1) - per_value
    return _f((below + (per_value + 1.0) / 2.0)[:, inv])


def spearman_weighted(a: ArrayLike, b: ArrayLike, weights: ArrayLike) -> FloatArray:
    """Spearman's ρ of the sample in which pair ``u`` = (a_u, b_u) appears ``weights[r, u]`` times,
    one value per row ``r`` of ``weights`` (B × n; a 1-D array is one row). Ranks are tie-averaged
    over the expanded sample (:func:`_weighted_average_ranks`), ρ is the weighted Pearson r of the
    ranks around their mean ``(W + 1)/2``. With weights of ones this is :func:`spearman`; with the
    multinomial counts of a bootstrap draw it is ρ of that resample, so a unit (or cluster)
    bootstrap of ρ is one call. ``a`` and ``b`` must be complete. NaN where the rows' total weight
    is below 2 or one side is constant."""
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    if x.shape != y.shape or w.shape[1] != x.size:
        raise BadInput(f"spearman_weighted: {x.size} and {y.size} values, weights of width {w.shape[1]}")
    if np.isnan(x).any() or np.isnan(y).any():
        raise BadInput("spearman_weighted needs complete pairs (drop the NaNs first)")
    total = w.sum(axis=1)
    mid = ((total + 1.0) / 2.0)[:, None]
    dx = _weighted_average_ranks(x, w) - mid
    dy = _weighted_average_ranks(y, w) - mid
    den = np.sqrt((w * dx * dx).sum(axis=1) * (w * dy * dy).sum(axis=1))
    ok = (den > _EPS) & (total >= 2)
    out = np.full(w.shape[0], np.nan)
    np.divide((w * dx * dy).sum(axis=1), den, out=out, where=ok)
    return _f(np.clip(out, -1.0, 1.0))


def spearman(a: ArrayLike, b: ArrayLike) -> float:
    """Spearman's ρ: Pearson's r between average ranks (ties share their mean rank), over pairs
    without a NaN (:func:`spearman_weighted` with unit weights). Equals ``scipy.stats.spearmanr``.
    NaN with fewer than two pairs or a constant side."""
    x, y = _complete_pairs(a, b)
    if x.size < 2:
        return float("nan")
    return float(spearman_weighted(x, y, np.ones(x.size))[0])


def kendall(a: ArrayLike, b: ArrayLike) -> float:
    """Kendall's τ_b over pairs without a NaN:
    ``τ_b = (P − Q) / √((n₀ − n₁)(n₀ − n₂))`` with P/Q the concordant/discordant pairs,
    ``n₀ = n(n−1)/2`` and ``n₁``, ``n₂`` the pairs tied on each side (Kendall 1945). Counted on the
    contingency table of distinct values with 2-D cumulative sums, so rating scales cost O(n + q²).
    Equals ``scipy.stats.kendalltau`` (variant b). NaN with fewer than two pairs or a constant side.
    """
    x, y = _complete_pairs(a, b)
    n = x.size
    if n < 2:
        return float("nan")
    ux, ix = np.unique(x, return_inverse=True)
    uy, iy = np.unique(y, return_inverse=True)
    if ux.size * uy.size > 4_000_000:  # near-continuous scores: the table would not fit; sort instead
        return _kendall_sorted(x, y)
    t = np.zeros((ux.size, uy.size))
    np.add.at(t, (ix, iy), 1.0)
    # strictly greater on both axes / greater on x and smaller on y
    ge = t[::-1, ::-1].cumsum(0).cumsum(1)[::-1, ::-1]
    above = np.zeros_like(t)
    above[:-1, :-1] = ge[1:, 1:]
    le = t[::-1, :].cumsum(0)[::-1, :].cumsum(1)
    below = np.zeros_like(t)
    below[:-1, 1:] = le[1:, :-1]
    concordant = float((t * above).sum())
    discordant = float((t * below).sum())
    return _tau_b(concordant - discordant, n, t.sum(axis=1), t.sum(axis=0))


def _tau_b(s: float, n: int, tx: FloatArray, ty: FloatArray) -> float:
    n0 = n * (n - 1) / 2.0
    n1 = float((tx * (tx - 1)).sum() / 2.0)
    n2 = float((ty * (ty - 1)).sum() / 2.0)
    den = np.sqrt((n0 - n1) * (n0 - n2))
    if den <= _EPS:
        return float("nan")
    return float(np.clip(s / den, -1.0, 1.0))


def _kendall_sorted(x: FloatArray, y: FloatArray) -> float:
    """τ_b for many distinct values: P − Q from a merge-sort inversion count (Knight 1966)."""
    ys = y[np.lexsort((y, x))]
    _, tx = np.unique(x, return_counts=True)
    _, ty = np.unique(y, return_counts=True)
    _, txy = np.unique(np.column_stack([x, y]), axis=0, return_counts=True)
    n = x.size
    n0 = n * (n - 1) / 2.0
    n1 = float((tx * (tx - 1)).sum() / 2.0)
    n2 = float((ty * (ty - 1)).sum() / 2.0)
    n3 = float((txy * (txy - 1)).sum() / 2.0)
    swaps = _inversions(ys)
    # pairs not tied on x: concordant + discordant + tied-on-y-only = n0 − n1; discordant = swaps
    s = (n0 - n1 - (n2 - n3)) - 2.0 * swaps
    return _tau_b(s, n, tx.astype(np.float64), ty.astype(np.float64))


def _inversions(v: FloatArray) -> float:
    """Number of pairs i < j with v[i] > v[j], by bottom-up merge counting on ranks."""
    ranks = np.searchsorted(np.unique(v), v)
    # Fenwick tree over ranks, scanning from the right: count smaller values already seen.
    size = int(ranks.max()) + 2
    tree = np.zeros(size, dtype=np.int64)
    total = 0
    for r in ranks[::-1].tolist():
        i = r  # count of values with rank < r: prefix sum up to r−1 (1-based index r)
        acc = 0
        while i > 0:
            acc += int(tree[i])
            i -= i & -i
        total += acc
        i = r + 1
        while i < size:
            tree[i] += 1
            i += i & -i
    return float(total)


# ---------------------------------------------------------------- dispatch


@dataclass(frozen=True)
class AgreementResult:
    """One coefficient. ``level`` is the level of measurement it treats values at (alpha, ac1:
    as asked; percent/cohen/fleiss/scott: nominal; spearman/kendall: ordinal) or, for weighted κ,
    the weighting (linear, quadratic). ``n_units`` counts the units that entered (≥ 2 ratings, or
    rated by both raters for two-rater measures); ``n_raters`` the columns with any rating."""

    metric: str
    level: str
    value: float
    n_units: int
    n_raters: int

    def as_dict(self) -> dict[str, object]:
        return {
            "metric": self.metric,
            "level": self.level,
            "value": self.value,
            "n_units": self.n_units,
            "n_raters": self.n_raters,
        }


def agreement(
    metric: str, ratings: ArrayLike, categories: ArrayLike | None = None, level: str | None = None
) -> AgreementResult:
    """Compute a contract metric by name: ``percent`` (per-unit mean), ``cohen``, ``cohen-linear``,
    ``cohen-quadratic``, ``fleiss``, ``alpha`` (at ``level``), ``ac1`` (AC1 at the nominal level,
    AC2 with Gwet's weights for the level: ordinal → ordinal weights, interval → quadratic,
    ratio → ratio), ``scott``, ``spearman``, ``kendall``. Two-rater metrics need exactly two
    columns. ``categories`` None infers the observed values (drops unused levels: pass them).
    ``level`` other than nominal is refused for metrics it does not apply to."""
    if metric not in METRICS:
        raise BadInput(f"unknown metric {metric!r}; use one of {', '.join(METRICS)}")
    arr = as_ratings(ratings)
    lvl = _resolve_level(metric, level)
    n_raters = int((~np.isnan(arr)).any(axis=0).sum())
    if metric in TWO_RATER_METRICS and arr.shape[1] != 2:
        raise BadInput(
            f"{metric} compares exactly two raters, got {arr.shape[1]}; choose two with --raters "
            "or use fleiss, alpha or ac1"
        )
    if metric in ("spearman", "kendall"):
        x, _ = _complete_pairs(arr[:, 0], arr[:, 1])
        fn = spearman if metric == "spearman" else kendall
        return AgreementResult(metric, lvl, fn(arr[:, 0], arr[:, 1]), int(x.size), n_raters)
    stat = unit_statistic(metric, arr, categories, level)
    return AgreementResult(metric, lvl, stat.value(), stat.n_units, n_raters)
