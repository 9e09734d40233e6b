"""One writer task: results are buffered and committed every `batch_size` records or `flush_ms`,
whichever comes first, in a worker thread so the event loop keeps serving HTTP meanwhile.

Batching is what keeps SQLite off the critical path: one transaction (one fsync of the WAL) per
batch instead of per call, with `executemany` inserts. `kill -9` can lose at most the records
not yet committed — calls in flight and at most `flush_ms` of finished ones — never a committed
result, and the jobs they belong to are simply still pending when the run resumes. When the
database cannot be reached (PostgreSQL restarting), a batch is kept in memory and its commit
retried with back-off (`runner.dbwait`) while new results keep accumulating.

A batch the database refuses for what is in it (a value a driver cannot encode, a number out of
a column's range: the providers' replies are cleaned before they get here, `providers.replies`,
so this is the last line) is written again one job at a time (`salvage`): every job whose rows go
in is stored as it was, and a job whose rows are refused is stored as one failed attempt
(`fatal`, "the reply could not be stored: …") without the reply, so one bad reply never loses the
batch, and the money its call cost is still counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import replace

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError

from judgepanel.runner.dbwait import Outage, is_outage
from judgepanel.store.campaigns import AttemptRow, Batch, BatchResult, JobOutcome, write_batch

CommitHook = Callable[[Batch, BatchResult], None]


class Writer:
    def __init__(
        self,
        engine: Engine,
        owner: str,
        *,
        batch_size: int = 500,
        flush_ms: float = 100.0,
        on_commit: CommitHook | None = None,
    ) -> None:
        self.engine = engine
        self.owner = owner
        self.batch_size = batch_size
        self.flush_s = flush_ms / 1000.0
        self.on_commit = on_commit
        self._buf = Batch()
        self._full = asyncio.Event()
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        self.commits = 0
        self.records = 0
        self.write_seconds = 0.0
        self.retries = 0  # commits retried after the database could not be reached

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="judgepanel-writer")

    def attempt(self, row: AttemptRow) -> None:
        self._buf.attempts.append(row)
        if len(self._buf) >= self.batch_size:
            self._full.set()

    def release(self, campaign_id: int, amount: float) -> None:
        """Give a call's budget reservation back with the next commit (with its reply, if buffered)."""
        self._buf.released.append((campaign_id, amount))

    def unclaim(self, request_hash: str) -> None:
        """Drop this owner's in-flight claim on a request hash with the next commit (with the
        answer it was claimed for, which is buffered already: `store.claims`)."""
        self._buf.unclaimed.append(request_hash)

    def outcome(self, row: JobOutcome) -> None:
        self._buf.outcomes.append(row)
        if len(self._buf) >= self.batch_size:
            self._full.set()

    async def _loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._full.wait(), timeout=self.flush_s)
            self._full.clear()
            await self._flush()
            if self._closing and not len(self._buf):
                return

    async def _flush(self) -> None:
        if not len(self._buf) and not self._buf.released and not self._buf.unclaimed:
            return
        batch, self._buf = self._buf, Batch()
        t0 = time.perf_counter()
        # the thread finishes even if this task is cancelled, so a started commit is never torn;
        # while the database is unreachable the batch is kept and retried (`runner.dbwait`)
        outage = Outage(self.engine)
        while True:
            try:
                result = await asyncio.shield(asyncio.to_thread(write_batch, self.engine, batch, self.owner))
                break
            except IntegrityError:
                if outage.since is None:
                    raise
                # the connection broke while the earlier try was committing, and that commit landed
                result = BatchResult(frozenset(o.job_id for o in batch.outcomes), frozenset())
                break
            except Exception as exc:
                if not is_outage(self.engine, exc):
                    try:
                        result = await asyncio.shield(
                            asyncio.to_thread(salvage, self.engine, batch, self.owner)
                        )
                        break
                    except Exception as again:
                        exc = again  # the database went away meanwhile: waited out as any outage
                await asyncio.sleep(outage.next_delay(exc))
                self.retries += 1
        self.write_seconds += time.perf_counter() - t0
        self.commits += 1
        self.records += len(batch)
        if self.on_commit is not None:
            self.on_commit(batch, result)

    async def close(self) -> None:
        """Commit everything buffered and stop."""
        self._closing = True
        self._full.set()
        if self._task is not None:
            await self._task
        else:
            await self._flush()


def _unstorable(row: AttemptRow, exc: Exception) -> AttemptRow:
    """`row` as a failed attempt without anything the reply brought (what the database refused is
    in there); what the call cost stays."""
    why = f"the reply could not be stored ({type(exc).__name__}); its text and body were dropped"
    return replace(
        row,
        ok=False,
        error_class="fatal",
        error_message=why,
        http_status=None,
        raw_body=None,
        text=None,
        model_returned=None,
        system_fingerprint=None,
        finish_reason=None,
        input_tokens=None,
        output_tokens=None,
        cache_read_tokens=None,
        cache_write_tokens=None,
    )


def salvage(engine: Engine, batch: Batch, owner: str) -> BatchResult:
    """Write `batch` one job at a time, after the database refused it whole: a job whose rows are
    refused is written as failed attempts without the reply (see the module docstring). The
    released reservations go with the first write."""
    jobs = sorted({a.job_id for a in batch.attempts} | {o.job_id for o in batch.outcomes})
    accepted: set[int] = set()
    rejected: set[int] = set()
    released = list(batch.released)
    for job in jobs:
        part = Batch(
            [a for a in batch.attempts if a.job_id == job],
            [o for o in batch.outcomes if o.job_id == job],
            released,
        )
        try:
            got = write_batch(engine, part, owner)
        except Exception as exc:
            if is_outage(engine, exc):
                raise
            part = Batch(
                [_unstorable(a, exc) for a in part.attempts],
                [JobOutcome(o.job_id, "failed", o.attempts, "fatal") for o in part.outcomes],
                released,
            )
            got = write_batch(engine, part, owner)
        released = []
        accepted |= got.accepted
        rejected |= got.rejected
    if released:
        write_batch(engine, Batch(released=released), owner)
    return BatchResult(frozenset(accepted), frozenset(rejected))
