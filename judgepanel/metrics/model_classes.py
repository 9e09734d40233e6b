"""Model classes for held-out prediction, each tuned by inner cross-validation on training rows.

Four classes over one feature design (``R × n × p``: one design per target rater, labels
``R × n`` with −1 where unused), each with its own grid of settings:

* ``l2``: the multinomial logistic regression of ``metrics.logistic`` (grid: C);
* ``enet``: the same model with an elastic-net penalty, ``metrics.elasticnet`` (grid: C × ρ,
  the L1 share);
* ``ordinal``: the cumulative-link model of ``metrics.ordinal`` (grid: C), for labels with an
  order (pairwise A/B/T: B < T < A);
* ``additive``: a generalised additive model — each feature expanded into a piecewise-linear
  spline (the feature and hinges ``max(0, x − κ)`` at its training quartiles, ``hinge_basis``),
  then the ``l2`` model on the expanded design (grid: C). Nonlinear in each feature, additive
  across them.

``inner_cv`` scores every setting of a class by the mean over inner folds of the held-out mean log
loss (rows of the training split only; ``fold`` gives each row's inner fold), as
``prediction.choose_c`` does for C alone. ``select`` is nested cross-validation's choice among
several classes (or feature sets): per target, the candidate and setting with the lowest inner-CV
loss; it is then refitted on all training rows. The choice never sees a test row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from judgepanel.metrics.elasticnet import fit_enet_many
from judgepanel.metrics.logistic import fit_multinomial_many
from judgepanel.metrics.ordinal import fit_ordinal_many

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
EPS = 1e-15

C_GRID: tuple[float, ...] = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
L1_RATIOS: tuple[float, ...] = (0.25, 0.5, 1.0)
CLASSES: tuple[str, ...] = ("l2", "enet", "ordinal", "additive")
KNOT_QUANTILES: tuple[float, ...] = (0.25, 0.5, 0.75)


class Fitted(Protocol):
    def predict_proba(self, x: Any) -> FloatArray: ...


def grid(kind: str) -> list[dict[str, float]]:
    """The settings the inner CV compares for a class."""
    if kind == "enet":
        return [{"c": c, "l1_ratio": r} for r in L1_RATIOS for c in C_GRID]
    if kind in ("l2", "ordinal", "additive"):
        return [{"c": c} for c in C_GRID]
    raise ValueError(f"unknown model class {kind!r} (known: {', '.join(CLASSES)})")


def hinge_basis(
    x_train: FloatArray, x: FloatArray, quantiles: Sequence[float] = KNOT_QUANTILES
) -> FloatArray:
    """The additive spline design of ``x`` (n × p) with knots from ``x_train`` (m × p): per column
    the column itself, then ``max(0, x − κ)`` for each distinct quantile κ of the training column
    strictly inside its range (a constant or two-valued column gets no hinge)."""
    cols: list[FloatArray] = []
    for j in range(x.shape[1]):
        tr = x_train[:, j]
        cols.append(x[:, j])
        lo, hi = (float(tr.min()), float(tr.max())) if tr.size else (0.0, 0.0)
        knots = sorted({float(q) for q in np.quantile(tr, quantiles)} if tr.size else set())
        for kn in knots:
            if lo < kn < hi:
                cols.append(np.maximum(0.0, x[:, j] - kn))
    return np.column_stack(cols) if cols else np.zeros((x.shape[0], 0))


def additive_design(design: FloatArray, train_rows: IntArray) -> FloatArray:
    """``hinge_basis`` per target (R × n × p → R × n × p'), knots from ``train_rows`` only; the
    targets' widths are padded with zero columns to the widest (weight exactly 0 under L2)."""
    parts = [hinge_basis(design[r, train_rows], design[r]) for r in range(design.shape[0])]
    width = max((q.shape[1] for q in parts), default=0)
    out = np.zeros((design.shape[0], design.shape[1], width))
    for r, q in enumerate(parts):
        out[r, :, : q.shape[1]] = q
    return out


def fit_many(
    kind: str,
    design: FloatArray,
    labels: IntArray,
    k: int,
    setting: dict[str, float],
    ranks: Sequence[int] | None = None,
    init: Any = None,
) -> list[Fitted]:
    """R fits of one class at one setting (``design`` already expanded for ``additive``)."""
    if kind in ("l2", "additive"):
        return list(fit_multinomial_many(design, labels, k, c=setting["c"]))
    if kind == "enet":
        return list(fit_enet_many(design, labels, k, c=setting["c"], l1_ratio=setting["l1_ratio"], init=init))
    if kind == "ordinal":
        if ranks is None:
            raise ValueError("the ordinal class needs the labels' order (ranks)")
        return list(fit_ordinal_many(design, labels, ranks, c=setting["c"]))
    raise ValueError(f"unknown model class {kind!r}")


def inner_cv(
    kind: str,
    design: FloatArray,
    labels: IntArray,
    k: int,
    fold: IntArray,
    ranks: Sequence[int] | None = None,
) -> FloatArray:
    """Mean over inner folds of the held-out mean log loss, per target and setting of
    ``grid(kind)`` (R × settings; NaN for a target with no labels). A target with no label in
    some fold's held-out part averages the folds it has. ``design`` is the training rows only."""
    settings = grid(kind)
    n_models = design.shape[0]
    loss = np.zeros((n_models, len(settings)))
    count = np.zeros((n_models, len(settings)))
    for f in range(int(fold.max(initial=-1)) + 1):
        inner_tr = np.where(fold[None, :] != f, labels, -1)
        held = (fold[None, :] == f) & (labels >= 0)
        x = design
        if kind == "additive":  # knots from the inner training rows only
            x = additive_design(design, np.nonzero(fold != f)[0])
        prev: Any = None
        for j, s in enumerate(settings):
            warm = prev if kind == "enet" and j > 0 and settings[j - 1]["l1_ratio"] == s["l1_ratio"] else None
            fits = fit_many(kind, x, inner_tr, k, s, ranks, init=warm)
            prev = fits
            for r, fit in enumerate(fits):
                rows = np.nonzero(held[r])[0]
                if rows.size == 0:
                    continue
                p = fit.predict_proba(x[r, rows])[np.arange(rows.size), labels[r, rows]]
                loss[r, j] += -float(np.mean(np.log(np.clip(p, EPS, 1.0))))
                count[r, j] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        return loss / count


@dataclass(frozen=True, eq=False)
class Choice:
    """Per target: the chosen candidate (index into the candidates), its setting, its inner-CV loss,
    the fit on all training rows and its test probabilities."""

    candidate: IntArray  # R, −1: no labels
    setting: list[dict[str, float] | None]
    inner_loss: FloatArray  # R
    proba: FloatArray  # R × n_test × K
    fits: list[Fitted | None] = field(default_factory=list)


def tune_and_predict(
    candidates: Sequence[tuple[str, FloatArray]],
    labels: IntArray,
    k: int,
    train: IntArray,
    test: IntArray,
    fold: IntArray,
    ranks: Sequence[int] | None = None,
    cv: Sequence[FloatArray] | None = None,
) -> Choice:
    """Nested CV's choice among ``candidates`` (class, full design R × n × p) per target: the
    candidate and setting with the lowest inner-CV loss on ``train`` rows (``cv`` reuses
    already computed ``inner_cv`` tables, one per candidate), refitted on all ``train`` rows,
    then its probabilities on ``test`` rows. One candidate: that class tuned by inner CV."""
    n_models = labels.shape[0]
    tables = (
        list(cv)
        if cv is not None
        else [inner_cv(kind, x[:, train], labels[:, train], k, fold, ranks) for kind, x in candidates]
    )
    best = np.full(n_models, -1, dtype=np.int64)
    best_setting: list[dict[str, float] | None] = [None] * n_models
    best_loss = np.full(n_models, np.nan)
    for r in range(n_models):
        top = np.inf
        for ci, ((kind, _), table) in enumerate(zip(candidates, tables, strict=True)):
            row = table[r]
            if not np.isfinite(row).any():
                continue
            j = int(np.nanargmin(row))
            if row[j] < top:  # first of equals
                top, best[r], best_setting[r], best_loss[r] = float(row[j]), ci, grid(kind)[j], float(row[j])
    proba = np.full((n_models, test.size, k), np.nan)
    fits: list[Fitted | None] = [None] * n_models
    for r in range(n_models):
        if best[r] < 0:
            continue
        kind, x = candidates[int(best[r])]
        setting = best_setting[r]
        assert setting is not None
        xr = x[r : r + 1]
        if kind == "additive":
            xr = additive_design(xr, train)
        fit = fit_many(kind, xr[:, train], labels[r : r + 1, train], k, setting, ranks)[0]
        fits[r] = fit
        proba[r] = fit.predict_proba(xr[0, test])
    return Choice(best, best_setting, best_loss, proba, fits)
