"""Which items an iteration judges when `--limit N` caps a split: a seeded sample spread over groups.

Taking the first N items in file order puts whole articles into the sample and leaves the rest out
(`--limit 40` once drew its 40 evaluation items from 3 SummEval articles), so claims about new
articles rest on a handful of them. Instead: the split's groups (articles, dialogues; an item
without a group is a group of its own) are put in a random order, each group's items too, and
items are taken round-robin — one from each group in turn, then a second from each, … — until N
are drawn. So the sample covers min(N, number of groups) groups and no group gives more than one
item more than another. The order comes from `random.Random(f"{seed}:{label}")` (label: the split),
so the same seed draws the same sample; the sample is returned in dataset order and recorded with
the iteration.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ItemSample:
    items: tuple[str, ...]  # external ids, dataset order
    groups: int  # distinct groups in the sample
    of_items: int  # items it was drawn from
    of_groups: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "items": list(self.items),
            "groups": self.groups,
            "of_items": self.of_items,
            "of_groups": self.of_groups,
        }


def spread_sample(members: Sequence[tuple[str, str | None]], n: int, *, seed: int, label: str) -> ItemSample:
    """`members`: (external id, group key) in dataset order; at most `n` of them (see the module)."""
    by_group: dict[object, list[str]] = {}
    for k, (ext, g) in enumerate(members):
        by_group.setdefault(("own", k) if g is None else ("group", g), []).append(ext)
    rng = random.Random(f"{seed}:{label}")
    order = sorted(by_group, key=repr)
    rng.shuffle(order)
    queues = []
    for key in order:
        q = list(by_group[key])
        rng.shuffle(q)
        queues.append((key, q))
    chosen: set[str] = set()
    used: set[object] = set()
    depth = 0
    while len(chosen) < n and any(depth < len(q) for _k, q in queues):
        for key, q in queues:
            if len(chosen) >= n:
                break
            if depth < len(q):
                chosen.add(q[depth])
                used.add(key)
        depth += 1
    items = tuple(ext for ext, _g in members if ext in chosen)
    return ItemSample(items, len(used), len(members), len(by_group))
