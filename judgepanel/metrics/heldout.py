"""Leave-one-rater-out prediction: how well do the other raters predict a withheld one?

For a rating matrix with a train/test split of its units, each rater r in turn is withheld and its
labels on the test units are predicted from everyone else by three rules:

* ``majority`` — the most frequent label among all other raters on that unit;
* ``cluster`` — the most frequent label among the other members of r's cluster, the clusters
  having been found on the *training* units only (e.g. average-linkage on 1 − Cohen κ,
  ``metrics.raters.cluster_raters``);
* ``dawid_skene`` — the argmax of the Dawid–Skene posterior fitted to the other raters' labels
  (all units; r's labels are never seen, so there is no leakage).

Whenever a rule has no unique answer — a tie, no other rater on the unit, or r alone in its
cluster — the prediction falls back to r's most frequent training label (ties among those go to
the lowest code; a rater with no training labels falls back to the most frequent training label of
all raters). Accuracy is the share of r's test labels predicted exactly; groups pool their raters'
predictions (micro) and also report the mean of their raters' accuracies (macro).

A rater whose labels the others predict well is interchangeable with them; a rater that only its
own cluster predicts belongs to a distinct school of annotation (the SummEval expert/crowd split).
The Dawid–Skene posterior's calibration against the withheld rater is reported as ECE
(``metrics.uncertainty.expected_calibration_error``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgepanel.metrics.truth import IntArray, as_codes, dawid_skene, vote_counts
from judgepanel.metrics.uncertainty import expected_calibration_error

METHODS: tuple[str, ...] = ("majority", "cluster", "dawid_skene")


@dataclass(frozen=True)
class MethodScore:
    correct: int
    n: int
    fallbacks: int  # predictions that had to use the fallback label

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else float("nan")


@dataclass(frozen=True)
class RaterHeldout:
    rater: int
    group: str
    n_test: int  # test units this rater labelled
    cluster_mates: tuple[int, ...]
    fallback_label: int
    scores: dict[str, MethodScore]
    dawid_skene_ece: float
    # per test unit, in ``test`` order: each method's final prediction (−1 where r gave no label)
    predictions: dict[str, IntArray] = field(default_factory=dict)
    dawid_skene_posterior: NDArray[np.float64] | None = None  # test units × K

    def accuracy(self, method: str) -> float:
        return self.scores[method].accuracy


@dataclass(frozen=True)
class GroupHeldout:
    group: str
    raters: tuple[int, ...]
    micro: dict[str, float]  # pooled over the group's (rater, unit) predictions
    macro: dict[str, float]  # mean of the group's raters' accuracies
    n: int


@dataclass(frozen=True, eq=False)
class HeldoutResult:
    raters: tuple[RaterHeldout, ...]
    groups: tuple[GroupHeldout, ...]
    train: IntArray
    test: IntArray
    clusters: tuple[tuple[int, ...], ...]
    methods: tuple[str, ...] = field(default=METHODS)


def split_units(
    n_units: int, train: int | ArrayLike, test: ArrayLike | None = None
) -> tuple[IntArray, IntArray]:
    """Index arrays of training and test units: an int means "the first ``train`` units", the
    test units default to all the others."""
    if isinstance(train, int | np.integer):
        if not 0 < int(train) < n_units:
            raise ValueError(f"train must leave units on both sides: 0 < {train} < {n_units}")
        tr = np.arange(int(train), dtype=np.int64)
    else:
        arr = np.asarray(train)
        tr = np.flatnonzero(arr).astype(np.int64) if arr.dtype == bool else arr.astype(np.int64)
    if test is None:
        te = np.setdiff1d(np.arange(n_units, dtype=np.int64), tr)
    else:
        arr = np.asarray(test)
        te = np.flatnonzero(arr).astype(np.int64) if arr.dtype == bool else arr.astype(np.int64)
    if np.intersect1d(tr, te).size:
        raise ValueError("train and test units overlap")
    return tr, te


def _most_frequent(codes: IntArray, k: int) -> int:
    """Most frequent code (lowest on ties), −1 if there is none."""
    present = codes[codes >= 0]
    if present.size == 0:
        return -1
    return int(np.argmax(np.bincount(present, minlength=k)))


def _unique_majority(counts: NDArray[np.float64]) -> IntArray:
    """Per row: the unique most frequent category, or −1 on a tie or an empty row."""
    top = counts.max(axis=1, keepdims=True) if counts.shape[1] else np.zeros((counts.shape[0], 1))
    unique = ((counts == top).sum(axis=1) == 1) & (top[:, 0] > 0)
    return np.where(unique, counts.argmax(axis=1), -1).astype(np.int64)


def leave_one_rater_out(
    ratings: ArrayLike,
    n_categories: int | None = None,
    *,
    train: int | ArrayLike,
    test: ArrayLike | None = None,
    clusters: Sequence[Sequence[int]] = (),
    groups: Sequence[str] | None = None,
    pseudo_count: float = 0.01,
    max_iter: int = 100,
    tol: float = 1e-7,
    seed: int = 0,
) -> HeldoutResult:
    """Predict each rater's test labels from the others (see the module docstring).

    ``clusters`` are lists of rater indices (found on the training units); a rater in none of
    them is its own singleton. ``groups`` names each rater's group (e.g. expert/crowd).
    """
    codes, k = as_codes(ratings, n_categories)
    n_units, n_raters = codes.shape
    tr, te = split_units(n_units, train, test)
    group_of = list(groups) if groups is not None else ["all"] * n_raters
    if len(group_of) != n_raters:
        raise ValueError("groups must name one group per rater")
    cluster_of: dict[int, tuple[int, ...]] = {}
    for cluster in clusters:
        for r in cluster:
            cluster_of[int(r)] = tuple(int(m) for m in cluster)
    overall_fallback = _most_frequent(codes[tr].ravel(), k)

    raters: list[RaterHeldout] = []
    for r in range(n_raters):
        truth = codes[te, r]
        labelled = truth >= 0
        others = [c for c in range(n_raters) if c != r]
        fallback = _most_frequent(codes[tr, r], k)
        if fallback < 0:
            fallback = max(overall_fallback, 0)
        mates = tuple(m for m in cluster_of.get(r, (r,)) if m != r)

        preds: dict[str, IntArray] = {
            "majority": _unique_majority(vote_counts(codes[te][:, others], k)),
            "cluster": (
                _unique_majority(vote_counts(codes[te][:, list(mates)], k))
                if mates
                else np.full(te.size, -1, dtype=np.int64)
            ),
        }
        ece = float("nan")
        post = None
        if others:
            fit = dawid_skene(
                codes[:, others], k, pseudo_count=pseudo_count, max_iter=max_iter, tol=tol, seed=seed
            )
            post = fit.posteriors[te]
            top = post.max(axis=1, keepdims=True)
            unique = (np.abs(post - top) <= 1e-12).sum(axis=1) == 1
            rated = (codes[te][:, others] >= 0).any(axis=1)
            preds["dawid_skene"] = np.where(unique & rated, post.argmax(axis=1), -1).astype(np.int64)
            ece = expected_calibration_error(post[rated], np.where(labelled, truth, -1)[rated]).ece
        else:
            preds["dawid_skene"] = np.full(te.size, -1, dtype=np.int64)

        scores: dict[str, MethodScore] = {}
        finals: dict[str, IntArray] = {}
        for method in METHODS:
            p = preds[method][labelled]
            fell = p < 0
            final = np.where(fell, fallback, p)
            scores[method] = MethodScore(
                int((final == truth[labelled]).sum()), int(labelled.sum()), int(fell.sum())
            )
            finals[method] = np.where(labelled, np.where(preds[method] < 0, fallback, preds[method]), -1)
        raters.append(
            RaterHeldout(r, group_of[r], int(labelled.sum()), mates, fallback, scores, ece, finals, post)
        )

    summaries: list[GroupHeldout] = []
    names = [*dict.fromkeys(group_of)]
    for g in [*names, *(["all"] if names != ["all"] else [])]:
        members = [x for x in raters if g == "all" or x.group == g]
        n = sum(x.n_test for x in members)
        micro = {m: (sum(x.scores[m].correct for x in members) / n if n else float("nan")) for m in METHODS}
        rated_members = [x for x in members if x.n_test]
        macro = {
            m: (float(np.mean([x.accuracy(m) for x in rated_members])) if rated_members else float("nan"))
            for m in METHODS
        }
        summaries.append(GroupHeldout(g, tuple(x.rater for x in members), micro, macro, n))
    all_clusters = tuple(sorted({cluster_of.get(r, (r,)) for r in range(n_raters)}))
    return HeldoutResult(tuple(raters), tuple(summaries), tr, te, all_clusters)
