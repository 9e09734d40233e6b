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


# Python source ending a measured child process (which imported `resource`): sets `ru` (its
# resource usage) and `peak` (its peak resident memory, MB); the child then prints its figures.
PEAK_MEMORY = """
ru = resource.getrusage(resource.RUSAGE_SELF)
peak = ru.ru_maxrss / 1024
try:  # ru_maxrss survives exec (it starts at the parent's peak); VmHWM is this process's own
    with open("/proc/self/status") as f:
        peak = next(int(ln.split()[1]) / 1024 for ln in f if ln.startswith("VmHWM:"))
except (OSError, StopIteration):
    pass
"""
