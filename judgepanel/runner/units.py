"""Under a cap, buy whole units: every job of an item (or pair) before the next one starts.

Each judge's jobs are leased and asked in plan order, but judges run at their own speed: under a
tight `max_cost` one judge got 50 of 80 jobs, another 7 and the third none, and the money bought
nothing a metric could use (issue 28 §5). With a cap, a run now *admits* units — an item or a
pair under one condition, dimension and repeat, with its whole panel: each judge, both orders —
and queues a job for its judge's workers only once its unit is admitted (the judge's
feeder waits for that, holding no worker). A unit is admitted when

    spent (the campaign's stored replies and this run's) + the estimated cost of the jobs of the
    units admitted and not yet finished + the unit's own estimate  ≤  max_cost

each job at what its call will reserve (`runner.budget.Budget.planned`: its prompt's stored
length, its judge's prices and output allowance — 1.5 × 150 tokens before any reply is seen,
instead of the whole `max_tokens` the first real reservation takes, which would buy no unit at
all). Planned at what they will reserve, the admitted jobs find their money when they reserve it,
so the units a run admits are the units it completes. A unit that does not
fit waits while this run still has calls in flight or admitted jobs queued (their real cost is
usually far below the estimate, and each reply makes the output allowance better); once nothing of
the run is left to settle and it still does not fit, no further unit is admitted, the jobs of the admitted units finish, and the run ends with status `budget` (exit 3),
the rest left `unscheduled`. Jobs the store's cache answers cost nothing and are not held back.

The per-call reservation in the database (`store.budget`) stays the hard guard across concurrent
runs and workers; admission only decides *which* calls this run spends on. A unit can still be
left partial when a concurrent run spends the money first, or a reply costs more than estimated.

Boundary: the runner's plan of which jobs to spend on; no SQL (the jobs come from
`store.campaigns.leases.unit_jobs`), no calls.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

from judgepanel.store.campaigns.leases import UnitJob

Unit = tuple[int | None, int | None, str | None, str | None, int]  # item, pair, condition, dimension, repeat
# (judge id, prompt characters or None) -> what the job's call is planned to reserve, in USD
Estimator = Callable[[int, int | None], float]


class UnitGate:
    def __init__(self, max_cost: float | None, jobs: Sequence[UnitJob], spent_before: float) -> None:
        self.max_cost = max_cost
        self.spent_before = spent_before
        self.unit_of: dict[int, Unit] = {}
        self.judge_of: dict[int, int] = {}
        self.jobs_of: dict[Unit, list[tuple[int, int, int | None]]] = defaultdict(list)
        for job_id, judge_id, item_id, pair_id, condition, dimension, repeat, chars in jobs:
            unit = (item_id, pair_id, condition, dimension, repeat)
            self.unit_of[job_id] = unit
            self.judge_of[job_id] = judge_id
            self.jobs_of[unit].append((job_id, judge_id, chars))
        self.admitted: set[Unit] = set()
        self.open: dict[int, tuple[int, int | None]] = {}  # admitted, unfinished job -> (judge, chars)
        self.closed = False  # no unit will be admitted any more
        self.unleased: dict[int, int] = defaultdict(int)  # judge id -> admitted jobs not yet leased
        self._leased: set[int] = set()
        self._changed = asyncio.Event()

    @property
    def active(self) -> bool:
        return self.max_cost is not None

    def leased(self, job_ids: Iterable[int]) -> None:
        for jid in job_ids:
            if jid in self._leased:
                continue
            self._leased.add(jid)
            if self.unit_of.get(jid) in self.admitted:
                self.unleased[self.judge_of[jid]] -= 1

    def exhausted(self, judge_id: int) -> bool:
        """No unit will be admitted any more and every admitted job of this judge was leased: its
        feeder can stop leasing (what it would lease now would only be handed back)."""
        return self.closed and self.unleased[judge_id] <= 0

    async def admit(
        self,
        job_id: int,
        estimate: Estimator,
        spent_now: Callable[[], float],
        busy: Callable[[], bool],
        stopping: asyncio.Event,
    ) -> bool:
        """True once the job's unit is admitted; False when it never will be (the run's money is
        planned for the units admitted so far). `busy`: this run has calls in flight, whose real
        cost (usually far below their estimate) may still make room."""
        if not self.active:
            return True
        unit = self.unit_of.get(job_id)
        if unit is None or unit in self.admitted:
            return True  # a job created after the run began, or its unit is admitted already
        assert self.max_cost is not None
        while not self.closed and not stopping.is_set():
            if unit in self.admitted:
                return True
            need = sum(estimate(judge, chars) for _jid, judge, chars in self.jobs_of[unit])
            planned = sum(estimate(judge, chars) for judge, chars in self.open.values())
            if self.spent_before + spent_now() + planned + need <= self.max_cost + 1e-12:
                self._admit(unit)
                return True
            if not busy():
                self.closed = True  # nothing in flight can make room: no further unit
                break
            self._changed.clear()
            with contextlib.suppress(TimeoutError):  # a call settled: its real cost is known now
                await asyncio.wait_for(self._changed.wait(), timeout=0.5)
        return unit in self.admitted

    def finished(self, job_id: int) -> None:
        if self.open.pop(job_id, None) is not None:
            self._changed.set()

    def wake(self) -> None:
        self._changed.set()

    def _admit(self, unit: Unit) -> None:
        self.admitted.add(unit)
        for jid, judge, chars in self.jobs_of[unit]:
            self.open[jid] = (judge, chars)
            if jid not in self._leased:
                self.unleased[judge] += 1
