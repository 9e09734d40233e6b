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

* ``dims-*``: for each other rater c, its signed score difference on each scored dimension, the
  mean difference ``d_c``, ``|d_c|`` and the missing indicator, with the penalty ``C`` chosen per
  target rater by an inner 5-fold cross-validation on the **training units only** (grid
  ``C_GRID``, criterion the mean over inner folds of the held-out log loss, the smallest ``C``
  among equals; folds from a seeded permutation of the training units). The chosen ``C`` per
  fold and rater is reported;
* ``groups-*`` (``group_features``): the other raters pooled by rater group (e.g. the target's fellow experts, the
  crowd, the LLMs; the target itself never counts): per group, the mean over its members of the
  signed score difference on each dimension, the mean of their mean differences ``d̄``, ``|d̄|``,
  the spread of the members' ``d_c`` (sd, ddof 0), the mean of their signs ``sign(d_c)`` (the
  share of members preferring A minus the share preferring B) and the share of members with no
  scores on the pair (means over the members that have scores; 0 where none has). D + 5 numbers
  per group (nine for SummEval's four dimensions) instead of D + 3 per rater: the groups' members are exchangeable enough that their
  average carries the signal with far fewer weights to shrink. ``C`` is chosen by the same inner
  cross-validation as ``dims-*``;

* ``select-*``: nested cross-validation's choice among model classes (``metrics.model_classes``):
  per target rater, seven candidates — the L2 multinomial, the elastic-net multinomial and the
  cumulative-link (ordinal, B < T < A; pairwise A/B/T labels only) model on the ``groups-*`` and on
  the ``dims-*`` design, and an additive spline model on the ``groups-*`` design — each tuned by
  the same inner 5-fold CV on the training units; the candidate and setting with the lowest
  inner-CV log loss is refitted on all training units (``chosen_model`` reports it per rater and
  split; ``chosen_c`` its C). About 25 times a ``groups-*`` model's fits;

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
null for the two majorities). ``mace``, when asked for, is a baseline too: the argmax of the MACE posterior fitted to
the other raters' labels (``metrics.truth.mace``), so the three label models' posteriors (MACE,
Dawid–Skene, the fitted models) are compared on the same held-out labels by ECE and log loss.

``delta_vs_cluster``: the accuracy minus the cluster baseline's. With one split its CI is a paired
bootstrap over test units. With K > 1 random splits the K test sets overlap and every training set
shares most of its units with the others, so averaging per-split bootstraps as if the splits were
independent understates the uncertainty; the CI is then the Nadeau–Bengio corrected resampled t
(Nadeau & Bengio, 2003, *Machine Learning* 52:239–281): with per-split differences ``δ_k``,
``δ̄ ± t_{0.975, K−1} · sqrt((1/K + n_test/n_train) · s²_δ)``. ``ci_method`` says which; the
averaged bootstrap stays available as ``ci_bootstrap``. The same corrected interval is given for
each method's mean accuracy itself (``folds.accuracy[method][group].ci``, K > 1 random splits): a
claim such as "past 0.70" is a claim about this population of pairs, and the split-to-split sd
alone understates how far another sample of 1,000 pairs could move the mean.

``judges_add`` answers, per feature family and rater group, whether adding the LLM judges to the
humans' features (``F-joint`` against ``F-humans``) gains at least ``JUDGE_GAIN`` (one accuracy
point) on held-out labels: the paired difference with the same interval as above, and a verdict —
``adds >= 1 point`` (lower bound ≥ 0.01), ``adds < 1 point`` (upper bound < 0.01: these data rule
out a gain of a point), or ``inconclusive``.

No fitted quantity reads a test label: the models see the training rows only (the tests permute
the test rows and check that every coefficient stays identical).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgepanel.errors import BadInput
from judgepanel.metrics.group_ci import cr1_difference_se, group_interval, uses_t
from judgepanel.metrics.heldout import HeldoutResult
from judgepanel.metrics.heldout_splits import INNER_FOLDS, group_codes, inner_folds, inner_group_folds, splits
from judgepanel.metrics.logistic import MultinomialFit, fit_multinomial, fit_multinomial_many
from judgepanel.metrics.matrix import RatingMatrix, is_machine
from judgepanel.metrics.model_classes import tune_and_predict
from judgepanel.metrics.ordinal import OrdinalFit
from judgepanel.metrics.summary import _matrix_codes, heldout_report
from judgepanel.metrics.truth import IntArray
from judgepanel.metrics.uncertainty import expected_calibration_error

FloatArray = NDArray[np.float64]

BASELINES: tuple[str, ...] = ("majority", "cluster", "dawid-skene")
MACE = "mace"  # a baseline run when asked (--method mace): ~0.3 CPU s per rater and split
CHANNELS: dict[str, tuple[bool, bool]] = {  # name -> (humans, judges)
    "humans": (True, False),
    "joint": (True, True),
    "judges": (False, True),
}
FAMILIES: tuple[str, ...] = ("scores", "labels", "dims", "groups", "select")
INNER_CV: tuple[str, ...] = ("dims", "groups", "select")  # the families whose C the inner CV chooses
MODELS: tuple[str, ...] = tuple(f"{f}-{c}" for f in FAMILIES for c in CHANNELS)
DEFAULT_MODELS: tuple[str, ...] = tuple(  # "all": the inner-CV families are asked by name
    m for m in MODELS if m.split("-", 1)[0] not in INNER_CV
)
C_GRID: tuple[float, ...] = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
JUDGE_GAIN = 0.01
ALL_METHODS: tuple[str, ...] = (*BASELINES, *MODELS)
EPS = 1e-15


def _blocks(
    codes: IntArray, diffs: FloatArray, k: int, family: str, dims: FloatArray | None = None
) -> list[FloatArray]:
    """One feature block (units × width) per rater."""
    out: list[FloatArray] = []
    for c in range(codes.shape[1]):
        if family == "dims":
            assert dims is not None
            d = diffs[:, c]
            miss = np.isnan(d)
            v = np.where(miss, 0.0, d)
            per = np.where(np.isnan(dims[:, c, :]), 0.0, dims[:, c, :])
            out.append(np.column_stack([per, v, np.abs(v), miss.astype(np.float64)]))
        elif family == "scores":
            d = diffs[:, c]
            miss = np.isnan(d)
            v = np.where(miss, 0.0, d)
            out.append(np.column_stack([v, np.abs(v), miss.astype(np.float64)]))
        else:
            out.append((codes[:, c][:, None] == np.arange(k)[None, :]).astype(np.float64))
    return out


def group_features(
    diffs: FloatArray, dims: FloatArray, groups: Sequence[str], predictors: Sequence[int]
) -> FloatArray:
    """The ``groups-*`` design (units × (D + 5)·G): the ``predictors`` (rater indices) pooled by their
    group in ``groups`` (one name per rater; groups in order of first appearance among the
    predictors), 8 columns per group as the module docstring lists them."""
    order = [*dict.fromkeys(groups[q] for q in predictors)]
    blocks: list[FloatArray] = []
    for g in order:
        cols = [q for q in predictors if groups[q] == g]
        d = diffs[:, cols]
        have = ~np.isnan(d)
        n_have = have.sum(axis=1)
        some = n_have > 0
        denom = np.maximum(n_have, 1)
        mean_d = np.where(have, d, 0.0).sum(axis=1) / denom
        spread = np.sqrt(np.where(have, (np.nan_to_num(d) - mean_d[:, None]) ** 2, 0.0).sum(axis=1) / denom)
        sign = np.where(have, np.sign(np.nan_to_num(d)), 0.0).sum(axis=1) / denom
        dd = dims[:, cols, :]
        dhave = ~np.isnan(dd)
        per = np.where(dhave, dd, 0.0).sum(axis=1) / np.maximum(dhave.sum(axis=1), 1)
        missing = 1.0 - n_have / len(cols)
        blocks.append(
            np.column_stack(
                [
                    per,
                    np.where(some, mean_d, 0.0),
                    np.where(some, np.abs(mean_d), 0.0),
                    np.where(some, spread, 0.0),
                    np.where(some, sign, 0.0),
                    missing,
                ]
            )
        )
    return np.hstack(blocks) if blocks else np.zeros((diffs.shape[0], 0))


def _aligned(
    x: FloatArray, groups: Sequence[str], cols: Sequence[int], r: int, order: Sequence[str], width: int
) -> FloatArray:
    """``group_features`` of the predictors other than r (``width`` columns per group), laid out
    on the full channel's group order: a group that only r belonged to becomes zero columns
    (weight exactly 0 under the penalty), so every target's design has the same width."""
    present = [*dict.fromkeys(groups[q] for q in cols if q != r)]
    if present == list(order):
        return x
    out = np.zeros((x.shape[0], width * len(order)))
    for j, g in enumerate(present):
        at = list(order).index(g)
        out[:, at * width : (at + 1) * width] = x[:, j * width : (j + 1) * width]
    return out


def model_predictors(r: int, machine: Sequence[bool], channel: str) -> list[int]:
    """The raters whose features predict rater r under a channel set."""
    humans, judges = CHANNELS[channel]
    return [c for c, m in enumerate(machine) if c != r and ((judges and m) or (humans and not m))]


# select-*: the candidates of nested CV (class, feature family), in this order (first of equals wins)
SELECT_CLASSES: tuple[str, ...] = ("l2", "enet", "ordinal", "additive", "l2", "enet", "ordinal")
SELECT_FEATURES: tuple[str, ...] = ("groups", "groups", "groups", "groups", "dims", "dims", "dims")


def pair_ranks(labels: Sequence[str]) -> tuple[int, ...] | None:
    """The order of a pairwise A/B/T label for the ordinal class (rank per code: B < T < A), or
    None for any other label set (the ordinal candidates are then left out)."""
    if sorted(labels) != ["A", "B", "T"]:
        return None
    rank = {"B": 0, "T": 1, "A": 2}
    return tuple(rank[x] for x in labels)


def select_candidates(
    groups: FloatArray, dims: FloatArray, ranks: Sequence[int] | None
) -> list[tuple[str, str, FloatArray]]:
    """``select-*``'s candidates (class, feature family, design) on the two feature designs; the
    ordinal ones only for an ordered label."""
    return [
        (kind, feat, groups if feat == "groups" else dims)
        for kind, feat in zip(SELECT_CLASSES, SELECT_FEATURES, strict=True)
        if kind != "ordinal" or ranks is not None
    ]


def _describe(kind: str, feat: str, setting: dict[str, float] | None) -> str:
    extra = "" if setting is None else ", ".join(f"{k}={v:g}" for k, v in setting.items())
    return f"{kind} {feat} ({extra})"


@dataclass(frozen=True, eq=False)
class Fold:
    """One split: the baselines' result and every model's fits and test predictions."""

    train: IntArray  # unit indices of the original matrix
    test: IntArray
    baseline: HeldoutResult
    fits: dict[tuple[str, int], MultinomialFit | OrdinalFit]  # (method, rater) -> fit
    predictions: dict[str, IntArray]  # method -> test units × raters, −1 where no label
    probabilities: dict[str, FloatArray | None]  # method -> test units × raters × K
    truth: IntArray  # test units × raters, −1 where no label
    chosen_c: dict[str, FloatArray]  # method -> C per rater (the inner CV's choice; NaN: no labels)
    # select-*: method -> per rater the chosen candidate ("enet groups", …; None: no labels)
    chosen_model: dict[str, list[str | None]] = field(default_factory=dict)


def choose_c(
    design: FloatArray,
    labels: IntArray,
    k: int,
    fold: IntArray,
    grid: Sequence[float] = C_GRID,
) -> tuple[FloatArray, FloatArray]:
    """Per model (``design`` R × n × p, ``labels`` R × n with −1 unused): the C of ``grid`` with the
    lowest mean over inner folds of the held-out mean log loss (first of equals), and that loss per
    model and C (R × len(grid)). A model with no label in some inner fold's test part averages the
    folds it has; one with no labels at all gets NaN."""
    n_models = design.shape[0]
    loss = np.zeros((n_models, len(grid)))
    count = np.zeros((n_models, len(grid)))
    for f in range(int(fold.max(initial=-1)) + 1):
        inner_tr = np.where(fold[None, :] != f, labels, -1)
        held = (fold[None, :] == f) & (labels >= 0)
        for j, c in enumerate(grid):
            fits = fit_multinomial_many(design, inner_tr, k, c=c)
            for r, fit in enumerate(fits):
                rows = np.nonzero(held[r])[0]
                if rows.size == 0:
                    continue
                lp = fit.log_proba(design[r, rows])
                loss[r, j] += -float(
                    np.mean(np.clip(lp[np.arange(rows.size), labels[r, rows]], np.log(EPS), 0.0))
                )
                count[r, j] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = loss / count
    chosen = np.full(n_models, np.nan)
    for r in range(n_models):
        if np.isfinite(mean[r]).any():
            chosen[r] = grid[int(np.nanargmin(mean[r]))]
    return chosen, mean


def _fold(
    matrix: RatingMatrix,
    codes: IntArray,
    diffs: FloatArray,
    dims: FloatArray | None,
    k: int,
    perm: IntArray,
    train: int,
    methods: Sequence[str],
    n_clusters: int,
    seed: int,
    c: float,
    with_mace: bool = False,
    train_groups: IntArray | None = None,
) -> Fold:
    from judgepanel.metrics.truth import mace

    m = replace(matrix, values=matrix.values[perm], unit_ids=tuple(matrix.unit_ids[i] for i in perm))
    base, _, _ = heldout_report(m, train=train, n_clusters=n_clusters, seed=seed)
    cp, dp = codes[perm], diffs[perm]
    dd = dims[perm] if dims is not None else None
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
    # MACE on the other raters' labels (all units; the withheld rater's never seen), argmax with
    # the same fallback the other baselines use where no other rater labelled the unit
    mpost = np.full((te.size, n_r, k), np.nan)
    mpred = np.full((te.size, n_r), -1, dtype=np.int64)
    for x in base.raters if with_mace else ():
        r = x.rater
        others = [q for q in range(n_r) if q != r]
        if not others:
            continue
        mfit = mace(cp[:, others], k, seed=seed, restarts=3)
        pr = mfit.posteriors[te]
        rated = (cp[te][:, others] >= 0).any(axis=1)
        mpost[:, r] = pr
        labelled = truth[:, r] >= 0
        guess = np.where(rated, pr.argmax(axis=1), x.fallback_label)
        mpred[:, r] = np.where(labelled, guess, -1)
    if with_mace:
        preds[MACE], probs[MACE] = mpred, mpost
    machine = [is_machine(kd) for kd in matrix.kinds]
    fits: dict[tuple[str, int], MultinomialFit | OrdinalFit] = {}
    chosen_c: dict[str, FloatArray] = {}
    chosen_model: dict[str, list[str | None]] = {}
    families = {mt.split("-", 1)[0] for mt in methods} - {"groups", "select"}
    if any(mt.startswith("select-") for mt in methods):
        families.add("dims")
    blocks = {f: _blocks(cp, dp, k, f, dd) for f in families}
    # the penalty's inner CV keeps whole articles together when the split does (heldout_splits)
    inner = inner_folds(train, seed) if train_groups is None else inner_group_folds(train_groups, seed)

    def design_for(family: str, channel: str) -> FloatArray:
        """One design per target rater (n_r × n × p) from the channel's other raters."""
        cols = [q for q in range(n_r) if q in model_predictors(-1, machine, channel)]
        if family == "groups":
            # pooled over the other raters of each group: the target's own group loses the target
            assert dd is not None
            groups = [g or "(none)" for g in matrix.rater_groups]
            order = [*dict.fromkeys(groups[q] for q in cols)]
            design = np.stack(
                [
                    _aligned(
                        group_features(dp, dd, groups, [q for q in cols if q != r]),
                        groups,
                        cols,
                        r,
                        order,
                        dd.shape[2] + 5,
                    )
                    for r in range(n_r)
                ]
            )
            return design
        width = blocks[family][0].shape[1]
        full = np.hstack([blocks[family][q] for q in cols]) if cols else np.zeros((n, 0))
        # one design per target rater: the channel's raters with the target's own block zeroed (a
        # zero column gets weight exactly 0 under the penalty, so this is the fit without it)
        design = np.repeat(full[None], n_r, axis=0)
        for r in range(n_r):
            if r in cols:
                j = cols.index(r)
                design[r, :, j * width : (j + 1) * width] = 0.0
        return design

    ranks = pair_ranks(matrix.category_labels)
    for method in methods:
        family, channel = method.split("-", 1)
        pm = np.full((te.size, n_r), -1, dtype=np.int64)
        pp = np.full((te.size, n_r, k), np.nan)
        if family == "select":
            cands = select_candidates(design_for("groups", channel), design_for("dims", channel), ranks)
            labels = cp.T.copy()
            labels[:, te] = -1  # the choice and the refit read training labels only
            ch = tune_and_predict([(kd, x) for kd, _, x in cands], labels, k, tr, te, inner, ranks)
            chosen_c[method] = np.array([np.nan if s is None else s["c"] for s in ch.setting])
            chosen_model[method] = [
                None if i < 0 else _describe(cands[int(i)][0], cands[int(i)][1], ch.setting[r])
                for r, i in enumerate(ch.candidate)
            ]
            for r in range(n_r):
                fit_r = ch.fits[r]
                if fit_r is None:
                    continue
                assert isinstance(fit_r, MultinomialFit | OrdinalFit)
                fits[(method, r)] = fit_r
                labelled = truth[:, r] >= 0
                pp[labelled, r] = ch.proba[r][labelled]
                pm[labelled, r] = ch.proba[r][labelled].argmax(axis=1)
            preds[method], probs[method] = pm, pp
            continue
        design = design_for(family, channel)
        cs = np.full(n_r, c)
        if family in INNER_CV:
            cs, _ = choose_c(design[:, tr], cp[tr].T.copy(), k, inner)
        chosen_c[method] = cs
        for r in range(n_r):
            rows = tr[cp[tr, r] >= 0]  # the target's training labels only
            fit = fit_multinomial(
                design[r, rows], cp[rows, r], k, c=float(cs[r]) if np.isfinite(cs[r]) else c
            )
            fits[(method, r)] = fit
            p = fit.predict_proba(design[r, te])
            labelled = truth[:, r] >= 0
            pp[labelled, r] = p[labelled]
            pm[labelled, r] = p[labelled].argmax(axis=1)
        preds[method], probs[method] = pm, pp
    return Fold(perm[:train], perm[train:], base, fits, preds, probs, truth, chosen_c, chosen_model)


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


def nadeau_bengio(
    deltas: ArrayLike, n_train: float, n_test: float, *, level: float = 0.95
) -> tuple[float, float, float]:
    """Nadeau & Bengio's corrected resampled t interval for the mean of per-split differences
    ``deltas`` (K random train/test splits of one sample): ``δ̄ ± t_{(1+level)/2, K−1} ·
    sqrt((1/K + n_test/n_train) · s²)``, s² the sample variance of the δ_k (ddof 1). Returns
    (mean, low, high); the bounds are NaN for K < 2."""
    from scipy.stats import t as student_t

    d = np.asarray(deltas, dtype=np.float64)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return float("nan"), float("nan"), float("nan")
    mean = float(d.mean())
    if d.size < 2:
        return mean, float("nan"), float("nan")
    se = float(np.sqrt((1.0 / d.size + n_test / n_train) * d.var(ddof=1)))
    q = float(student_t.ppf(0.5 + level / 2.0, d.size - 1))
    return mean, mean - q * se, mean + q * se


@dataclass(frozen=True, eq=False)
class HeldoutBattery:
    methods: tuple[str, ...]
    groups: tuple[str, ...]
    train: int
    test: int
    folds: tuple[Fold, ...]
    scores: dict[str, dict[str, list[GroupScore]]]  # method -> group -> one per fold
    delta: dict[str, dict[str, tuple[float, float, float]]]  # method -> group -> (value, lo, hi)
    delta_bootstrap: dict[str, dict[str, tuple[float, float, float]]]  # the averaged per-split bootstrap
    judges_add: dict[str, dict[str, dict[str, Any]]]  # family -> group -> paired F-joint − F-humans
    n_bootstrap: int
    seed: int
    random_folds: bool
    rater_names: tuple[str, ...] = ()
    split_by: str = "items"  # or "group": whole articles train or test (metrics.heldout_splits)
    unit_groups: IntArray | None = None  # group code of every unit of the matrix (None: unknown)

    @property
    def ci_method(self) -> str:
        if self.random_folds and len(self.folds) > 1:
            of = " of articles" if self.split_by == "group" else ""
            return f"nadeau-bengio corrected resampled t over {len(self.folds)} splits{of}"
        if self.split_by == "group":
            n_te = self.test_groups[0] if self.test_groups else 0
            if n_te < 2:
                return f"no interval: {n_te} test article"
            if uses_t(n_te):
                return f"t({n_te - 1}) with the CR1 cluster-robust SE over {n_te} test articles"
            return "paired bootstrap over test articles (percentile)"
        return "paired bootstrap over test units (percentile)"

    @property
    def test_groups(self) -> tuple[int, ...]:
        """The number of groups among each split's test units (empty when groups are unknown)."""
        if self.unit_groups is None:
            return ()
        return tuple(int(np.unique(self.unit_groups[f.test]).size) for f in self.folds)

    def accuracy(self, method: str, group: str) -> float:
        return float(np.mean([s.accuracy for s in self.scores[method][group]]))

    def _split_words(self) -> str:
        if self.split_by == "group":
            if self.random_folds:
                return "random permutations of articles (whole articles train or test)"
            return "articles in order: the first ones train (whole articles train or test)"
        return "random permutations" if self.random_folds else f"first {self.train} units train"

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
                    g: {
                        "value": self.delta[mt][g][0],
                        "ci": [self.delta[mt][g][1], self.delta[mt][g][2]],
                        "ci_bootstrap": [self.delta_bootstrap[mt][g][1], self.delta_bootstrap[mt][g][2]],
                    }
                    for g in self.groups
                },
            }
            chosen = [f.chosen_c[mt] for f in self.folds if mt in f.chosen_c]
            if chosen and mt.split("-", 1)[0] in INNER_CV:
                names = self.rater_names or tuple(str(i) for i in range(len(chosen[0])))
                methods[mt]["chosen_c"] = {
                    names[r]: [None if not np.isfinite(cs[r]) else float(cs[r]) for cs in chosen]
                    for r in range(len(names))
                }
            models = [f.chosen_model[mt] for f in self.folds if mt in f.chosen_model]
            if models:
                names = self.rater_names or tuple(str(i) for i in range(len(models[0])))
                methods[mt]["chosen_model"] = {names[r]: [ms[r] for ms in models] for r in range(len(names))}
            spread[mt] = {}
            for g in self.groups:
                acc = np.array([s.accuracy for s in per[g]])
                spread[mt][g] = {
                    "mean": float(acc.mean()),
                    "sd": float(acc.std(ddof=1)) if acc.size > 1 else 0.0,
                    "min": float(acc.min()),
                    "max": float(acc.max()),
                }
                if self.random_folds and acc.size > 1:
                    # how far the mean accuracy itself is pinned down by one sample of pairs
                    _, lo, hi = nadeau_bengio(acc, self.train, self.test)
                    spread[mt][g]["ci"] = [lo, hi]
        return {
            "methods": methods,
            "train": self.train,
            "test": self.test,
            "ci_method": self.ci_method,
            "judges_add": self.judges_add,
            "split_by": self.split_by,
            "folds": {
                "k": len(self.folds),
                "split": self._split_words(),
                "accuracy": spread,
                "train_units": [int(f.train.size) for f in self.folds],
                "test_units": [int(f.test.size) for f in self.folds],
                "test_groups": list(self.test_groups) or None,
            },
            "bootstrap": {
                "n": self.n_bootstrap,
                "seed": self.seed,
                "ci": "percentile 95%, test units resampled",
            },
            "c_grid": list(C_GRID),
            "inner_folds": INNER_FOLDS,
        }


def _verdict(lo: float, hi: float) -> str:
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "inconclusive"
    if lo >= JUDGE_GAIN:
        return "adds >= 1 point"
    if hi < JUDGE_GAIN:
        return "adds < 1 point"
    return "inconclusive"


def heldout_battery(
    matrix: RatingMatrix,
    score_differences: FloatArray,
    *,
    train: int,
    methods: Sequence[str] = DEFAULT_MODELS,
    folds: int = 1,
    n_clusters: int = 2,
    n_bootstrap: int = 1000,
    seed: int = 0,
    c: float = 1.0,
    dimension_differences: FloatArray | None = None,
    mace_baseline: bool = False,
    split_by: str = "items",
    unit_groups: Sequence[Hashable | None] | None = None,
) -> HeldoutBattery:
    """Every requested model method and the baselines on ``folds`` train/test splits of
    ``matrix`` (a pair matrix; ``score_differences`` units × raters, NaN where none;
    ``dimension_differences`` units × raters × dimensions for the ``dims-*`` methods).
    ``split_by`` ``group`` splits whole groups (``unit_groups``: one key per unit, e.g. the
    article) instead of units (:mod:`~judgepanel.metrics.heldout_splits`); the share of groups
    that train is ``train / n_units``."""
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
    dims = None if dimension_differences is None else np.asarray(dimension_differences, dtype=np.float64)
    if any(mt.split("-", 1)[0] in INNER_CV for mt in methods) and (
        dims is None or dims.shape[:2] != diffs.shape
    ):
        raise ValueError(
            "the dims-* and groups-* methods need dimension_differences of shape units × raters × D"
        )
    codes, k = _matrix_codes(matrix)
    n = matrix.n_units
    unit_codes = None
    if unit_groups is not None:
        if len(unit_groups) != n:
            raise ValueError(f"{len(unit_groups)} group keys for {n} units")
        unit_codes, _ = group_codes(unit_groups)
    elif split_by == "group":
        raise ValueError("splitting by group needs unit_groups")
    drawn = splits(n, train, folds, seed, split_by=split_by, codes=unit_codes)
    by_group = split_by == "group"
    done = [
        _fold(
            matrix,
            codes,
            diffs,
            dims,
            k,
            sp.order,
            sp.train,
            methods,
            n_clusters,
            seed,
            c,
            mace_baseline,
            unit_codes[sp.order[: sp.train]] if by_group and unit_codes is not None else None,
        )
        for sp in drawn
    ]
    n_train = float(np.mean([sp.train for sp in drawn]))
    groups_of = [g or "(none)" for g in matrix.rater_groups]
    names = [*dict.fromkeys(groups_of)]
    groups = (*names, *(["all"] if names != ["all"] else []))
    members = {g: [r for r in range(matrix.n_raters) if g == "all" or groups_of[r] == g] for g in groups}
    order = (*BASELINES, *([MACE] if mace_baseline else []), *[mt for mt in MODELS if mt in methods])
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
    test_codes: list[IntArray] = []
    for f in done:
        n_te = f.test.size
        if by_group and unit_codes is not None:
            # whole test articles resampled: their units share one bootstrap count
            _, local = np.unique(unit_codes[f.test], return_inverse=True)
            g_te = int(local.max(initial=-1)) + 1
            idx = boot.integers(0, g_te, size=(n_bootstrap, g_te))
            counts = np.zeros((n_bootstrap, g_te))
            np.add.at(counts, (np.repeat(np.arange(n_bootstrap), g_te), idx.ravel()), 1.0)
            weights.append(counts[:, local])
            test_codes.append(local.astype(np.int64))
            continue
        idx = boot.integers(0, n_te, size=(n_bootstrap, n_te))
        w = np.zeros((n_bootstrap, n_te))
        np.add.at(w, (np.repeat(np.arange(n_bootstrap), n_te), idx.ravel()), 1.0)
        weights.append(w)
    random_folds = folds > 1

    def per_fold(a: str, b: str, g: str) -> FloatArray:
        out = []
        for fi in range(len(done)):
            ca, nu = per_unit[a][g][fi]
            cb, _ = per_unit[b][g][fi]
            tot = nu.sum()
            out.append((ca.sum() - cb.sum()) / tot if tot else np.nan)
        return np.asarray(out, dtype=np.float64)

    def paired(a: str, b: str, g: str) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
        """(the reported interval, the averaged bootstrap) for accuracy(a) − accuracy(b)."""
        reps = np.zeros(n_bootstrap)
        for fi, w in enumerate(weights):
            ca, nu = per_unit[a][g][fi]
            cb, _ = per_unit[b][g][fi]
            with np.errstate(invalid="ignore", divide="ignore"):
                reps += (w @ ca - w @ cb) / (w @ nu)
        reps /= len(weights)
        deltas = per_fold(a, b, g)
        point = float(np.mean(deltas))
        ok = reps[np.isfinite(reps)]
        lo, hi = (
            (float(np.percentile(ok, 2.5)), float(np.percentile(ok, 97.5))) if ok.size else (np.nan, np.nan)
        )
        boot_ci = (point, lo, hi)
        if random_folds and len(done) > 1:
            return nadeau_bengio(deltas, n_train, n - n_train), boot_ci
        if test_codes and uses_t(int(test_codes[0].max(initial=-1)) + 1):
            # one split by article with few test articles: t(G-1) with the CR1 SE (metrics.group_ci)
            ca, nu = per_unit[a][g][0]
            cb, _ = per_unit[b][g][0]
            tc = test_codes[0]
            sums = [np.bincount(tc, weights=x, minlength=int(tc.max()) + 1) for x in (ca, nu, cb)]
            se = cr1_difference_se(sums[0], sums[1], sums[2], sums[1])
            ci = group_interval(point, len(sums[1]), se=se)
            return (point, ci.lo, ci.hi), boot_ci
        return boot_ci, boot_ci

    delta: dict[str, dict[str, tuple[float, float, float]]] = {mt: {} for mt in order}
    delta_boot: dict[str, dict[str, tuple[float, float, float]]] = {mt: {} for mt in order}
    for g in groups:
        for mt in order:
            delta[mt][g], delta_boot[mt][g] = paired(mt, "cluster", g)
    judges_add: dict[str, dict[str, dict[str, Any]]] = {}
    for fam in FAMILIES:
        joint, humans = f"{fam}-joint", f"{fam}-humans"
        if joint not in order or humans not in order:
            continue
        judges_add[fam] = {}
        for g in groups:
            (v, lo, hi), _ = paired(joint, humans, g)
            judges_add[fam][g] = {
                "with_judges": joint,
                "humans_only": humans,
                "value": v,
                "ci": [lo, hi],
                "per_split": [float(x) for x in per_fold(joint, humans, g)],
                "at_least": JUDGE_GAIN,
                "verdict": _verdict(lo, hi),
            }
    return HeldoutBattery(
        methods=order,
        groups=groups,
        train=round(n_train),  # the mean over splits when whole articles are split
        test=n - round(n_train),
        folds=tuple(done),
        scores=scores,
        delta=delta,
        delta_bootstrap=delta_boot,
        judges_add=judges_add,
        n_bootstrap=n_bootstrap,
        seed=seed,
        random_folds=random_folds,
        rater_names=tuple(matrix.rater_names),
        split_by=split_by,
        unit_groups=unit_codes,
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
        if family in ("scores", *INNER_CV) and not have_scores:
            return "score differences exist for pair sets only (use --pairs)"
        humans, judges = CHANNELS[channel]
        if judges and not has["judges"]:
            return "no judges in the selection (add --with-judges)"
        if humans and not has["humans"]:
            return "no human raters in the selection"
        return None

    if requested is None or list(requested) == ["all"]:
        # the dims-* and groups-* methods cross-validate C (35 extra fits per method and split):
        # asked by name
        return tuple(m for m in DEFAULT_MODELS if why_not(m) is None)
    unknown = [m for m in requested if m not in MODELS and m not in BASELINES and m != MACE]
    if unknown:
        raise BadInput(f"unknown --method {', '.join(unknown)} (known: all, {', '.join(MODELS)})")
    for m in requested:
        if m in MODELS and (reason := why_not(m)) is not None:
            raise BadInput(f"--method {m}: {reason}")
    return tuple(m for m in MODELS if m in requested)
