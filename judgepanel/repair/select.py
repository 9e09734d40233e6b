"""Which clauses the judges disagree on, which to rewrite, and a random control set.

Disagreement rate of clause c (Issue 9, step 2)::

    rate(c) = Σ_i n1(i,c)·n0(i,c)  /  Σ_i C(m(i,c), 2)

over items i, where n1 / n0 are the judges that said met / not met on clause c for item i and
m = n1 + n0: the share of (item, judge pair) comparisons, among pairs where both judges gave a
verdict, whose verdicts differ. `comparisons(c)` is the denominator.

Selection: per dimension with n clauses, k = min(5, ⌊n/2⌋); the clauses with a positive rate, by
decreasing rate and then clause id, first k of them. Control: for each dimension the same number
of clauses as selected, drawn uniformly without replacement from all of the dimension's clauses
with `random.Random(f"{seed}:{dimension}")` — overlap with the selection is allowed and reported.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

MAX_PER_DIMENSION = 5


@dataclass(frozen=True)
class ClauseVerdicts:
    """Long-format clause verdicts: row r says judge `judge[r]` found clause `clause[r]` met
    (`met[r]`) on item `item[r]`; all are indices. One verdict per (item, judge, clause)."""

    item: NDArray[np.int64]
    judge: NDArray[np.int64]
    clause: NDArray[np.int64]
    met: NDArray[np.bool_]
    clause_ids: tuple[str, ...]
    dimensions: tuple[str, ...]  # the dimension of each clause (same order as clause_ids)
    n_items: int
    n_judges: int


@dataclass(frozen=True)
class ClauseRates:
    rates: dict[str, float | None]  # None: no comparison at all
    comparisons: dict[str, int]


@dataclass(frozen=True)
class Selection:
    rates: dict[str, float | None]
    comparisons: dict[str, int]
    selected: dict[str, list[str]]
    control: dict[str, list[str]]
    control_seed: int
    overlap: dict[str, list[str]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "rates": self.rates,
            "comparisons": self.comparisons,
            "selected": self.selected,
            "control": self.control,
            "control_seed": self.control_seed,
            "overlap": self.overlap,
        }


def unit_counts(v: ClauseVerdicts) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(n1, n0) per (item, clause) cell, each an (n_items, n_clauses) array."""
    n_clauses = len(v.clause_ids)
    cell = v.item * n_clauses + v.clause
    size = v.n_items * n_clauses
    n1 = np.bincount(cell, weights=v.met.astype(np.float64), minlength=size)
    n = np.bincount(cell, minlength=size)
    n1i = n1.astype(np.int64).reshape(v.n_items, n_clauses)
    return n1i, n.reshape(v.n_items, n_clauses) - n1i


def disagreement_rates(v: ClauseVerdicts) -> ClauseRates:
    n1, n0 = unit_counts(v)
    m = n1 + n0
    split = (n1 * n0).sum(axis=0)
    pairs = (m * (m - 1) // 2).sum(axis=0)
    rates: dict[str, float | None] = {}
    comparisons: dict[str, int] = {}
    for j, cid in enumerate(v.clause_ids):
        comparisons[cid] = int(pairs[j])
        rates[cid] = float(split[j] / pairs[j]) if pairs[j] else None
    return ClauseRates(rates, comparisons)


def _by_dimension(clause_ids: Sequence[str], dimensions: Sequence[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for cid, dim in zip(clause_ids, dimensions, strict=True):
        out.setdefault(dim, []).append(cid)
    return out


def select_contested(
    rates: dict[str, float | None], clause_ids: Sequence[str], dimensions: Sequence[str]
) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for dim, ids in _by_dimension(clause_ids, dimensions).items():
        k = min(MAX_PER_DIMENSION, len(ids) // 2)
        positive = [c for c in ids if (rates.get(c) or 0.0) > 0.0]
        out[dim] = sorted(positive, key=lambda c: (-(rates[c] or 0.0), c))[:k]
    return out


def draw_control(
    selected: dict[str, list[str]], clause_ids: Sequence[str], dimensions: Sequence[str], seed: int
) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for dim, ids in _by_dimension(clause_ids, dimensions).items():
        k = len(selected.get(dim, ()))
        out[dim] = sorted(random.Random(f"{seed}:{dim}").sample(sorted(ids), k))
    return out


def select_clauses(v: ClauseVerdicts, *, control_seed: int) -> Selection:
    r = disagreement_rates(v)
    selected = select_contested(r.rates, v.clause_ids, v.dimensions)
    control = draw_control(selected, v.clause_ids, v.dimensions, control_seed)
    overlap = {d: sorted(set(selected[d]) & set(control[d])) for d in selected}
    return Selection(r.rates, r.comparisons, selected, control, control_seed, overlap)
