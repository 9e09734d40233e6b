"""What does a judge's pass rate mean? Prevalence corrected for the judge's errors (Rogan–Gladen).

A judge labels n items pass/fail; on the n_l of them that humans also labelled, its sensitivity
(true-positive rate) and specificity (true-negative rate) are

    TPR = TP / (TP + FN),        TNR = TN / (TN + FP).

If the judge's errors do not depend on anything else about the item, its raw pass rate p on the
items is p = θ·TPR + (1 − θ)·(1 − TNR) for the true pass rate θ, so (Rogan & Gladen, 1978)

    θ̂ = (p + TNR − 1) / (TPR + TNR − 1),   clipped to [0, 1].

The estimator needs TPR + TNR − 1 (Youden's J) > 0, a judge better than chance; near 0 it is
unstable, which `warning` says (below `warn_below`, default 0.2). Undefined cases return NaN:
labelled items of only one human class (TPR or TNR has no denominator), J ≤ 0, or no items.

The confidence interval is a percentile bootstrap that resamples both sources of error: the
labelled items (their 2×2 table drawn from the multinomial of its cells: the same distribution as
resampling rows) and the judge's labels on the items without a human label (a binomial draw of
their pass count); the raw rate is recomputed over all items each time. Replicates where J ≤ 0 or
a class is empty are dropped, and how many were kept is reported. `judgy`
(`estimate_success_rate`) resamples only the labelled items; with `resample_unlabelled=False`
this estimator is the same, and the tests compare the two.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from judgepanel.errors import BadInput


@dataclass(frozen=True)
class Prevalence:
    raw_rate: float  # the judge's pass rate over all items it labelled
    corrected_rate: float  # Rogan–Gladen θ̂, clipped to [0, 1]; NaN where undefined
    ci: tuple[float, float] | None
    tpr: float
    tnr: float
    youden: float  # TPR + TNR − 1
    n_labelled: int
    n_unlabelled: int
    n_positive: int  # labelled items humans call pass
    n_negative: int
    n_boot: int
    kept_replicates: int
    warning: str | None

    def as_dict(self) -> dict[str, Any]:
        def num(x: float) -> float | None:
            return None if not math.isfinite(x) else float(x)

        return {
            "raw_rate": num(self.raw_rate),
            "corrected_rate": num(self.corrected_rate),
            "ci": None if self.ci is None else [float(self.ci[0]), float(self.ci[1])],
            "tpr": num(self.tpr),
            "tnr": num(self.tnr),
            "youden": num(self.youden),
            "n_labelled": self.n_labelled,
            "n_unlabelled": self.n_unlabelled,
            "n_positive": self.n_positive,
            "n_negative": self.n_negative,
            "n_boot": self.n_boot,
            "kept_replicates": self.kept_replicates,
            "warning": self.warning,
        }


def rogan_gladen(raw: ArrayLike, tpr: ArrayLike, tnr: ArrayLike) -> Any:
    """θ̂ = (p + TNR − 1) / (TPR + TNR − 1) clipped to [0, 1]; NaN where TPR + TNR ≤ 1."""
    p, se, sp = (np.asarray(x, dtype=np.float64) for x in (raw, tpr, tnr))
    j = se + sp - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(j > 0, np.clip((p + sp - 1.0) / np.where(j > 0, j, 1.0), 0.0, 1.0), np.nan)
    return out if out.ndim else float(out)


def _binary(x: ArrayLike, name: str) -> np.ndarray[Any, np.dtype[np.int64]]:
    a = np.asarray(x)
    if a.ndim != 1:
        raise BadInput(f"{name} must be one-dimensional")
    if a.size and not np.isin(a, [0, 1, True, False]).all():
        raise BadInput(f"{name} must hold 0/1 (fail/pass) values only")
    return a.astype(np.int64)


def corrected_prevalence(
    human: ArrayLike,
    judge_labelled: ArrayLike,
    judge_unlabelled: ArrayLike,
    *,
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    resample_unlabelled: bool = True,
    warn_below: float = 0.2,
) -> Prevalence:
    """`human[i]`, `judge_labelled[i]`: the human and the judge label (1 pass, 0 fail) of labelled
    item i; `judge_unlabelled`: the judge's labels of the items no human labelled."""
    h = _binary(human, "human labels")
    jl = _binary(judge_labelled, "judge labels")
    ju = _binary(judge_unlabelled, "judge labels (unlabelled items)")
    if h.size != jl.size:
        raise BadInput(f"{h.size} human labels for {jl.size} judge labels")
    if not 0 < confidence < 1:
        raise BadInput(f"confidence must lie in (0, 1), got {confidence}")
    if n_boot < 0:
        raise BadInput(f"--bootstrap must not be negative, got {n_boot}")
    tp = int(((h == 1) & (jl == 1)).sum())
    fn = int(((h == 1) & (jl == 0)).sum())
    fp = int(((h == 0) & (jl == 1)).sum())
    tn = int(((h == 0) & (jl == 0)).sum())
    n_l, n_u = int(h.size), int(ju.size)
    pos, neg = tp + fn, fp + tn
    tpr = tp / pos if pos else float("nan")
    tnr = tn / neg if neg else float("nan")
    n = n_l + n_u
    raw = (int(jl.sum()) + int(ju.sum())) / n if n else float("nan")
    youden = tpr + tnr - 1.0
    theta = float(rogan_gladen(raw, tpr, tnr)) if math.isfinite(youden) else float("nan")

    warning = None
    if not pos or not neg:
        warning = "the labelled items hold only one human class: sensitivity or specificity is undefined"
    elif youden <= 0:
        warning = f"the judge is no better than chance on the labelled items (TPR + TNR − 1 = {youden:.3f})"
    elif youden < warn_below:
        warning = f"TPR + TNR − 1 = {youden:.3f} is near 0: the correction is unstable"

    ci = None
    kept = 0
    if n_boot > 0 and math.isfinite(theta):
        rng = np.random.default_rng(seed)
        cells = rng.multinomial(n_l, np.array([tp, fn, fp, tn], dtype=np.float64) / n_l, size=n_boot)
        b_tp, b_fn, b_fp, b_tn = cells.T
        b_pos, b_neg = b_tp + b_fn, b_fp + b_tn
        with np.errstate(divide="ignore", invalid="ignore"):
            b_tpr = np.where(b_pos > 0, b_tp / np.where(b_pos > 0, b_pos, 1), np.nan)
            b_tnr = np.where(b_neg > 0, b_tn / np.where(b_neg > 0, b_neg, 1), np.nan)
        u_pass = (
            rng.binomial(n_u, ju.mean(), size=n_boot)
            if resample_unlabelled and n_u
            else np.full(n_boot, ju.sum())
        )
        b_raw = ((b_tp + b_fp) + u_pass) / n if resample_unlabelled else np.full(n_boot, raw)
        ok = np.isfinite(b_tpr) & np.isfinite(b_tnr) & (b_tpr + b_tnr - 1.0 > 0)
        kept = int(ok.sum())
        if kept:
            reps = rogan_gladen(b_raw[ok], b_tpr[ok], b_tnr[ok])
            alpha = (1.0 - confidence) / 2.0
            ci = (float(np.quantile(reps, alpha)), float(np.quantile(reps, 1.0 - alpha)))
    return Prevalence(
        raw_rate=raw,
        corrected_rate=theta,
        ci=ci,
        tpr=tpr,
        tnr=tnr,
        youden=youden,
        n_labelled=n_l,
        n_unlabelled=n_u,
        n_positive=pos,
        n_negative=neg,
        n_boot=n_boot,
        kept_replicates=kept,
        warning=warning,
    )
