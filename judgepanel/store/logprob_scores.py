"""The stored replies of a pointwise campaign, for reading their logprob scores again.

A judge run with ``scoring=logprobs`` has the whole OpenAI-compatible reply, logprobs included, in
``response.raw_body``. This module reads, per job, its last verdict, the reply behind it (through
the response it was answered from, for a cache hit) and the job itself with its items' texts —
everything `runner.logprob_scores` needs to render the job's prompt again and read the reply as
the run did (`runner.prepare.read_logprobs`: the prompt's scale, its verdict pattern, the texts it
quotes). Nothing is computed and nothing is written here: the raw body is the record, so the
scores can be recomputed for any scale.

Issue 30 §4: this module used to read the distributions itself, with neither the prompt's answer
pattern nor its quoted texts and out of replies that had failed to parse, then with the item's
input and output standing in for the rendered prompt; the reading now has one home, the runner's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, select

from judgepanel.errors import BadInput
from judgepanel.protocol.logprobs import LogprobScore
from judgepanel.store.campaigns import campaign_by_name
from judgepanel.store.campaigns.leases import _JOB_COLS, _with_texts
from judgepanel.store.campaigns.records import LeasedJob
from judgepanel.store.engine import session_scope
from judgepanel.store.models import Job, Judge, Request, Response, Verdict

NOT_REQUESTED = "scoring=logprobs was not requested for this judge: the argmax verdict stands"
UNPARSED = "the reply was not parsed: no verdict, no score"


@dataclass(frozen=True)
class JobLogprobScore:
    job_id: int
    judge: str
    item_id: int | None
    dimension: str | None
    repeat: int
    verdict: str | None  # the parsed (argmax) score as presented
    logprobs: LogprobScore
    condition: str | None = None


@dataclass(frozen=True)
class StoredReply:
    """One job's last attempt: the job (with its items' texts, to render its prompt again), the
    judge's parameters, the verdict as presented and its parse status, and the reply body."""

    job: LeasedJob
    params: Mapping[str, Any]
    verdict: str | None
    parse_status: str
    raw_body: str | None


def pointwise_replies(engine: Engine, campaign: str) -> list[StoredReply]:
    """One row per job with a verdict (its last attempt), in job order; a campaign that is not
    pointwise is refused (logprob scores are read from pointwise replies)."""
    with session_scope(engine) as s:
        camp = campaign_by_name(s, campaign)
        if camp.protocol != "pointwise":
            raise BadInput(
                f"campaign {campaign!r} is {camp.protocol}: logprob scores need a pointwise campaign"
            )
        rows = s.execute(
            select(
                Job.id,
                Judge.params,
                Verdict.value_presented,
                Verdict.parse_status,
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
        ids = sorted(last)
        jobs = {
            j.id: j
            for i in range(0, len(ids), 500)  # a statement holds at most so many parameters
            for j in _with_texts(
                s,
                [
                    (r[0], r[-1], *r[1:-1])
                    for r in s.execute(
                        select(*_JOB_COLS, Judge.name)
                        .join(Judge, Judge.id == Job.judge_id)
                        .where(Job.id.in_(ids[i : i + 500]))
                        .order_by(Job.id)
                    )
                ],
            )
        }
    return [
        StoredReply(
            jobs[jid],
            r.params or {},
            r.value_presented,
            r.parse_status,
            r.raw_body if r.raw_body is not None else bodies.get(r.cached_from),
        )
        for jid, r in last.items()
    ]
