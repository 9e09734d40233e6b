"""Alignments in the store: their record, and the few reads the alignment workflow needs.

An alignment row is written when the alignment starts (inputs, the campaigns it will use) and
updated once per finished step, in one transaction with what the step produced (the choices and
templates; the comparison), so a step is either recorded with its result or not at all. The calls
themselves are jobs of ordinary campaigns, stored by the runner. The step states are kept as every
study keeps them (`store/study.py`); this module adds the alignment's own columns and reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, case, func, select
from sqlalchemy.orm import Session

from judgepanel.errors import BadInput
from judgepanel.store import study
from judgepanel.store.engine import session_scope
from judgepanel.store.models import Alignment, Campaign, Item, Job, Request, Response
from judgepanel.store.queries import dataset_by_name

STEPS = ("dev", "align", "evaluate", "compare")


@dataclass(frozen=True)
class AlignmentRecord:
    name: str
    dataset: str
    method: str
    inputs: dict[str, Any]
    steps: dict[str, str]
    campaigns: dict[str, str]
    choices: dict[str, Any] | None
    templates: dict[str, Any] | None
    comparison: dict[str, Any] | None

    def status_dict(self) -> dict[str, Any]:
        return {
            "alignment": self.name,
            "dataset": self.dataset,
            "method": self.method,
            "steps": self.steps,
            "campaigns": self.campaigns,
            "inputs": self.inputs,
            "choices": self.choices,
            "templates": self.templates,
        }


# A deliberate mirror (issue 31 §4): this module and `store/repair.py` are the two kinds of stored
# study; what they share (finding, starting, step states) is `store/study.py`, and what is left
# here keeps the other's shape (record, start, get, finish) with this kind's own columns.
def _record(s: Session, a: Alignment) -> AlignmentRecord:
    return AlignmentRecord(
        a.name,
        study.dataset_name(s, a.dataset_id),
        a.method,
        dict(a.inputs),
        study.step_states(a, STEPS),
        dict(a.campaigns),
        a.choices,
        a.templates,
        a.comparison,
    )


def _by_name(s: Session, name: str) -> Alignment:
    return study.by_name(s, Alignment, name, "alignment")


def start_alignment(
    engine: Engine,
    name: str,
    *,
    dataset: str,
    method: str,
    inputs: Mapping[str, Any],
    campaigns: Mapping[str, str],
) -> AlignmentRecord:
    """Create the alignment, or find it when started before with the same inputs."""
    with session_scope(engine) as s:
        a = study.same_start(s, Alignment, name, inputs, noun="alignment", command="align")
        if a is not None:
            return _record(s, a)
        a = Alignment(
            name=name,
            dataset_id=dataset_by_name(s, dataset).id,
            method=method,
            inputs=dict(inputs),
            steps=study.pending_steps(STEPS),
            campaigns=dict(campaigns),
        )
        s.add(a)
        s.flush()
        return _record(s, a)


def get_alignment(engine: Engine, name: str) -> AlignmentRecord:
    with session_scope(engine) as s:
        return _record(s, _by_name(s, name))


def list_alignments(engine: Engine) -> list[dict[str, Any]]:
    with session_scope(engine) as s:
        return [
            {
                "alignment": r.name,
                "method": r.method,
                "steps": dict(r.steps),
                "simulated": str(r.inputs.get("judge", "")).startswith("sim:")
                or bool((r.comparison or {}).get("simulated")),
            }
            for r in s.scalars(select(Alignment).order_by(Alignment.name))
        ]


def finish_step(engine: Engine, name: str, step: str, **fields: Any) -> AlignmentRecord:
    """Mark `step` done together with what it produced (`choices`, `templates`, `campaigns`,
    `comparison`), in one transaction."""
    if step not in STEPS:
        raise BadInput(f"unknown alignment step {step!r}")
    with session_scope(engine) as s:
        a = _by_name(s, name)
        study.mark_done(a, step, fields)
        s.flush()
        return _record(s, a)


def reopen_steps(engine: Engine, name: str, steps: Sequence[str]) -> AlignmentRecord:
    """Mark `steps` pending again (`align run --retry-failed`: their campaigns' failed jobs are
    re-asked and what the steps produced is computed again); the comparison goes with `compare`."""
    with session_scope(engine) as s:
        a = _by_name(s, name)
        study.mark_pending(a, steps)
        if "compare" in steps:
            a.comparison = None
        s.flush()
        return _record(s, a)


def failed_jobs(engine: Engine, campaigns: Sequence[str]) -> dict[str, dict[str, int]]:
    """campaign -> {error class: failed jobs}, for the named campaigns that have any."""
    out: dict[str, dict[str, int]] = {}
    with session_scope(engine) as s:
        for camp, cls, n in s.execute(
            select(Campaign.name, Job.error_class, func.count())
            .join(Job, Job.campaign_id == Campaign.id)
            .where(Campaign.name.in_(list(campaigns)), Job.status == "failed")
            .group_by(Campaign.name, Job.error_class)
        ):
            out.setdefault(str(camp), {})[str(cls or "unknown")] = int(n)
    return out


def item_texts(
    engine: Engine, dataset: str, external_ids: Sequence[str]
) -> dict[str, tuple[str | None, str]]:
    """external id -> (input, output) of a dataset's items."""
    with session_scope(engine) as s:
        ds = dataset_by_name(s, dataset)
        return {
            e: (i, o or "")
            for e, i, o in s.execute(
                select(Item.external_id, Item.input, Item.output).where(
                    Item.dataset_id == ds.id, Item.external_id.in_(list(external_ids))
                )
            )
        }


def split_of(engine: Engine, dataset: str, external_ids: Sequence[str]) -> dict[str, str | None]:
    with session_scope(engine) as s:
        ds = dataset_by_name(s, dataset)
        return dict(
            s.execute(
                select(Item.external_id, Item.split).where(
                    Item.dataset_id == ds.id, Item.external_id.in_(list(external_ids))
                )
            ).all()
        )


def campaign_spend(engine: Engine, names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """campaign -> {"calls": answers bought (not from the cache), "usd": their cost (None when a
    price is unknown)} for the campaigns that exist."""
    out: dict[str, dict[str, Any]] = {}
    with session_scope(engine) as s:
        for name in dict.fromkeys(names):
            cid = s.scalar(select(Campaign.id).where(Campaign.name == name))
            if cid is None:
                continue
            calls, usd, unpriced = s.execute(
                select(
                    func.count(Response.id),
                    func.sum(Response.cost_usd),
                    func.sum(case((Response.cost_usd.is_(None), 1), else_=0)),
                )
                .join(Request, Request.id == Response.request_id)
                .join(Job, Job.id == Request.job_id)
                .where(Job.campaign_id == cid, Response.cached_from.is_(None))
            ).one()
            out[name] = {"calls": int(calls or 0), "usd": None if unpriced else float(usd or 0.0)}
    return out


def human_dimensions(engine: Engine, dataset: str, group: str) -> list[str]:
    """The dimensions a human group rated on a dataset's items (unknown dataset: NotFound)."""
    from judgepanel.store.models import Annotator, Label

    with session_scope(engine) as s:
        ds = dataset_by_name(s, dataset)
        return sorted(
            s.scalars(
                select(Label.dimension)
                .join(Annotator, Annotator.id == Label.annotator_id)
                .where(Annotator.dataset_id == ds.id, Annotator.kind == "human", Annotator.group == group)
                .distinct()
            )
        )
