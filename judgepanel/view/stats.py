"""The campaign page, computed once per change of what it is computed from.

Agreement with its bootstrap intervals, the κ matrix and its clusters, position bias, each judge
against the humans, the answer distributions, and the status and failure counts cost seconds at
10⁵ verdicts; the page comes from a cache keyed by `store.fingerprint.ResultsKey` (the campaign's
id, name and creation time; its verdicts, calls and job statuses and the human labels on its
units: counts, newest and summed ids) and the number of bootstrap replicates — read only when the
cheap `database_key` (newest ids and counts of every results table, the newest job change) moved —
so a new verdict, call or label, or a campaign deleted and created again, is a new key and never
a stale figure. Each entry says when it was computed and from how much. Concurrent requests for
one key compute it once (the others wait for that result).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from judgepanel.store.models import utcnow


@dataclass(frozen=True)
class Computed:
    value: dict[str, Any]
    computed_at: datetime
    seconds: float


class StatsCache:
    """A small LRU of computed statistics, one computation at a time per key."""

    def __init__(self, size: int = 32) -> None:
        self.size = size
        self._entries: OrderedDict[Hashable, Computed] = OrderedDict()
        self._lock = threading.Lock()
        self._busy: dict[Hashable, threading.Lock] = {}
        self.computations = 0  # how many times a value was computed (for tests and benchmarks)
        # campaign page: (name, n_boot) -> (database key seen, results key) of its newest entry
        self._seen: dict[Hashable, tuple[tuple[Any, ...], Hashable]] = {}

    def campaign(
        self,
        engine: Engine,
        name: str,
        n_boot: int,
        compute: Callable[[], dict[str, Any]],
    ) -> tuple[Computed, bool]:
        """A campaign page's entry. Two steps, so an unchanged database costs one cheap read: when
        `database_key` (newest ids and row counts of every results table) is what it was when the
        entry was last confirmed, the entry stands; otherwise the campaign's own `results_key`
        decides (another campaign's new verdicts leave this one's entry standing)."""
        from judgepanel.store.fingerprint import database_key, results_key

        db = database_key(engine)
        with self._lock:
            seen = self._seen.get((name, n_boot))
            if seen is not None and seen[0] == db and seen[1] in self._entries:
                self._entries.move_to_end(seen[1])
                return self._entries[seen[1]], True
        key = ("campaign", results_key(engine, name), n_boot)
        entry, hit = self.get(key, compute)
        with self._lock:
            self._seen[(name, n_boot)] = (db, key)
        return entry, hit

    def get(self, key: Hashable, compute: Callable[[], dict[str, Any]]) -> tuple[Computed, bool]:
        """The entry for `key` and whether it was already there (computed now otherwise)."""
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                return hit, True
            gate = self._busy.setdefault(key, threading.Lock())
        with gate:
            with self._lock:
                hit = self._entries.get(key)
                if hit is not None:
                    return hit, True
            import time

            t = time.perf_counter()
            value = compute()
            entry = Computed(value, utcnow(), time.perf_counter() - t)
            with self._lock:
                self.computations += 1
                self._entries[key] = entry
                self._entries.move_to_end(key)
                while len(self._entries) > self.size:
                    self._entries.popitem(last=False)
                self._busy.pop(key, None)
            return entry, False
