"""Statistics of a supervised judge alignment that `metrics.conditions` does not already give.

- ``gain_gap``: the *overfitting gap* of an aligned judge, ``(A_dev − O_dev) − (A_eval − O_eval)``
  for each agreement statistic of :func:`~judgepanel.metrics.conditions.table_statistics` (exact,
  κ, QWK, Spearman ρ), where ``A`` is the aligned judge's and ``O`` the original judge's agreement
  with the human reference on the development (``dev``) or evaluation (``eval``) items. The
  development gain was bought by looking at those items' human labels; the evaluation gain is what
  carries over to new items, so a positive gap is the part of the development gain that does not.
  The two splits hold different items (and groups), so their bootstraps are independent: replicate
  b draws groups (or items) of each split with replacement, each split's paired gain is computed on
  its own draw (aligned and original on the same items), and the gap replicate is the difference;
  the interval is the percentile interval of the replicates (Efron & Tibshirani 1993) when both
  splits have at least 20 groups; otherwise (issue 30 §1) ``gap ± t_df·sqrt(se_dev² + se_eval²)``
  with each split's small-group SE (CR1 for exact agreement, the group jackknife for the others,
  :func:`~judgepanel.metrics.conditions.group_ses`) and Welch–Satterthwaite degrees of freedom.
- ``paired_exact_tost``: TOST (:func:`~judgepanel.metrics.equivalence.tost`) of the mean
  difference in exact agreement, aligned − original, ``d_i = 1[A_i = h_i] − 1[O_i = h_i]``, at
  the level of the groups (articles) the items come from: the CR1 cluster-robust SE of the mean of
  ``d`` with ``df = G − 1`` (:func:`~judgepanel.metrics.group_ci.cluster_mean`; issue 30 §2: the
  intervals were article-level while the TOST treated items as independent). Without groups (each
  item its own) it is statsmodels' ``ttost_paired`` on the two indicator vectors, ``se = sd(d)/√n``
  and ``df = n − 1`` (cross-checked in the tests).
- ``paired_ratio``: the relative change of false positives (or negatives) between two judges on
  the same items, ``FP_a/FP_b − 1``, with the small-group interval of the ratio (group jackknife
  below 20 groups, group-bootstrap percentile from 20) and McNemar's exact test on the discordant
  items (an exact binomial test of ``b`` against ``b + c`` at ½; statsmodels' ``mcnemar(exact=True)``).

Arrays in, frozen dataclasses out; NaN where a value is undefined.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgepanel.errors import BadInput
from judgepanel.metrics.agreement import FloatArray, as_categories
from judgepanel.metrics.bootstrap import group_codes, interval, resample_counts, resample_mode
from judgepanel.metrics.conditions import (
    STATISTICS,
    Comparisons,
    Estimate,
    group_ses,
    group_tables,
    item_tables,
    se_method,
    small_sample_estimates,
    statistic_bounds,
    table_statistics,
)
from judgepanel.metrics.equivalence import Equivalence, tost
from judgepanel.metrics.group_ci import cluster_mean, group_interval, uses_t, welch_df


@dataclass(frozen=True)
class SplitPair:
    """One split's comparisons of the original and the aligned judge, item indices shared;
    ``groups`` one key per item index (None: no group)."""

    original: Comparisons
    aligned: Comparisons
    n_items: int
    groups: Sequence[Hashable | None] | None = None


@dataclass(frozen=True)
class GainGap:
    dev_gain: Mapping[str, Estimate]
    eval_gain: Mapping[str, Estimate]
    gap: Mapping[str, Estimate]
    n_boot: int
    confidence: float
    seed: int
    resample: str


def _tables(p: SplitPair, cats: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    a = item_tables(p.aligned, cats, p.n_items)
    o = item_tables(p.original, cats, p.n_items)
    both = ((a.sum(axis=1) > 0) & (o.sum(axis=1) > 0)).astype(np.float64)
    return a, o, both


def _unit_codes(p: SplitPair, mode: str) -> tuple[NDArray[np.intp], int]:
    if mode == "groups" and p.groups is not None:
        return group_codes(p.groups)
    return np.arange(p.n_items, dtype=np.intp), p.n_items


def _counts(p: SplitPair, mode: str, n_boot: int, rng: np.random.Generator) -> FloatArray:
    if mode == "groups" and p.groups is not None:
        codes, n_groups = group_codes(p.groups)
        drawn = np.vstack(list(resample_counts(n_groups, n_boot, rng)))
        return drawn[:, codes]
    return np.vstack(list(resample_counts(p.n_items, n_boot, rng)))


def _gain(a: FloatArray, o: FloatArray, w: FloatArray, cats: FloatArray) -> dict[str, FloatArray]:
    sa, so = table_statistics(w @ a, cats), table_statistics(w @ o, cats)
    return {s: sa[s] - so[s] for s in STATISTICS}


def gain_gap(
    dev: SplitPair,
    eval_: SplitPair,
    categories: ArrayLike,
    *,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    resample: str | None = None,
) -> GainGap:
    """Development gain, evaluation gain and their difference (see the module docstring)."""
    if n_boot < 1:
        raise BadInput(f"the number of bootstrap replicates must be at least 1, got {n_boot}")
    cats = as_categories(categories, np.zeros((0, 1)))
    mode = resample_mode(resample, list(dev.groups or []) + list(eval_.groups or []))
    rng = np.random.default_rng(seed)
    out: dict[str, dict[str, Estimate]] = {}
    reps: dict[str, dict[str, FloatArray]] = {}
    ses: dict[str, dict[str, float]] = {}
    units: dict[str, int] = {}
    for label, p in (("dev", dev), ("eval", eval_)):
        a, o, both = _tables(p, cats)
        value = _gain(a, o, both[None, :], cats)
        r = _gain(a, o, _counts(p, mode, n_boot, rng) * both[None, :], cats)
        reps[label] = r
        codes, n_units = _unit_codes(p, mode)
        gt_a = group_tables(a * both[:, None], codes, n_units)
        gt_o = group_tables(o * both[:, None], codes, n_units)
        ses[label], units[label] = group_ses(gt_a, cats, gt_o)
        out[label] = small_sample_estimates(
            {s: float(value[s][0]) for s in STATISTICS}, r, gt_a, cats, confidence, gt_o
        )
    fewest = min(units.values())
    gap: dict[str, Estimate] = {}
    for s in STATISTICS:
        gap_value = out["dev"][s].value - out["eval"][s].value
        sd, se_ = ses["dev"][s], ses["eval"][s]
        gi = group_interval(
            gap_value,
            fewest,
            replicates=reps["dev"][s] - reps["eval"][s],
            se=float(np.hypot(sd, se_)),
            df=welch_df(sd, units["dev"] - 1, se_, units["eval"] - 1) if uses_t(fewest) else None,
            se_method=se_method(s),
            confidence=confidence,
            bounds=statistic_bounds(s, paired=True, terms=2),
        )
        gap[s] = Estimate(gap_value, (gi.lo, gi.hi), gi.method)
    return GainGap(out["dev"], out["eval"], gap, n_boot, confidence, seed, mode)


def _est(reps: FloatArray, value: float, confidence: float) -> Estimate:
    ci = interval(reps, value, confidence=confidence, method="percentile")
    return Estimate(value, (ci.lo, ci.hi))


def paired_exact_tost(
    judge_a: ArrayLike,
    judge_b: ArrayLike,
    human: ArrayLike,
    margin: float,
    *,
    alpha: float = 0.05,
    groups: Sequence[Hashable | None] | None = None,
) -> Equivalence:
    """TOST of mean(1[a = h] − 1[b = h]) within ±margin, at the level of ``groups`` (one key per
    item; None: every item its own) — see the module docstring."""
    if not margin > 0:
        raise BadInput(f"an equivalence margin must be positive, got {margin}")
    a, b, h = (np.asarray(x, dtype=np.float64).ravel() for x in (judge_a, judge_b, human))
    if not (a.shape == b.shape == h.shape):
        raise BadInput(f"arrays differ in length: {a.size}, {b.size}, {h.size}")
    d = (a == h).astype(np.float64) - (b == h).astype(np.float64)
    n = d.size
    keys: Sequence[Hashable | None] = list(groups) if groups is not None else [None] * n
    if len(keys) != n:
        raise BadInput(f"{len(keys)} group keys for {n} items")
    mean, se, g = cluster_mean(d, keys)
    if g < 2:
        nan = float("nan")
        return tost(float(d.mean()) if n else nan, nan, -margin, margin, df=None, alpha=alpha)
    return tost(mean, se, -margin, margin, df=float(g - 1), alpha=alpha)


@dataclass(frozen=True)
class BinaryErrors:
    """A judge's errors on a label binarised at ``threshold`` (pass: score ≥ threshold), against the
    human reference: false positives (judge pass, humans fail) and false negatives (judge fail,
    humans pass), with their rates ``fpr = fp / negatives`` and ``fnr = fn / positives`` (NaN
    without any negative or positive). The claim "30–50 % fewer false positives/negatives" is a
    relative change of these counts between two judges on the same items."""

    threshold: float
    n: int
    positives: int
    negatives: int
    fp: int
    fn: int
    fpr: float
    fnr: float


def binary_errors(judge: ArrayLike, human: ArrayLike, threshold: float) -> BinaryErrors:
    j = np.asarray(judge, dtype=np.float64).ravel() >= threshold
    h = np.asarray(human, dtype=np.float64).ravel() >= threshold
    if j.shape != h.shape:
        raise BadInput(f"arrays differ in length: {j.size}, {h.size}")
    pos, neg = int(h.sum()), int((~h).sum())
    fp, fn = int((j & ~h).sum()), int((~j & h).sum())
    return BinaryErrors(
        threshold,
        int(j.size),
        pos,
        neg,
        fp,
        fn,
        fp / neg if neg else float("nan"),
        fn / pos if pos else float("nan"),
    )


@dataclass(frozen=True)
class PairedErrorChange:
    """The relative change of one error count (false positives or negatives at a binarised label)
    from judge b to judge a on the same items, ``count_a / count_b − 1`` (NaN when b made none),
    with its small-group interval (``method``), and McNemar's exact test on the discordant items
    (``only_a`` items where only a erred, ``only_b`` only b; two-sided binomial at ½). McNemar treats
    items as independent; the interval resamples (or leaves out) whole groups."""

    count_a: int
    count_b: int
    change: float
    ci: tuple[float, float]
    method: str
    only_a: int
    only_b: int
    p_exact: float


def paired_error_change(
    error_a: ArrayLike,
    error_b: ArrayLike,
    *,
    groups: Sequence[Hashable | None] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> PairedErrorChange:
    """``error_a``/``error_b``: per item, 1 where that judge made the error (a false positive,
    say). The ratio's interval: below 20 groups ``r̂ ± t_{G−1}·SE`` with the group-jackknife SE of
    the ratio of sums, from 20 on the percentile interval of a group bootstrap of the ratio."""
    from scipy.stats import binomtest

    from judgepanel.metrics.group_ci import group_interval

    a = np.asarray(error_a, dtype=np.float64).ravel()
    b = np.asarray(error_b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise BadInput(f"arrays differ in length: {a.size}, {b.size}")
    codes, g = group_codes(list(groups) if groups is not None else [None] * a.size)
    if codes.size != a.size:
        raise BadInput(f"{codes.size} group keys for {a.size} items")
    sa = np.bincount(codes, weights=a, minlength=g)
    sb = np.bincount(codes, weights=b, minlength=g)
    ta, tb = float(sa.sum()), float(sb.sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        change = ta / tb - 1.0 if tb > 0 else float("nan")
        jack = (ta - sa) / (tb - sb) - 1.0
        jack = np.where(np.isfinite(jack), jack, np.nan)
        counts = (
            np.vstack(list(resample_counts(g, n_boot, np.random.default_rng(seed))))
            if g
            else np.zeros((0, 0))
        )
        reps = (counts @ sa) / (counts @ sb) - 1.0 if g else np.zeros(0)
    gi = group_interval(
        change,
        g,
        replicates=np.where(np.isfinite(reps), reps, np.nan),
        jackknife=jack,
        confidence=confidence,
        bounds=(-1.0, math.inf),  # at most every error gone
    )
    only_a = int(((a > 0) & (b == 0)).sum())
    only_b = int(((b > 0) & (a == 0)).sum())
    p = float(binomtest(only_a, only_a + only_b, 0.5).pvalue) if only_a + only_b else 1.0
    return PairedErrorChange(int(ta), int(tb), change, (gi.lo, gi.hi), gi.method, only_a, only_b, p)
