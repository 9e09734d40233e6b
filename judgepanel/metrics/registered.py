"""The registered held-out comparisons: targets a referee would accept for predicting one rater.

Boundary: pure statistics over a finished :class:`~judgepanel.metrics.prediction.HeldoutBattery`
and the rating codes it was run on — arrays in, a frozen :class:`Registered` out; no fitting of
its own beyond two counting rules, no I/O. `metrics heldout --json` reports it as ``registered``.

A single accuracy target (the old "0.70 mean expert accuracy") says little: the Bayes ceiling of
predicting one SummEval expert is only identified to a band (:mod:`~judgepanel.metrics.ceiling`),
and the figure moves by about 0.02 from one draw of splits to the next. Three comparisons are
registered instead, each per human rater group (experts, crowd) with at least two members, each
a difference paired per split with its interval, and each with its verdict declared in advance:

(a) **model vs peers** — the full model (``F-joint``: the other humans and the judges; F the
    richest feature family run, ``select`` > ``groups`` > ``dims`` > ``scores`` > ``labels``)
    against the best rule on the *other members of the target's group* alone: per target rater,
    a lookup table from the pattern of the others' labels (a missing label is a value of its own)
    to the target's most frequent training label under that pattern (lowest code on ties; a
    pattern unseen in training falls back to the target's most frequent training label), fitted
    on the training units and applied to the test units ("cross-fitted"). Does the model add
    anything that two more experts do not? ``model better`` when the interval lies above 0,
    ``peers better`` below 0, else ``inconclusive``.
(b) **judges vs a second rater** — non-inferiority of the judges-only model (``F-judges``) to
    one more member of the group: the target's label predicted by another member's label (a
    missing one by the target's most frequent training label), averaged over the other members.
    Margin ``MARGIN`` = −0.02: ``non-inferior`` when the interval's lower end is above it,
    ``inferior`` when its upper end is below it, else ``inconclusive``.
(c) **calibration** — the full model's ECE at most ``ECE_MAX`` (0.05) and its log loss at least
    ``LOG_LOSS_GAIN`` (0.02) below the humans-only model's (``F-humans``): ``met`` when the ECE
    interval's upper end is ≤ 0.05 and the log-loss difference's upper end ≤ −0.02; ``not met``
    when either interval lies wholly on the wrong side; else ``inconclusive``.

**Intervals.** With K > 1 random splits: the Nadeau–Bengio corrected resampled t over the per-split
values (:func:`~judgepanel.metrics.prediction.nadeau_bengio`, n_train / n_test the battery's).
With one split: article-level — the test units' groups (articles) are the resampled units, by
the rule of :mod:`~judgepanel.metrics.group_ci` (a percentile cluster bootstrap from 20 test
groups, t(G−1) with the CR1 standard error for differences of means and with the group
jackknife for ECE below); without group keys each test unit is its own group. Below 5 groups
(or with fewer than two splits) no verdict is stated: ``too few groups``. ``ci_method`` says which.

Every accuracy here is pooled over the group's members and test units, as the battery's
``accuracy`` is; ECE uses the battery's binning (10 equal-width bins of the top probability).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgepanel.metrics.ceiling import CeilingBand, ceiling_band
from judgepanel.metrics.group_ci import (
    PERCENTILE,
    TOO_FEW_GROUPS,
    cr1_difference_se,
    group_interval,
    jackknife_se,
    t_interval,
    uses_t,
    verdict_allowed,
)
from judgepanel.metrics.matrix import RatingMatrix, is_machine
from judgepanel.metrics.prediction import EPS, FAMILIES, HeldoutBattery, nadeau_bengio
from judgepanel.metrics.summary import _matrix_codes

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

MARGIN = -0.02  # (b): the judges-only model may trail a second rater by at most this
ECE_MAX = 0.05  # (c)
LOG_LOSS_GAIN = 0.02  # (c): the full model's log loss at least this far below the humans-only one's
PRIORITY: tuple[str, ...] = ("select", "groups", "dims", "scores", "labels")
N_BINS = 10


@dataclass(frozen=True)
class Comparison:
    """A paired difference (or, for ECE, a level) with its interval and the declared verdict."""

    value: float
    lo: float
    hi: float
    ci_method: str
    verdict: str
    per_split: tuple[float, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "value": _num(self.value),
            "ci": [_num(self.lo), _num(self.hi)],
            "ci_method": self.ci_method,
            "verdict": self.verdict,
            "per_split": [_num(x) for x in self.per_split],
            **self.extra,
        }


@dataclass(frozen=True)
class GroupRegistered:
    group: str
    accuracy: dict[str, float]  # model, judges_only, humans_only, peers, second_rater
    model_vs_peers: Comparison | None
    judges_vs_second_rater: Comparison | None
    calibration: dict[str, Any] | None  # {"ece": Comparison, "log_loss_vs_humans": Comparison, "verdict"}
    reasons: dict[str, str]  # comparison -> why it is missing

    def as_dict(self) -> dict[str, Any]:
        cal = None
        if self.calibration is not None:
            cal = {
                "ece": self.calibration["ece"].as_dict(),
                "log_loss_vs_humans": self.calibration["log_loss_vs_humans"].as_dict(),
                "verdict": self.calibration["verdict"],
            }
        return {
            "accuracy": {k: _num(v) for k, v in self.accuracy.items()},
            "model_vs_peers": None if self.model_vs_peers is None else self.model_vs_peers.as_dict(),
            "judges_vs_second_rater": (
                None if self.judges_vs_second_rater is None else self.judges_vs_second_rater.as_dict()
            ),
            "calibration": cal,
            "missing": self.reasons,
        }


@dataclass(frozen=True)
class Registered:
    family: str | None
    model: str | None
    judges_only: str | None
    humans_only: str | None
    groups: tuple[GroupRegistered, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "judges_only": self.judges_only,
            "humans_only": self.humans_only,
            "margin": MARGIN,
            "ece_max": ECE_MAX,
            "log_loss_gain": LOG_LOSS_GAIN,
            "groups": {g.group: g.as_dict() for g in self.groups},
        }


def _num(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def peer_rule(train_codes: IntArray, test_codes: IntArray, target: int, peers: Sequence[int]) -> IntArray:
    """The lookup rule of (a): the target's test labels predicted from the peers' label pattern,
    fitted on the training rows (module docstring). Rows: units; columns: raters; −1 missing."""
    k = int(max(train_codes.max(initial=0), test_codes.max(initial=0))) + 1
    y = train_codes[:, target]
    have = y >= 0
    fallback = int(np.argmax(np.bincount(y[have], minlength=k))) if have.any() else 0
    table: dict[tuple[int, ...], FloatArray] = {}
    for key, label in zip(
        map(tuple, train_codes[have][:, list(peers)].tolist()), y[have].tolist(), strict=True
    ):
        table.setdefault(key, np.zeros(k))[label] += 1
    out = np.empty(test_codes.shape[0], dtype=np.int64)
    for i, key in enumerate(map(tuple, test_codes[:, list(peers)].tolist())):
        counts = table.get(key)
        out[i] = fallback if counts is None else int(np.argmax(counts))
    return out


def _second_rater(
    train_codes: IntArray, test_codes: IntArray, target: int, peers: Sequence[int]
) -> FloatArray:
    """Per test unit, the share of the other members whose label equals the target's (a missing
    one replaced by the target's most frequent training label); 0 where the target has none."""
    y = train_codes[:, target]
    have = y >= 0
    k = int(max(train_codes.max(initial=0), test_codes.max(initial=0))) + 1
    fallback = int(np.argmax(np.bincount(y[have], minlength=k))) if have.any() else 0
    truth = test_codes[:, target]
    hits = np.zeros(truth.size)
    for s in peers:
        guess = np.where(test_codes[:, s] >= 0, test_codes[:, s], fallback)
        hits += (guess == truth) & (truth >= 0)
    return hits / max(len(peers), 1)


def weighted_ece(conf: FloatArray, correct: FloatArray, weights: FloatArray) -> FloatArray:
    """ECE (10 equal-width bins of the confidence, as ``metrics.uncertainty``) under each row of
    ``weights`` (replicates × labels): ``Σ_b |Σ_{i∈b} w_i (correct_i − conf_i)| / Σ w``."""
    edges = np.linspace(0.0, 1.0, N_BINS + 1)
    b = np.clip(np.searchsorted(edges, conf, side="left") - 1, 0, N_BINS - 1)
    gap = np.zeros((conf.size, N_BINS))
    gap[np.arange(conf.size), b] = correct - conf
    w = np.atleast_2d(weights)
    with np.errstate(invalid="ignore", divide="ignore"):
        out: FloatArray = np.abs(w @ gap).sum(axis=1) / w.sum(axis=1)
    return out


@dataclass(frozen=True, eq=False)
class _Split:
    """One split's per-test-unit sums over a group's members."""

    labelled: FloatArray
    correct: dict[str, FloatArray]  # model, judges, peers, second
    log_loss: dict[str, FloatArray]  # model, humans: Σ −log p over the unit's labels
    conf: FloatArray  # per label of the full model: top probability
    hit: FloatArray  # per label: argmax == label
    label_unit: IntArray  # per label: its test unit
    codes: IntArray  # per test unit: its group code (0 … G−1)


def _split(
    battery: HeldoutBattery,
    fi: int,
    codes: IntArray,
    members: list[int],
    names: dict[str, str | None],
) -> _Split:
    f = battery.folds[fi]
    tr, te = codes[f.train], codes[f.test]
    truth = f.truth[:, members]
    mask = truth >= 0
    correct: dict[str, FloatArray] = {}
    for key in ("model", "judges"):
        mt = names[key]
        if mt is not None:
            correct[key] = ((f.predictions[mt][:, members] == truth) & mask).sum(axis=1).astype(np.float64)
    peers = np.zeros(te.shape[0])
    second = np.zeros(te.shape[0])
    for r in members:
        others = [q for q in members if q != r]
        guess = peer_rule(tr, te, r, others)
        peers += (guess == te[:, r]) & (te[:, r] >= 0)
        second += _second_rater(tr, te, r, others)
    correct["peers"], correct["second"] = peers, second
    log_loss: dict[str, FloatArray] = {}
    for key in ("model", "humans"):
        mt = names[key]
        prob = None if mt is None else f.probabilities.get(mt)
        if prob is None:
            continue
        p = prob[:, members]  # units × members × K
        y = np.where(mask, truth, 0)
        picked = np.take_along_axis(p, y[..., None], axis=2)[..., 0]
        log_loss[key] = np.where(mask, -np.log(np.clip(np.nan_to_num(picked, nan=1.0), EPS, 1.0)), 0.0).sum(
            axis=1
        )
    conf = hit = np.zeros(0)
    label_unit = np.zeros(0, dtype=np.int64)
    mt = names["model"]
    prob = None if mt is None else f.probabilities.get(mt)
    if prob is not None:
        unit_idx, member_idx = np.nonzero(mask)
        p = prob[:, members][unit_idx, member_idx]
        ok = ~np.isnan(p).any(axis=1)
        p, unit_idx, member_idx = p[ok], unit_idx[ok], member_idx[ok]
        conf = p.max(axis=1)
        hit = (p.argmax(axis=1) == truth[unit_idx, member_idx]).astype(np.float64)
        label_unit = unit_idx.astype(np.int64)
    if battery.unit_groups is not None:
        _, local = np.unique(battery.unit_groups[f.test], return_inverse=True)
    else:
        local = np.arange(f.test.size)
    return _Split(
        mask.sum(axis=1).astype(np.float64), correct, log_loss, conf, hit, label_unit, local.astype(np.int64)
    )


def _cluster_weights(codes: IntArray, n_boot: int, seed: int) -> FloatArray:
    """Bootstrap counts of whole groups (replicates × groups)."""
    g = int(codes.max(initial=-1)) + 1
    idx = np.random.default_rng([seed, 4]).integers(0, g, size=(n_boot, g))
    counts = np.zeros((n_boot, g))
    np.add.at(counts, (np.repeat(np.arange(n_boot), g), idx.ravel()), 1.0)
    return counts


def _verdict(lo: float, hi: float, *, above: float, better: str, worse: str, groups: int | None) -> str:
    if groups is not None and not verdict_allowed(groups):
        return TOO_FEW_GROUPS
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "inconclusive"
    if lo > above:
        return better
    if hi < above:
        return worse
    return "inconclusive"


class _Intervals:
    """The interval rule of the module docstring for one group's splits."""

    def __init__(self, battery: HeldoutBattery, splits: list[_Split], n_boot: int, seed: int) -> None:
        self.battery = battery
        self.splits = splits
        self.nb = battery.random_folds and len(battery.folds) > 1
        one = splits[0]
        self.groups = int(one.codes.max(initial=-1)) + 1
        self.weights = None if self.nb else _cluster_weights(one.codes, n_boot, seed)

    @property
    def n_verdict(self) -> int | None:
        return None if self.nb else self.groups

    def method(self, *, mean: bool) -> str:
        if self.nb:
            return f"nadeau-bengio corrected resampled t over {len(self.splits)} splits"
        unit = "test articles" if self.battery.unit_groups is not None else "test units"
        if self.groups < 2:
            return f"no interval: {self.groups} of the {unit}"
        if not uses_t(self.groups):
            return f"{PERCENTILE} (cluster bootstrap over {self.groups} {unit})"
        return f"t({self.groups - 1}) with the {'CR1' if mean else 'jackknife'} SE over {self.groups} {unit}"

    def difference(
        self, num_a: str, num_b: str, *, table: str = "correct"
    ) -> tuple[float, float, float, tuple[float, ...]]:
        """Σa/Σn − Σb/Σn per split and its interval (a, b: keys of ``correct`` or ``log_loss``)."""
        per = []
        for s in self.splits:
            src = getattr(s, table)
            n = s.labelled.sum()
            per.append(float((src[num_a].sum() - src[num_b].sum()) / n) if n else math.nan)
        if self.nb:
            v, lo, hi = nadeau_bengio(per, self.battery.train, self.battery.test)
            return v, lo, hi, tuple(per)
        s = self.splits[0]
        src = getattr(s, table)
        point = per[0]
        g = self.groups
        sums = [np.bincount(s.codes, weights=x, minlength=g) for x in (src[num_a], s.labelled, src[num_b])]
        assert self.weights is not None
        with np.errstate(invalid="ignore", divide="ignore"):
            reps = (self.weights @ sums[0] - self.weights @ sums[2]) / (self.weights @ sums[1])
        se = cr1_difference_se(sums[0], sums[1], sums[2], sums[1])
        ci = group_interval(point, g, replicates=reps, se=se)
        return point, ci.lo, ci.hi, tuple(per)

    def ece(self) -> tuple[float, float, float, tuple[float, ...]]:
        per = [
            float(weighted_ece(s.conf, s.hit, np.ones((1, s.conf.size)))[0]) if s.conf.size else math.nan
            for s in self.splits
        ]
        if self.nb:
            v, lo, hi = nadeau_bengio(per, self.battery.train, self.battery.test)
            return v, lo, hi, tuple(per)
        s = self.splits[0]
        point, g = per[0], self.groups
        if not s.conf.size:
            return math.nan, math.nan, math.nan, tuple(per)
        if uses_t(g):
            jack = [
                float(weighted_ece(s.conf, s.hit, (s.codes[s.label_unit] != j)[None, :].astype(float))[0])
                for j in range(g)
            ]
            lo, hi = t_interval(point, jackknife_se(jack), g - 1)
            return point, max(lo, 0.0), hi, tuple(per)
        assert self.weights is not None
        reps = weighted_ece(s.conf, s.hit, self.weights[:, s.codes[s.label_unit]])
        ci = group_interval(point, g, replicates=reps)
        return point, ci.lo, ci.hi, tuple(per)


def choose_family(methods: Sequence[str], family: str | None = None) -> str | None:
    """The feature family of the registered models: ``family`` when given, else the first of
    ``PRIORITY`` whose ``-joint`` model was run; None when none was."""
    if family is not None:
        if family not in FAMILIES:
            raise ValueError(f"unknown family {family!r} (known: {', '.join(FAMILIES)})")
        return family
    return next((f for f in PRIORITY if f"{f}-joint" in methods), None)


def registered_comparisons(
    battery: HeldoutBattery,
    matrix: RatingMatrix,
    *,
    family: str | None = None,
    n_bootstrap: int = 1000,
    seed: int = 0,
) -> Registered:
    """The three registered comparisons (module docstring) for every human rater group of the
    battery (run on ``matrix``) with at least two members."""
    codes, _ = _matrix_codes(matrix)
    machine = [is_machine(kd) for kd in matrix.kinds]
    fam = choose_family(battery.methods, family)
    names: dict[str, str | None] = {
        key: (f"{fam}-{ch}" if fam is not None and f"{fam}-{ch}" in battery.methods else None)
        for key, ch in (("model", "joint"), ("judges", "judges"), ("humans", "humans"))
    }
    out: list[GroupRegistered] = []
    rater_group = [g or "(none)" for g in matrix.rater_groups]
    for g in battery.groups:
        if g == "all":
            continue
        members = [r for r, rg in enumerate(rater_group) if rg == g]
        if len(members) < 2 or any(machine[r] for r in members):
            continue
        splits = [_split(battery, fi, codes, members, names) for fi in range(len(battery.folds))]
        iv = _Intervals(battery, splits, n_bootstrap, seed)
        acc: dict[str, float] = {
            key: float(np.mean([s.correct[key].sum() / s.labelled.sum() for s in splits if s.labelled.sum()]))
            for key in ("model", "judges", "peers", "second")
            if key in splits[0].correct
        }
        if names["humans"] is not None:
            acc["humans_only"] = battery.accuracy(names["humans"], g)
        accuracy = {
            "model": acc.get("model", math.nan),
            "judges_only": acc.get("judges", math.nan),
            "humans_only": acc.get("humans_only", math.nan),
            "peers": acc["peers"],
            "second_rater": acc["second"],
        }
        reasons: dict[str, str] = {}
        a = b = None
        cal = None
        if names["model"] is None:
            reasons["model_vs_peers"] = reasons["calibration"] = "no *-joint model was run (--method)"
        else:
            v, lo, hi, per = iv.difference("model", "peers")
            verdict = _verdict(
                lo, hi, above=0.0, better="model better", worse="peers better", groups=iv.n_verdict
            )
            a = Comparison(v, lo, hi, iv.method(mean=True), verdict, per, {"model": names["model"]})
        if names["judges"] is None:
            reasons["judges_vs_second_rater"] = f"{fam or 'F'}-judges was not run (--method)"
        else:
            v, lo, hi, per = iv.difference("judges", "second")
            verdict = _verdict(
                lo, hi, above=MARGIN, better="non-inferior", worse="inferior", groups=iv.n_verdict
            )
            b = Comparison(v, lo, hi, iv.method(mean=True), verdict, per, {"margin": MARGIN})
        if names["model"] is not None and names["humans"] is None:
            reasons["calibration"] = f"{fam}-humans was not run (--method)"
        elif names["model"] is not None:
            e, elo, ehi, eper = iv.ece()
            ece_ok = (
                "met"
                if math.isfinite(ehi) and ehi <= ECE_MAX
                else ("not met" if elo > ECE_MAX else "inconclusive")
            )
            v, lo, hi, per = iv.difference("model", "humans", table="log_loss")
            ll_ok = (
                "met"
                if math.isfinite(hi) and hi <= -LOG_LOSS_GAIN
                else ("not met" if lo > -LOG_LOSS_GAIN else "inconclusive")
            )
            if iv.n_verdict is not None and not verdict_allowed(iv.n_verdict):
                ece_ok = ll_ok = overall = TOO_FEW_GROUPS
            elif "not met" in (ece_ok, ll_ok):
                overall = "not met"
            else:
                overall = "met" if ece_ok == ll_ok == "met" else "inconclusive"
            cal = {
                "ece": Comparison(e, elo, ehi, iv.method(mean=False), ece_ok, eper, {"at_most": ECE_MAX}),
                "log_loss_vs_humans": Comparison(
                    v,
                    lo,
                    hi,
                    iv.method(mean=True),
                    ll_ok,
                    per,
                    {"at_most": -LOG_LOSS_GAIN, "humans_only": names["humans"]},
                ),
                "verdict": overall,
            }
        out.append(GroupRegistered(g, accuracy, a, b, cal, reasons))
    return Registered(fam, names["model"], names["judges"], names["humans"], tuple(out))


def group_ceilings(matrix: RatingMatrix) -> dict[str, CeilingBand | None]:
    """The ceiling band (:func:`~judgepanel.metrics.ceiling.ceiling_band`) of every rater group of
    ``matrix`` with at least three members, on all its units; None for a smaller group."""
    codes, k = _matrix_codes(matrix)
    groups = [g or "(none)" for g in matrix.rater_groups]
    out: dict[str, CeilingBand | None] = {}
    for g in dict.fromkeys(groups):
        members = [r for r, x in enumerate(groups) if x == g]
        out[g] = (
            ceiling_band(codes[:, members], k, labels=matrix.category_labels) if len(members) >= 3 else None
        )
    return out
