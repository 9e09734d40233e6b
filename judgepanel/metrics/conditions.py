"""The rubric-condition study: how well one judge's scores match human ratings under each prompt
condition (no rubric / criteria / anchored rubric), with item-bootstrap CIs and paired differences.

Input per condition: aligned arrays of (judge score, human score, item index) *comparisons*. With
one human reference per item (the group's rounded mean) there is one comparison per item; with
`--per-human` one per (item, human), all of an item's comparisons sharing its index. Every
statistic is then a function of the q×q contingency table ``T[k, l]`` = number of comparisons with
judge score ``x_k`` and human score ``x_l`` over the scale's levels ``x``:

- exact agreement ``p_o = Σ_k T_kk / N``;
- Cohen's κ (Cohen 1960) ``(p_o − p_e)/(1 − p_e)``, ``p_e = Σ_k T_k· T_·k / N²``;
- quadratic-weighted κ (QWK; Cohen 1968) with agreement weights ``w_kl = 1 − (x_k − x_l)² /
  (x_max − x_min)²``: ``(Σ w T/N − Σ w T_k· T_·l/N²)/(1 − Σ w T_k· T_·l/N²)``; on a two-level scale
  it equals κ;
- Spearman's ρ: Pearson's r of the average ranks. With discrete scores every comparison in
  category k has the same average rank ``r_k = (cumulative count before k) + (T_k· + 1)/2``, so ρ
  is the count-weighted Pearson correlation of ``r_k`` and ``s_l`` over the cells of ``T`` —
  equal to ``scipy.stats.spearmanr`` on the expanded comparisons.

Bootstrap (Efron & Tibshirani 1993, percentile interval): resample *items* with replacement, or
with ``resample="groups"`` (the default where items share groups) whole groups — an article's
items enter a replicate together, as often as the article was drawn
(multinomial counts ``w_b`` over the items, :func:`~judgepanel.metrics.bootstrap.resample_counts`);
replicate b's table is ``w_b @ U`` with ``U[u]`` item u's own flattened table, so a replicate costs
one matrix product and an item's comparisons (its humans) always move together. All conditions are
evaluated on the *same* draws, so a paired difference (rubric − none, criteria − none) is the
difference of replicate values over the items both conditions judged, and item difficulty, shared
by both conditions, cancels out of its interval.

Intervals over few groups (issue 30 §1): below 20 resampled units (groups, or items with
``resample="items"``) the percentile interval is replaced by ``θ̂ ± t_{G−1}·SE``
(:func:`~judgepanel.metrics.group_ci.group_interval`): exact agreement and its paired difference,
means of indicators, take the CR1 cluster-robust SE computed from the per-group tables; κ, QWK and
ρ take the group-jackknife SE (``table_statistics`` of the total table minus each group's table,
G leave-one-group-out values in one call). Each :class:`Estimate` records its ``method``. One
group gives no interval (NaN): it has no spread of its own.

Undefined values are NaN (JSON null), never a guess: no comparison (n = 0) leaves everything NaN;
κ and QWK are NaN when ``p_e = 1`` (judge and humans used one and the same single level: perfect
but uninformative agreement, as scikit-learn's ``cohen_kappa_score`` gives); ρ is NaN with fewer
than two comparisons or a constant side. n = 1 gives exact 0 or 1, κ 0 (disagree) or NaN (agree).
Replicates where a value is undefined are dropped; with fewer than half defined the interval is
(NaN, NaN), as everywhere in :mod:`~judgepanel.metrics.bootstrap`.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgepanel.errors import BadInput
from judgepanel.metrics.agreement import FloatArray, as_categories, category_codes, weight_matrix
from judgepanel.metrics.bootstrap import group_codes, interval, resample_counts, resample_mode
from judgepanel.metrics.group_ci import (
    PERCENTILE,
    T_CR1,
    T_JACKKNIFE,
    cr1_difference_se,
    cr1_ratio_se,
    group_interval,
    jackknife_se,
    uses_t,
)

STATISTICS: tuple[str, ...] = ("exact", "kappa", "qwk", "spearman")
BASELINE = "none"
_EPS = 1e-12


@dataclass(frozen=True)
class Estimate:
    """A value with its interval ``(lo, hi)`` (NaN where undefined) and how the interval was made
    (``method``, a :data:`~judgepanel.metrics.group_ci.CI_METHODS` name)."""

    value: float
    ci: tuple[float, float]
    method: str = PERCENTILE


@dataclass(frozen=True)
class ConditionAgreement:
    """Judge-vs-human agreement under one condition; ``n`` counts comparisons, ``items`` items."""

    n: int
    items: int
    exact: Estimate
    kappa: Estimate
    qwk: Estimate
    spearman: Estimate


@dataclass(frozen=True)
class ConditionDelta:
    """``condition − baseline`` for each statistic over the ``items`` both judged (paired)."""

    condition: str
    baseline: str
    items: int
    exact: Estimate
    kappa: Estimate
    qwk: Estimate
    spearman: Estimate


@dataclass(frozen=True)
class ConditionStudy:
    conditions: Mapping[str, ConditionAgreement]
    deltas: Mapping[str, ConditionDelta]  # keyed "<condition>_vs_<baseline>"
    categories: tuple[float, ...]
    n_boot: int
    confidence: float
    seed: int
    resample: str = "items"
    n_groups: int | None = None
    groups_in_data: int = 0  # distinct groups among the judged items (an item without one: its own)


@dataclass(frozen=True)
class Comparisons:
    """One condition's comparisons: judge and human scores and the item each belongs to
    (an index into the study's items, shared by all conditions)."""

    judge: FloatArray
    human: FloatArray
    item: NDArray[np.intp]

    @classmethod
    def of(cls, judge: ArrayLike, human: ArrayLike, item: ArrayLike) -> Comparisons:
        j = np.asarray(judge, dtype=np.float64).ravel()
        h = np.asarray(human, dtype=np.float64).ravel()
        u = np.asarray(item, dtype=np.intp).ravel()
        if not (j.shape == h.shape == u.shape):
            raise BadInput(f"judge, human and item arrays differ in length: {j.size}, {h.size}, {u.size}")
        if np.isnan(j).any() or np.isnan(h).any():
            raise BadInput("comparisons must not hold missing scores; leave the item out instead")
        if u.size and u.min() < 0:
            raise BadInput("item indices must be non-negative")
        return cls(j, h, u)


# ---------------------------------------------------------------- tables -> statistics


def item_tables(c: Comparisons, categories: FloatArray, n_items: int) -> FloatArray:
    """``U``: item × (q·q) counts of (judge level, human level) comparisons."""
    q = categories.size
    jk = category_codes(c.judge[:, None], categories)[:, 0]
    hk = category_codes(c.human[:, None], categories)[:, 0]
    flat = c.item * (q * q) + jk * q + hk
    return np.bincount(flat, minlength=n_items * q * q).reshape(n_items, q * q).astype(np.float64)


def table_statistics(tables: FloatArray, categories: FloatArray) -> dict[str, FloatArray]:
    """Exact, κ, QWK and Spearman ρ of each q×q table in ``tables`` (… × q·q, flattened rows)."""
    q = categories.size
    t = tables.reshape(-1, q, q)
    n = t.sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = t / n[:, None, None]
        row, col = p.sum(axis=2), p.sum(axis=1)  # judge, human margins
        expected = row[:, :, None] * col[:, None, :]
        out: dict[str, FloatArray] = {"exact": np.trace(p, axis1=1, axis2=2)}
        for name, w in (("kappa", np.eye(q)), ("qwk", weight_matrix(categories, "quadratic"))):
            po = (w * p).sum(axis=(1, 2))
            pe = (w * expected).sum(axis=(1, 2))
            out[name] = np.where(1.0 - pe > _EPS, (po - pe) / (1.0 - pe), np.nan)
        # average rank of each level on each side, then the count-weighted Pearson r of the ranks
        tj, th = t.sum(axis=2), t.sum(axis=1)
        rj = np.cumsum(tj, axis=1) - tj + (tj + 1.0) / 2.0
        rh = np.cumsum(th, axis=1) - th + (th + 1.0) / 2.0
        mean = (n + 1.0) / 2.0
        dj, dh = rj - mean[:, None], rh - mean[:, None]
        cov = (t * dj[:, :, None] * dh[:, None, :]).sum(axis=(1, 2))
        var_j = (tj * dj**2).sum(axis=1)
        var_h = (th * dh**2).sum(axis=1)
        den = np.sqrt(var_j * var_h)
        out["spearman"] = np.where((den > _EPS) & (n >= 2), np.clip(cov / den, -1.0, 1.0), np.nan)
    out["exact"] = np.where(n > 0, out["exact"], np.nan)
    return out


# ---------------------------------------------------------------- the study


def _estimate(reps: FloatArray, value: float, confidence: float) -> Estimate:
    ci = interval(reps, value, confidence=confidence, method="percentile")
    return Estimate(float(value), (ci.lo, ci.hi))


def group_tables(tables: FloatArray, codes: NDArray[np.intp], n_groups: int) -> FloatArray:
    """Per-group sums of item tables (G × q·q)."""
    onehot = (codes[:, None] == np.arange(n_groups)[None, :]).astype(np.float64)
    out: FloatArray = onehot.T @ tables
    return out


def _diag(gt: FloatArray, q: int) -> FloatArray:
    return np.trace(gt.reshape(-1, q, q), axis1=1, axis2=2) if gt.size else np.zeros(0)


def group_ses(
    gt_a: FloatArray, cats: FloatArray, gt_b: FloatArray | None = None
) -> tuple[dict[str, float], int]:
    """Each statistic's small-sample standard error from the group tables of one condition
    (``gt_a``) or of a paired difference (``gt_a`` − ``gt_b``, the same groups): CR1 for exact
    agreement, the group jackknife for the others; and G, the groups with a comparison."""
    q = cats.size
    keep = gt_a.sum(axis=1) > 0
    if gt_b is not None:
        keep |= gt_b.sum(axis=1) > 0
    a = gt_a[keep]
    b = gt_b[keep] if gt_b is not None else None
    g = int(keep.sum())
    ja = table_statistics(a.sum(axis=0, keepdims=True) - a, cats)
    jack = ja
    if b is not None:
        jb = table_statistics(b.sum(axis=0, keepdims=True) - b, cats)
        jack = {s: ja[s] - jb[s] for s in STATISTICS}
    out = {s: jackknife_se(jack[s]) for s in STATISTICS}
    out["exact"] = (
        cr1_ratio_se(_diag(a, q), a.sum(axis=1))
        if b is None
        else cr1_difference_se(_diag(a, q), a.sum(axis=1), _diag(b, q), b.sum(axis=1))
    )
    return out, g


def statistic_bounds(statistic: str, *, paired: bool = False, terms: int = 1) -> tuple[float, float]:
    """The range of a statistic (exact in [0, 1], the others in [−1, 1]), of a difference of two
    (``paired``), or of a difference of ``terms`` such differences."""
    lo, hi = (0.0, 1.0) if statistic == "exact" else (-1.0, 1.0)
    if paired:
        lo, hi = lo - hi, hi - lo
    return lo * terms, hi * terms


def se_method(statistic: str) -> str:
    return T_CR1 if statistic == "exact" else T_JACKKNIFE


def small_sample_estimates(
    values: Mapping[str, float],
    reps: Mapping[str, FloatArray],
    gt_a: FloatArray,
    cats: FloatArray,
    confidence: float,
    gt_b: FloatArray | None = None,
) -> dict[str, Estimate]:
    """Every statistic's :class:`Estimate` by :func:`~judgepanel.metrics.group_ci.group_interval`,
    from the group tables of one condition (``gt_a``) or, for a paired difference, of both
    (``gt_a − gt_b``, the same groups in both). Groups without a comparison are left out of G."""
    g = int(((gt_a.sum(axis=1) > 0) | ((gt_b if gt_b is not None else gt_a).sum(axis=1) > 0)).sum())
    ses = group_ses(gt_a, cats, gt_b)[0] if uses_t(g) else {}
    out: dict[str, Estimate] = {}
    for s in STATISTICS:
        gi = group_interval(
            values[s],
            g,
            replicates=reps[s],
            se=ses.get(s, float("nan")),
            se_method=se_method(s),
            confidence=confidence,
            bounds=statistic_bounds(s, paired=gt_b is not None),
        )
        out[s] = Estimate(float(values[s]), (gi.lo, gi.hi), gi.method)
    return out


def condition_study(
    comparisons: Mapping[str, Comparisons],
    categories: ArrayLike,
    *,
    n_items: int | None = None,
    baseline: str = BASELINE,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    groups: Sequence[Hashable | None] | None = None,
    resample: str | None = None,
) -> ConditionStudy:
    """Agreement with humans per condition and the paired differences of every other condition
    against ``baseline`` (when present), all from the same item resamples. ``groups`` (one key per
    item) and ``resample`` (``groups`` | ``items``, default ``groups`` where items share groups)
    choose what a replicate draws: whole groups (articles) keep an article's items together."""
    if n_boot < 1:
        raise BadInput(f"the number of bootstrap replicates must be at least 1, got {n_boot}")
    if not 0.0 < confidence < 1.0:
        raise BadInput(f"the confidence level must lie strictly between 0 and 1, got {confidence}")
    cats = as_categories(categories, np.zeros((0, 1)))
    if cats.size < 1:
        raise BadInput("the scale needs at least one level")
    names = list(comparisons)
    top = max((int(c.item.max()) + 1 for c in comparisons.values() if c.item.size), default=0)
    items = top if n_items is None else n_items
    if items < top:
        raise BadInput(f"an item index is {top - 1} but n_items is {items}")
    tables = {name: item_tables(comparisons[name], cats, items) for name in names}
    has = {name: tables[name].sum(axis=1) > 0 for name in names}
    # replicate tables for every condition, and for each paired delta its restricted tables
    pairs = [(name, baseline) for name in names if name != baseline and baseline in tables]
    blocks: dict[str, list[FloatArray]] = {name: [] for name in names}
    paired_blocks: dict[str, list[tuple[FloatArray, FloatArray]]] = {a: [] for a, _ in pairs}
    shared = {a: has[a] & has[b] for a, b in pairs}
    if groups is not None and len(groups) != items:
        raise BadInput(f"{len(groups)} group keys for {items} items")
    mode = resample_mode(resample, groups or [])
    codes, n_groups = group_codes(groups) if groups is not None and mode == "groups" else (None, items)
    for drawn in resample_counts(n_groups, n_boot, np.random.default_rng(seed)):
        counts = drawn if codes is None else drawn[:, codes]
        if items == 0:
            counts = np.zeros((counts.shape[0], 0))
        for name in names:
            blocks[name].append(counts @ tables[name])
        for a, b in pairs:
            w = counts * shared[a]
            paired_blocks[a].append((w @ tables[a], w @ tables[b]))
    # the units the intervals rest on: the drawn groups, or the items themselves
    unit_codes = codes if codes is not None else np.arange(items, dtype=np.intp)
    results: dict[str, ConditionAgreement] = {}
    for name in names:
        value = table_statistics(tables[name].sum(axis=0, keepdims=True), cats)
        reps = table_statistics(np.vstack(blocks[name]), cats)
        est = small_sample_estimates(
            {s: float(value[s][0]) for s in STATISTICS},
            reps,
            group_tables(tables[name], unit_codes, n_groups),
            cats,
            confidence,
        )
        results[name] = ConditionAgreement(
            n=int(comparisons[name].judge.size), items=int(has[name].sum()), **est
        )
    deltas: dict[str, ConditionDelta] = {}
    for a, b in pairs:
        keep = shared[a][:, None]
        va = table_statistics((tables[a] * keep).sum(axis=0, keepdims=True), cats)
        vb = table_statistics((tables[b] * keep).sum(axis=0, keepdims=True), cats)
        ra = table_statistics(np.vstack([x for x, _ in paired_blocks[a]]), cats)
        rb = table_statistics(np.vstack([y for _, y in paired_blocks[a]]), cats)
        est = small_sample_estimates(
            {s: float(va[s][0] - vb[s][0]) for s in STATISTICS},
            {s: ra[s] - rb[s] for s in STATISTICS},
            group_tables(tables[a] * keep, unit_codes, n_groups),
            cats,
            confidence,
            group_tables(tables[b] * keep, unit_codes, n_groups),
        )
        deltas[f"{a}_vs_{b}"] = ConditionDelta(a, b, int(shared[a].sum()), **est)
    judged = np.zeros(items, dtype=bool)
    for name in names:
        judged |= has[name]
    all_codes, _ = group_codes(groups) if groups is not None else (np.arange(items, dtype=np.intp), items)
    return ConditionStudy(
        results,
        deltas,
        tuple(float(c) for c in cats),
        n_boot,
        confidence,
        seed,
        mode,
        n_groups if codes is not None else None,
        int(np.unique(all_codes[judged]).size) if items else 0,
    )


def rounded_mean(values: Sequence[float]) -> float:
    """The human reference of one item: the mean of its ratings rounded half up (2.5 -> 3), so
    it lies on the scale and ties do not depend on numpy's round-half-to-even."""
    if not values:
        raise BadInput("no human rating to average")
    return float(np.floor(float(np.mean(values)) + 0.5))
