"""What a job's calls write: the attempt row of a request as sent (`sent_row`) and with the
provider's reply (`answered_row`, `answer_fields`), the verdict read from a reply (`judged_reply`,
`failed_class`), a job answered from the request cache (`cached_answer`), and the leased jobs
rendered into requests (`prepare_leased`).

Boundary: builds rows and outcomes from what was sent and what came back; `runner.writer`
commits them, the realtime executor (`runner.calling`) and the batch runner (`runner.batch`)
both call these.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlalchemy import Engine

from judgepanel.errors import BadInput
from judgepanel.providers.base import ChatResult
from judgepanel.runner.prepare import (
    CampaignContext,
    Prepared,
    prepare,
    read,
    verdict_from,
    with_logprob_score,
)
from judgepanel.store import campaigns as store
from judgepanel.store.campaigns import AttemptRow, CacheHit, JobOutcome, LeasedJob, VerdictRow

TRUNCATED_REASONS = frozenset({"length", "max_tokens", "model_context_window_exceeded"})


def _reply_kind(p: Prepared) -> tuple[str, str]:
    """Whose replies to which prompt a call's output length is predicted from."""
    return (p.job.judge, p.prompt.template_name)


def sent_row(p: Prepared, attempt: int, *, ok: bool, **reply: Any) -> AttemptRow:
    """An attempt row: the request as sent, with what came back given as `reply` (`AttemptRow`
    fields; `answer_fields` for a provider's reply), or `replace`d in by the caller."""
    return AttemptRow(
        p.job.id,
        attempt,
        p.request_hash,
        p.prompt.template_name,
        p.prompt.template_hash,
        p.request.messages,
        p.request.params,
        ok=ok,
        output_schema=p.request.schema if p.request.params.get("structured", True) else None,
        **reply,
    )


def prepare_leased(
    engine: Engine, ctx: CampaignContext, leased: list[LeasedJob]
) -> tuple[list[Prepared], list[tuple[LeasedJob, str]]]:
    """Render leased jobs (a job asked again carries its last parse error, to re-ask with); the
    ones that cannot be rendered come back apart, with the reason."""
    reask = store.last_parse_errors(engine, [x.id for x in leased if x.attempts > 0])
    preps: list[Prepared] = []
    bad: list[tuple[LeasedJob, str]] = []
    for job in leased:
        try:
            preps.append(prepare(job, ctx, reask_error=reask.get(job.id)))
        except BadInput as exc:
            bad.append((job, str(exc)))
    return preps, bad


def answered_row(
    row: AttemptRow, r: ChatResult, *, cost: float | None, error: str | None, latency_ms: float | None
) -> AttemptRow:
    """`row` (as sent) with a provider's reply: what it said, its tokens and cost, and the parse
    error of its verdict (None when it was read)."""
    return replace(row, **answer_fields(r, cost=cost, error=error, latency_ms=latency_ms))


def answer_fields(
    r: ChatResult, *, cost: float | None, error: str | None, latency_ms: float | None
) -> dict[str, Any]:
    """The `AttemptRow` fields of a provider's reply (see `answered_row`)."""
    return {
        "error_class": "parse" if error is not None else None,
        "http_status": r.http_status,
        "error_message": error,
        "raw_body": r.raw_body,
        "text": r.text,
        "model_returned": r.model_returned,
        "system_fingerprint": r.system_fingerprint,
        "input_tokens": r.input_tokens,
        "output_tokens": r.output_tokens,
        "latency_ms": latency_ms,
        "cost_usd": cost,
        "finish_reason": r.finish_reason,
        "cache_read_tokens": r.cache_read_tokens,
        "cache_write_tokens": r.cache_write_tokens,
    }


def cached_answer(p: Prepared, hit: CacheHit, ctx: CampaignContext) -> tuple[AttemptRow, JobOutcome]:
    """A job answered from the store's request cache: its attempt row (cost 0, `cached_from` the
    original response) and its `done` outcome."""
    job = p.job
    attempt = job.attempts + 1
    row = replace(
        sent_row(p, attempt, ok=True),
        http_status=None,
        text=hit.text,
        model_returned=hit.model_returned,
        system_fingerprint=hit.system_fingerprint,
        input_tokens=hit.input_tokens,
        output_tokens=hit.output_tokens,
        latency_ms=0.0,
        cost_usd=0.0,
        cached_from=hit.response_id,
        finish_reason=hit.finish_reason,
    )
    v = hit.verdict
    clauses = [(k, met, why) for k, met, why in hit.clause_keys]
    verdict = verdict_from(job, ctx, v.parse_method, v.value_presented, v.score, v.rationale, clauses)
    return row, JobOutcome(job.id, "done", attempt, None, verdict)


def failed_class(verdict: VerdictRow | None) -> str:
    """The job's error class for a reply that was read but held no verdict: `truncated` when it
    was cut at the output cap (re-asking it costs the whole cap again, and a rambling model
    rambles again: `retry-parse-failures` leaves these unless told `--truncated`), else `parse`."""
    return "truncated" if verdict is not None and verdict.failure_kind == "truncated" else "parse"


def judged_reply(p: Prepared, ctx: CampaignContext, r: ChatResult) -> tuple[VerdictRow, str | None]:
    """The verdict read from a reply and the parse error (None when it parsed). A failure is
    classified from what the provider said, not from the text: a reply cut at the output cap
    (`finish_reason` length / max_tokens) is `truncated` — not re-asked by default, and not cured by
    a larger cap when the model loops inside its rationale —; a partial clause reply keeps its own
    kind, `missing_clauses`."""
    verdict, error = read(p, ctx, r.text, r.structured)
    verdict = with_logprob_score(p, ctx, r.raw_body, verdict)
    if error is None:
        return verdict, None
    kind = "truncated" if r.finish_reason in TRUNCATED_REASONS else (verdict.failure_kind or "unreadable")
    if kind == "truncated":
        error = f"truncated at the output cap (finish_reason {r.finish_reason}): {error}"
    return replace(verdict, failure_kind=kind), error
