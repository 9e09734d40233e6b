"""Timing the benchmarks share: the fastest of a few runs of one piece of work."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def best_of(fn: Callable[[], T], repeat: int) -> tuple[float, T]:
    """The fastest wall time of `repeat` runs of `fn` (the one least disturbed by other work on a
    shared machine), and what the last run returned."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out
