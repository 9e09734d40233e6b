"""The choices an alignment makes, as pure functions of development-split data.

- `fewshot_examples`: K development items where the judge's score differs from the human
  reference, stratified by the human reference: the disagreeing items are grouped by their human
  score, each group is put in a seeded random order (`random.Random(f"{seed}:fewshot")` over the
  items sorted by id), and items are taken round-robin over the groups, lowest human score first,
  until K are drawn. So the examples cover min(K, number of human levels) levels and no level
  gives more than one example more than another (unless a level runs out). The same seed and data
  give the same examples.
- `best`: the candidate (instruction round, grid configuration) with the highest development
  agreement by the stated statistic (QWK by default); a tie keeps the earlier candidate, so the
  original (round 0 / configuration 0) wins ties and an alignment never trades it for a candidate
  that is only as good.
- `editor_examples`: at most `limit` disagreeing development items for the instructions editor,
  largest gap first, then a seeded order.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judgepanel.errors import BadInput

CHOICE_STATISTIC = "qwk"


@dataclass(frozen=True)
class DevItem:
    item: str  # external id
    judge: float
    human: float  # the human reference (the group's rounded mean)


@dataclass(frozen=True)
class FewshotChoice:
    items: tuple[str, ...]
    strata: Mapping[str, int]  # human score -> examples chosen at that score
    disagreeing: int  # development items where judge and reference differ
    available: Mapping[str, int]  # human score -> disagreeing items at that score

    def as_dict(self) -> dict[str, Any]:
        return {
            "items": list(self.items),
            "strata": dict(self.strata),
            "disagreeing": self.disagreeing,
            "available": dict(self.available),
        }


def _level(x: float) -> str:
    return f"{x:g}"


def fewshot_examples(dev: Sequence[DevItem], k: int, *, seed: int) -> FewshotChoice:
    if k < 1:
        raise BadInput(f"--k must be at least 1, got {k}")
    wrong = sorted((d for d in dev if d.judge != d.human), key=lambda d: d.item)
    if k > len(wrong):
        raise BadInput(
            f"--k {k} is larger than the {len(wrong)} development items where the judge disagrees "
            "with the humans; choose a smaller --k"
        )
    by_level: dict[float, list[DevItem]] = {}
    for d in wrong:
        by_level.setdefault(d.human, []).append(d)
    rng = random.Random(f"{seed}:fewshot")
    queues = []
    for level in sorted(by_level):
        q = list(by_level[level])
        rng.shuffle(q)
        queues.append((level, q))
    chosen: list[DevItem] = []
    depth = 0
    while len(chosen) < k:
        for _lv, q in queues:
            if len(chosen) < k and depth < len(q):
                chosen.append(q[depth])
        depth += 1
    strata: dict[str, int] = {}
    for d in chosen:
        strata[_level(d.human)] = strata.get(_level(d.human), 0) + 1
    return FewshotChoice(
        tuple(d.item for d in chosen),
        strata,
        len(wrong),
        {_level(lv): len(q) for lv, q in queues},
    )


def best(scores: Sequence[Mapping[str, float]], statistic: str = CHOICE_STATISTIC) -> int:
    """Index of the highest `statistic` (NaN counts as lowest); ties keep the earliest."""
    if not scores:
        raise BadInput("no candidate to choose from")

    def key(k: int) -> float:
        v = scores[k].get(statistic, float("nan"))
        return -math.inf if v is None or not math.isfinite(v) else float(v)

    top = 0
    for k in range(1, len(scores)):
        if key(k) > key(top):
            top = k
    return top


def editor_examples(dev: Sequence[DevItem], limit: int, *, seed: int, label: str) -> list[str]:
    wrong = sorted((d for d in dev if d.judge != d.human), key=lambda d: d.item)
    rng = random.Random(f"{seed}:{label}")
    rng.shuffle(wrong)
    wrong.sort(key=lambda d: -abs(d.judge - d.human))  # stable: the seeded order breaks ties
    return [d.item for d in wrong[:limit]]
