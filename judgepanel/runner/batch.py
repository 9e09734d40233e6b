"""`campaign run NAME --batch`: a campaign's pending jobs through the providers' batch APIs.

OpenAI: the requests go up as one JSONL file (`files.create(purpose="batch")`, one line
`{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}` per job) and a batch is
created on it (`batches.create`, 24 h window, `metadata.judgepanel_batch` = the batch's token).
Anthropic: one `messages.batches.create` with a `custom_id` and `params` per job. The bodies are
exactly what a realtime call would send (the providers' own argument builders), so the request
hash, the stored request row and the reply parsing are the realtime ones.

Exactly once (see `store.campaigns.provider_batches`): the batch row and its jobs are written
(`preparing`) and the jobs moved to the batch's lease BEFORE the provider is called, and the
provider's batch id right after. A submission whose answer was lost (a crash, a reset connection)
leaves a `preparing` batch: it is looked up at the provider — OpenAI by the token in the batch's
metadata; Anthropic, which has no metadata, by a batch created after the row with the same number
of requests that this database does not know yet — and recorded if found, else given up with its
jobs back to `pending`. A job in an open batch is never leased by anything else.

Polling backs off from `poll_interval` (×1.5 per round, at most `max_poll_interval`). When a batch
ends its results are downloaded (OpenAI output and error files, Anthropic's results JSONL) and every
entry is stored per job through `store.campaigns.write_batch`, as realtime calls are: a request row
(the rendered messages, params, hash), a response row (raw body, tokens, cost at the batch discount,
finish reason) and the verdict parsed by the same reader. Expired, cancelled and errored entries
(and entries missing from the output) become ordinary failed attempts and failed jobs of class
`transient` (a 4xx invalid-request entry: `fatal`), which `campaign run --retry-failed` re-asks.
Everything needed to resume is in the database: `campaign run NAME --batch` again, on any machine,
picks up open batches and polls them. A batch the provider answers 404 for is closed and its jobs
go back to `pending` (nothing can come back for them).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import anthropic
import openai
from sqlalchemy import Engine

from judgepanel.errors import RETRY_FAILED, BadInput, Fatal, ProviderError, Transient
from judgepanel.providers import errors as perrors
from judgepanel.providers import sdk
from judgepanel.providers.anthropic_provider import AnthropicProvider
from judgepanel.providers.base import ChatResult
from judgepanel.providers.openai_provider import OpenAIProvider
from judgepanel.providers.pricing import Price
from judgepanel.providers.replies import clean_body, clean_result, clean_text
from judgepanel.providers.spec import JudgeSpec, max_reply_bytes
from judgepanel.runner.budget import Budget, check_prices, price_for
from judgepanel.runner.executor import progress_keys, run_exit_code
from judgepanel.runner.prepare import (
    CampaignContext,
    Prepared,
    campaign_judge_specs,
    load_context,
    prepare,
)
from judgepanel.runner.rows import (
    _reply_kind,
    answered_row,
    cached_answer,
    failed_class,
    judged_reply,
    prepare_leased,
    sent_row,
)
from judgepanel.runner.served import served_models
from judgepanel.store import budget as budget_store
from judgepanel.store import campaigns as store
from judgepanel.store import claims
from judgepanel.store.campaigns import Batch, CacheHit, JobOutcome, LeasedJob
from judgepanel.store.campaigns import provider_batches as pb

BatchProvider = OpenAIProvider | AnthropicProvider
ENDED_OPENAI = frozenset({"completed", "expired", "cancelled", "failed"})
ANTHROPIC_SKEW = timedelta(minutes=2)  # clock difference tolerated when matching a lost create


@dataclass(frozen=True)
class BatchOptions:
    poll_interval: float = 30.0  # seconds before the first poll; grows ×1.5 per round
    max_poll_interval: float = 600.0
    max_jobs: int = 10_000  # per batch (OpenAI takes 50,000 lines, Anthropic 100,000 requests)
    no_cache: bool = False
    wait: bool = True  # poll until every open batch has ended (else submit, poll once, return)
    retry_failed: bool = False  # put jobs that failed rate_limit/transient back first
    retry_fatal: bool = False  # and jobs refused as `fatal`, after the user fixed what it named
    max_cost: float | None = None  # USD: sets the campaign's cap on its total spend (as `campaign run`)

    def validate(self) -> None:
        if self.poll_interval <= 0:
            raise BadInput(f"--poll-interval must be positive, got {self.poll_interval}")
        if self.max_jobs < 1:
            raise BadInput(f"--batch-size must be at least 1, got {self.max_jobs}")


# A deliberate mirror (issue 31 §4): `BatchSummary`, `executor.RunSummary` and `worker.WorkerSummary`
# end alike (warnings, the exit code of the CLI contract, `as_dict` opening with the shared
# `progress_keys`), because `cli.campaign_cmd.end_of_run` reads all three the same way.
@dataclass(frozen=True)
class BatchSummary:
    campaign: str
    status: str  # done | incomplete | waiting | interrupted
    jobs: int
    done: int
    failed: int
    pending: int
    in_batches: int
    submitted: int  # jobs put in a batch by this run
    collected: int  # batch results stored by this run
    cached: int
    batches: list[dict[str, Any]]
    errors: dict[str, int]
    cost_usd: float | None
    elapsed_s: float
    warnings: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        return run_exit_code(self.status, self.done, self.jobs)

    def as_dict(self) -> dict[str, Any]:
        return {
            "campaign": self.campaign,
            "mode": "batch",
            **progress_keys(self),
            "in_batches": self.in_batches,
            "submitted": self.submitted,
            "collected": self.collected,
            "cached": self.cached,
            "batches": self.batches,
            "errors": self.errors,
            "cost_usd": self.cost_usd,
            "elapsed_s": round(self.elapsed_s, 3),
            "warnings": list(self.warnings),
        }


@dataclass
class _Judge:
    id: int
    spec: JudgeSpec
    provider: BatchProvider
    price: Price | None


@dataclass
class _Stats:
    submitted: int = 0
    collected: int = 0
    cached: int = 0
    spent: float = 0.0
    spent_unknown: bool = False
    errors: Counter[str] = field(default_factory=Counter)
    batches: dict[int, dict[str, Any]] = field(default_factory=dict)


ProviderFactory = Callable[[JudgeSpec], Any]


def _default_factory(spec: JudgeSpec) -> Any:
    from judgepanel.providers.registry import make_provider

    return make_provider(spec, max_connections=8)


# A deliberate mirror (issue 31 §4): `BatchRunner` and `executor.Runner` are the two ways `campaign
# run` runs a campaign, so they take the same constructor (engine, campaign, options, provider
# factory) and set the same first attributes; their options, loops and summaries differ.
class BatchRunner:
    def __init__(
        self,
        engine: Engine,
        campaign: str,
        options: BatchOptions | None = None,
        *,
        provider_factory: ProviderFactory | None = None,
    ) -> None:
        self.engine = engine
        self.name = campaign
        self.opts = options or BatchOptions()
        self.opts.validate()
        self.factory = provider_factory or _default_factory
        self.owner = store.lease_owner_id()
        self.stats = _Stats()
        self.warnings: list[str] = []
        self._stop = asyncio.Event()
        self._started = time.monotonic()
        self.cap: float | None = None  # the campaign's cap on its total spend
        self._budget_stopped = False  # a batch's jobs no longer fitted under the cap
        # twins of a request an open batch asks (issue 28 §2): held under this run's lease, not
        # submitted, and answered from the store once that batch is collected
        self._twins: list[Prepared] = []

    def interrupt(self) -> None:
        """Stop polling (what was submitted stays open at the provider and in the database)."""
        self._stop.set()

    # ------------------------------------------------------------ setup

    def _load(self) -> tuple[int, CampaignContext, dict[str, _Judge]]:
        spec, rv_id = store.campaign_spec(self.engine, self.name)
        cid = store.campaign_id(self.engine, self.name)
        found = campaign_judge_specs(self.engine, spec, cid)
        specs = dict(found.values())
        judges: dict[str, _Judge] = {}
        for js in specs.values():
            if js.provider not in ("openai", "anthropic"):
                raise BadInput(
                    f"judge {js.name}: provider {js.provider!r} has no batch API "
                    "(--batch needs openai: or anthropic: judges); run without --batch"
                )
        for jid, (name, js) in found.items():
            provider = self.factory(js)
            if not isinstance(provider, OpenAIProvider | AnthropicProvider):
                raise BadInput(f"judge {js.name}: its provider cannot submit batches")
            judges[name] = _Judge(jid, js, provider, price_for(js))
        # the batch bodies leave out what the servers refused in realtime runs, as the hashes do
        providers = {n: j.provider for n, j in judges.items()}
        ctx = load_context(self.engine, self.name, spec, rv_id, specs, providers, self.warnings)
        recorded = budget_store.budget_state(self.engine, cid).max_cost_usd
        self.cap = (
            self.opts.max_cost
            if self.opts.max_cost is not None
            else (recorded if recorded is not None else spec.max_cost)
        )
        if self.cap is not None:
            check_prices(self.cap, {j.spec.name: _batch_price(j.price) for j in judges.values()})
            if self.cap != recorded:
                budget_store.set_cap(self.engine, cid, self.cap)
        return cid, ctx, judges

    def _judge(self, judge_id: int) -> _Judge | None:
        return next((j for j in self.judges.values() if j.id == judge_id), None)

    # ------------------------------------------------------------ main

    async def run(self) -> BatchSummary:
        cid, ctx, judges = await asyncio.to_thread(self._load)
        self.cid, self.judges = cid, judges
        try:
            served, warnings = await served_models({n: (j.spec, j.provider) for n, j in judges.items()})
            self.warnings += warnings
            await asyncio.to_thread(store.remember_served_models, self.engine, self.name, served)
            self.ctx = replace(ctx, served_models=served)
            if self.opts.retry_failed:
                await asyncio.to_thread(store.requeue, self.engine, cid, RETRY_FAILED)
            if self.opts.retry_fatal:
                await asyncio.to_thread(store.requeue, self.engine, cid, ("fatal",))
            await asyncio.to_thread(store.reclaim_dead_leases, self.engine, cid)
            observed = (
                await asyncio.to_thread(store.output_token_samples, self.engine, list(judges))
                if self.cap is not None
                else {}
            )
            self.budget = Budget(self.cap, observed=observed)
            await asyncio.to_thread(store.set_campaign_status, self.engine, cid, "running")
            for b in await asyncio.to_thread(pb.open_batches, self.engine, cid):
                if b.batch_id is None:
                    await self._reconcile(b)
            for j in judges.values():
                while not self._stop.is_set() and not self._budget_stopped:
                    leased = await asyncio.to_thread(
                        store.lease_jobs,
                        self.engine,
                        cid,
                        self.owner,
                        self.opts.max_jobs,
                        lease_seconds=600.0,
                        judge_id=j.id,
                    )
                    if not leased:
                        break
                    await self._submit(j, leased)
            await self._poll()
            await self._answer_twins()
        finally:
            await asyncio.to_thread(store.release_leases, self.engine, self.owner)
            await asyncio.to_thread(budget_store.drop_hold, self.engine, cid, self.owner)
            for j in judges.values():
                with contextlib.suppress(Exception):
                    await j.provider.aclose()
        return await asyncio.to_thread(self._summary)

    def _summary(self) -> BatchSummary:
        counts = store.job_counts(self.engine, self.cid)
        in_batches = pb.jobs_in_open_batches(self.engine, self.cid)
        pending = counts["pending"] + counts["running"]
        if self._stop.is_set():
            status = "interrupted"
        elif in_batches:
            status = "waiting"
        elif self._budget_stopped:
            status = "budget"
        else:
            status = "done" if pending == 0 and counts["failed"] == 0 else "incomplete"
        store.set_campaign_status(
            self.engine, self.cid, "incomplete" if status in ("waiting", "interrupted") else status
        )
        for b in pb.open_batches(self.engine, self.cid):
            self.stats.batches.setdefault(b.pk, {**b.as_dict(), "judge": self._judge_name(b.judge_id)})
        return BatchSummary(
            self.name,
            status,
            sum(counts.values()),
            counts["done"],
            counts["failed"],
            pending - in_batches,
            in_batches,
            self.stats.submitted,
            self.stats.collected,
            self.stats.cached,
            [self.stats.batches[k] for k in sorted(self.stats.batches)],
            dict(sorted(self.stats.errors.items())),
            None if self.stats.spent_unknown else round(self.stats.spent, 6),
            time.monotonic() - self._started,
            tuple(self.warnings[:20]),
        )

    def _judge_name(self, judge_id: int) -> str | None:
        j = self._judge(judge_id)
        return j.spec.name if j is not None else None

    # ------------------------------------------------------------ submitting

    def _render(self, leased: list[LeasedJob]) -> tuple[list[Prepared], list[tuple[LeasedJob, str]]]:
        return prepare_leased(self.engine, self.ctx, leased)

    async def _submit(self, j: _Judge, leased: list[LeasedJob]) -> None:
        preps, bad = await asyncio.to_thread(self._render, leased)
        local = Batch()
        for job, why in bad:
            local.outcomes.append(JobOutcome(job.id, "failed", job.attempts, "fatal"))
            self.stats.errors["fatal"] += 1
            self.warnings.append(f"job {job.id}: {why}")
        hits = (
            {}
            if self.opts.no_cache
            else await asyncio.to_thread(store.cache_lookup, self.engine, [p.request_hash for p in preps])
        )
        todo = await self._from_cache(preps, hits, local)
        todo = await self._hold_twins(todo)
        if not todo:
            return
        hold = 0.0
        if self.cap is not None:
            todo, hold = await self._fit(j, todo)
            if not todo:
                return
        pk, token, custom = await asyncio.to_thread(
            pb.open_provider_batch,
            self.engine,
            self.cid,
            j.id,
            j.spec.provider,
            self.owner,
            [(p.job.id, p.job.attempts + 1, p.request_hash) for p in todo],
            os.urandom(4).hex(),
            hold,
        )
        todo = await self._not_asked_elsewhere(pk, todo)
        if not todo:
            await asyncio.to_thread(pb.close_batch, self.engine, pk, pb.GIVEN_UP, "every job asked elsewhere")
            return
        self.stats.submitted += len(todo)
        failure: ProviderError | None = None
        try:
            if isinstance(j.provider, OpenAIProvider):
                await self._submit_openai(j.provider, pk, token, custom, todo)
            else:
                await self._submit_anthropic(j.provider, pk, custom, todo)
        except (openai.OpenAIError, anthropic.AnthropicError) as exc:
            failure = _sdk_failure(j.provider, exc)
        if failure is not None:
            self.warnings.append(f"batch {pk}: submission failed or its answer was lost ({failure})")
            for b in await asyncio.to_thread(pb.open_batches, self.engine, self.cid):
                if b.pk == pk:
                    await self._reconcile(b)

    async def _hold_twins(self, todo: list[Prepared]) -> list[Prepared]:
        """`todo` less the twins: a job whose request an open batch (this run's or any other's)
        already asks, or an earlier job of `todo` asks, is held, not submitted (`_answer_twins`)."""
        if self.opts.no_cache or not todo:
            return todo
        asked = set(
            await asyncio.to_thread(pb.hashes_in_open_batches, self.engine, [p.request_hash for p in todo])
        )
        send: list[Prepared] = []
        for p in todo:
            if p.request_hash in asked:
                self._twins.append(p)
            else:
                asked.add(p.request_hash)
                send.append(p)
        return send

    async def _from_cache(
        self, preps: list[Prepared], hits: Mapping[str, CacheHit], local: Batch
    ) -> list[Prepared]:
        """Answer from the store's cache (`hits`, by request hash) the prepared jobs it holds, written
        together with what `local` already holds; the ones it does not hold, in order."""
        missing: list[Prepared] = []
        for p in preps:
            hit = hits.get(p.request_hash)
            if hit is None:
                missing.append(p)
                continue
            row, outcome = cached_answer(p, hit, self.ctx)
            local.attempts.append(row)
            local.outcomes.append(outcome)
            self.stats.cached += 1
        if len(local):
            await asyncio.to_thread(store.write_batch, self.engine, local, self.owner)
        return missing

    async def _not_asked_elsewhere(self, pk: int, todo: list[Prepared]) -> list[Prepared]:
        """`todo` less the jobs whose request a realtime run is asking right now, another batch
        recorded since `_hold_twins` looked, or the store answered since this run looked in the
        cache; those leave batch `pk` (recorded, not yet sent) and are held as twins. Its rows are
        written before this look, and a realtime run (or another batch run) looks after it claims
        (records), so of two runs asking the same request at once one always sees the other."""
        if self.opts.no_cache:
            return todo
        wanted = {p.request_hash for p in todo}
        got = await asyncio.to_thread(claims.claim, self.engine, self.owner, wanted, lease_seconds=600.0)
        answered = await asyncio.to_thread(store.cache_lookup, self.engine, got) if got else {}
        if got:  # the batch's rows are the claim from here on
            await asyncio.to_thread(claims.release, self.engine, self.owner, got)
        other = await asyncio.to_thread(
            pb.hashes_in_open_batches, self.engine, sorted(wanted), except_batch=pk
        )
        elsewhere = (wanted - got) | answered.keys() | other.keys()
        if not elsewhere:
            return todo
        back = [p for p in todo if p.request_hash in elsewhere]
        await asyncio.to_thread(pb.take_back, self.engine, pk, [p.job.id for p in back], self.owner, 600.0)
        self._twins += back
        return [p for p in todo if p.request_hash not in elsewhere]

    async def _answer_twins(self) -> None:
        """Answer the held twins from the store (their request's batch was collected); those whose
        batch is still open or failed go back to `pending` for a later run."""
        twins, self._twins = self._twins, []
        if not twins:
            return
        hits = await asyncio.to_thread(store.cache_lookup, self.engine, [p.request_hash for p in twins])
        waiting = [p.job.id for p in await self._from_cache(twins, hits, Batch())]
        if waiting:
            await asyncio.to_thread(store.release_leases, self.engine, self.owner, waiting)
            self.warnings.append(
                f"{len(waiting)} job(s) ask the same request as a job in a batch not yet collected "
                f"(or that failed), or one a realtime run was asking: they were not submitted again; "
                f"`campaign run {self.name} --batch` answers them from the store once it is there"
            )

    async def _fit(self, j: _Judge, todo: list[Prepared]) -> tuple[list[Prepared], float]:
        """The first jobs of `todo` whose estimated cost (at the batch discount, as `runner.budget`
        estimates a call) fits under the campaign's cap, with that much reserved for them; the
        rest are handed back and the run stops submitting."""
        price = _batch_price(j.price)
        costs = [self.budget.estimate(price, p.prompt_chars, p.max_output, _reply_kind(p)) for p in todo]
        while True:
            state = await asyncio.to_thread(budget_store.budget_state, self.engine, self.cid)
            left = state.left_usd if state.left_usd is not None else float("inf")
            n, total = 0, 0.0
            while n < len(todo) and total + costs[n] <= left:
                total += costs[n]
                n += 1
            if n == 0:
                break
            granted: float = await asyncio.to_thread(
                budget_store.reserve, self.engine, self.cid, self.owner, total, 0.0, 600.0
            )
            if granted:
                break  # (a reservation refused means another run took money meanwhile: fit again)
        if n < len(todo):
            self._budget_stopped = True
            back = [p.job.id for p in todo[n:]]
            await asyncio.to_thread(store.release_leases, self.engine, self.owner, back)
            self.warnings.append(
                f"stopped by the campaign's cap of {self.cap:g} USD (max_cost, across all its runs): "
                f"{len(back)} job(s) of judge {j.spec.name} not submitted; raise it with "
                f"`campaign run {self.name} --batch --max-cost USD`"
            )
        return todo[:n], total

    async def _submit_openai(
        self, prov: OpenAIProvider, pk: int, token: str, custom: dict[int, str], todo: list[Prepared]
    ) -> None:
        lines = []
        for p in todo:
            body, _ = prov.batch_body(p.request)
            line = {
                "custom_id": custom[p.job.id],
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": body,
            }
            lines.append(json.dumps(line, ensure_ascii=False))
        data = ("\n".join(lines) + "\n").encode()
        upload = await prov.client.files.create(
            file=(f"{token}.jsonl", data, "application/jsonl"), purpose="batch"
        )
        await asyncio.to_thread(pb.record_input_file, self.engine, pk, upload.id)
        created = await prov.client.batches.create(
            input_file_id=upload.id,
            endpoint="/v1/chat/completions",
            completion_window="24h",
            metadata={"judgepanel_batch": token},
        )
        await asyncio.to_thread(pb.record_submitted, self.engine, pk, created.id, created.status)
        self.stats.batches[pk] = {
            "id": pk,
            "provider": "openai",
            "batch_id": created.id,
            "status": created.status,
        }

    async def _submit_anthropic(
        self, prov: AnthropicProvider, pk: int, custom: dict[int, str], todo: list[Prepared]
    ) -> None:
        requests: list[dict[str, Any]] = []
        headers: dict[str, str] = {}
        for p in todo:
            params, _, headers = prov.batch_params(p.request)
            requests.append({"custom_id": custom[p.job.id], "params": params})
        created = await prov.client.messages.batches.create(
            requests=requests,  # type: ignore[arg-type]
            extra_headers=headers or None,
        )
        await asyncio.to_thread(pb.record_submitted, self.engine, pk, created.id, created.processing_status)
        self.stats.batches[pk] = {
            "id": pk,
            "provider": "anthropic",
            "batch_id": created.id,
            "status": created.processing_status,
        }

    async def _reconcile(self, b: pb.OpenBatch) -> None:
        """A `preparing` batch whose submission may or may not have reached the provider: find it
        there and record it, else give it up (its jobs back to `pending`)."""
        j = self._judge(b.judge_id)
        if j is None:
            self.warnings.append(f"batch {b.pk}: its judge is no longer in the campaign; left open")
            return
        found: str | None = None
        status = ""
        failure: ProviderError | None = None
        try:
            if isinstance(j.provider, OpenAIProvider):
                async for ob in j.provider.client.batches.list(limit=100):
                    if (ob.metadata or {}).get("judgepanel_batch") == b.token:
                        found, status = ob.id, ob.status
                        break
                    if (
                        datetime.fromtimestamp(ob.created_at, UTC).replace(tzinfo=None)
                        < b.created_at - ANTHROPIC_SKEW
                    ):
                        break  # listed newest first: older ones cannot be ours
            else:
                known = await asyncio.to_thread(pb.known_batch_ids, self.engine, "anthropic")
                candidates = []
                async for ab in j.provider.client.messages.batches.list(limit=100):
                    created = ab.created_at.astimezone(UTC).replace(tzinfo=None)
                    if created < b.created_at - ANTHROPIC_SKEW:
                        break
                    rc = ab.request_counts
                    total = rc.processing + rc.succeeded + rc.errored + rc.canceled + rc.expired
                    if ab.id not in known and total == b.jobs:
                        candidates.append((created, ab.id, ab.processing_status))
                if candidates:
                    _, found, status = min(candidates)
        except (openai.OpenAIError, anthropic.AnthropicError) as exc:
            failure = _sdk_failure(j.provider, exc)
        if failure is not None:
            self.warnings.append(
                f"batch {b.pk}: could not ask {b.provider} whether it was submitted ({failure}); "
                "its jobs stay in it until a later run can"
            )
            return
        if found is not None:
            await asyncio.to_thread(pb.record_submitted, self.engine, b.pk, found, status)
            self.stats.batches[b.pk] = {
                "id": b.pk,
                "provider": b.provider,
                "batch_id": found,
                "status": status,
            }
            return
        back = await asyncio.to_thread(
            pb.close_batch, self.engine, b.pk, pb.GIVEN_UP, "never reached the provider"
        )
        self.stats.submitted -= min(self.stats.submitted, back)
        if b.input_file_id and isinstance(j.provider, OpenAIProvider):
            with contextlib.suppress(openai.OpenAIError):
                await j.provider.client.files.delete(b.input_file_id)

    # ------------------------------------------------------------ polling

    async def _poll(self) -> None:
        interval = min(self.opts.poll_interval, self.opts.max_poll_interval)
        first = True
        while not self._stop.is_set():
            rows = [b for b in await asyncio.to_thread(pb.open_batches, self.engine, self.cid) if b.batch_id]
            if not rows:
                return
            if not first or not self.opts.wait:
                for b in rows:
                    if self._stop.is_set():
                        return
                    await self._check(b)
                if not self.opts.wait:
                    return
                rows = [
                    b for b in await asyncio.to_thread(pb.open_batches, self.engine, self.cid) if b.batch_id
                ]
                if not rows:
                    return
            first = False
            if self._twins:  # held for as long as the batch they wait for is polled
                await asyncio.to_thread(store.renew_leases, self.engine, self.owner, lease_seconds=600.0)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=interval)
            interval = min(interval * 1.5, self.opts.max_poll_interval)

    async def _check(self, b: pb.OpenBatch) -> None:
        j = self._judge(b.judge_id)
        if j is None or b.batch_id is None:
            return
        failure: ProviderError | None = None
        lines: list[dict[str, Any]] | None = None
        status, counts = b.status, {}
        try:
            if isinstance(j.provider, OpenAIProvider):
                ob = await j.provider.client.batches.retrieve(b.batch_id)
                counts = ob.request_counts.to_dict() if ob.request_counts else {}
                status = ob.status
                await asyncio.to_thread(
                    pb.record_progress, self.engine, b.pk, status, counts, ob.output_file_id
                )
                if status in ENDED_OPENAI:
                    lines = []
                    for fid in (ob.output_file_id, ob.error_file_id):
                        if fid:
                            content = await j.provider.client.files.content(fid)
                            lines += _jsonl(content.text)
            else:
                ab = await j.provider.client.messages.batches.retrieve(b.batch_id)
                status = ab.processing_status
                counts = ab.request_counts.to_dict()
                await asyncio.to_thread(pb.record_progress, self.engine, b.pk, status, counts)
                if status == "ended":
                    async with j.provider.client.messages.batches.with_streaming_response.results(
                        b.batch_id
                    ) as resp:
                        lines = _jsonl(await resp.text())
        except (openai.OpenAIError, anthropic.AnthropicError) as exc:
            failure = _sdk_failure(j.provider, exc)
        self.stats.batches[b.pk] = {
            "id": b.pk,
            "provider": b.provider,
            "judge": j.spec.name,
            "batch_id": b.batch_id,
            "status": status if failure is None else b.status,
            "jobs": b.jobs,
            "request_counts": counts if failure is None else {},
        }
        if failure is not None and failure.status == 404:
            # the provider no longer knows the batch: nothing will ever come back for its jobs
            back = await asyncio.to_thread(
                pb.close_batch, self.engine, b.pk, "not_found", str(failure)[:2000]
            )
            self.stats.batches[b.pk]["status"] = "not_found"
            self.warnings.append(
                f"batch {b.pk} ({b.batch_id}): {b.provider} does not know it (404); "
                f"its {back} unanswered job(s) are pending again"
            )
            return
        if failure is not None:
            self.warnings.append(f"batch {b.pk} ({b.batch_id}): polling failed, will retry ({failure})")
            return
        if lines is not None:
            await asyncio.to_thread(self._collect, j, b, status, lines)

    # ------------------------------------------------------------ results

    def _collect(self, j: _Judge, b: pb.OpenBatch, status: str, lines: list[dict[str, Any]]) -> None:
        entries = {e.custom_id: e for e in pb.batch_entries(self.engine, b.pk)}
        jobs = pb.batch_jobs(self.engine, b.pk)
        reask = store.last_parse_errors(self.engine, [x.id for x in jobs if x.attempts > 0])
        by_job = {x.id: x for x in jobs}
        out = Batch()
        seen: set[str] = set()
        for line in lines:
            cid = line.get("custom_id")
            if not isinstance(cid, str) or cid not in entries or cid in seen:
                continue
            seen.add(cid)
            self._entry(j, entries[cid], by_job, reask, line, out)
        missing = Transient(f"{b.provider} batch {b.batch_id} ({status}) returned no result for this request")
        for cid, e in entries.items():
            if cid not in seen:
                self._entry(j, e, by_job, reask, None, out, missing)
        owner = pb.batch_owner(b.pk)
        accepted = 0
        for i in range(0, len(out.outcomes), 500):
            part = Batch(
                [a for a in out.attempts if a.job_id in {o.job_id for o in out.outcomes[i : i + 500]}],
                out.outcomes[i : i + 500],
            )
            accepted += len(store.write_batch(self.engine, part, owner).accepted)
        self.stats.collected += accepted
        pb.close_batch(self.engine, b.pk, status)

    def _entry(
        self,
        j: _Judge,
        e: pb.BatchEntry,
        jobs: dict[int, LeasedJob],
        reask: dict[int, str],
        line: dict[str, Any] | None,
        out: Batch,
        missing: ProviderError | None = None,
    ) -> None:
        job = jobs.get(e.job_id)
        if job is None:
            return
        try:
            p = prepare(job, self.ctx, reask_error=reask.get(job.id))
        except BadInput:
            out.outcomes.append(JobOutcome(job.id, "failed", job.attempts, "fatal"))
            return
        if p.request_hash != e.request_hash:
            self.warnings.append(f"job {job.id}: its prompt renders differently than when it was submitted")
        row = replace(sent_row(p, e.attempt, ok=True), request_hash=e.request_hash)
        result: ChatResult | None = None
        error: ProviderError | None = missing
        if line is not None:
            try:
                # result files are not read through the HTTP reply cap: `clean_result` bounds them
                result = clean_result(_read_line(j.provider, p, line), max_reply_bytes(j.spec))
            except ProviderError as exc:
                error = exc
        if result is None:
            err = error or Transient("no result")
            cls = "fatal" if isinstance(err, Fatal) else "transient"
            self.stats.errors[cls] += 1
            keys = (*perrors.configured_secrets(), *getattr(j.provider, "secrets", ()))
            body = err.raw_body if err.raw_body is not None else (json.dumps(line) if line else None)
            out.attempts.append(
                replace(
                    row,
                    ok=False,
                    error_class=cls,
                    http_status=err.status,
                    error_message=clean_text(perrors.redact(str(err), keys)[:2000]),
                    raw_body=clean_body(
                        None if body is None else perrors.redact(body, keys), max_reply_bytes(j.spec)
                    ),
                )
            )
            out.outcomes.append(JobOutcome(job.id, "failed", e.attempt, cls))
            return
        cost = None
        if j.price is not None and result.input_tokens is not None and result.output_tokens is not None:
            cost = j.price.batch_cost(
                result.input_tokens, result.output_tokens, result.cache_read_tokens, result.cache_write_tokens
            )
        if cost is not None:
            self.stats.spent += cost
        else:
            self.stats.spent_unknown = True
        verdict, perr = judged_reply(p, self.ctx, result)
        if perr is not None:
            self.stats.errors["parse"] += 1
        # a batch answer has no latency of its own (it waited in the batch)
        out.attempts.append(answered_row(row, result, cost=cost, error=perr, latency_ms=None))
        if perr is None:
            out.outcomes.append(JobOutcome(job.id, "done", e.attempt, None, verdict))
        else:
            out.outcomes.append(JobOutcome(job.id, "failed", e.attempt, failed_class(verdict), verdict))


def _jsonl(text: str) -> list[dict[str, Any]]:
    out = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def _read_line(prov: BatchProvider, p: Prepared, line: dict[str, Any]) -> ChatResult:
    """One result line → the reply (read as a realtime reply is), or the `ProviderError` it carries."""
    secrets = prov.secrets
    if isinstance(prov, OpenAIProvider):
        resp = line.get("response")
        if isinstance(resp, dict):
            status = int(resp.get("status_code") or 0)
            body = json.dumps(resp.get("body"), ensure_ascii=False)
            if 200 <= status < 300:
                _, structured = prov.batch_body(p.request)
                return prov.batch_result(body, status, structured)
            raise perrors.classify_status(status, body, {}, provider="openai", secrets=secrets)
        got = line.get("error")
        err: dict[str, Any] = got if isinstance(got, dict) else {}
        code = str(err.get("code") or "error")
        raise Transient(f"openai batch entry {code}: {perrors.redact(str(err.get('message', '')), secrets)}")
    got_result = line.get("result")
    result: dict[str, Any] = got_result if isinstance(got_result, dict) else {}
    kind = result.get("type")
    if kind == "succeeded":
        _, tool, _ = prov.batch_params(p.request)
        return prov.batch_result(json.dumps(result.get("message"), ensure_ascii=False), 200, tool)
    if kind == "errored":
        inner = (result.get("error") or {}).get("error") or {}
        message = f"anthropic batch entry errored: {inner.get('type')}: {inner.get('message')}"
        body = json.dumps(result, ensure_ascii=False)
        if inner.get("type") == "invalid_request_error":
            raise Fatal(perrors.redact(message, secrets), status=400, raw_body=perrors.redact(body, secrets))
        raise Transient(perrors.redact(message, secrets), raw_body=perrors.redact(body, secrets))
    raise Transient(f"anthropic batch entry {kind}")


def _sdk_failure(prov: BatchProvider, exc: Exception) -> ProviderError:
    if isinstance(prov, OpenAIProvider):
        kinds = sdk.SdkErrors(openai.APITimeoutError, openai.APIConnectionError, openai.APIStatusError)
        return sdk.sdk_failure(exc, kinds, provider="openai", timeout=120.0, secrets=prov.secrets)
    kinds = sdk.SdkErrors(anthropic.APITimeoutError, anthropic.APIConnectionError, anthropic.APIStatusError)
    return sdk.sdk_failure(exc, kinds, provider="anthropic", timeout=120.0, secrets=prov.secrets)


def _batch_price(price: Price | None) -> Price | None:
    """The judge's prices through its batch API (None when the price or the discount is unknown)."""
    if price is None or price.batch_discount is None:
        return None
    keep = 1.0 - price.batch_discount
    return Price(price.input * keep, price.output * keep)
