"""A vectorised simulator of the re-annotation design study: how often does a judge decision taken
on sparse human overlap differ from the one the full human matrix gives?

Model (one replication; R replications run at once along a leading axis)
------------------------------------------------------------------------
- n items with true classes drawn from ``prevalence`` over L classes (uniform by default).
- K humans and J judges; an annotator of accuracy a gives the true class with probability a, else a
  class drawn uniformly from the other L − 1.
- Full design: every human labels every item. Sparse design: human 1 (the primary) labels every
  item; each of the K − 1 secondaries labels m = round(ρ n) items chosen by an allocation design of
  ``metrics.design`` (the secondaries' simulated labels are what Seq-Refined sees once assigned).
- The decision is the leave-one-annotator-out rule of ``metrics.validation.loo_rule`` with
  observed agreement: d_k = S(judge; pool) − S(k; pool) over (unit, pool-human) pairs, accept iff
  ω = mean_k 1[d_k ≥ −ε] ≥ 0.5; the ranking score of a judge is mean_k d_k.

Per cell (coverage ρ × design), against the full-matrix decision of the same replication:

- FR (false reject) = P(full accepts, sparse rejects); FA (false accept) = P(full rejects, sparse
  accepts); WDR = FR + FA, the wrong-decision rate; all as shares of replications, per judge and
  averaged over judges. ``full_accept`` is how often the full matrix accepts;
- Top-1 error = P(the sparse ranking's best judge differs from the full ranking's); pairwise rank
  error = share of judge pairs ordered differently;
- the human-pool Krippendorff α (nominal) on the sparse human matrix minus α on the full one:
  bias (mean), SD, and reliability = P(|error| ≤ 0.05).

Every cell reuses the same simulated labels (common random numbers), so differences between
designs are not sampling noise between separate simulations.

What the model can and cannot show: errors are spread evenly over the wrong classes, so whether two
annotators agree depends only on which of them is right, not on the class. With uniform class
shares every primary-label stratum holds the same mix of agreements, and Strat (or Seq-Refined)
draws items that behave exactly like a random draw: they differ from Random only by Monte Carlo
noise. With skewed shares the primary's label says something about whether the primary is right
(a minority label is more often an error), so stratifying on it removes composition noise, and
handing the rounding remainder to the largest strata slightly over-weights the stratum where the
primary is usually right; both move FR and FA by about 0.01 at ρ = 0.05 here. Designs that ignore
label values (Random, Seq-Coverage) decide identically whatever the class shares.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgepanel.errors import BadInput
from judgepanel.metrics.design import DESIGNS, allocate_batch, items_per_annotator

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

RELIABLE = 0.05
AGREEMENTS: tuple[str, ...] = ("observed", "cohen")
_TOL = 1e-12


@dataclass(frozen=True)
class SimConfig:
    n: int = 500
    humans: int = 5
    accuracy: float = 0.85
    classes: int = 2
    judges: tuple[float, ...] = (0.8, 0.85, 0.9)
    coverages: tuple[float, ...] = (0.05, 0.25, 0.5)
    designs: tuple[str, ...] = DESIGNS
    replications: int = 300
    seed: int = 0
    epsilon: float = 0.05
    prevalence: tuple[float, ...] | None = None
    agreement: str = "observed"

    def check(self) -> None:
        if self.n < 2:
            raise BadInput(f"n must be at least 2, got {self.n}")
        if self.humans < 2:
            raise BadInput(f"humans must be at least 2 (a primary and a secondary), got {self.humans}")
        if self.classes < 2:
            raise BadInput(f"classes must be at least 2, got {self.classes}")
        for a in (self.accuracy, *self.judges):
            if not 0.0 <= a <= 1.0:
                raise BadInput(f"accuracies must be in [0, 1], got {a}")
        if not self.judges:
            raise BadInput("give at least one judge accuracy")
        for c in self.coverages:
            if not 0.0 < c <= 1.0:
                raise BadInput(f"coverage must be in (0, 1], got {c}")
        for d in self.designs:
            if d not in DESIGNS:
                raise BadInput(f"unknown design {d!r}; use one of {', '.join(DESIGNS)}")
        if self.agreement not in AGREEMENTS:
            raise BadInput(f"agreement must be one of {', '.join(AGREEMENTS)}, got {self.agreement!r}")
        if self.replications < 1:
            raise BadInput(f"replications must be at least 1, got {self.replications}")
        if self.prevalence is not None:
            p = np.asarray(self.prevalence)
            if p.size != self.classes or (p < 0).any() or not np.isclose(p.sum(), 1.0):
                raise BadInput(f"prevalence must be {self.classes} non-negative shares summing to 1")

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "humans": self.humans,
            "accuracy": self.accuracy,
            "classes": self.classes,
            "judges": list(self.judges),
            "coverages": list(self.coverages),
            "designs": list(self.designs),
            "replications": self.replications,
            "seed": self.seed,
            "epsilon": self.epsilon,
            "prevalence": list(self.prevalence) if self.prevalence else None,
            "agreement": self.agreement,
        }


# ---------------------------------------------------------------- vectorised pieces


def annotate(rng: np.random.Generator, truth: IntArray, accuracy: FloatArray, classes: int) -> IntArray:
    """Labels of annotators with the given accuracies (last axis) for R × n true classes."""
    shape = (*truth.shape, accuracy.size)
    correct = rng.random(shape) < accuracy
    wrong = (truth[..., None] + rng.integers(1, classes, size=shape)) % classes
    return np.where(correct, truth[..., None], wrong).astype(np.int64)


def class_counts(labels: IntArray, mask: BoolArray, classes: int) -> FloatArray:
    """C[r, u, c]: how many observed annotators put unit u in class c."""
    r, n, _ = labels.shape
    cell = np.arange(r * n).reshape(r, n, 1) * classes + labels
    flat = np.bincount(cell[mask], minlength=r * n * classes)
    return flat.reshape(r, n, classes).astype(np.float64)


def _bmm(a: FloatArray, b: FloatArray) -> FloatArray:
    """Σ_n a[r, n, i] b[r, n, j] for every r: a batched matrix product over the unit axis."""
    return np.asarray(np.matmul(np.swapaxes(a, 1, 2), b), dtype=np.float64)


def loo_batch(
    humans: IntArray,
    mask: BoolArray,
    judges: IntArray,
    classes: int,
    epsilon: float,
    agreement: str = "observed",
    counts: FloatArray | None = None,
) -> tuple[BoolArray, FloatArray]:
    """The LOO rule for R replications and J judges at once: humans R × n × K, mask R × n × K (who
    labelled what), judges R × n × J. S is observed agreement or Cohen's κ over the stacked
    (label, pool label) pairs, as ``metrics.validation.loo_rule`` computes them one at a time.
    ``counts`` may pass :func:`class_counts` of (humans, mask) when the caller has it already.
    Returns (accept R × J, mean d_k R × J)."""
    c = class_counts(humans, mask, classes) if counts is None else counts
    at_h = np.take_along_axis(c, humans, axis=2)  # pool-or-self agreeing with each human's label
    at_g = np.take_along_axis(c, judges, axis=2)
    pool = mask.sum(axis=2, keepdims=True) - mask
    elig = (mask & (pool >= 1)).astype(np.float64)
    pairs = np.einsum("rnk,rnk->rk", elig, pool)
    agree_h = np.einsum("rnk,rnk->rk", elig, at_h - 1.0)  # minus the held-out human itself
    same = (humans[..., :, None] == judges[..., None, :]).astype(np.float64)
    agree_j = _bmm(elig, at_g) - np.einsum("rnk,rnkj->rkj", elig, same)
    valid = pairs > 0
    safe = np.where(valid, pairs, 1.0)
    po_h = agree_h / safe
    po_j = agree_j / safe[..., None]
    if agreement == "observed":
        d = po_j - po_h[..., None]
    elif agreement == "cohen":
        # marginals over the stacked pairs: the pool side (C minus the held-out human's own label),
        # the held-out human's side and the judge's side, each weighted by the unit's pool size
        own = (humans[..., None] == np.arange(classes)).astype(np.float64)
        weighted = elig * pool
        pool_m = (_bmm(elig, c) - np.einsum("rnk,rnkc->rkc", elig, own)) / safe[..., None]
        human_m = np.einsum("rnk,rnkc->rkc", weighted, own) / safe[..., None]
        r, n, j = judges.shape
        judge_oh = (judges[..., None] == np.arange(classes)).astype(np.float64).reshape(r, n, j * classes)
        judge_m = _bmm(weighted, judge_oh).reshape(r, -1, j, classes) / safe[..., None, None]
        pe_h = (human_m * pool_m).sum(axis=2)
        pe_j = np.einsum("rkjc,rkc->rkj", judge_m, pool_m)
        with np.errstate(invalid="ignore", divide="ignore"):
            d = (po_j - pe_j) / (1.0 - pe_j) - ((po_h - pe_h) / (1.0 - pe_h))[..., None]
    else:
        raise BadInput(f"the simulator's agreement is observed or cohen, got {agreement!r}")
    valid = valid[..., None] & np.isfinite(d)
    passed = (d >= -epsilon - _TOL) & valid
    n_valid = valid.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        omega = passed.sum(axis=1) / n_valid
        score = np.where(valid, d, 0.0).sum(axis=1) / n_valid
    return (omega >= 0.5) & (n_valid > 0), np.asarray(score, dtype=np.float64)


def alpha_nominal_batch(
    labels: IntArray, mask: BoolArray, classes: int, counts: FloatArray | None = None
) -> FloatArray:
    """Krippendorff's α (nominal) per replication from coincidences of pairable values."""
    c = class_counts(labels, mask, classes) if counts is None else counts
    m = c.sum(axis=2)
    pairable = m >= 2
    den = np.where(pairable, m - 1.0, 1.0)
    diag = np.where(pairable, (c * (c - 1.0)).sum(axis=2) / den, 0.0).sum(axis=1)
    n_c = np.where(pairable[..., None], c, 0.0).sum(axis=1)
    total = n_c.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        d_o = 1.0 - diag / total
        d_e = 1.0 - (n_c * (n_c - 1.0)).sum(axis=1) / (total * (total - 1.0))
        return np.asarray(1.0 - d_o / d_e, dtype=np.float64)


# ---------------------------------------------------------------- the study


@dataclass(frozen=True)
class JudgeCell:
    accuracy: float
    fr: float
    fa: float
    wdr: float
    full_accept: float
    sparse_accept: float

    def as_dict(self) -> dict[str, float]:
        return {
            "fr": self.fr,
            "fa": self.fa,
            "wdr": self.wdr,
            "full_accept": self.full_accept,
            "sparse_accept": self.sparse_accept,
        }


@dataclass(frozen=True)
class Cell:
    coverage: float
    design: str
    items_per_secondary: int
    judges: tuple[JudgeCell, ...]
    top1_error: float
    pairwise_rank_error: float
    alpha_bias: float
    alpha_sd: float
    alpha_reliability: float
    mean_secondary_overlap: float  # realised ρ²n-like overlap between two secondaries

    @property
    def fr(self) -> float:
        return float(np.mean([j.fr for j in self.judges]))

    @property
    def fa(self) -> float:
        return float(np.mean([j.fa for j in self.judges]))

    @property
    def wdr(self) -> float:
        return float(np.mean([j.wdr for j in self.judges]))

    def as_dict(self) -> dict[str, Any]:
        return {
            "coverage": self.coverage,
            "design": self.design,
            "items_per_secondary": self.items_per_secondary,
            "fr": self.fr,
            "fa": self.fa,
            "wdr": self.wdr,
            "judges": {f"{j.accuracy:g}": j.as_dict() for j in self.judges},
            "top1_error": self.top1_error,
            "pairwise_rank_error": self.pairwise_rank_error,
            "alpha": {
                "bias": self.alpha_bias,
                "sd": self.alpha_sd,
                "reliability": self.alpha_reliability,
            },
            "mean_secondary_overlap": self.mean_secondary_overlap,
        }


@dataclass(frozen=True)
class SimResult:
    config: SimConfig
    cells: tuple[Cell, ...]
    alpha_full_mean: float
    seconds: float

    def cell(self, coverage: float, design: str) -> Cell:
        for c in self.cells:
            if c.coverage == coverage and c.design == design:
                return c
        raise KeyError((coverage, design))

    def as_dict(self) -> dict[str, Any]:
        return {
            "params": self.config.as_dict(),
            "alpha_full_mean": self.alpha_full_mean,
            "cells": [c.as_dict() for c in self.cells],
            "runtime_s": self.seconds,
        }


def _rank_errors(sparse: FloatArray, full: FloatArray) -> tuple[float, float]:
    s = np.where(np.isfinite(sparse), sparse, -np.inf)
    f = np.where(np.isfinite(full), full, -np.inf)
    top1 = float((np.argmax(s, axis=1) != np.argmax(f, axis=1)).mean())
    j = s.shape[1]
    if j < 2:
        return top1, 0.0
    a, b = np.triu_indices(j, k=1)
    wrong = np.sign(s[:, a] - s[:, b]) != np.sign(f[:, a] - f[:, b])
    return top1, float(wrong.mean())


def simulate_designs(config: SimConfig) -> SimResult:
    """Run the design study; see the module docstring for what each figure means."""
    config.check()
    start = time.perf_counter()
    rng = np.random.default_rng(config.seed)
    r, n, k, l_ = config.replications, config.n, config.humans, config.classes
    prevalence = np.full(l_, 1.0 / l_) if config.prevalence is None else np.asarray(config.prevalence)
    truth = rng.choice(l_, size=(r, n), p=prevalence).astype(np.int64)
    humans = annotate(rng, truth, np.full(k, config.accuracy), l_)
    judges = annotate(rng, truth, np.asarray(config.judges, dtype=np.float64), l_)
    full_mask = np.ones((r, n, k), dtype=bool)
    full_counts = class_counts(humans, full_mask, l_)
    full_accept, full_score = loo_batch(
        humans, full_mask, judges, l_, config.epsilon, config.agreement, full_counts
    )
    alpha_full = alpha_nominal_batch(humans, full_mask, l_, full_counts)
    cells: list[Cell] = []
    for coverage in config.coverages:
        m = items_per_annotator(n, coverage)
        for design in config.designs:
            # one generator per cell, derived from the seed, so a cell does not depend on the grid
            cell_rng = np.random.default_rng([config.seed, round(coverage * 1e6), DESIGNS.index(design)])
            assigned = allocate_batch(
                humans[..., 0], k - 1, m, design, cell_rng, n_classes=l_, revealed=humans[..., 1:]
            )
            mask = np.concatenate([np.ones((r, n, 1), dtype=bool), np.moveaxis(assigned, 1, 2)], axis=2)
            counts = class_counts(humans, mask, l_)
            accept, score = loo_batch(humans, mask, judges, l_, config.epsilon, config.agreement, counts)
            alpha_err = alpha_nominal_batch(humans, mask, l_, counts) - alpha_full
            ok = np.isfinite(alpha_err)
            err = alpha_err[ok]
            top1, pairwise = _rank_errors(score, full_score)
            if k > 2:
                a = assigned.astype(np.int64)
                ov = np.einsum("rsn,rtn->rst", a, a)
                off = ~np.eye(k - 1, dtype=bool)
                mean_overlap = float(ov[:, off].mean())
            else:
                mean_overlap = float("nan")
            cells.append(
                Cell(
                    coverage=coverage,
                    design=design,
                    items_per_secondary=m,
                    judges=tuple(
                        JudgeCell(
                            accuracy=acc,
                            fr=float((full_accept[:, j] & ~accept[:, j]).mean()),
                            fa=float((~full_accept[:, j] & accept[:, j]).mean()),
                            wdr=float((full_accept[:, j] != accept[:, j]).mean()),
                            full_accept=float(full_accept[:, j].mean()),
                            sparse_accept=float(accept[:, j].mean()),
                        )
                        for j, acc in enumerate(config.judges)
                    ),
                    top1_error=top1,
                    pairwise_rank_error=pairwise,
                    alpha_bias=float(err.mean()) if err.size else float("nan"),
                    alpha_sd=float(err.std(ddof=1)) if err.size > 1 else float("nan"),
                    alpha_reliability=float((np.abs(alpha_err) <= RELIABLE).mean()),
                    mean_secondary_overlap=mean_overlap,
                )
            )
    return SimResult(
        config=config,
        cells=tuple(cells),
        alpha_full_mean=float(np.nanmean(alpha_full)),
        seconds=time.perf_counter() - start,
    )


def parse_floats(text: str, what: str) -> tuple[float, ...]:
    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError as exc:
        raise BadInput(f"{what}: expected comma-separated numbers, got {text!r}") from exc
    if not values:
        raise BadInput(f"{what}: expected at least one number")
    return values


def parse_names(text: str, allowed: Sequence[str], what: str) -> tuple[str, ...]:
    names = tuple(x.strip() for x in text.split(",") if x.strip())
    for x in names:
        if x not in allowed:
            raise BadInput(f"{what}: unknown {x!r}; use {', '.join(allowed)}")
    if not names:
        raise BadInput(f"{what}: expected at least one of {', '.join(allowed)}")
    return names
