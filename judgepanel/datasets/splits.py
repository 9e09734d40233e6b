"""Seeded split assignment: which named split (dev, eval, …) each unit goes to.

A unit is an item, or with grouping a whole group (a SummEval article, a dialogue), so no group
straddles two splits. Units are shuffled with `random.Random(seed)` and cut in the order the
fractions are given; the counts are the largest-remainder rounding of `fraction × units`
(ties to the earlier split), so they always add up to the number of units.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

from judgepanel.errors import BadInput

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


def parse_fractions(text: str) -> dict[str, float]:
    """`dev=0.5,eval=0.5` -> {"dev": 0.5, "eval": 0.5}; positive fractions adding up to 1."""
    out: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        name, eq, value = part.partition("=")
        name = name.strip()
        if not eq or not name:
            raise BadInput(f"--fractions: expected NAME=FRACTION pairs like dev=0.5,eval=0.5, got {part!r}")
        if not set(name) <= _NAME_CHARS or len(name) > 40:
            raise BadInput(f"--fractions: split name {name!r} must be letters, digits, _ - . (≤ 40)")
        if name in out:
            raise BadInput(f"--fractions: split {name!r} is given twice")
        try:
            f = float(value)
        except ValueError:
            raise BadInput(f"--fractions: {value!r} is not a number") from None
        if not math.isfinite(f) or f <= 0:
            raise BadInput(f"--fractions: each fraction must be positive, got {name}={value}")
        out[name] = f
    if abs(sum(out.values()) - 1.0) > 1e-6:
        raise BadInput(f"--fractions must add up to 1, got {sum(out.values()):g}")
    return out


def split_counts(n: int, fractions: Mapping[str, float]) -> dict[str, int]:
    """Largest-remainder rounding of `fraction × n`; ties go to the split named first."""
    raw = {k: f * n for k, f in fractions.items()}
    counts = {k: math.floor(v) for k, v in raw.items()}
    order = sorted(fractions, key=lambda k: (-(raw[k] - counts[k]), list(fractions).index(k)))
    for k in order[: n - sum(counts.values())]:
        counts[k] += 1
    return counts


def assign_splits(units: Sequence[str], fractions: Mapping[str, float], seed: int) -> dict[str, str]:
    """unit -> split name. `units` in a stable order (file order); each unit once."""
    if len(set(units)) != len(units):
        raise BadInput("assign_splits: a unit is listed twice")
    shuffled = list(units)
    random.Random(seed).shuffle(shuffled)
    out: dict[str, str] = {}
    start = 0
    for name, k in split_counts(len(shuffled), fractions).items():
        for u in shuffled[start : start + k]:
            out[u] = name
        start += k
    return out
