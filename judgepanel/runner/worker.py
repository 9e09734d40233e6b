"""`judgepanel worker`: a long-running process that works on every campaign with jobs left (or the
named ones), alongside any number of other workers on other machines sharing one PostgreSQL database.

Each pass runs a `Runner` for every campaign with jobs to lease, all at once. Runners lease jobs
with `FOR UPDATE SKIP LOCKED`, renew their leases while they work, commit only what they still hold
the lease of, and hand back what they did not finish; a job leased by a worker that died is leased
again once its lease expires (or at once, by a worker on the same host that sees its process gone).
Between passes the worker waits while other workers hold the remaining jobs, and exits when every
job of its campaigns has an outcome (or, with `follow`, keeps polling for new work).

Rate limits hold across workers on PostgreSQL: each judge's RPM/TPM budget is a token bucket row
(`store.ratebucket`). SQLite serves one machine: a second worker on the same file is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Engine

from judgepanel.errors import BadInput, NotFound
from judgepanel.runner.dbwait import patient
from judgepanel.runner.executor import ProviderFactory, Runner, RunSummary, progress_keys, run_exit_code
from judgepanel.runner.options import RunOptions
from judgepanel.store import campaigns as store
from judgepanel.store.budget import budget_state
from judgepanel.store.campaigns import provider_batches as pb


class _Summed:
    """A count of a `WorkerSummary` (jobs, done, …): its campaigns' counts of that name, summed."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = name

    def __get__(self, summary: WorkerSummary, owner: type | None = None) -> int:
        return sum(c[self.key] for c in summary.campaigns.values())


@dataclass(frozen=True)
class WorkerSummary:
    status: str  # done | incomplete | interrupted
    campaigns: dict[str, dict[str, int]]  # name -> jobs, done, failed, pending
    calls: int
    cached: int
    errors: dict[str, int]
    passes: int
    elapsed_s: float
    warnings: tuple[str, ...] = ()

    jobs = _Summed()
    done = _Summed()
    failed = _Summed()
    pending = _Summed()

    @property
    def exit_code(self) -> int:
        return run_exit_code(self.status, self.done, self.jobs)

    def as_dict(self) -> dict[str, Any]:
        return {
            **progress_keys(self),
            "calls": self.calls,
            "cached": self.cached,
            "errors": self.errors,
            "passes": self.passes,
            "campaigns": self.campaigns,
            "elapsed_s": round(self.elapsed_s, 3),
            "warnings": list(self.warnings),
        }


@contextlib.contextmanager
def single_worker_on_sqlite(engine: Engine) -> Iterator[None]:
    """On a SQLite file, hold an exclusive lock file beside it for the worker's lifetime, so a
    second worker is refused (SQLite serves one machine; several workers need PostgreSQL)."""
    path = engine.url.database if engine.dialect.name == "sqlite" else None
    if not path or path == ":memory:" or path.startswith("file:"):
        yield
        return
    import fcntl

    lock_path = f"{os.path.abspath(path)}.worker-lock"
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BadInput(
                f"another judgepanel worker is already running on the SQLite database {path}; "
                "SQLite serves one machine: use `campaign run` there, or PostgreSQL (--db postgresql://…) "
                "for several workers"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)  # closing the descriptor drops the lock


class Worker:
    def __init__(
        self,
        engine: Engine,
        options: RunOptions | None = None,
        *,
        campaigns: Sequence[str] = (),
        follow: bool = False,
        poll_seconds: float = 1.0,
        provider_factory: ProviderFactory | None = None,
    ) -> None:
        self.engine = engine
        opts = options or RunOptions()
        self.opts = replace(opts, shared_limits=True)
        self.opts.validate()
        if poll_seconds <= 0:
            raise BadInput(f"--poll-seconds must be positive, got {poll_seconds}")
        self.names = tuple(dict.fromkeys(campaigns))
        self.follow = follow
        self.poll = poll_seconds
        self.factory = provider_factory
        self._stopping = asyncio.Event()
        self._runners: list[Runner] = []
        self.calls = 0
        self.cached = 0
        self.errors: Counter[str] = Counter()
        self.warnings: list[str] = []
        self.passes = 0
        # campaigns whose answers all failed to parse (`RunOptions.unreadable_stop`): not leased
        # again by this worker, which would only spend another round of calls on them
        self.halted: set[str] = set()
        self._capped: dict[str, float | None] = {}  # campaign -> the cap its last run stopped at
        # campaign -> (jobs its last pass left pending for other campaigns' open batches, the open
        # batches then): not leased again while no more than those jobs are left and no batch
        # closed or opened, which would only lease them and hand them back in a tight loop
        self._on_batches: dict[str, tuple[int, frozenset[int]]] = {}

    def interrupt(self) -> None:
        """First call: stop leasing, let calls in flight finish and hand the rest back. Second
        call: abandon the calls in flight too (their jobs stay pending for another worker)."""
        self._stopping.set()
        for r in self._runners:
            r.interrupt()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def _check_names(self) -> None:
        known = store.work_left(self.engine, self.names)
        missing = [n for n in self.names if n not in known]
        if missing:
            raise NotFound(f"no campaign named {', '.join(repr(n) for n in missing)}")

    async def _db(self, fn: Any, *args: Any) -> Any:
        return await patient(self.engine, fn, *args)

    async def _capped_now(self, name: str) -> bool:
        """True while the campaign's cap is the one its last run stopped at (a raised cap, e.g. by
        `campaign run NAME --max-cost`, lets the worker take it up again)."""
        if name not in self._capped:
            return False
        cid = await self._db(store.campaign_id, self.engine, name)
        cap = (await self._db(budget_state, self.engine, cid)).max_cost_usd
        if cap != self._capped[name]:
            del self._capped[name]
            return False
        return True

    async def run(self) -> WorkerSummary:
        started = time.monotonic()
        await self._db(self._check_names)
        names = self.names or None
        while not self.stopping:
            everything = await self._db(store.work_left, self.engine, names)
            # a campaign stopped by its max_cost is done for this worker until its cap is raised
            left = {n: v for n, v in everything.items() if not await self._capped_now(n)}
            waiting = await self._waiting_on_batches(left)
            todo = [
                n
                for n, (leasable, _, _) in left.items()
                if leasable > 0 and n not in self.halted and n not in waiting
            ]
            if todo:
                self.passes += 1
                await self._pass(todo)
                continue
            if not self.follow and not any(
                unfinished
                for n, (_, unfinished, _) in left.items()
                if n not in self.halted and n not in waiting  # a batch may take a day: not waited for
            ):
                break
            # other workers hold what is left: wait for them to finish it or for their leases to expire
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=self.poll)
        left = await self._db(store.work_left, self.engine, names)
        per: dict[str, dict[str, int]] = {}
        for n in left:
            c = await self._db(
                store.job_counts, self.engine, await self._db(store.campaign_id, self.engine, n)
            )
            per[n] = {
                "jobs": sum(c.values()),
                "done": c["done"],
                "failed": c["failed"],
                "pending": c["pending"] + c["running"],
            }
        done = all(c["done"] == c["jobs"] for c in per.values())
        status = "interrupted" if self.stopping else ("done" if done else "incomplete")
        return WorkerSummary(
            status,
            per,
            self.calls,
            self.cached,
            dict(sorted(self.errors.items())),
            self.passes,
            time.monotonic() - started,
            tuple(self.warnings[:20]),
        )

    async def _waiting_on_batches(self, left: dict[str, tuple[int, int, int]]) -> set[str]:
        """The campaigns whose leasable jobs are only those their last pass left pending for open
        batches, while the same batches are open (see `_on_batches`)."""
        if not self._on_batches:
            return set()
        open_now = await self._db(pb.open_batch_ids, self.engine)
        waiting = set()
        for name, (jobs, seen) in list(self._on_batches.items()):
            if name in left and left[name][0] <= jobs and seen == open_now:
                waiting.add(name)
            else:
                del self._on_batches[name]
        return waiting

    async def _pass(self, names: list[str]) -> None:
        # the open batches as the pass starts: one that closes during the pass, after a runner left
        # jobs for it, then differs from what is open next time, and those jobs are leased again
        open_before = await self._db(pb.open_batch_ids, self.engine)
        self._runners = [Runner(self.engine, n, self.opts, provider_factory=self.factory) for n in names]
        try:
            results = await asyncio.gather(*(r.run() for r in self._runners))
        finally:
            self._runners = []
        for s in results:
            self._count(s)
            if s.left_for_batches:
                self._on_batches[s.campaign] = (s.left_for_batches, open_before)

    def _count(self, s: RunSummary) -> None:
        if s.status == "unreadable":
            self.halted.add(s.campaign)
            if s.stopped:
                self.warnings.append(f"{s.campaign}: {s.stopped}")
        if s.status == "budget":
            self._capped[s.campaign] = s.max_cost_usd
            self.warnings.append(
                f"{s.campaign}: stopped by the campaign's cap of {s.max_cost_usd or 0.0:g} USD (max_cost, across "
                f"all its runs and workers); {s.unscheduled} job(s) unscheduled: raise it with "
                f"`campaign run {s.campaign} --max-cost USD`"
            )
        self.calls += s.calls
        self.cached += s.cached
        self.errors.update(s.errors)
        self.warnings += [
            f"{s.campaign}: {w}" for w in s.warnings if f"{s.campaign}: {w}" not in self.warnings
        ]


# A deliberate mirror (issue 31 §4): `work` takes `Worker`'s constructor arguments (and the list
# that receives the worker, for a caller that must reach it), so the two signatures repeat.
def work(
    engine: Engine,
    options: RunOptions | None = None,
    *,
    campaigns: Sequence[str] = (),
    follow: bool = False,
    poll_seconds: float = 1.0,
    provider_factory: ProviderFactory | None = None,
    worker: list[Worker] | None = None,
) -> WorkerSummary:
    """Run a worker until nothing is left (see `Worker`), in a fresh event loop."""

    async def main() -> WorkerSummary:
        w = Worker(
            engine,
            options,
            campaigns=campaigns,
            follow=follow,
            poll_seconds=poll_seconds,
            provider_factory=provider_factory,
        )
        if worker is not None:
            worker.append(w)
        return await w.run()

    with single_worker_on_sqlite(engine):
        return asyncio.run(main())


__all__ = ["Worker", "WorkerSummary", "single_worker_on_sqlite", "work"]
