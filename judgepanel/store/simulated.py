"""Which stored answers are simulated: from a `sim:` judge, or from the fake server answering in
place of a real provider. Both mark every reply (`system_fingerprint` = `SIM_FINGERPRINT`, a
`model` of `sim/<model>`; see `simjudge` and `fake.server`), so a campaign whose judges are
named `openai:gpt-4o-mini` but were answered by the fake server is found too.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, or_, select

from judgepanel.config import SIM_FINGERPRINT
from judgepanel.store.tables import (
    Campaign,
    CampaignJudge,
    Job,
    Judge,
    Request,
    Response,
)  # Core: read without the ORM


def simulated_reply(response: Any = Response) -> Any:
    """A condition on `response`: the reply came from the simulator. A query over the ORM models
    may pass `models.Response`; since issue 31 it maps onto the same table as the default."""
    return or_(response.system_fingerprint == SIM_FINGERPRINT, response.model_returned.like("sim/%"))


def simulated_campaigns(engine: Engine, names: list[str]) -> dict[str, bool]:
    """Campaign name -> whether any of its judges is `sim:` or any of its replies is simulated."""
    out: dict[str, bool] = {}
    with engine.connect() as conn:
        for name in names:
            cid = conn.execute(select(Campaign.id).where(Campaign.name == name)).scalar()
            if cid is None:
                continue
            sim_judge = conn.execute(
                select(Judge.id)
                .join(CampaignJudge, CampaignJudge.judge_id == Judge.id)
                .where(CampaignJudge.campaign_id == cid, Judge.provider == "sim")
                .limit(1)
            ).first()
            if sim_judge is not None:
                out[name] = True
                continue
            hit = conn.execute(
                select(Response.id)
                .join(Request, Request.id == Response.request_id)
                .join(Job, Job.id == Request.job_id)
                .where(Job.campaign_id == cid, simulated_reply())
                .limit(1)
            ).first()
            out[name] = hit is not None
    return out


def iteration_simulated(engine: Engine, inputs: dict[str, Any], campaigns: dict[str, str | None]) -> bool:
    """Whether a repair iteration rests on simulated answers: a `sim:` judge or editor in its
    inputs, or any of its campaigns (dev, editor, original, contested, control) simulated."""
    from judgepanel.providers.spec import split_judge_name  # not for `campaign list`

    specs = [*(inputs.get("judges") or []), inputs.get("editor") or ""]
    if any(split_judge_name(str(s))[1].startswith("sim:") for s in specs):  # a judge may be NAME=SPEC
        return True
    return any(simulated_campaigns(engine, [c for c in campaigns.values() if c]).values())
