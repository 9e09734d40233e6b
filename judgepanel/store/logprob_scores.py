"""Logprob-weighted scores of a pointwise campaign, read from the stored reply bodies.

A judge run with ``scoring=logprobs`` has the whole OpenAI-compatible reply, logprobs included, in
``response.raw_body``; this module reads each job's last verdict next to
:func:`judgepanel.protocol.logprobs.logprob_score` of its reply: the distribution over the scale,
its expectation (the continuous score) and, where none could be read, the per-job note saying why
(no logprobs returned — e.g. Anthropic — or not requested, or only partial ones). Nothing is
written: the raw body is the record, so the scores can be recomputed for any scale.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine, select

from judgepanel.errors import BadInput
from judgepanel.protocol.logprobs import LogprobScore, logprob_score, score_scale
from judgepanel.store.campaigns import campaign_by_name
from judgepanel.store.engine import session_scope
from judgepanel.store.models import Job, Judge, Request, Response, Verdict

NOT_REQUESTED = "scoring=logprobs was not requested for this judge: the argmax verdict stands"


@dataclass(frozen=True)
class JobLogprobScore:
    job_id: int
    judge: str
    item_id: int | None
    dimension: str | None
    repeat: int
    verdict: str | None  # the parsed (argmax) score as presented
    logprobs: LogprobScore


def campaign_logprob_scores(
    engine: Engine, campaign: str, *, low: int = 1, high: int = 5
) -> list[JobLogprobScore]:
    """One row per job with a verdict (its last attempt), in job order."""
    scale = score_scale(low, high)
    with session_scope(engine) as s:
        camp = campaign_by_name(s, campaign)
        if camp.protocol != "pointwise":
            raise BadInput(
                f"campaign {campaign!r} is {camp.protocol}: logprob scores need a pointwise campaign"
            )
        rows = s.execute(
            select(
                Job.id,
                Judge.name,
                Judge.params,
                Job.item_id,
                Job.dimension,
                Job.repeat,
                Verdict.attempt,
                Verdict.value_presented,
                Response.raw_body,
                Response.cached_from,
            )
            .join(Judge, Job.judge_id == Judge.id)
            .join(Verdict, Verdict.job_id == Job.id)
            .join(Request, Verdict.request_id == Request.id)
            .join(Response, Response.request_id == Request.id)
            .where(Job.campaign_id == camp.id)
            .order_by(Job.id, Verdict.attempt)
        ).all()
        last = {r.id: r for r in rows}  # the last attempt of each job wins
        cached = {r.cached_from for r in last.values() if r.raw_body is None and r.cached_from is not None}
        bodies = (
            dict(s.execute(select(Response.id, Response.raw_body).where(Response.id.in_(cached))).all())
            if cached
            else {}
        )
    out: list[JobLogprobScore] = []
    for r in last.values():
        if (r.params or {}).get("scoring") != "logprobs":
            score = LogprobScore(None, None, None, None, None, NOT_REQUESTED)
        else:
            body = r.raw_body if r.raw_body is not None else bodies.get(r.cached_from)
            score = logprob_score(body or "", scale, verdict=r.value_presented)
        out.append(JobLogprobScore(r.id, r.name, r.item_id, r.dimension, r.repeat, r.value_presented, score))
    return out
