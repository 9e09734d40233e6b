"""The meta-evaluation battery over one rating matrix (usually a pair set), as one frozen result.

Everything a team needs to judge how far to trust a panel, computed from the labels alone:

1. **Label distribution** per rater group and per rater.
2. **κ matrix and clusters** on the *training* units (the first ``train`` rows): pairwise Cohen κ
   (``metrics.raters.kappa_matrix``), average-linkage clusters on 1 − κ cut at ``n_clusters``,
   and the mean κ within each group and between groups.
3. **Duplicate effect**: for each group with flagged units (pairs touching an item whose group
   members all gave the identical score vector, ``data duplicates``), the group's mean pairwise κ,
   Krippendorff's α (nominal) and label distribution with and without those units.
4. **Leave-one-rater-out prediction** on the test units (``metrics.heldout``), with the clusters of
   step 2, per rater and per group.
5. **Entropy signals**: vote entropy of all raters and of each group (units with at least two of
   its votes), the Dawid–Skene posterior entropy, and their Spearman/Kendall correlations with each
   other and with the absolute gap between the two items' mean human scores when given.
6. **Truth inference agreement**: majority vote (seeded ties), Dawid–Skene and MACE over all
   raters; their label distributions, pairwise agreement, agreement with each group's (untied)
   majority; Dawid–Skene's estimated rater accuracies and MACE's competences.
7. **Calibration**: ECE of a Dawid–Skene posterior fitted on one group against another group's
   untied majority on the test units (and, per rater, in the held-out table).

The input is a ``metrics.matrix.RatingMatrix`` (plain data; nothing here touches the store).

Single-method reports for the other commands live here too: :func:`truth_report`
(`metrics truth`), :func:`heldout_report` (`metrics heldout`) and :func:`position_bias_report`
(`metrics joint`: ``metrics.joint`` with and without position bias, side by side).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgepanel.metrics.agreement import category_codes, krippendorff_alpha
from judgepanel.metrics.heldout import METHODS as HELDOUT_METHODS
from judgepanel.metrics.heldout import HeldoutResult, leave_one_rater_out
from judgepanel.metrics.joint import JointFit, joint_dawid_skene
from judgepanel.metrics.matrix import RatingMatrix
from judgepanel.metrics.raters import KappaMatrix, cluster_raters, kappa_matrix
from judgepanel.metrics.truth import (
    FloatArray,
    IntArray,
    as_codes,
    dawid_skene,
    label_agreement,
    mace,
    majority_vote,
    vote_counts,
)
from judgepanel.metrics.uncertainty import (
    RankCorrelation,
    expected_calibration_error,
    posterior_entropy,
    rank_correlation,
    vote_entropy,
)

TRUTH_METHODS: tuple[str, ...] = ("majority", "dawid_skene", "mace")


@dataclass(frozen=True)
class DuplicateEffect:
    group: str
    flagged_units: int
    units_with: int
    units_without: int
    kappa_with: float  # the group's mean pairwise Cohen κ over all units
    kappa_without: float  # … without the flagged units
    alpha_with: float  # the group's Krippendorff α (nominal)
    alpha_without: float
    labels_with: dict[str, int]
    labels_without: dict[str, int]


@dataclass(frozen=True)
class SignalCorrelation:
    x: str
    y: str
    result: RankCorrelation


@dataclass(frozen=True)
class Calibration:
    posterior: str
    labels: str
    ece: float
    n: int


@dataclass(frozen=True, eq=False)
class TruthComparison:
    labels: dict[str, IntArray]
    distribution: dict[str, dict[str, int]]
    agreement: tuple[tuple[str, str, float, int], ...]
    with_group_majority: dict[str, dict[str, tuple[float, int]]]
    ds_rater_accuracy: dict[str, float]
    ds_iterations: int
    ds_converged: bool
    mace_competence: dict[str, float]
    mace_iterations: int
    mace_converged: bool


@dataclass(frozen=True, eq=False)
class MetaEvaluation:
    n_units: int
    n_train: int
    n_test: int
    seed: int
    categories: tuple[str, ...]
    raters: tuple[str, ...]
    groups: tuple[str, ...]
    labels_by_group: dict[str, dict[str, int]]
    labels_by_rater: dict[str, dict[str, int]]
    kappa: KappaMatrix
    clusters: list[list[str]]
    kappa_within: dict[str, float]
    kappa_between: dict[str, float]
    duplicates: tuple[DuplicateEffect, ...]
    heldout: HeldoutResult
    entropy_means: dict[str, tuple[float, int]]
    correlations: tuple[SignalCorrelation, ...]
    truth: TruthComparison
    calibration: tuple[Calibration, ...]

    def as_dict(self) -> dict[str, Any]:
        names = self.raters
        return {
            "units": self.n_units,
            "split": {
                "train": self.n_train,
                "test": self.n_test,
                "train_is": "the first rows, in sampled order",
            },
            "seed": self.seed,
            "categories": list(self.categories),
            "raters": [{"name": n, "group": g} for n, g in zip(names, self.groups, strict=True)],
            "label_distribution": {"by_group": self.labels_by_group, "by_rater": self.labels_by_rater},
            "kappa": {
                "units": self.kappa.n_units,
                "on": "training units",
                "raters": list(self.kappa.names),
                "matrix": [[float(v) for v in row] for row in self.kappa.kappa],
                "mean_within_group": self.kappa_within,
                "mean_between_groups": self.kappa_between,
            },
            "clusters": [
                {"members": c, "groups": group_composition([self.groups[names.index(n)] for n in c])}
                for c in self.clusters
            ],
            "duplicates": {
                d.group: {
                    "flagged_units": d.flagged_units,
                    "units_with": d.units_with,
                    "units_without": d.units_without,
                    "kappa_within_group": {"with": d.kappa_with, "without": d.kappa_without},
                    "alpha_within_group": {"with": d.alpha_with, "without": d.alpha_without},
                    "labels": {"with": d.labels_with, "without": d.labels_without},
                }
                for d in self.duplicates
            },
            "heldout": {
                "methods": list(HELDOUT_METHODS),
                "test_units": self.n_test,
                "raters": {
                    names[r.rater]: {
                        "group": r.group,
                        "n_test": r.n_test,
                        "cluster_mates": [names[m] for m in r.cluster_mates],
                        "fallback_label": self.categories[r.fallback_label],
                        **{m: r.accuracy(m) for m in HELDOUT_METHODS},
                        "fallbacks": {m: r.scores[m].fallbacks for m in HELDOUT_METHODS},
                        "dawid_skene_ece": r.dawid_skene_ece,
                    }
                    for r in self.heldout.raters
                },
                "groups": {
                    g.group: {"n": g.n, "micro": g.micro, "macro": g.macro} for g in self.heldout.groups
                },
            },
            "entropy": {
                "unit": "nats",
                "means": {k: {"mean": v, "n": n} for k, (v, n) in self.entropy_means.items()},
                "correlations": [{"x": c.x, "y": c.y, **c.result.as_dict()} for c in self.correlations],
            },
            "truth": {
                "methods": list(TRUTH_METHODS),
                "distribution": self.truth.distribution,
                "agreement": [
                    {"a": a, "b": b, "agreement": v, "n": n} for a, b, v, n in self.truth.agreement
                ],
                "with_group_majority": {
                    m: {g: {"agreement": v, "n": n} for g, (v, n) in by_group.items()}
                    for m, by_group in self.truth.with_group_majority.items()
                },
                "dawid_skene": {
                    "n_iter": self.truth.ds_iterations,
                    "converged": self.truth.ds_converged,
                    "rater_accuracy": self.truth.ds_rater_accuracy,
                },
                "mace": {
                    "n_iter": self.truth.mace_iterations,
                    "converged": self.truth.mace_converged,
                    "competence": self.truth.mace_competence,
                },
            },
            "calibration": [
                {"posterior": c.posterior, "labels": c.labels, "units": "test", "ece": c.ece, "n": c.n}
                for c in self.calibration
            ],
        }


def group_composition(groups: list[str]) -> dict[str, int]:
    """How many of each group, in order of first appearance."""
    return {g: groups.count(g) for g in dict.fromkeys(groups)}


def _distribution(codes: IntArray, labels: tuple[str, ...]) -> dict[str, int]:
    flat = codes[codes >= 0]
    counts = np.bincount(flat, minlength=len(labels)) if flat.size else np.zeros(len(labels), dtype=int)
    return {lab: int(c) for lab, c in zip(labels, counts, strict=True)}


def _mean_offdiag(kappa: FloatArray, rows: list[int], cols: list[int]) -> float:
    vals = [kappa[i, j] for i in rows for j in cols if i != j and np.isfinite(kappa[i, j])]
    return float(np.mean(vals)) if vals else float("nan")


def _group_vote_entropy(codes: IntArray, k: int) -> FloatArray:
    """Vote entropy where at least two votes exist (one vote has entropy 0 but says nothing)."""
    h = vote_entropy(codes, k)
    h[(codes >= 0).sum(axis=1) < 2] = np.nan
    return h


def _untied_majority(codes: IntArray, k: int) -> IntArray:
    counts = vote_counts(codes, k)
    top = counts.max(axis=1, keepdims=True)
    unique = ((counts == top).sum(axis=1) == 1) & (top[:, 0] > 0)
    return np.where(unique, counts.argmax(axis=1), -1).astype(np.int64)


def meta_evaluation(
    matrix: RatingMatrix,
    *,
    train: int,
    seed: int = 0,
    score_gap: ArrayLike | None = None,
    duplicate_units: Mapping[str, NDArray[np.bool_]] | None = None,
    n_clusters: int = 2,
    mace_restarts: int = 10,
) -> MetaEvaluation:
    """Run the battery (see the module docstring). ``train``: the first ``train`` units are the
    training split, the rest the test split. ``score_gap``: one value per unit (NaN allowed).
    ``duplicate_units``: per group, a mask of units touching a flagged item."""
    codes, k = _matrix_codes(matrix)
    n_units = codes.shape[0]
    if not 0 < train < n_units:
        raise ValueError(f"the training split must leave test units: 0 < {train} < {n_units}")
    labels = tuple(matrix.category_labels)
    names = tuple(matrix.rater_names)
    groups = tuple(g or "(none)" for g in matrix.rater_groups)
    group_names = list(dict.fromkeys(groups))
    members = {g: [i for i, x in enumerate(groups) if x == g] for g in group_names}
    cats = np.arange(float(k))
    coded = np.where(codes >= 0, codes, np.nan).astype(np.float64)

    # 1. label distributions
    by_group = {g: _distribution(codes[:, idx], labels) for g, idx in members.items()}
    by_rater = {n: _distribution(codes[:, i], labels) for i, n in enumerate(names)}

    # 2. κ and clusters on the training units
    km = kappa_matrix(coded, cats, train, names=names)
    clusters = cluster_raters(km, k=n_clusters)
    within = {g: _mean_offdiag(km.kappa, idx, idx) for g, idx in members.items() if len(idx) > 1}
    between = {
        f"{a}|{b}": _mean_offdiag(km.kappa, members[a], members[b])
        for a, b in itertools.combinations(group_names, 2)
    }

    # 3. duplicates
    duplicates: list[DuplicateEffect] = []
    for g, mask in (duplicate_units or {}).items():
        if g not in members or len(members[g]) < 2:
            continue
        flagged = np.asarray(mask, dtype=bool)
        sub = coded[:, members[g]]
        rated = (~np.isnan(sub)).sum(axis=1) >= 2
        keep = rated & ~flagged
        kw = kappa_matrix(sub[rated], cats).kappa
        kwo = kappa_matrix(sub[keep], cats).kappa
        idx = list(range(len(members[g])))
        duplicates.append(
            DuplicateEffect(
                group=g,
                flagged_units=int((flagged & rated).sum()),
                units_with=int(rated.sum()),
                units_without=int(keep.sum()),
                kappa_with=_mean_offdiag(kw, idx, idx),
                kappa_without=_mean_offdiag(kwo, idx, idx),
                alpha_with=krippendorff_alpha(sub[rated], "nominal", cats),
                alpha_without=krippendorff_alpha(sub[keep], "nominal", cats),
                labels_with=_distribution(codes[rated][:, members[g]], labels),
                labels_without=_distribution(codes[keep][:, members[g]], labels),
            )
        )

    # 4. leave-one-rater-out
    clusters_idx = [[names.index(n) for n in c] for c in clusters]
    heldout = leave_one_rater_out(codes, k, train=train, clusters=clusters_idx, groups=groups, seed=seed)

    # 6. truth inference (before 5: the posterior entropy needs Dawid–Skene)
    mv = majority_vote(codes, k, seed=seed)
    ds = dawid_skene(codes, k, seed=seed)
    mc = mace(codes, k, restarts=mace_restarts, seed=seed)
    fitted = {"majority": mv.labels, "dawid_skene": ds.labels, "mace": mc.labels}
    agreement = tuple(
        (a, b, *label_agreement(fitted[a], fitted[b])) for a, b in itertools.combinations(TRUTH_METHODS, 2)
    )
    group_majority = {g: _untied_majority(codes[:, idx], k) for g, idx in members.items()}
    with_groups = {
        m: {g: label_agreement(fitted[m], maj) for g, maj in group_majority.items()} for m in TRUTH_METHODS
    }
    ds_acc = ds.rater_accuracy()
    truth = TruthComparison(
        labels=fitted,
        distribution={m: _distribution(fitted[m], labels) for m in TRUTH_METHODS},
        agreement=agreement,
        with_group_majority=with_groups,
        ds_rater_accuracy={n: float(ds_acc[i]) for i, n in enumerate(names)},
        ds_iterations=ds.n_iter,
        ds_converged=ds.converged,
        mace_competence={n: float(mc.competence[i]) for i, n in enumerate(names)},
        mace_iterations=mc.n_iter,
        mace_converged=mc.converged,
    )

    # 5. entropy signals
    signals: dict[str, FloatArray] = {"vote_entropy(all)": _group_vote_entropy(codes, k)}
    if len(group_names) > 1:
        for g, idx in members.items():
            signals[f"vote_entropy({g})"] = _group_vote_entropy(codes[:, idx], k)
    signals["dawid_skene_entropy(all)"] = posterior_entropy(ds.posteriors)
    if score_gap is not None:
        gap = np.asarray(score_gap, dtype=np.float64)
        if gap.shape != (n_units,):
            raise ValueError("score_gap needs one value per unit")
        signals["score_gap"] = gap
    means = {
        name: (float(np.nanmean(v)) if np.isfinite(v).any() else float("nan"), int(np.isfinite(v).sum()))
        for name, v in signals.items()
    }
    keys = list(signals)
    correlations = tuple(
        SignalCorrelation(a, b, rank_correlation(signals[a], signals[b]))
        for a, b in itertools.combinations(keys, 2)
    )

    # 7. cross-group calibration on the test units
    calibration: list[Calibration] = []
    test = np.arange(train, n_units)
    if len(group_names) > 1:
        for fit_g, label_g in itertools.permutations(group_names, 2):
            if not members[fit_g]:
                continue
            post = dawid_skene(codes[:, members[fit_g]], k, seed=seed).posteriors[test]
            rated = (codes[test][:, members[fit_g]] >= 0).any(axis=1)
            target = group_majority[label_g][test]
            cal = expected_calibration_error(post[rated], target[rated])
            calibration.append(
                Calibration(f"dawid_skene({fit_g})", f"untied_majority({label_g})", cal.ece, cal.n)
            )

    return MetaEvaluation(
        n_units=n_units,
        n_train=train,
        n_test=n_units - train,
        seed=seed,
        categories=labels,
        raters=names,
        groups=groups,
        labels_by_group=by_group,
        labels_by_rater=by_rater,
        kappa=km,
        clusters=clusters,
        kappa_within=within,
        kappa_between=between,
        duplicates=tuple(duplicates),
        heldout=heldout,
        entropy_means=means,
        correlations=correlations,
        truth=truth,
        calibration=tuple(calibration),
    )


# ---------------------------------------------------------------- single-method reports (CLI)


@dataclass(frozen=True, eq=False)
class TruthReport:
    """One truth-inference method over a matrix, with what it says about each rater and how far
    the other methods agree with it."""

    method: str
    categories: tuple[str, ...]
    raters: tuple[str, ...]
    labels: IntArray
    posteriors: FloatArray
    distribution: dict[str, int]
    tied_units: int
    rater_accuracy: dict[str, float]
    confusion: dict[str, list[list[float]]] | None  # Dawid–Skene: [true][said]
    competence: dict[str, float] | None  # MACE
    priors: dict[str, float] | None
    agreement_with: dict[str, tuple[float, int]]
    n_iter: int | None
    converged: bool | None
    log_likelihood: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "units": int(self.labels.size),
            "labelled_units": int((self.labels >= 0).sum()),
            "categories": list(self.categories),
            "distribution": self.distribution,
            "tied_units": self.tied_units,
            "rater_accuracy": self.rater_accuracy,
            "confusion": self.confusion,
            "competence": self.competence,
            "priors": self.priors,
            "agreement_with": {m: {"agreement": v, "n": n} for m, (v, n) in self.agreement_with.items()},
            "n_iter": self.n_iter,
            "converged": self.converged,
            "log_likelihood": self.log_likelihood,
        }


def _matrix_codes(matrix: RatingMatrix) -> tuple[IntArray, int]:
    codes = category_codes(np.asarray(matrix.values, dtype=np.float64), matrix.categories).astype(np.int64)
    return codes, int(matrix.categories.size)


def truth_report(
    matrix: RatingMatrix,
    method: str,
    *,
    seed: int = 0,
    pseudo_count: float = 0.01,
    max_iter: int | None = None,
    tol: float = 1e-7,
    restarts: int = 10,
) -> TruthReport:
    """Run ``method`` (majority, dawid_skene or mace) on ``matrix``; also run the other two to
    report agreement. Rater accuracy: majority — the share of the rater's labels equal to the
    majority label (its own vote included); Dawid–Skene — ``Σ_k π_k θ_r[k, k]``; MACE — the
    competence θ_r (probability of not spamming)."""
    if method not in TRUTH_METHODS:
        raise ValueError(f"method must be one of {', '.join(TRUTH_METHODS)}")
    codes, k = _matrix_codes(matrix)
    labels = tuple(matrix.category_labels)
    names = tuple(matrix.rater_names)
    mv = majority_vote(codes, k, seed=seed)
    ds = dawid_skene(codes, k, pseudo_count=pseudo_count, max_iter=max_iter or 100, tol=tol, seed=seed)
    mc = mace(codes, k, restarts=restarts, max_iter=max_iter or 500, tol=tol, seed=seed)
    fitted = {"majority": mv.labels, "dawid_skene": ds.labels, "mace": mc.labels}
    agreement_with = {m: label_agreement(fitted[method], fitted[m]) for m in TRUTH_METHODS if m != method}
    common: dict[str, Any] = {
        "method": method,
        "categories": labels,
        "raters": names,
        "labels": fitted[method],
        "distribution": _distribution(fitted[method], labels),
        "agreement_with": agreement_with,
    }
    if method == "majority":
        acc = {}
        for i, n in enumerate(names):
            has = (codes[:, i] >= 0) & (mv.labels >= 0)
            acc[n] = float(np.mean(codes[has, i] == mv.labels[has])) if has.any() else float("nan")
        return TruthReport(
            **common,
            posteriors=mv.shares,
            tied_units=int(mv.tied.sum()),
            rater_accuracy=acc,
            confusion=None,
            competence=None,
            priors=None,
            n_iter=None,
            converged=None,
            log_likelihood=None,
        )
    if method == "dawid_skene":
        ds_acc = ds.rater_accuracy()
        return TruthReport(
            **common,
            posteriors=ds.posteriors,
            tied_units=int(ds.tied.sum()),
            rater_accuracy={n: float(ds_acc[i]) for i, n in enumerate(names)},
            confusion={n: ds.confusion[i].tolist() for i, n in enumerate(names)},
            competence=None,
            priors={lab: float(p) for lab, p in zip(labels, ds.priors, strict=True)},
            n_iter=ds.n_iter,
            converged=ds.converged,
            log_likelihood=ds.log_likelihood[-1] if ds.log_likelihood else None,
        )
    return TruthReport(
        **common,
        posteriors=mc.posteriors,
        tied_units=int(mc.tied.sum()),
        rater_accuracy={n: float(mc.competence[i]) for i, n in enumerate(names)},
        confusion=None,
        competence={n: float(mc.competence[i]) for i, n in enumerate(names)},
        priors=None,
        n_iter=mc.n_iter,
        converged=mc.converged,
        log_likelihood=mc.log_likelihood[-1] if mc.log_likelihood else None,
    )


def heldout_report(
    matrix: RatingMatrix, *, train: int, n_clusters: int = 2, seed: int = 0
) -> tuple[HeldoutResult, list[list[str]], KappaMatrix]:
    """Leave-one-rater-out prediction on ``matrix`` with clusters found on its first ``train``
    units (Cohen κ, average linkage cut at ``n_clusters``)."""
    codes, k = _matrix_codes(matrix)
    if not 0 < train < codes.shape[0]:
        raise ValueError(f"the training split must leave test units: 0 < {train} < {codes.shape[0]}")
    names = tuple(matrix.rater_names)
    coded = np.where(codes >= 0, codes, np.nan).astype(np.float64)
    km = kappa_matrix(coded, np.arange(float(k)), train, names=names)
    clusters = cluster_raters(km, k=n_clusters)
    groups = [g or "(none)" for g in matrix.rater_groups]
    result = leave_one_rater_out(
        codes,
        k,
        train=train,
        clusters=[[names.index(n) for n in c] for c in clusters],
        groups=groups,
        seed=seed,
    )
    return result, clusters, km


@dataclass(frozen=True, eq=False)
class PositionBiasReport:
    """The joint human + judge model next to the same model with the bias switched off."""

    judge_names: tuple[str, ...]
    categories: tuple[str, ...]
    joint: JointFit
    order_blind: JointFit
    human_majority: IntArray  # untied majority of the humans, −1 elsewhere

    def as_dict(self) -> dict[str, Any]:
        j, b = self.joint, self.order_blind
        return {
            "model": "Dawid–Skene over humans and judges; each judge forms one content verdict per pair "
            "from its confusion matrix and in each order names the back slot with probability b, the "
            "front slot with f, else that verdict; bias = b − f (+ back, − front)",
            "interval": f"profile likelihood, {j.confidence:.0%}",
            "judges": {
                name: {
                    "bias": jb.bias,
                    "interval": [jb.lower, jb.upper],
                    "back_verdicts": jb.counts.back_verdicts,
                    "front_verdicts": jb.counts.front_verdicts,
                    "tie_verdicts": jb.counts.tie_verdicts,
                    "agree_incl_ties": jb.counts.agree_incl_ties,
                    "disagree_incl_ties": jb.counts.disagree_incl_ties,
                    "back_wins": jb.counts.back_wins,
                    "front_wins": jb.counts.front_wins,
                    "accuracy": float(j.priors @ np.diag(j.judge_confusion[i])),
                }
                for i, (name, jb) in enumerate(zip(self.judge_names, j.judges, strict=True))
            },
            "truth": {
                "distribution": _distribution(j.labels, self.categories),
                "order_blind_distribution": _distribution(b.labels, self.categories),
                "agreement_with_order_blind": _agreement_dict(j.labels, b.labels),
                "agreement_with_human_majority": _agreement_dict(j.labels, self.human_majority),
                "order_blind_agreement_with_human_majority": _agreement_dict(b.labels, self.human_majority),
            },
            "log_likelihood": j.log_likelihood[-1],
            "order_blind_log_likelihood": b.log_likelihood[-1],
            "n_iter": j.n_iter,
            "converged": j.converged,
        }


def _agreement_dict(a: IntArray, b: IntArray) -> dict[str, float | int]:
    value, n = label_agreement(a, b)
    return {"agreement": value, "n": n}


def position_bias_report(
    humans: ArrayLike,
    judges_ab: ArrayLike,
    judges_ba: ArrayLike,
    *,
    judge_names: tuple[str, ...],
    categories: tuple[str, ...] = ("A", "B", "T"),
    confidence: float = 0.95,
    seed: int = 0,
) -> PositionBiasReport:
    """Fit ``metrics.joint.joint_dawid_skene`` with and without position bias on canonical codes
    (A = 0, B = 1, further codes such as T = 2 are never a slot)."""
    k = len(categories)
    joint = joint_dawid_skene(humans, judges_ab, judges_ba, k, confidence=confidence, seed=seed)
    blind = joint_dawid_skene(humans, judges_ab, judges_ba, k, position_bias=False, seed=seed)
    h_codes, _ = as_codes(humans, k)
    return PositionBiasReport(judge_names, categories, joint, blind, _untied_majority(h_codes, k))
