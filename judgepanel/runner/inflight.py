"""Identical requests are asked once, also while the first is still in flight (issue 28 §2).

The store's request cache answers a request that was answered before. Two jobs whose requests are
byte-identical (two conditions of a template that shows neither, the same judge in two
concurrent alignments) reach the provider at the same time, before either answer is stored, and
both were paid. Now the run that is about to ask a request claims its hash in the database
(`store.claims`): a job whose hash this run, or another live run, holds is *parked* — it takes
no worker, reserves no budget and sends nothing — and the claim goes away in the transaction that
stores the answer. The parked job is then answered from the cache (cost 0, `cached_from`), or,
when the first ask ended without a usable answer (failed, unreadable, abandoned), claims the hash
itself and is asked.

- Parked jobs never hold a worker, so two runs parked on each other's claims cannot deadlock:
  each still works through the jobs it claimed.
- A run that dies leaves its claims; its twins take them over once it is seen dead or the claim
  expires (`store.claims`). A run that ends drops what it still claims.
- `--no-cache` asks every job, so it claims nothing and parks nothing.
- A request an open provider batch (`campaign run --batch`, any campaign) is asking is not asked
  by a realtime run either: its jobs are left pending, with a warning naming the campaign whose
  batch to collect. The run looks for open batches after claiming (`_unbatched`), and a batch run
  claims its requests after recording its batch and before sending it
  (`runner.batch._not_asked_elsewhere`), so of a batch and a realtime run asking the same request
  at once, one always sees the other.

Boundary: the runner's bookkeeping of claims and parked jobs; the SQL is in `store.claims`, the
calls and the answering from the cache stay in `runner.executor` / `runner.calling`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Callable, Collection
from typing import Any

from sqlalchemy import Engine

from judgepanel.runner.prepare import Prepared
from judgepanel.store import campaigns as store
from judgepanel.store import claims
from judgepanel.store.campaigns import CacheHit, provider_batches

POLL_S = 0.25  # how often parked jobs look again while another run holds their hashes


class InFlight:
    def __init__(self, engine: Engine, owner: str, *, lease_seconds: float, enabled: bool) -> None:
        self.engine = engine
        self.owner = owner
        self.lease_seconds = lease_seconds
        self.enabled = enabled
        self.held: set[str] = set()  # hashes this run claimed and has not released (committed) yet
        self.holder: dict[str, int] = {}  # hash -> the job that asks it
        self.parked: dict[str, list[tuple[Any, Prepared]]] = {}  # hash -> (judge, job) waiting
        self.waiting: Counter[int] = Counter()  # parked jobs per judge id
        self.wake = asyncio.Event()
        self.twins = 0  # jobs answered from a twin's answer after waiting for it

    # ------------------------------------------------------------ in the feeder's thread

    def claim(self, preps: Collection[Prepared], hits: Collection[str]) -> tuple[set[str], dict[str, str]]:
        """Claim the hashes of `preps` that the cache did not answer and this run does not hold; and
        say which of them an open provider batch (`campaign run --batch`, of any campaign) is asking,
        by a campaign whose batch asks it. Those are not claimed: their jobs are left pending, to be
        answered from the store once that batch is collected, not paid for a second time."""
        if not self.enabled:
            return set(), {}
        held = set(self.held)  # a snapshot: the event loop changes the set
        misses = {p.request_hash for p in preps if p.request_hash not in hits}
        got, _answered = self._claim_unanswered(misses - held)
        # a hash answered meanwhile is not claimed: its jobs park, and the resolver answers them
        return self._unbatched(got, misses)

    # ------------------------------------------------------------ on the event loop

    def admit(self, judge: Any, p: Prepared, claimed: set[str]) -> bool:
        """True: `p` may be asked now (its hash is this run's from now on); False: parked."""
        if not self.enabled:
            return True
        h = p.request_hash
        if h not in self.held and h in claimed:
            self.held.add(h)
            self.holder[h] = p.job.id
            return True
        self.parked.setdefault(h, []).append((judge, p))
        self.waiting[judge.id] += 1
        self.wake.set()
        return False

    def done(self, p: Prepared) -> str | None:
        """`p` ended (answered, failed or handed back): the hash whose claim goes with its rows."""
        h = p.request_hash
        if self.enabled and self.holder.get(h) == p.job.id:
            del self.holder[h]
            return h
        return None

    def committed(self, hashes: Collection[str]) -> None:
        """The claims on `hashes` were dropped in a commit, with their answers."""
        if hashes:
            self.held.difference_update(hashes)
            self.wake.set()

    def parked_for(self, judge_id: int) -> int:
        return self.waiting[judge_id]

    async def resolve(
        self,
        db: Callable[..., Any],
        answer: Callable[[Any, Prepared, CacheHit], None],
        ask: Callable[[Any, Prepared], None],
        stopping: asyncio.Event,
        leave: Callable[[Any, Prepared, str], None] = lambda judge, p, campaign: None,
    ) -> None:
        """Until `stopping`: answer parked jobs from the cache once their twin's answer is stored,
        or hand one of them to its judge's workers when the hash is free and still unanswered, or
        `leave` them (pending) when an open provider batch of that campaign asks it by then."""
        while not stopping.is_set():
            free = [h for h in self.parked if h not in self.held]
            progressed = False
            if free:
                hits, got, batched = await db(self._look, free)
                if stopping.is_set():
                    return  # the run is ending: what it claimed just now is dropped with the rest
                for h in free:
                    waiting = self.parked.get(h)
                    if not waiting:
                        continue
                    if h in batched:
                        del self.parked[h]
                        for judge, p in waiting:
                            self.waiting[judge.id] -= 1
                            leave(judge, p, batched[h])
                        progressed = True
                    elif h in hits:
                        del self.parked[h]
                        for judge, p in waiting:
                            self.waiting[judge.id] -= 1
                            self.twins += 1
                            answer(judge, p, hits[h])
                        progressed = True
                    elif h in got:
                        judge, p = waiting.pop(0)
                        if not waiting:
                            del self.parked[h]
                        self.waiting[judge.id] -= 1
                        self.held.add(h)
                        self.holder[h] = p.job.id
                        ask(judge, p)
                        progressed = True
            if progressed:
                continue
            self.wake.clear()
            with contextlib.suppress(TimeoutError):
                # another run's claim ends without telling us: look again now and then
                await asyncio.wait_for(self.wake.wait(), timeout=POLL_S if self.parked else None)

    def _look(self, hashes: list[str]) -> tuple[dict[str, CacheHit], set[str], dict[str, str]]:
        hits = store.cache_lookup(self.engine, hashes)
        got, answered = self._claim_unanswered([h for h in hashes if h not in hits])
        got, batched = self._unbatched(got, [h for h in hashes if h not in hits and h not in answered])
        return {**hits, **answered}, got, batched

    def _unbatched(self, got: set[str], misses: Collection[str]) -> tuple[set[str], dict[str, str]]:
        """Of the unanswered `misses`, those an open provider batch asks (by a campaign whose batch
        asks it), looked for after claiming so that a batch recorded before the claim is always
        seen; `got` less those, whose claims are dropped (the batch answers them)."""
        batched = provider_batches.hashes_in_open_batches(self.engine, sorted(misses)) if misses else {}
        if batched and (mine := got & batched.keys()):
            claims.release(self.engine, self.owner, mine)
            got = got - mine
        return got, batched

    def _claim_unanswered(self, hashes: Collection[str]) -> tuple[set[str], dict[str, CacheHit]]:
        """Claim `hashes`, then look in the cache again for those claimed: a twin's answer may have
        been committed (and its claim dropped with it) between the caller's cache lookup and this
        claim, which then met no claim. Those are released and returned as answers, so a request
        is never asked twice (seen under load: 7 requests at the server for 6 distinct ones)."""
        got = (
            claims.claim(self.engine, self.owner, hashes, lease_seconds=self.lease_seconds)
            if hashes
            else set()
        )
        answered = store.cache_lookup(self.engine, got) if got else {}
        if answered:
            claims.release(self.engine, self.owner, answered)
        return got - answered.keys(), answered

    def release_all(self) -> None:
        """The run ends: drop every claim it still holds (its parked jobs stay pending)."""
        if self.enabled:
            claims.release_owner(self.engine, self.owner)

    def renew(self) -> None:
        if self.enabled and (self.held or self.holder):
            claims.renew(self.engine, self.owner, lease_seconds=self.lease_seconds)
