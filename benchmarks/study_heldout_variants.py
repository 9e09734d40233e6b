"""Issue 18 §3: every feature/model variant tried for predicting a held-out SummEval expert.

The negative-result table of docs/agreement.md ("Variants tried") comes from this script. Each
variant predicts the three experts (one model per expert, as ``metrics heldout`` does) on the
SAME 10 random 800/200 splits of the 1,000 pairs ``sel1000`` (``numpy.random.default_rng(seed)``
permutations, the battery's own), with the penalty C chosen per expert by ``choose_c``'s inner
5-fold CV on the training split only (``inner_folds(800, seed)``), the fit and the inner CV being
the library's (``metrics.logistic``). Printed per variant: mean expert accuracy ± sd over the
splits, the Nadeau–Bengio interval of that mean, mean log loss, and the paired difference to
``dims-joint`` with the same corrected interval and the number of splits it won.

Feature sets (for the target expert r; "others" never include r):

* ``dims-joint`` / ``dims-humans``: the battery's ``dims-*`` blocks (per rater: four dimension
  differences, mean difference, its size, a missing flag) of the other raters (+ LLMs);
* ``groups`` / ``groups-humans``: per rater group (other experts, crowd, LLMs): per-dimension mean
  difference, mean of mean differences, its size, the members' sd, their mean sign — the battery's
  ``groups-*`` without its missing-share column;
* ``dimsg``: ``dims-*`` and ``groups`` side by side;
* ``+sym``: the pair order's symmetry imposed by adding each training row mirrored (signed
  features negated, A and B swapped); ``+std``: features standardised on the training split;
* ``pooled …``: one model for all three experts (rows stacked, an indicator per expert as its
  intercept; inner folds by pair so one pair's rows stay together);
* ``select(…)``: per expert and split, the candidate with the lowest inner-CV log loss;
  ``ensemble(…)``: the mean of the candidates' probabilities.

``--classes`` runs the second round instead (docs/agreement.md, "Other model classes"): on the
built ``groups-*`` design (``prediction.group_features``) and the ``dims-*`` design, joint and
humans-only, the classes of ``metrics.model_classes`` — ``l2``, ``enet`` (C × L1 share), ``ordinal``
(cumulative link, B < T < A) and ``additive`` (hinge splines, ``groups-*`` only) — each tuned by the
same inner CV, and the nested-CV selectors ``select-joint`` / ``select-humans`` (per expert, the
candidate and setting with the lowest inner-CV log loss). The reference is ``groups-joint`` (l2);
it also prints joint − humans-only per class and what the selectors picked.

Run: ``.venv/bin/python -m benchmarks.study_heldout_variants [--seed 0] [--classes]`` (about 5 CPU
minutes; ``--seed 1`` draws 10 fresh splits and fresh inner folds for the confirmation).
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.study_heldout_registered import load as load_sel1000
from judgepanel.metrics.logistic import fit_multinomial_many
from judgepanel.metrics.model_classes import inner_cv, tune_and_predict
from judgepanel.metrics.prediction import choose_c, group_features, inner_folds, nadeau_bengio
from judgepanel.metrics.summary import _matrix_codes

TRAIN, FOLDS, K = 800, 10, 3


def load() -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    """codes (units × raters), score differences, dimension differences, rater groups of sel1000
    (read as the registered-comparisons study reads it)."""
    m, diffs, dims, _articles = load_sel1000()
    codes, _ = _matrix_codes(m)
    return codes, diffs, dims, tuple(m.rater_groups)


class Features:
    def __init__(self, diffs: np.ndarray, dims: np.ndarray, groups: tuple[str, ...]) -> None:
        self.diffs, self.dims = diffs, dims
        self.n = diffs.shape[0]
        self.expert = [i for i, g in enumerate(groups) if g == "expert"]
        self.crowd = [i for i, g in enumerate(groups) if g == "crowd"]
        self.llm = [i for i, g in enumerate(groups) if g == "llm"]

    def dims_block(self, c: int) -> np.ndarray:
        d = self.diffs[:, c]
        v = np.nan_to_num(d)
        return np.column_stack([np.nan_to_num(self.dims[:, c, :]), v, np.abs(v), np.isnan(d).astype(float)])

    def group_block(self, cols: list[int]) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            per = np.nan_to_num(np.nanmean(self.dims[:, cols, :], axis=1))
            md = np.nan_to_num(np.nanmean(self.diffs[:, cols], axis=1))
            sd = np.nan_to_num(np.nanstd(self.diffs[:, cols], axis=1)) if len(cols) > 1 else np.zeros(self.n)
            sgn = np.nan_to_num(np.nanmean(np.sign(self.diffs[:, cols]), axis=1))
        return np.column_stack([per, md, np.abs(md), sd, sgn])

    def design(self, name: str, r: int) -> tuple[np.ndarray, np.ndarray]:
        """(units × p features, p signs: 1 where mirroring the pair negates the column)."""
        humans_only = name.endswith("-humans")
        if name.startswith("dims-"):
            raters = [c for c in self.expert + self.crowd + ([] if humans_only else self.llm) if c != r]
            x = np.hstack([self.dims_block(c) for c in raters])
            return x, np.tile([1, 1, 1, 1, 1, 0, 0], len(raters))
        if name.startswith("groups"):
            sets = [[c for c in self.expert if c != r], [c for c in self.crowd if c != r]]
            sets += [] if humans_only else [self.llm]
            x = np.hstack([self.group_block(s) for s in sets])
            return x, np.tile([1, 1, 1, 1, 1, 0, 0, 1], len(sets))
        if name.startswith("built-"):  # the library's groups-* design (with its missing-share column)
            groups = ["expert"] * len(self.expert) + ["crowd"] * len(self.crowd) + ["llm"] * len(self.llm)
            order = self.expert + self.crowd + self.llm
            allowed = self.expert + self.crowd + ([] if humans_only else self.llm)
            pred = [order.index(c) for c in allowed if c != r]
            x = group_features(self.diffs[:, order], self.dims[:, order, :], groups, pred)
            return x, np.tile([1, 1, 1, 1, 1, 0, 0, 1, 0], x.shape[1] // 9)
        if name.startswith("dimsg"):
            a, sa = self.design("dims-humans" if humans_only else "dims-joint", r)
            b, sb = self.design("groups-humans" if humans_only else "groups", r)
            return np.hstack([a, b]), np.concatenate([sa, sb])
        raise KeyError(name)


def mirror(x: np.ndarray, y: np.ndarray, signs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Add each row with the pair order reversed: signed columns negated, A (0) and B (1) swapped."""
    xm = np.where(signs.astype(bool)[:, None, :], -x, x)
    ym = np.where(y == 0, 1, np.where(y == 1, 0, y))
    return np.concatenate([x, xm], axis=1), np.concatenate([y, ym], axis=1)


def per_expert(
    feats: Features, codes: np.ndarray, name: str, perm: np.ndarray, inner: np.ndarray, sym: bool, std: bool
) -> dict[str, Any]:
    """One split: test probabilities per expert (3 × 200 × K), test labels and best inner losses."""
    experts = feats.expert
    built = [feats.design(name, r) for r in experts]
    x = np.stack([b[0] for b in built])[:, perm]
    signs = np.stack([b[1] for b in built])
    y = codes[perm][:, experts].T
    if std:
        mu = x[:, :TRAIN].mean(axis=1, keepdims=True)
        sd = x[:, :TRAIN].std(axis=1, keepdims=True)
        x = (x - mu) / np.where(sd == 0, 1.0, sd)
    xtr, ytr, fold = x[:, :TRAIN], y[:, :TRAIN].copy(), inner
    if sym:  # a symmetric fit's held-out loss on a mirrored row equals that on the row itself
        xtr, ytr = mirror(xtr, ytr, signs)
        fold = np.concatenate([inner, inner])
    chosen, loss = choose_c(xtr, ytr, K, fold)
    probs = np.stack(
        [
            fit_multinomial_many(xtr[i : i + 1], ytr[i : i + 1], K, c=float(chosen[i]))[0].predict_proba(
                x[i, TRAIN:]
            )
            for i in range(len(experts))
        ]
    )
    return {"probs": probs, "y": y[:, TRAIN:], "inner": np.nanmin(loss, axis=1)}


def pooled(
    feats: Features, codes: np.ndarray, name: str, perm: np.ndarray, inner: np.ndarray, sym: bool, std: bool
) -> dict[str, Any]:
    """One model for the three experts: stacked rows, one indicator column per expert."""
    experts = feats.expert
    t = len(experts)
    built = [feats.design(name, r) for r in experts]
    x = np.stack([np.hstack([b[0], np.tile(np.eye(t)[i], (feats.n, 1))]) for i, b in enumerate(built)])
    signs = np.stack([np.concatenate([b[1], np.zeros(t)]) for b in built])
    x = x[:, perm]
    y = codes[perm][:, experts].T
    xtr, ytr, fold = x[:, :TRAIN], y[:, :TRAIN].copy(), inner
    if sym:
        xtr, ytr = mirror(xtr, ytr, signs)
        fold = np.concatenate([inner, inner])
    design = xtr.reshape(1, -1, xtr.shape[2])
    labels = ytr.reshape(1, -1)
    chosen, loss = choose_c(design, labels, K, np.tile(fold, t))
    fit = fit_multinomial_many(design, labels, K, c=float(chosen[0]))[0]
    probs = np.stack([fit.predict_proba(x[i, TRAIN:]) for i in range(t)])
    return {"probs": probs, "y": y[:, TRAIN:], "inner": np.full(t, np.nanmin(loss))}


def accuracy(probs: np.ndarray, y: np.ndarray) -> float:
    ok = y >= 0
    return float((probs.argmax(-1)[ok] == y[ok]).mean())


def log_loss(probs: np.ndarray, y: np.ndarray) -> float:
    ok = y >= 0
    p = np.take_along_axis(probs, np.where(ok, y, 0)[..., None], axis=-1)[..., 0][ok]
    return float(-np.mean(np.log(np.clip(p, 1e-15, 1.0))))


VARIANTS: list[tuple[str, Callable[..., dict[str, Any]], str, bool, bool]] = [
    # (label, runner, feature set, sym, std)
    ("dims-joint", per_expert, "dims-joint", False, False),
    ("dims-humans", per_expert, "dims-humans", False, False),
    ("groups", per_expert, "groups", False, False),
    ("groups-humans", per_expert, "groups-humans", False, False),
    ("dimsg", per_expert, "dimsg", False, False),
    ("dimsg-humans", per_expert, "dimsg-humans", False, False),
    ("groups+sym", per_expert, "groups", True, False),
    ("groups+std", per_expert, "groups", False, True),
    ("dims-joint+sym", per_expert, "dims-joint", True, False),
    ("groups-humans+sym", per_expert, "groups-humans", True, False),
    ("dims-humans+sym", per_expert, "dims-humans", True, False),
    ("pooled groups", pooled, "groups", False, False),
    ("pooled groups+sym", pooled, "groups", True, False),
    ("pooled groups-humans", pooled, "groups-humans", False, False),
    ("pooled groups-humans+sym", pooled, "groups-humans", True, False),
]
CANDIDATES = ("groups", "groups+sym", "dims-joint", "dimsg")  # for select(…) and ensemble(…)


# Issue 18 §3, second round: other model classes on the same features (docs/agreement.md,
# "Other model classes", registered before any result was seen). (label, class, feature set)
CLASS_VARIANTS: list[tuple[str, str, str]] = [
    ("groups-joint", "l2", "built-joint"),
    ("groups-humans", "l2", "built-humans"),
    ("dims-joint", "l2", "dims-joint"),
    ("dims-humans", "l2", "dims-humans"),
    ("enet groups-joint", "enet", "built-joint"),
    ("enet groups-humans", "enet", "built-humans"),
    ("enet dims-joint", "enet", "dims-joint"),
    ("enet dims-humans", "enet", "dims-humans"),
    ("ordinal groups-joint", "ordinal", "built-joint"),
    ("ordinal groups-humans", "ordinal", "built-humans"),
    ("ordinal dims-joint", "ordinal", "dims-joint"),
    ("ordinal dims-humans", "ordinal", "dims-humans"),
    ("additive groups-joint", "additive", "built-joint"),
    ("additive groups-humans", "additive", "built-humans"),
]
SELECT = {  # the nested-CV selectors: candidates per channel
    "select-joint": [v for v in CLASS_VARIANTS if v[2].endswith("-joint")],
    "select-humans": [v for v in CLASS_VARIANTS if v[2].endswith("-humans")],
}
ORDER = (2, 0, 1)  # rank of each code A=0, B=1, T=2: B < T < A


def class_study(
    codes: np.ndarray, feats: Features, perms: list[np.ndarray], inner: np.ndarray, only: str
) -> dict[str, list[dict[str, Any]]]:
    """Every class variant and the two selectors on each split: test probabilities and labels."""
    experts = feats.expert
    wanted = [v for v in CLASS_VARIANTS if not only or v[0] in only.split(",")]
    designs = {fs: np.stack([feats.design(fs, r)[0] for r in experts]) for _, _, fs in wanted}
    runs: dict[str, list[dict[str, Any]]] = {v[0]: [] for v in wanted}
    cpu = dict.fromkeys(runs, 0.0)
    for s in SELECT:
        if all(v in wanted for v in SELECT[s]):
            runs[s] = []
    tr, te = np.arange(TRAIN), np.arange(TRAIN, codes.shape[0])
    for perm in perms:
        y = codes[perm][:, experts].T.copy()
        tables: dict[str, np.ndarray] = {}
        for label, kind, fs in wanted:
            start = time.process_time()
            x = designs[fs][:, perm]
            tables[label] = inner_cv(kind, x[:, tr], y[:, tr], K, inner, ORDER)
            ch = tune_and_predict([(kind, x)], y, K, tr, te, inner, ORDER, cv=[tables[label]])
            runs[label].append({"probs": ch.proba, "y": y[:, te], "setting": ch.setting})
            cpu[label] += time.process_time() - start
        for s, cands in SELECT.items():
            if s in runs:
                ch = tune_and_predict(
                    [(kind, designs[fs][:, perm]) for _, kind, fs in cands],
                    y,
                    K,
                    tr,
                    te,
                    inner,
                    ORDER,
                    cv=[tables[v[0]] for v in cands],
                )
                picks = [None if c < 0 else cands[int(c)][0] for c in ch.candidate]
                runs[s].append({"probs": ch.proba, "y": y[:, te], "setting": ch.setting, "picked": picks})
    for label, sec in cpu.items():
        print(f"  ({label}: {sec:.0f} CPU s over {len(perms)} splits)", flush=True)
    return runs


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default="", help="comma-separated variant labels (default: all)")
    ap.add_argument(
        "--classes", action="store_true", help="the model-class round (CLASS_VARIANTS, selectors)"
    )
    ap.add_argument("--splits", type=int, default=FOLDS, help="use the first N of the 10 splits (timing)")
    args = ap.parse_args(argv)
    codes, diffs, dims, groups = load()
    feats = Features(diffs, dims, groups)
    rng = np.random.default_rng(args.seed)
    perms = [rng.permutation(codes.shape[0]) for _ in range(FOLDS)]
    inner = inner_folds(TRAIN, args.seed)
    if args.classes:
        report(
            class_study(codes, feats, perms[: args.splits], inner, args.only),
            "groups-joint",
            args.seed,
            codes.shape[0],
        )
        return
    wanted = [v for v in VARIANTS if not args.only or v[0] in args.only.split(",")]
    runs: dict[str, list[dict[str, Any]]] = {}
    for label, runner, name, sym, std in wanted:
        start = time.process_time()
        runs[label] = [runner(feats, codes, name, p, inner, sym, std) for p in perms]
        print(f"  ({label}: {time.process_time() - start:.0f} CPU s)", flush=True)
    if all(c in runs for c in CANDIDATES):
        sel, ens = [], []
        for f in range(FOLDS):
            probs = np.stack([runs[c][f]["probs"] for c in CANDIDATES])
            pick = np.stack([runs[c][f]["inner"] for c in CANDIDATES]).argmin(axis=0)
            y = runs[CANDIDATES[0]][f]["y"]
            sel.append({"probs": np.stack([probs[pick[i], i] for i in range(len(pick))]), "y": y})
            ens.append({"probs": probs.mean(axis=0), "y": y})
        runs[f"select({','.join(CANDIDATES)})"] = sel
        runs[f"ensemble({','.join(CANDIDATES)})"] = ens
    ref = (
        np.array([accuracy(s["probs"], s["y"]) for s in runs["dims-joint"]]) if "dims-joint" in runs else None
    )
    print(f"seed {args.seed}: {FOLDS} splits of {TRAIN}/{codes.shape[0] - TRAIN}, expert accuracy")
    for label, splits in runs.items():
        acc = np.array([accuracy(s["probs"], s["y"]) for s in splits])
        ll = np.mean([log_loss(s["probs"], s["y"]) for s in splits])
        _, lo, hi = nadeau_bengio(acc, TRAIN, codes.shape[0] - TRAIN)
        line = (
            f"{label:48s} {acc.mean():.4f} ± {acc.std(ddof=1):.4f} NB [{lo:.3f}, {hi:.3f}] log loss {ll:.3f}"
        )
        if ref is not None and label != "dims-joint":
            d, dlo, dhi = nadeau_bengio(acc - ref, TRAIN, codes.shape[0] - TRAIN)
            line += f"  vs dims-joint {d:+.4f} [{dlo:+.3f}, {dhi:+.3f}] won {(acc > ref).sum()}/{FOLDS}"
        print(line, flush=True)


def report(runs: dict[str, list[dict[str, Any]]], reference: str, seed: int, n: int) -> None:
    """The table: accuracy (sd), NB interval, log loss, Δ vs the reference with NB interval, splits won."""
    ref = np.array([accuracy(s["probs"], s["y"]) for s in runs[reference]]) if reference in runs else None
    k = len(next(iter(runs.values())))
    print(f"seed {seed}: {k} splits of {TRAIN}/{n - TRAIN}, expert accuracy")
    for label, splits in runs.items():
        acc = np.array([accuracy(s["probs"], s["y"]) for s in splits])
        ll = np.mean([log_loss(s["probs"], s["y"]) for s in splits])
        _, lo, hi = nadeau_bengio(acc, TRAIN, n - TRAIN)
        sd = acc.std(ddof=1) if acc.size > 1 else 0.0
        line = f"{label:24s} {acc.mean():.4f} ({sd:.4f}) NB [{lo:.3f}, {hi:.3f}] log loss {ll:.3f}"
        if ref is not None and label != reference:
            d, dlo, dhi = nadeau_bengio(acc - ref, TRAIN, n - TRAIN)
            line += f"  vs {reference} {d:+.4f} [{dlo:+.3f}, {dhi:+.3f}] won {(acc > ref).sum()}/{k}"
        print(line, flush=True)
    for a, b in (
        ("select-joint", "select-humans"),
        *[(f"{c}groups-joint", f"{c}groups-humans") for c in ("", "enet ", "ordinal ", "additive ")],
        *[(f"{c}dims-joint", f"{c}dims-humans") for c in ("", "enet ", "ordinal ")],
    ):
        if a in runs and b in runs:
            d = np.array([accuracy(s["probs"], s["y"]) for s in runs[a]]) - np.array(
                [accuracy(s["probs"], s["y"]) for s in runs[b]]
            )
            v, lo, hi = nadeau_bengio(d, TRAIN, n - TRAIN)
            print(
                f"judges add: {a} - {b} {v:+.4f} [{lo:+.3f}, {hi:+.3f}] won {(d > 0).sum()}/{k}", flush=True
            )
    for s in ("select-joint", "select-humans"):
        if s in runs:
            picks: dict[str, int] = {}
            for split in runs[s]:
                for p in split["picked"]:
                    picks[str(p)] = picks.get(str(p), 0) + 1
            print(f"{s} picked: {picks}", flush=True)


if __name__ == "__main__":
    main()
