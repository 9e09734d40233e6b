"""Held-out human prediction with fitted models, next to the label-majority baselines.

The question: given everything the panel knows about a pair — the other raters' A/B/T labels,
how far apart their scores put the two items, and LLM judges' scores of the same items — how well
can a withheld rater's label be predicted, and does any of it beat the rater's own κ-cluster
majority (``metrics.heldout``)?

For every rater r and every model method, a multinomial logistic regression
(``metrics.logistic``, L2 penalty ``C``) is fitted on the **training units only** (r's training
labels as targets), then predicts r's labels on the test units. One model per target rater, so
each has its own intercepts (r's base rates of A, B and T) and its own weights. The features come
from the other raters of one channel set:

* ``scores-*``: for each other rater c, its signed score difference ``d_c = mean score of A − of
  B`` (the number `data pairs` thresholds into A/B/T), ``|d_c|``, and a missing indicator
  (``d_c`` and ``|d_c|`` are 0 where c gave no scores, e.g. campaign judges, which have verdicts only);
* ``labels-*``: for each other rater c, one indicator per category of c's label (all 0 when missing);

and the channel sets are ``humans`` (the other human raters), ``judges`` (the machine raters:
LLM annotators and campaign judges) and ``joint`` (both). ``labels-*`` versus ``scores-*``
isolates what the score magnitudes add; ``*-humans`` versus ``*-joint`` what the judges add.

The baselines (``majority``, ``cluster``, ``dawid-skene``) are ``metrics.heldout`` unchanged on the
same split: the first ``train`` units train. With ``folds`` K > 1 the units are permuted K times
(``numpy.random.default_rng(seed)``) and the first ``train`` of each permutation train; every
figure is then the mean over folds, and ``spread`` gives each accuracy's sd, min and max.

Per method and rater group (the raters' groups and ``all``, pooled over raters and test units):
accuracy; log loss ``−mean log p(label)`` (probabilities clipped at 1e−15) and ECE
(``metrics.uncertainty``) for methods that give probabilities (the fitted models and Dawid–Skene;
null for the two majorities). ``delta_vs_cluster``: the accuracy minus the cluster baseline's, with a
paired bootstrap CI that resamples test units (the same resample for both methods; with folds, one
resample per fold and the mean over folds per replicate; percentile interval).

No fitted quantity reads a test label: the models see the training rows only (the tests permute
the test rows and check that every coefficient stays identical).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgepanel.errors import BadInput
from judgepanel.metrics.heldout import HeldoutResult
from judgepanel.metrics.logistic import MultinomialFit, fit_multinomial
from judgepanel.metrics.matrix import RatingMatrix, is_machine
from judgepanel.metrics.summary import _matrix_codes, heldout_report
from judgepanel.metrics.truth import IntArray
from judgepanel.metrics.uncertainty import expected_calibration_error

FloatArray = NDArray[np.float64]

BASELINES: tuple[str, ...] = ("majority", "cluster", "dawid-skene")
CHANNELS: dict[str, tuple[bool, bool]] = {  # name -> (humans, judges)
    "humans": (True, False),
    "joint": (True, True),
    "judges": (False, True),
}
MODELS: tuple[str, ...] = tuple(f"{f}-{c}" for f in ("scores", "labels") for c in CHANNELS)
ALL_METHODS: tuple[str, ...] = (*BASELINES, *MODELS)
EPS = 1e-15


def _blocks(codes: IntArray, diffs: FloatArray, k: int, family: str) -> list[FloatArray]:
    """One feature block (units × width) per rater."""
    out: list[FloatArray] = []
    for c in range(codes.shape[1]):
        if family == "scores":
            d = diffs[:, c]
            miss = np.isnan(d)
            v = np.where(miss, 0.0, d)
            out.append(np.column_stack([v, np.abs(v), miss.astype(np.float64)]))
        else:
            out.append((codes[:, c][:, None] == np.arange(k)[None, :]).astype(np.float64))
    return out


def model_predictors(r: int, machine: Sequence[bool], channel: str) -> list[int]:
    """The raters whose features predict rater r under a channel set."""
    humans, judges = CHANNELS[channel]
    return [c for c, m in enumerate(machine) if c != r and ((judges and m) or (humans and not m))]


@dataclass(frozen=True, eq=False)
class Fold:
    """One split: the baselines' result and every model's fits and test predictions."""

    train: IntArray  # unit indices of the original matrix
    test: IntArray
    baseline: HeldoutResult
    fits: dict[tuple[str, int], MultinomialFit]  # (method, rater) -> fit
    predictions: dict[str, IntArray]  # method -> test units × raters, −1 where no label
    probabilities: dict[str, FloatArray | None]  # method -> test units × raters × K
    truth: IntArray  # test units × raters, −1 where no label


def _fold(
    matrix: RatingMatrix,
    codes: IntArray,
    diffs: FloatArray,
    k: int,
    perm: IntArray,
    train: int,
    methods: Sequence[str],
    n_clusters: int,
    seed: int,
    c: float,
) -> Fold:
    m = replace(matrix, values=matrix.values[perm], unit_ids=tuple(matrix.unit_ids[i] for i in perm))
    base, _, _ = heldout_report(m, train=train, n_clusters=n_clusters, seed=seed)
    cp, dp = codes[perm], diffs[perm]
    n, n_r = cp.shape
    tr, te = np.arange(train), np.arange(train, n)
    truth = cp[te]
    preds: dict[str, IntArray] = {}
    probs: dict[str, FloatArray | None] = {}
    for name, key in (("majority", "majority"), ("cluster", "cluster"), ("dawid-skene", "dawid_skene")):
        preds[name] = np.column_stack([x.predictions[key] for x in base.raters]).astype(np.int64)
        probs[name] = None
    post = np.full((te.size, n_r, k), np.nan)
    for x in base.raters:
        if x.dawid_skene_posterior is not None:
            post[:, x.rater] = x.dawid_skene_posterior
    probs["dawid-skene"] = post
    machine = [is_machine(kd) for kd in matrix.kinds]
    fits: dict[tuple[str, int], MultinomialFit] = {}
    blocks = {
        f: _blocks(cp, dp, k, f) for f in ("scores", "labels") if any(mt.startswith(f) for mt in methods)
    }
    for method in methods:
        family, channel = method.split("-", 1)
        cols = [q for q in range(n_r) if q in model_predictors(-1, machine, channel)]
        width = blocks[family][0].shape[1]
        full = np.hstack([blocks[family][q] for q in cols]) if cols else np.zeros((n, 0))
        # one design per target rater: the channel's raters with the target's own block zeroed (a
        # zero column gets weight exactly 0 under the penalty, so this is the fit without it)
        design = np.repeat(full[None], n_r, axis=0)
        for r in range(n_r):
            if r in cols:
                j = cols.index(r)
                design[r, :, j * width : (j + 1) * width] = 0.0
        pm = np.full((te.size, n_r), -1, dtype=np.int64)
        pp = np.full((te.size, n_r, k), np.nan)
        for r in range(n_r):
            rows = tr[cp[tr, r] >= 0]  # the target's training labels only
            fit = fit_multinomial(design[r, rows], cp[rows, r], k, c=c)
            fits[(method, r)] = fit
            p = fit.predict_proba(design[r, te])
            labelled = truth[:, r] >= 0
            pp[labelled, r] = p[labelled]
            pm[labelled, r] = p[labelled].argmax(axis=1)
        preds[method], probs[method] = pm, pp
    return Fold(perm[:train], perm[train:], base, fits, preds, probs, truth)


@dataclass(frozen=True)
class GroupScore:
    accuracy: float
    log_loss: float | None
    ece: float | None
    n: int


def _score(fold: Fold, method: str, members: list[int]) -> tuple[GroupScore, FloatArray, FloatArray]:
    """The group's pooled scores, and per test unit its correct and labelled counts."""
    truth = fold.truth[:, members]
    pred = fold.predictions[method][:, members]
    mask = truth >= 0
    correct = (pred == truth) & mask
    n = int(mask.sum())
    acc = float(correct.sum() / n) if n else float("nan")
    prob = fold.probabilities[method]
    ll: float | None = None
    ece: float | None = None
    if prob is not None and n:
        p = prob[:, members][mask]  # labels × K
        y = truth[mask]
        ok = ~np.isnan(p).any(axis=1)
        if ok.any():
            ll = float(-np.mean(np.log(np.clip(p[ok, y[ok]], EPS, 1.0))))
            ece = expected_calibration_error(p[ok], y[ok]).ece
    return (
        GroupScore(acc, ll, ece, n),
        correct.sum(axis=1).astype(np.float64),
        mask.sum(axis=1).astype(np.float64),
    )


def _mean(values: list[float | None]) -> float | None:
    xs = [v for v in values if v is not None and np.isfinite(v)]
    return float(np.mean(xs)) if xs and len(xs) == len(values) else None


@dataclass(frozen=True, eq=False)
class HeldoutBattery:
    methods: tuple[str, ...]
    groups: tuple[str, ...]
    train: int
    test: int
    folds: tuple[Fold, ...]
    scores: dict[str, dict[str, list[GroupScore]]]  # method -> group -> one per fold
    delta: dict[str, dict[str, tuple[float, float, float]]]  # method -> group -> (value, lo, hi)
    n_bootstrap: int
    seed: int
    random_folds: bool

    def accuracy(self, method: str, group: str) -> float:
        return float(np.mean([s.accuracy for s in self.scores[method][group]]))

    def as_dict(self) -> dict[str, Any]:
        methods: dict[str, Any] = {}
        spread: dict[str, Any] = {}
        for mt in self.methods:
            per = self.scores[mt]
            methods[mt] = {
                "accuracy": {g: self.accuracy(mt, g) for g in self.groups},
                "log_loss": {g: _mean([s.log_loss for s in per[g]]) for g in self.groups},
                "ece": {g: _mean([s.ece for s in per[g]]) for g in self.groups},
                "delta_vs_cluster": {
                    g: {"value": self.delta[mt][g][0], "ci": [self.delta[mt][g][1], self.delta[mt][g][2]]}
                    for g in self.groups
                },
            }
            spread[mt] = {}
            for g in self.groups:
                acc = np.array([s.accuracy for s in per[g]])
                spread[mt][g] = {
                    "mean": float(acc.mean()),
                    "sd": float(acc.std(ddof=1)) if acc.size > 1 else 0.0,
                    "min": float(acc.min()),
                    "max": float(acc.max()),
                }
        return {
            "methods": methods,
            "train": self.train,
            "test": self.test,
            "folds": {
                "k": len(self.folds),
                "split": "random permutations" if self.random_folds else f"first {self.train} units train",
                "accuracy": spread,
            },
            "bootstrap": {
                "n": self.n_bootstrap,
                "seed": self.seed,
                "ci": "percentile 95%, test units resampled",
            },
        }


def heldout_battery(
    matrix: RatingMatrix,
    score_differences: FloatArray,
    *,
    train: int,
    methods: Sequence[str] = MODELS,
    folds: int = 1,
    n_clusters: int = 2,
    n_bootstrap: int = 1000,
    seed: int = 0,
    c: float = 1.0,
) -> HeldoutBattery:
    """Every requested model method and the three baselines on ``folds`` train/test splits of
    ``matrix`` (a pair matrix; ``score_differences`` units × raters, NaN where none)."""
    if not 0 < train < matrix.n_units:
        raise ValueError(f"the training split must leave test units: 0 < {train} < {matrix.n_units}")
    if folds < 1:
        raise ValueError("folds must be at least 1")
    unknown = [mt for mt in methods if mt not in MODELS]
    if unknown:
        raise ValueError(f"unknown method(s) {', '.join(unknown)}")
    diffs = np.asarray(score_differences, dtype=np.float64)
    if diffs.shape != matrix.values.shape:
        raise ValueError("score_differences must have the matrix's shape")
    codes, k = _matrix_codes(matrix)
    n = matrix.n_units
    rng = np.random.default_rng(seed)
    perms = [np.arange(n)] if folds == 1 else [rng.permutation(n) for _ in range(folds)]
    done = [
        _fold(matrix, codes, diffs, k, p.astype(np.int64), train, methods, n_clusters, seed, c) for p in perms
    ]
    groups_of = [g or "(none)" for g in matrix.rater_groups]
    names = [*dict.fromkeys(groups_of)]
    groups = (*names, *(["all"] if names != ["all"] else []))
    members = {g: [r for r in range(matrix.n_raters) if g == "all" or groups_of[r] == g] for g in groups}
    order = (*BASELINES, *[mt for mt in MODELS if mt in methods])
    scores: dict[str, dict[str, list[GroupScore]]] = {mt: {g: [] for g in groups} for mt in order}
    per_unit: dict[str, dict[str, list[tuple[FloatArray, FloatArray]]]] = {
        mt: {g: [] for g in groups} for mt in order
    }
    for f in done:
        for mt in order:
            for g in groups:
                sc, cu, nu = _score(f, mt, members[g])
                scores[mt][g].append(sc)
                per_unit[mt][g].append((cu, nu))
    boot = np.random.default_rng([seed, 1])
    weights = []
    for f in done:
        n_te = f.test.size
        idx = boot.integers(0, n_te, size=(n_bootstrap, n_te))
        w = np.zeros((n_bootstrap, n_te))
        np.add.at(w, (np.repeat(np.arange(n_bootstrap), n_te), idx.ravel()), 1.0)
        weights.append(w)
    delta: dict[str, dict[str, tuple[float, float, float]]] = {mt: {} for mt in order}
    for g in groups:
        for mt in order:
            reps = np.zeros(n_bootstrap)
            point = 0.0
            for fi, w in enumerate(weights):
                cm, nu = per_unit[mt][g][fi]
                cc, _ = per_unit["cluster"][g][fi]
                tot = nu.sum()
                point += (cm.sum() - cc.sum()) / tot if tot else np.nan
                with np.errstate(invalid="ignore", divide="ignore"):
                    reps += (w @ cm - w @ cc) / (w @ nu)
            point /= len(weights)
            reps /= len(weights)
            ok = reps[np.isfinite(reps)]
            lo, hi = (
                (float(np.percentile(ok, 2.5)), float(np.percentile(ok, 97.5)))
                if ok.size
                else (np.nan, np.nan)
            )
            delta[mt][g] = (float(point), lo, hi)
    return HeldoutBattery(
        methods=order,
        groups=groups,
        train=train,
        test=n - train,
        folds=tuple(done),
        scores=scores,
        delta=delta,
        n_bootstrap=n_bootstrap,
        seed=seed,
        random_folds=folds > 1,
    )


def choose_methods(
    matrix: RatingMatrix, requested: Sequence[str] | None, *, have_scores: bool
) -> tuple[str, ...]:
    """The model methods to run: ``requested`` (names, or None / ("all",) for every one this
    matrix can feed). A method whose channel has no raters here, or a ``scores-*`` method without
    score differences, is dropped from "all" and refused when named."""
    machine = [is_machine(k) for k in matrix.kinds]
    has = {"humans": not all(machine), "judges": any(machine)}

    def why_not(method: str) -> str | None:
        family, channel = method.split("-", 1)
        if family == "scores" and not have_scores:
            return "score differences exist for pair sets only (use --pairs)"
        humans, judges = CHANNELS[channel]
        if judges and not has["judges"]:
            return "no judges in the selection (add --with-judges)"
        if humans and not has["humans"]:
            return "no human raters in the selection"
        return None

    if requested is None or list(requested) == ["all"]:
        return tuple(m for m in MODELS if why_not(m) is None)
    unknown = [m for m in requested if m not in MODELS and m not in BASELINES]
    if unknown:
        raise BadInput(f"unknown --method {', '.join(unknown)} (known: all, {', '.join(MODELS)})")
    for m in requested:
        if m in MODELS and (reason := why_not(m)) is not None:
            raise BadInput(f"--method {m}: {reason}")
    return tuple(m for m in MODELS if m in requested)
