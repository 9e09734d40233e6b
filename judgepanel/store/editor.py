"""Editor campaigns: an editor model's calls as jobs, so they run through the runner.

An editor campaign (`protocol = 'editor'`) holds one job per task (a clause to rewrite, a dimension
to split); the job's `dimension` column carries the task key and the campaign's `spec` holds the
tasks themselves, so a resumed run renders exactly the same prompts (and the cache answers a
repeated one). Requests, responses and the parsed proposal (in `verdict.rationale`, as canonical
JSON) are stored like any judge call: retries, cache, budget, key redaction and exactly-once hold.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, func, insert, select

from judgepanel.errors import BadInput
from judgepanel.protocol.plan import job_key
from judgepanel.store.engine import session_scope
from judgepanel.store.models import Campaign, CampaignJudge, Job, Judge, Request, Response, Verdict, utcnow
from judgepanel.store.queries import dataset_by_name

PROTOCOL = "editor"


@dataclass(frozen=True)
class EditorJudge:
    """The editor as the store keeps it (canonical name, never a key) and the spec as given."""

    name: str
    provider: str
    model: str
    params: dict[str, Any]
    raw_spec: str

    @classmethod
    def from_spec(cls, spec: str) -> EditorJudge:
        """The editor of a study (repair, alignment) from its spec: its canonical name and the
        parameters that change an answer (the operational ones, such as a key's variable, are not
        stored with it)."""
        from judgepanel.providers.spec import OPERATIONAL_KEYS, editor_spec

        js = editor_spec(spec)
        params = {k: v for k, v in js.params.items() if k not in OPERATIONAL_KEYS}
        return cls(js.name, js.provider, js.model, params, spec.strip())


def create_editor_campaign(
    engine: Engine,
    name: str,
    editor: EditorJudge,
    tasks: Mapping[str, Mapping[str, Any]],
    *,
    dataset: str | None = None,
) -> int:
    """Create (or find, with the identical tasks) an editor campaign; one job per task key.
    Returns the number of jobs. Another campaign under this name is refused."""
    if not tasks:
        raise BadInput(f"editor campaign {name!r} has no tasks")
    spec = {
        "dataset": dataset,
        "protocol": PROTOCOL,
        "judges": [editor.name],
        "judge_specs": [editor.raw_spec],
        "conditions": [],
        "dimensions": [],
        "repeats": 1,
        "rubric_version_id": None,
        "editor_tasks": {k: dict(v) for k, v in tasks.items()},
    }
    with session_scope(engine) as s:
        camp = s.scalar(select(Campaign).where(Campaign.name == name))
        if camp is not None:
            learnt = ("refused_params", "served_models")  # learnt by runs
            stored = {k: v for k, v in camp.spec.items() if k not in learnt}
            if stored != json.loads(json.dumps(spec)):
                raise BadInput(f"campaign {name!r} exists with another spec; choose another name")
        else:
            ds_id = dataset_by_name(s, dataset).id if dataset is not None else None
            camp = Campaign(
                name=name, dataset_id=ds_id, protocol=PROTOCOL, repeats=1, status="planned", spec=spec
            )
            s.add(camp)
            s.flush()
        judge = s.scalar(select(Judge).where(Judge.name == editor.name))
        if judge is None:
            judge = Judge(
                name=editor.name, provider=editor.provider, model=editor.model, params=editor.params
            )
            s.add(judge)
            s.flush()
        if s.get(CampaignJudge, (camp.id, judge.id)) is None:
            s.add(CampaignJudge(campaign_id=camp.id, judge_id=judge.id))
        have = set(s.scalars(select(Job.job_key).where(Job.campaign_id == camp.id)))
        now = utcnow()
        rows = []
        for key, task in tasks.items():
            jk = job_key(
                {"v": 1, "protocol": PROTOCOL, "judge": editor.name, "task": key, "body": dict(task)}
            )
            if jk not in have:
                rows.append(
                    {
                        "campaign_id": camp.id,
                        "job_key": jk,
                        "judge_id": judge.id,
                        "dimension": key,
                        "repeat": 0,
                        "status": "pending",
                        "attempts": 0,
                        "updated_at": now,
                    }
                )
        if rows:
            s.execute(insert(Job), rows)
        return int(s.scalar(select(func.count()).select_from(Job).where(Job.campaign_id == camp.id)) or 0)


def editor_tasks(engine: Engine, campaign: str) -> dict[str, Any]:
    """task key -> task, as stored with the editor campaign."""
    with session_scope(engine) as s:
        spec = s.scalar(select(Campaign.spec).where(Campaign.name == campaign))
        return dict((spec or {}).get("editor_tasks") or {})


def editor_proposals(engine: Engine, campaign: str) -> dict[str, dict[str, Any]]:
    """task key -> the parsed proposal of its accepted reply (tasks without one are left out)."""
    with session_scope(engine) as s:
        cid = s.scalar(select(Campaign.id).where(Campaign.name == campaign))
        if cid is None:
            return {}
        out: dict[str, dict[str, Any]] = {}
        for key, rationale in s.execute(
            select(Job.dimension, Verdict.rationale)
            .join(Verdict, Verdict.job_id == Job.id)
            .where(Job.campaign_id == cid, Job.status == "done", Verdict.parse_status == "ok")
            .order_by(Verdict.id)
        ):
            if key is not None and rationale:
                out[key] = json.loads(rationale)
        return out


@dataclass(frozen=True)
class FailedCall:
    """The last attempt of a job left without an accepted reply, as stored (keys redacted)."""

    # the job's: rate_limit, transient, fatal, context, certificate, oversize, parse, truncated
    error_class: str | None
    http_status: int | None
    message: str  # the last attempt's error message, or "no reply (STATUS)"
    raw_body: str | None = None


def editor_failed_calls(engine: Engine, campaign: str) -> dict[str, FailedCall]:
    """task key -> its last attempt, for tasks without an accepted reply (`editor_failures` with
    the error class, status and body beside the message, so causes can be told apart)."""
    with session_scope(engine) as s:
        cid = s.scalar(select(Campaign.id).where(Campaign.name == campaign))
        if cid is None:
            return {}
        out: dict[str, FailedCall] = {}
        for key, status, job_class, resp_class, http, message, body in s.execute(
            select(
                Job.dimension,
                Job.status,
                Job.error_class,
                Response.error_class,
                Response.http_status,
                Response.error_message,
                Response.raw_body,
            )
            .outerjoin(Request, Request.job_id == Job.id)
            .outerjoin(Response, Response.request_id == Request.id)
            .where(Job.campaign_id == cid, Job.status != "done")
            .order_by(Job.id, Request.attempt)
        ):
            if key is not None:
                cls = job_class or resp_class
                keep = body if cls in ("context", "fatal") else None  # a refusal's body, not a reply's
                out[key] = FailedCall(cls, http, message or f"no reply ({status})", keep)
        return out


def editor_failures(engine: Engine, campaign: str) -> dict[str, str]:
    """task key -> the error of its last attempt, for tasks without an accepted reply."""
    with session_scope(engine) as s:
        cid = s.scalar(select(Campaign.id).where(Campaign.name == campaign))
        if cid is None:
            return {}
        out: dict[str, str] = {}
        for key, status, message in s.execute(
            select(Job.dimension, Job.status, Response.error_message)
            .outerjoin(Request, Request.job_id == Job.id)
            .outerjoin(Response, Response.request_id == Request.id)
            .where(Job.campaign_id == cid, Job.status != "done")
            .order_by(Job.id, Request.attempt)
        ):
            if key is not None:
                out[key] = message or f"no reply ({status})"
        return out
