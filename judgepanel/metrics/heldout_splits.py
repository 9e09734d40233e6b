"""Train/test splits for held-out prediction: by units, or by the groups (articles) units share.

Boundary: index arithmetic only — unit counts, group codes and seeds in, permutations and fold
numbers out; no statistics, no I/O. :func:`~judgepanel.metrics.prediction.heldout_battery` and
the registered comparisons (:mod:`~judgepanel.metrics.registered`) read their splits from here.

Two designs (``split_by``):

* ``items`` — the units themselves are split: the first ``train`` units train (one split), or the
  first ``train`` of each of K seeded permutations (``numpy.random.default_rng(seed)``). On a pair
  set, a test pair then usually shares its article — and often one of its two summaries — with
  training pairs: "held out" means new *pairs* of seen material.
* ``group`` — whole groups (an item's ``group_key``: SummEval's article) are split, so every test
  unit belongs to an article no training unit comes from: "held out" means new articles. The
  share of groups that train is ``train / n_units`` (rounded, at least one group on each side);
  one split takes the groups in order of first appearance, K splits permute the groups with
  ``numpy.random.default_rng([seed, 3])``. The number of training *units* then varies from split
  to split with the sizes of the drawn groups; each split's units are ordered training groups
  first, each group's units in their original order.

The inner cross-validation that tunes a penalty on the training units follows the design: by
units for ``items`` (:func:`inner_folds`), by whole training groups for ``group``
(:func:`inner_group_folds`), so that the penalty is not chosen on folds that share articles.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

IntArray = NDArray[np.int64]

SPLIT_DESIGNS: tuple[str, ...] = ("items", "group")
INNER_FOLDS = 5


@dataclass(frozen=True, eq=False)
class Split:
    """One train/test split: ``order`` (a permutation of the units) whose first ``train`` train."""

    order: IntArray
    train: int

    @property
    def test(self) -> int:
        return int(self.order.size) - self.train


def group_codes(keys: Sequence[Hashable | None]) -> tuple[IntArray, int]:
    """Codes 0 … G−1 in order of first appearance; a unit with no group key is a group of its own."""
    seen: dict[Hashable, int] = {}
    out = np.empty(len(keys), dtype=np.int64)
    for u, g in enumerate(keys):
        key: Hashable = ("\0own", u) if g is None else g
        out[u] = seen.setdefault(key, len(seen))
    return out, len(seen)


def item_splits(n_units: int, train: int, folds: int, seed: int) -> list[Split]:
    """The ``items`` design (module docstring)."""
    if folds == 1:
        return [Split(np.arange(n_units, dtype=np.int64), train)]
    rng = np.random.default_rng(seed)
    return [Split(rng.permutation(n_units).astype(np.int64), train) for _ in range(folds)]


def training_groups(n_groups: int, train: int, n_units: int) -> int:
    """How many of ``n_groups`` groups train when ``train`` of ``n_units`` units would."""
    if n_groups < 2:
        raise ValueError(f"splitting by group needs at least two groups, got {n_groups}")
    return int(min(max(round(n_groups * train / n_units), 1), n_groups - 1))


def group_splits(codes: IntArray, train: int, folds: int, seed: int) -> list[Split]:
    """The ``group`` design (module docstring); ``codes`` from :func:`group_codes`."""
    c = np.asarray(codes, dtype=np.int64)
    n_groups = int(c.max(initial=-1)) + 1
    g_train = training_groups(n_groups, train, c.size)
    rng = np.random.default_rng([seed, 3])
    out = []
    for _ in range(folds):
        order = np.arange(n_groups) if folds == 1 else rng.permutation(n_groups)
        chosen = np.zeros(n_groups, dtype=bool)
        chosen[order[:g_train]] = True
        in_train = chosen[c]
        units = np.r_[np.flatnonzero(in_train), np.flatnonzero(~in_train)].astype(np.int64)
        out.append(Split(units, int(in_train.sum())))
    return out


def splits(
    n_units: int,
    train: int,
    folds: int,
    seed: int,
    *,
    split_by: str = "items",
    codes: IntArray | None = None,
) -> list[Split]:
    """The splits of either design; ``codes`` (one group code per unit) for ``group``."""
    if split_by == "items":
        return item_splits(n_units, train, folds, seed)
    if split_by != "group":
        raise ValueError(f"split_by must be one of {', '.join(SPLIT_DESIGNS)}, got {split_by!r}")
    if codes is None or len(codes) != n_units:
        raise ValueError("splitting by group needs one group code per unit")
    return group_splits(codes, train, folds, seed)


def inner_folds(n_train: int, seed: int, k: int = INNER_FOLDS) -> IntArray:
    """Inner-fold number (0 … k−1) of each training unit: a seeded permutation cut into k
    near-equal parts (scikit-learn's ``KFold(k, shuffle=True)`` layout, own random stream)."""
    order = np.random.default_rng([seed, 2]).permutation(n_train)
    fold = np.empty(n_train, dtype=np.int64)
    for f, part in enumerate(np.array_split(order, k)):
        fold[part] = f
    return fold


def inner_group_folds(codes: IntArray, seed: int, k: int = INNER_FOLDS) -> IntArray:
    """Inner-fold number of each training unit with whole groups kept together: the training
    groups (``codes`` of the training units, any integers) in a seeded permutation cut into
    ``min(k, groups)`` near-equal parts (scikit-learn's ``GroupKFold`` idea, own random stream)."""
    c = np.asarray(codes, dtype=np.int64)
    names, local = np.unique(c, return_inverse=True)
    order = np.random.default_rng([seed, 2]).permutation(names.size)
    of_group = np.empty(names.size, dtype=np.int64)
    for f, part in enumerate(np.array_split(order, min(k, names.size))):
        of_group[part] = f
    out: IntArray = of_group[local].astype(np.int64)
    return out
