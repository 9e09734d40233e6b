"""A vectorised simulator of the re-annotation design study: how often does a judge decision taken
on sparse human overlap differ from the one the full human matrix gives?

Model (one replication; replications run in blocks of ``BLOCK`` along a leading axis)
-------------------------------------------------------------------------------------
- n items with true classes drawn from the class shares ``prevalence`` (uniform by default).
- K humans and J judges. An annotator has an accuracy, or one accuracy per true class (a profile:
  ``(0.92, 0.45)`` is right on 92 % of class-0 items and 45 % of class-1 items; for two classes a
  profile is the whole confusion matrix). A wrong label is drawn uniformly from the other L − 1
  classes.
- Optionally a share ``hard_share`` of items is hard (drawn independently of the class): on them
  every human has accuracy ``hard_accuracy`` and judge j has ``hard_judges[j]`` (default the
  humans' hard accuracy), whatever the class.
- Full design: every human labels every item. Sparse design: human 1 (the primary) labels every
  item; each of the K − 1 secondaries labels m = round(ρ n) items chosen by an allocation design of
  ``metrics.design`` (the secondaries' simulated labels are what Seq-Refined sees once assigned).
- The decision is the leave-one-annotator-out rule of ``metrics.validation.loo_rule`` with
  observed agreement (or Cohen's κ): d_k = S(judge; pool) − S(k; pool) over (unit, pool-human)
  pairs, accept iff ω = mean_k 1[d_k ≥ −ε] ≥ 0.5; the ranking score of a judge is mean_k d_k.

Per cell (coverage ρ × design), against the full-matrix decision of the same replication:

- FR (false reject) = P(full accepts, sparse rejects); FA (false accept) = P(full rejects, sparse
  accepts); WDR = FR + FA, the wrong-decision rate; all as shares of replications, per judge and
  averaged over judges, with their Monte Carlo standard errors (replications are independent).
  ``full_accept`` is how often the full matrix accepts, ``score_shift`` the mean of the sparse
  ranking score minus the full one (how much the design moves the judge's measured advantage);
- ``vs_random``: each design minus Random, replication by replication, with the standard error of
  that paired difference;
- Top-1 error = P(the sparse ranking's best judge differs from the full ranking's); pairwise rank
  error = share of judge pairs ordered differently;
- the human-pool Krippendorff α (nominal) on the sparse human matrix minus α on the full one:
  bias (mean), SD, and reliability = P(|error| ≤ 0.05).

Common random numbers: every cell reuses the same simulated labels, and every design at one
coverage draws its items from the same random keys (Random takes the m smallest keys, Strat the
smallest keys within each stratum, …), so design differences are not noise between separate
simulations and their paired standard errors are small.

When stratification matters
---------------------------
Strat draws ``⌊m n_s / n⌋`` items from each stratum s of the primary's labels and gives the
remainder, one item each, to the largest strata. Proportional allocation is self-weighting, so
Strat can move a judge's measured advantage in two ways only:

1. *Composition noise.* A random draw's stratum counts vary binomially; Strat fixes them. That
   lowers the variance of each d_k, which would lower FR for judges the full matrix accepts and FA
   for those it rejects. It is small: most of the variance of d_k is item-level agreement noise
   within strata.
2. *Rounding.* The remainder rule gives the primary's majority-label stratum about half an item
   more than its proportional share (+0.48 of m = 25 items at ρ = 0.05, n = 500, shares 0.8/0.2;
   +0.37 of 125 at ρ = 0.25), and the smallest strata as much less. Each d_k is an average over the
   strata, so it moves by about Σ_s (excess_s / m)(d_k,s − d_k): an O(1/m) shift against O(1/√m)
   noise, which matters at low coverage and fades by ρ = 0.25.

Which way the shift goes depends on where the judge's advantage lies. A held-out secondary is
compared with the primary alone, so its d_k,s is the judge's minus the secondary's agreement with
the primary's label s. A held-out primary is compared with the secondaries, and it agrees with
them most on its majority-label items, where it is usually right: over-weighting them raises
S(primary; pool) and lowers d_0 unless the judge gains as much there. With uniform class shares and class-independent accuracies nothing
distinguishes the strata (whether two annotators agree depends only on who is right, not on the
primary's label), and Strat and Random have the same distribution. With skewed shares:

- a judge uniformly worse than the humans looks relatively better where the primary is often
  wrong (its minority labels), so Strat is slightly stricter with it;
- a lenient judge, better than the humans on the majority class and worse on the minority class,
  gains where the primary says "majority": the four secondaries' d_k rise (+0.007 at ρ = 0.05),
  outweigh the primary's small fall, and Strat lowers FR and raises FA at low coverage. That is
  the pattern the design study reports;
- a strict judge (better on the minority class) gets the reverse: Strat raises FR, lowers FA;
- with five classes and errors spread over four wrong labels, the primary agrees with the
  secondaries far less where it is wrong, its d_0 falls more than the secondaries' rise, and Strat
  raised FR at ρ = 0.05 even for judges better on the majority class.

``benchmarks/study_stratification.py`` measures these settings, and an ablation. Strat with fair
rounding gives each stratum its extra item with probability equal to its fractional quota. The
ablation removes most of the effect, so the rounding, not the reduced composition noise, drives it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgepanel.errors import BadInput
from judgepanel.metrics.design import DESIGNS, allocate_batch, items_per_annotator

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# An accuracy, or one accuracy per true class.
Profile = float | tuple[float, ...]

RELIABLE = 0.05
AGREEMENTS: tuple[str, ...] = ("observed", "cohen")
# replications simulated at once: bounds memory; fixed (not tuned to the machine) so that a seed
# gives the same numbers everywhere
BLOCK = 1000
_TOL = 1e-12


def profile_name(p: Profile) -> str:
    """``0.8`` or ``0.92/0.45``: how a judge is named in tables and JSON keys."""
    return "/".join(f"{x:g}" for x in p) if isinstance(p, tuple) else f"{p:g}"


@dataclass(frozen=True)
class SimConfig:
    n: int = 500
    humans: int = 5
    accuracy: Profile = 0.85
    """Every human's accuracy, or one per true class."""
    classes: int = 2
    judges: tuple[Profile, ...] = (0.8, 0.85, 0.9)
    """Each candidate judge's accuracy, or one per true class."""
    coverages: tuple[float, ...] = (0.05, 0.25, 0.5)
    designs: tuple[str, ...] = DESIGNS
    replications: int = 300
    seed: int = 0
    epsilon: float = 0.05
    prevalence: tuple[float, ...] | None = None
    """Class shares (uniform when None)."""
    agreement: str = "observed"
    hard_share: float = 0.0
    """Share of hard items, drawn independently of the class."""
    hard_accuracy: float = 0.6
    """Every human's accuracy on a hard item."""
    hard_judges: tuple[float, ...] | None = None
    """Each judge's accuracy on a hard item (default: ``hard_accuracy`` for all)."""

    def check(self) -> None:
        if self.n < 2:
            raise BadInput(f"n must be at least 2, got {self.n}")
        if self.humans < 2:
            raise BadInput(f"humans must be at least 2 (a primary and a secondary), got {self.humans}")
        if self.classes < 2:
            raise BadInput(f"classes must be at least 2, got {self.classes}")
        if not self.judges:
            raise BadInput("give at least one judge accuracy")
        for p in (self.accuracy, *self.judges):
            values = p if isinstance(p, tuple) else (p,)
            if isinstance(p, tuple) and len(p) != self.classes:
                raise BadInput(f"an accuracy per class needs {self.classes} values, got {profile_name(p)}")
            for a in values:
                if not 0.0 <= a <= 1.0:
                    raise BadInput(f"accuracies must be in [0, 1], got {a}")
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
        if not 0.0 <= self.epsilon <= 1.0:  # also false for NaN
            raise BadInput(f"epsilon must be in [0, 1], got {self.epsilon}")
        if self.prevalence is not None:
            shares = np.asarray(self.prevalence)
            if shares.size != self.classes or (shares < 0).any() or not np.isclose(shares.sum(), 1.0):
                raise BadInput(f"prevalence must be {self.classes} non-negative shares summing to 1")
        if not 0.0 <= self.hard_share <= 1.0:
            raise BadInput(f"hard share must be in [0, 1], got {self.hard_share}")
        hard = (self.hard_accuracy, *(self.hard_judges or ()))
        if any(not 0.0 <= a <= 1.0 for a in hard):
            raise BadInput("accuracies on hard items must be in [0, 1]")
        if self.hard_judges is not None and len(self.hard_judges) != len(self.judges):
            raise BadInput(
                f"give one hard-item accuracy per judge ({len(self.judges)}), got {len(self.hard_judges)}"
            )

    def shares(self) -> FloatArray:
        if self.prevalence is None:
            return np.full(self.classes, 1.0 / self.classes)
        return np.asarray(self.prevalence, dtype=np.float64)

    def _matrix(self, profiles: Sequence[Profile]) -> FloatArray:
        rows = [p if isinstance(p, tuple) else (p,) * self.classes for p in profiles]
        return np.asarray(rows, dtype=np.float64)

    def human_accuracy(self) -> FloatArray:
        """K × L: accuracy of each human given the true class."""
        return self._matrix([self.accuracy] * self.humans)

    def judge_accuracy(self) -> FloatArray:
        """J × L: accuracy of each judge given the true class."""
        return self._matrix(self.judges)

    def judge_hard_accuracy(self) -> FloatArray:
        if self.hard_judges is None:
            return np.full(len(self.judges), self.hard_accuracy)
        return np.asarray(self.hard_judges, dtype=np.float64)

    def overall_judge_accuracy(self) -> FloatArray:
        """Each judge's expected accuracy under the class shares and the hard-item mixture."""
        shares = self.shares()
        easy = [float(np.dot(j, shares)) if isinstance(j, tuple) else j for j in self.judges]
        hard = self.judge_hard_accuracy()
        h = self.hard_share
        return np.asarray([a if h == 0 else (1 - h) * a + h * b for a, b in zip(easy, hard, strict=True)])

    def as_dict(self) -> dict[str, Any]:
        def plain(p: Profile) -> float | list[float]:
            return list(p) if isinstance(p, tuple) else p

        return {
            "n": self.n,
            "humans": self.humans,
            "accuracy": plain(self.accuracy),
            "classes": self.classes,
            "judges": [plain(j) for j in self.judges],
            "coverages": list(self.coverages),
            "designs": list(self.designs),
            "replications": self.replications,
            "seed": self.seed,
            "epsilon": self.epsilon,
            "prevalence": list(self.prevalence) if self.prevalence else None,
            "agreement": self.agreement,
            "hard_share": self.hard_share,
            "hard_accuracy": self.hard_accuracy,
            "hard_judges": list(self.hard_judges) if self.hard_judges is not None else None,
        }


# ---------------------------------------------------------------- vectorised pieces


def annotate(
    rng: np.random.Generator,
    truth: IntArray,
    accuracy: FloatArray,
    classes: int,
    hard: BoolArray | None = None,
    hard_accuracy: FloatArray | None = None,
) -> IntArray:
    """Labels of A annotators for R × n true classes (result R × n × A). ``accuracy`` is A (one
    accuracy each) or A × L (accuracy given the true class); on items flagged ``hard`` annotator a
    has accuracy ``hard_accuracy[a]`` instead. A wrong label is uniform over the other classes."""
    acc = np.asarray(accuracy, dtype=np.float64)
    shape = (*truth.shape, acc.shape[0])
    p = acc if acc.ndim == 1 else acc.T[truth]
    if hard is not None:
        if hard_accuracy is None:
            raise BadInput("hard items need the annotators' accuracy on them")
        p = np.where(hard[..., None], np.asarray(hard_accuracy, dtype=np.float64), p)
    correct = rng.random(shape) < p
    wrong = (truth[..., None] + rng.integers(1, classes, size=shape)) % classes
    return np.where(correct, truth[..., None], wrong).astype(np.int64)


def draw_panel(config: SimConfig, rng: np.random.Generator, r: int) -> tuple[IntArray, IntArray, IntArray]:
    """One block of r replications of the model: (truth R × n, humans R × n × K, judges R × n × J)."""
    l_ = config.classes
    truth = rng.choice(l_, size=(r, config.n), p=config.shares()).astype(np.int64)
    hard = rng.random((r, config.n)) < config.hard_share if config.hard_share > 0 else None
    humans = annotate(
        rng, truth, config.human_accuracy(), l_, hard, np.full(config.humans, config.hard_accuracy)
    )
    judges = annotate(rng, truth, config.judge_accuracy(), l_, hard, config.judge_hard_accuracy())
    return truth, humans, judges


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


def mean_se(x: FloatArray) -> tuple[float, float]:
    """Mean over independent replications and its standard error s / √R (NaN for R = 1)."""
    mean = float(x.mean())
    se = float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else float("nan")
    return mean, se


@dataclass(frozen=True)
class JudgeCell:
    name: str
    accuracy: float  # expected accuracy under the class shares (and hard items)
    fr: float
    fa: float
    wdr: float
    full_accept: float
    sparse_accept: float
    score_shift: float  # mean of (sparse − full) mean d_k over replications where both exist
    score_sd: float  # its standard deviation over those replications

    def as_dict(self) -> dict[str, float]:
        return {
            "accuracy": self.accuracy,
            "fr": self.fr,
            "fa": self.fa,
            "wdr": self.wdr,
            "full_accept": self.full_accept,
            "sparse_accept": self.sparse_accept,
            "score_shift": self.score_shift,
            "score_sd": self.score_sd,
        }


@dataclass(frozen=True)
class Contrast:
    """A design minus Random at the same coverage, paired by replication, with standard errors."""

    fr: float
    fr_se: float
    fa: float
    fa_se: float
    wdr: float
    wdr_se: float

    def as_dict(self) -> dict[str, float]:
        return {
            "fr": self.fr,
            "fr_se": self.fr_se,
            "fa": self.fa,
            "fa_se": self.fa_se,
            "wdr": self.wdr,
            "wdr_se": self.wdr_se,
        }


@dataclass(frozen=True)
class Cell:
    coverage: float
    design: str
    items_per_secondary: int
    judges: tuple[JudgeCell, ...]
    fr: float  # averaged over judges
    fr_se: float
    fa: float
    fa_se: float
    wdr: float
    wdr_se: float
    vs_random: Contrast | None  # None for Random itself
    top1_error: float
    pairwise_rank_error: float
    alpha_bias: float
    alpha_sd: float
    alpha_reliability: float
    mean_secondary_overlap: float  # realised ρ²n-like overlap between two secondaries

    def as_dict(self) -> dict[str, Any]:
        return {
            "coverage": self.coverage,
            "design": self.design,
            "items_per_secondary": self.items_per_secondary,
            "fr": self.fr,
            "fr_se": self.fr_se,
            "fa": self.fa,
            "fa_se": self.fa_se,
            "wdr": self.wdr,
            "wdr_se": self.wdr_se,
            "vs_random": self.vs_random.as_dict() if self.vs_random else None,
            "judges": {j.name: j.as_dict() for j in self.judges},
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


@dataclass
class _Runs:
    """Per-replication outcomes of one cell, gathered block by block."""

    accept: list[BoolArray] = field(default_factory=list)  # R × J
    score: list[FloatArray] = field(default_factory=list)  # R × J
    alpha_err: list[FloatArray] = field(default_factory=list)  # R
    overlap: list[FloatArray] = field(default_factory=list)  # R


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


def _errors(full: BoolArray, sparse: BoolArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per replication, averaged over judges: false reject, false accept, wrong decision."""
    fr = (full & ~sparse).mean(axis=1)
    fa = (~full & sparse).mean(axis=1)
    return fr, fa, fr + fa


def _shift(sparse: FloatArray, full: FloatArray) -> tuple[float, float]:
    """Mean and SD of the sparse minus the full ranking score, where both are defined."""
    diff = sparse - full
    diff = diff[np.isfinite(diff)]
    mean = float(diff.mean()) if diff.size else float("nan")
    return mean, float(diff.std(ddof=1)) if diff.size > 1 else float("nan")


def _run_block(
    config: SimConfig, block: int, r: int, runs: dict[tuple[float, str], _Runs]
) -> tuple[BoolArray, FloatArray, FloatArray]:
    """Simulate r replications and append every cell's outcomes; returns the full-matrix
    (accept, score, α) of the block."""
    n, k, l_ = config.n, config.humans, config.classes
    _, humans, judges = draw_panel(config, np.random.default_rng([config.seed, block]), r)
    full_mask = np.ones((r, n, k), dtype=bool)
    full_counts = class_counts(humans, full_mask, l_)
    full_accept, full_score = loo_batch(
        humans, full_mask, judges, l_, config.epsilon, config.agreement, full_counts
    )
    alpha_full = alpha_nominal_batch(humans, full_mask, l_, full_counts)
    for coverage, design in runs:
        m = items_per_annotator(n, coverage)
        # the same keys for every design at this coverage (common random numbers), and a cell
        # does not depend on which other cells the grid holds
        keys_rng = np.random.default_rng([config.seed, block, round(coverage * 1e6)])
        assigned = allocate_batch(
            humans[..., 0], k - 1, m, design, keys_rng, n_classes=l_, revealed=humans[..., 1:]
        )
        mask = np.concatenate([np.ones((r, n, 1), dtype=bool), np.moveaxis(assigned, 1, 2)], axis=2)
        counts = class_counts(humans, mask, l_)
        accept, score = loo_batch(humans, mask, judges, l_, config.epsilon, config.agreement, counts)
        out = runs[coverage, design]
        out.accept.append(accept)
        out.score.append(score)
        out.alpha_err.append(alpha_nominal_batch(humans, mask, l_, counts) - alpha_full)
        if k > 2:
            a = assigned.astype(np.int64)
            ov = np.einsum("rsn,rtn->rst", a, a)
            out.overlap.append(ov[:, ~np.eye(k - 1, dtype=bool)].mean(axis=1).astype(np.float64))
    return full_accept, full_score, alpha_full


def simulate_designs(config: SimConfig) -> SimResult:
    """Run the design study; see the module docstring for the model and what each figure means."""
    config.check()
    start = time.perf_counter()
    runs: dict[tuple[float, str], _Runs] = {}
    for coverage in config.coverages:
        # Random always runs: it is the baseline of every other design's paired contrast
        for design in ("random", *config.designs):
            runs.setdefault((coverage, design), _Runs())
    fulls: list[tuple[BoolArray, FloatArray, FloatArray]] = []
    for block, first in enumerate(range(0, config.replications, BLOCK)):
        r = min(BLOCK, config.replications - first)
        fulls.append(_run_block(config, block, r, runs))
    full_accept = np.concatenate([f[0] for f in fulls])
    full_score = np.concatenate([f[1] for f in fulls])
    alpha_full = np.concatenate([f[2] for f in fulls])
    names = [profile_name(j) for j in config.judges]
    overall = config.overall_judge_accuracy()
    cells: list[Cell] = []
    for coverage in config.coverages:
        base = runs[coverage, "random"]
        base_err = _errors(full_accept, np.concatenate(base.accept))
        for design in config.designs:
            out = runs[coverage, design]
            accept = np.concatenate(out.accept)
            score = np.concatenate(out.score)
            alpha_err = np.concatenate(out.alpha_err)
            err = _errors(full_accept, accept)
            (fr, fr_se), (fa, fa_se), (wdr, wdr_se) = (mean_se(e) for e in err)
            contrast = None
            if design != "random":
                diffs = [mean_se(e - b) for e, b in zip(err, base_err, strict=True)]
                contrast = Contrast(*diffs[0], *diffs[1], *diffs[2])
            finite = alpha_err[np.isfinite(alpha_err)]
            top1, pairwise = _rank_errors(score, full_score)
            shifts = [_shift(score[:, j], full_score[:, j]) for j in range(len(names))]
            cells.append(
                Cell(
                    coverage=coverage,
                    design=design,
                    items_per_secondary=items_per_annotator(config.n, coverage),
                    judges=tuple(
                        JudgeCell(
                            name=names[j],
                            accuracy=float(overall[j]),
                            fr=float((full_accept[:, j] & ~accept[:, j]).mean()),
                            fa=float((~full_accept[:, j] & accept[:, j]).mean()),
                            wdr=float((full_accept[:, j] != accept[:, j]).mean()),
                            full_accept=float(full_accept[:, j].mean()),
                            sparse_accept=float(accept[:, j].mean()),
                            score_shift=shifts[j][0],
                            score_sd=shifts[j][1],
                        )
                        for j in range(len(names))
                    ),
                    fr=fr,
                    fr_se=fr_se,
                    fa=fa,
                    fa_se=fa_se,
                    wdr=wdr,
                    wdr_se=wdr_se,
                    vs_random=contrast,
                    top1_error=top1,
                    pairwise_rank_error=pairwise,
                    alpha_bias=float(finite.mean()) if finite.size else float("nan"),
                    alpha_sd=float(finite.std(ddof=1)) if finite.size > 1 else float("nan"),
                    alpha_reliability=float((np.abs(alpha_err) <= RELIABLE).mean()),
                    mean_secondary_overlap=(
                        float(np.concatenate(out.overlap).mean()) if out.overlap else float("nan")
                    ),
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


def parse_profile(text: str, what: str) -> Profile:
    """``0.85`` (one accuracy) or ``0.9/0.7`` (one per true class, in class order)."""
    try:
        values = tuple(float(x) for x in text.split("/"))
    except ValueError as exc:
        raise BadInput(
            f"{what}: expected a number or per-class numbers separated by '/', got {text!r}"
        ) from exc
    return values[0] if len(values) == 1 else values


def parse_profiles(text: str, what: str) -> tuple[Profile, ...]:
    """Comma-separated profiles: ``0.8,0.92/0.45``."""
    values = tuple(parse_profile(x.strip(), what) for x in text.split(",") if x.strip())
    if not values:
        raise BadInput(f"{what}: expected at least one accuracy")
    return values


def parse_names(text: str, allowed: Sequence[str], what: str) -> tuple[str, ...]:
    names = tuple(x.strip() for x in text.split(",") if x.strip())
    for x in names:
        if x not in allowed:
            raise BadInput(f"{what}: unknown {x!r}; use {', '.join(allowed)}")
    if not names:
        raise BadInput(f"{what}: expected at least one of {', '.join(allowed)}")
    return names
