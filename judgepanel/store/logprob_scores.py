"""Logprob-weighted scores of a pointwise campaign, read from the stored reply bodies.

A judge run with ``scoring=logprobs`` has the whole OpenAI-compatible reply, logprobs included, in
``response.raw_body``; this module reads each job's last verdict next to
:func:`judgepanel.protocol.logprobs.logprob_score` of its reply: the distribution over the scale,
its expectation (the continuous score) and, where none could be read, the per-job note saying why
(no logprobs returned — e.g. Anthropic — or not requested, or only partial ones). Nothing is
written: the raw body is the record, so the scores can be recomputed for any scale.

The reading is the runner's (issue 30 §4: this path passed neither the prompt's answer pattern nor
its quoted texts, and read a distribution out of replies that had failed to parse): a verdict that
did not parse gets no distribution (`UNPARSED`), and :func:`~judgepanel.protocol.logprobs.
logprob_score` is called with the campaign's scale (its custom template's, else its rubric
dimension's, else 1–5), the custom pointwise template's `verdict_pattern`, and the item's source
and candidate texts (what the prompt quotes of a pointwise item), as
`runner.prepare.with_logprob_score` calls it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from judgepanel.errors import BadInput
from judgepanel.protocol.custom import from_stored
from judgepanel.protocol.logprobs import LogprobScore, logprob_score, score_scale
from judgepanel.rubrics import RubricDoc
from judgepanel.store.campaigns import campaign_by_name
from judgepanel.store.engine import session_scope
from judgepanel.store.models import Item, Job, Judge, Request, Response, RubricVersion, Verdict

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


def _pointwise_template(spec: Mapping[str, Any]) -> tuple[str | None, int | None]:
    """The custom pointwise template's declared verdict pattern and scale, if the campaign has one."""
    stored = (spec.get("templates") or {}).get("pointwise") if isinstance(spec, Mapping) else None
    if not stored:
        return None, None
    t = from_stored("pointwise", stored)
    return t.pattern, t.scale


def _rubric_scale(s: Session, rubric_version_id: int | None, dimension: str | None) -> tuple[int, int] | None:
    if rubric_version_id is None or dimension is None:
        return None
    rv = s.get(RubricVersion, rubric_version_id)
    doc = RubricDoc.from_dict(rv.body, origin="stored rubric") if rv is not None else None
    if doc is None or dimension not in doc.dimension_names:
        return None
    lo, hi = doc.dimension(dimension).scale
    return int(lo), int(hi)


def campaign_logprob_scores(
    engine: Engine, campaign: str, *, low: int | None = None, high: int | None = None
) -> list[JobLogprobScore]:
    """One row per job with a verdict (its last attempt), in job order. `low`/`high` override the
    campaign's scale."""
    with session_scope(engine) as s:
        camp = campaign_by_name(s, campaign)
        if camp.protocol != "pointwise":
            raise BadInput(
                f"campaign {campaign!r} is {camp.protocol}: logprob scores need a pointwise campaign"
            )
        pattern, template_scale = _pointwise_template(camp.spec or {})
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
                Verdict.parse_status,
                Response.raw_body,
                Response.cached_from,
                Item.input,
                Item.output,
            )
            .join(Judge, Job.judge_id == Judge.id)
            .join(Verdict, Verdict.job_id == Job.id)
            .join(Request, Verdict.request_id == Request.id)
            .join(Response, Response.request_id == Request.id)
            .outerjoin(Item, Item.id == Job.item_id)
            .where(Job.campaign_id == camp.id)
            .order_by(Job.id, Verdict.attempt)
        ).all()
        scales = {d: _rubric_scale(s, camp.rubric_version_id, d) for d in {r.dimension for r in rows}}
        last = {r.id: r for r in rows}  # the last attempt of each job wins
        cached = {r.cached_from for r in last.values() if r.raw_body is None and r.cached_from is not None}
        bodies = (
            dict(s.execute(select(Response.id, Response.raw_body).where(Response.id.in_(cached))).all())
            if cached
            else {}
        )
    out: list[JobLogprobScore] = []
    for r in last.values():
        if template_scale is not None:
            lo, hi = 1, template_scale
        else:
            lo, hi = scales.get(r.dimension) or (1, 5)
        scale = score_scale(lo if low is None else low, hi if high is None else high)
        if (r.params or {}).get("scoring") != "logprobs":
            score = LogprobScore(None, None, None, None, None, NOT_REQUESTED)
        elif r.parse_status != "ok":
            score = LogprobScore(None, None, None, None, None, UNPARSED)
        else:
            body = r.raw_body if r.raw_body is not None else bodies.get(r.cached_from)
            quoted = tuple(dict.fromkeys(x for x in (r.input, r.output) if isinstance(x, str) and x))
            score = logprob_score(
                body or "", scale, verdict=r.value_presented, quoted=quoted, pattern=pattern
            )
        out.append(JobLogprobScore(r.id, r.name, r.item_id, r.dimension, r.repeat, r.value_presented, score))
    return out
