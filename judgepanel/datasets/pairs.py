"""Pairs from pointwise scores, and duplicated annotation rows. Pure functions over plain data.

Pairs: all within-group pairs in file order (`itertools.combinations` over each group, groups in
order of first appearance), then `random.Random(seed).sample` of them. An annotator's label on a
pair is A if the mean of its dimension scores on item A exceeds that on item B by more than
`tie_eps`, B if it falls short by more than `tie_eps`, T otherwise. An annotator without scores on
both items, or with different dimensions on the two, gives no label for that pair.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Scores = Mapping[str, float]  # dimension -> score of one annotator on one item


@dataclass(frozen=True)
class PairSample:
    pairs_total: int
    pairs: list[tuple[int, int]]  # (item A, item B) ids in sampled order


def sample_pairs(items: Sequence[tuple[int, str | None]], *, seed: int, sample: int | None) -> PairSample:
    """`items` are (item id, group key) in file order."""
    groups: dict[str, list[int]] = {}
    for item_id, group in items:
        if group is not None:
            groups.setdefault(group, []).append(item_id)
    every = [p for members in groups.values() for p in itertools.combinations(members, 2)]
    if sample is None or sample >= len(every):
        chosen = list(every) if sample is None else random.Random(seed).sample(every, len(every))
    else:
        chosen = random.Random(seed).sample(every, sample)
    return PairSample(len(every), chosen)


def score_difference(a: Scores, b: Scores) -> float | None:
    """Mean score on A minus mean score on B; None unless both are scored on the same dimensions."""
    if not a or not b or set(a) != set(b):
        return None
    return sum(a.values()) / len(a) - sum(b.values()) / len(b)


def preference(a: Scores, b: Scores, tie_eps: float) -> str | None:
    diff = score_difference(a, b)
    if diff is None:
        return None
    if diff > tie_eps:
        return "A"
    if diff < -tie_eps:
        return "B"
    return "T"


def identical_vectors(vectors: Sequence[Scores], dimensions: Sequence[str]) -> bool | None:
    """True if every vector is full and all are equal; None if there is nothing to compare
    (fewer than two full vectors)."""
    full = [v for v in vectors if all(d in v for d in dimensions)]
    if len(full) < 2 or len(full) != len(vectors):
        return None
    first = tuple(full[0][d] for d in dimensions)
    return all(tuple(v[d] for d in dimensions) == first for v in full[1:])
