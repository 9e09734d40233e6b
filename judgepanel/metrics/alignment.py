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
  the interval is the percentile interval of the replicates (Efron & Tibshirani 1993).
- ``paired_exact_tost``: TOST (:func:`~judgepanel.metrics.equivalence.tost`) of the per-item
  difference in exact agreement, aligned − original, ``d_i = 1[A_i = h_i] − 1[O_i = h_i]``, with
  ``se = sd(d)/√n`` and ``df = n − 1`` — statsmodels' ``ttost_paired`` on the two indicator vectors
  (cross-checked in the tests). It treats items as independent; the group bootstrap intervals of
  the deltas are the clustered view.

Arrays in, frozen dataclasses out; NaN where a value is undefined.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from judgepanel.errors import BadInput
from judgepanel.metrics.agreement import FloatArray, as_categories
from judgepanel.metrics.bootstrap import group_codes, interval, resample_counts, resample_mode
from judgepanel.metrics.conditions import STATISTICS, Comparisons, Estimate, item_tables, table_statistics
from judgepanel.metrics.equivalence import Equivalence, tost


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
    for label, p in (("dev", dev), ("eval", eval_)):
        a, o, both = _tables(p, cats)
        value = _gain(a, o, both[None, :], cats)
        r = _gain(a, o, _counts(p, mode, n_boot, rng) * both[None, :], cats)
        reps[label] = r
        out[label] = {s: _est(r[s], float(value[s][0]), confidence) for s in STATISTICS}
    gap = {
        s: _est(
            reps["dev"][s] - reps["eval"][s],
            out["dev"][s].value - out["eval"][s].value,
            confidence,
        )
        for s in STATISTICS
    }
    return GainGap(out["dev"], out["eval"], gap, n_boot, confidence, seed, mode)


def _est(reps: FloatArray, value: float, confidence: float) -> Estimate:
    ci = interval(reps, value, confidence=confidence, method="percentile")
    return Estimate(value, (ci.lo, ci.hi))


def paired_exact_tost(
    judge_a: ArrayLike, judge_b: ArrayLike, human: ArrayLike, margin: float, *, alpha: float = 0.05
) -> Equivalence:
    """TOST of mean(1[a = h] − 1[b = h]) within ±margin (see the module docstring)."""
    if not margin > 0:
        raise BadInput(f"an equivalence margin must be positive, got {margin}")
    a, b, h = (np.asarray(x, dtype=np.float64).ravel() for x in (judge_a, judge_b, human))
    if not (a.shape == b.shape == h.shape):
        raise BadInput(f"arrays differ in length: {a.size}, {b.size}, {h.size}")
    d = (a == h).astype(np.float64) - (b == h).astype(np.float64)
    n = d.size
    if n < 2:
        nan = float("nan")
        return tost(float(d.mean()) if n else nan, nan, -margin, margin, df=None, alpha=alpha)
    se = float(np.std(d, ddof=1) / np.sqrt(n))
    return tost(float(d.mean()), se, -margin, margin, df=float(n - 1), alpha=alpha)


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
