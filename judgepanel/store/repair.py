"""Repair iterations in the store: their record, and the reads the repair workflow needs.

An iteration row is written when the iteration starts (inputs, criterion if declared, control
seed, original rubric version) and updated once per finished step, in the same transaction as
what the step produced (the selection; the two edited rubric versions; the comparison), so a step
is either recorded with its result or not at all. The step states are kept as every study keeps
them (`store/study.py`); this module adds the iteration's own columns and the reads its steps need.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from judgepanel.errors import BadInput
from judgepanel.rubrics import RubricDoc
from judgepanel.store import study
from judgepanel.store.campaigns import campaign_by_name
from judgepanel.store.engine import session_scope
from judgepanel.store.models import (
    Annotator,
    Clause,
    ClauseVerdict,
    Item,
    Job,
    Judge,
    Label,
    RepairIteration,
    RubricVersion,
    Verdict,
    utcnow,
)
from judgepanel.store.queries import dataset_by_name
from judgepanel.store.rubrics import _add, load_rubric_version, rubric_version
from judgepanel.store.simulated import iteration_simulated

STEPS = ("dev", "select", "rewrite", "evaluate", "compare")


@dataclass(frozen=True)
class IterationRecord:
    name: str
    dataset: str
    inputs: dict[str, Any]
    criterion: str | None
    steps: dict[str, str]
    campaigns: dict[str, str | None]
    rubrics: dict[str, str | None]  # original / contested / control -> NAME@V
    rubric_ids: dict[str, int | None]
    control_seed: int
    selection: dict[str, Any] | None
    rewrites: dict[str, Any] | None
    comparison: dict[str, Any] | None

    def status_dict(self) -> dict[str, Any]:
        return {
            "iteration": self.name,
            "dataset": self.dataset,
            "steps": self.steps,
            "campaigns": {k: self.campaigns.get(k) for k in ("dev", "original", "contested", "control")},
            "editor_campaign": self.campaigns.get("editor"),
            "rubrics": self.rubrics,
            "criterion": self.criterion,
            "control_seed": self.control_seed,
            "inputs": self.inputs,
            "from": self.inputs.get("parent"),
            "stopped": (self.selection or {}).get("stopped"),
        }


def _ref(s: Session, rv_id: int | None) -> str | None:
    if rv_id is None:
        return None
    r = load_rubric_version(s, rv_id)
    return r.ref


# A deliberate mirror (issue 31 §4): this module and `store/align.py` are the two kinds of stored
# study; what they share (finding, starting, step states) is `store/study.py`, and what is left
# here keeps the other's shape (record, start, get, finish) with this kind's own columns.
def _record(s: Session, it: RepairIteration) -> IterationRecord:
    ds_name = study.dataset_name(s, it.dataset_id)
    ids = {
        "original": it.original_version_id,
        "contested": it.contested_version_id,
        "control": it.control_version_id,
    }
    return IterationRecord(
        it.name,
        ds_name,
        dict(it.inputs),
        it.criterion,
        study.step_states(it, STEPS),
        dict(it.campaigns),
        {k: _ref(s, v) for k, v in ids.items()},
        ids,
        it.control_seed,
        it.selection,
        it.rewrites,
        it.comparison,
    )


def _by_name(s: Session, name: str) -> RepairIteration:
    return study.by_name(s, RepairIteration, name, "repair iteration")


def start_iteration(
    engine: Engine,
    name: str,
    *,
    dataset: str,
    rubric: str,
    inputs: Mapping[str, Any],
    control_seed: int,
    criterion: str | None,
    campaigns: Mapping[str, str | None],
) -> IterationRecord:
    """Create the iteration, or find it when started before with the same inputs."""
    with session_scope(engine) as s:
        it = study.same_start(s, RepairIteration, name, inputs, noun="repair iteration", command="repair")
        if it is not None:
            if criterion is not None and it.criterion is not None and criterion != it.criterion:
                raise BadInput(
                    f"iteration {name!r} declared the criterion {it.criterion!r}; it cannot change"
                )
            if criterion is not None and it.criterion is None:
                it.criterion, it.criterion_at = criterion, utcnow()
            return _record(s, it)
        ds = dataset_by_name(s, dataset)
        rv = rubric_version(s, rubric)
        it = RepairIteration(
            name=name,
            dataset_id=ds.id,
            inputs=dict(inputs),
            criterion=criterion,
            criterion_at=utcnow() if criterion is not None else None,
            steps=study.pending_steps(STEPS),
            campaigns=dict(campaigns),
            original_version_id=rv.id,
            control_seed=control_seed,
        )
        s.add(it)
        s.flush()
        return _record(s, it)


def get_iteration(engine: Engine, name: str) -> IterationRecord:
    with session_scope(engine) as s:
        return _record(s, _by_name(s, name))


def list_iterations(engine: Engine) -> list[dict[str, Any]]:
    with session_scope(engine) as s:
        out = []
        for it in s.scalars(select(RepairIteration).order_by(RepairIteration.id)):
            r = _record(s, it)
            done = [k for k in STEPS if r.steps[k] == "done"]
            out.append(
                {
                    "name": r.name,
                    "dataset": r.dataset,
                    "rubric": r.rubrics["original"],
                    "steps_done": len(done),
                    "next": next((k for k in STEPS if r.steps[k] != "done"), None),
                    "criterion": r.criterion,
                    "verdict": (r.comparison or {}).get("verdict"),
                    "created_at": it.created_at.isoformat(timespec="seconds"),
                    "simulated": iteration_simulated(engine, r.inputs, r.campaigns),
                }
            )
        return out


def declare_criterion(engine: Engine, name: str, criterion: str) -> IterationRecord:
    """Store the criterion (once; the same text again is a no-op, another one is refused)."""
    with session_scope(engine) as s:
        it = _by_name(s, name)
        if it.criterion is not None and it.criterion != criterion:
            raise BadInput(f"iteration {name!r} declared the criterion {it.criterion!r}; it cannot change")
        if it.criterion is None:
            it.criterion, it.criterion_at = criterion, utcnow()
        return _record(s, it)


def finish_step(engine: Engine, name: str, step: str, **fields: Any) -> IterationRecord:
    """Mark `step` done and store what it produced (selection=…, comparison=…; `campaigns` adds to
    the iteration's)."""
    with session_scope(engine) as s:
        it = _by_name(s, name)
        study.mark_done(it, step, fields)
        return _record(s, it)


def stop_iteration(engine: Engine, name: str, reason: str) -> IterationRecord:
    """The chain's stopping rule fired: every step not done is marked `stopped`, the reason kept
    with the selection."""
    with session_scope(engine) as s:
        it = _by_name(s, name)
        study.mark_stopped(it)
        it.selection = {**(it.selection or {}), "stopped": reason}
        return _record(s, it)


def store_rewrites(
    engine: Engine,
    name: str,
    *,
    contested: RubricDoc,
    control: RubricDoc,
    editor: str,
    rewrites: Mapping[str, Any],
) -> IterationRecord:
    """Both edited versions (children of the original, author 'editor') and the rewrites, with the
    step marked done — one transaction."""
    with session_scope(engine) as s:
        it = _by_name(s, name)
        parent = s.get(RubricVersion, it.original_version_id)
        assert parent is not None
        ids = {}
        for label, doc in (("contested", contested), ("control", control)):
            note = f"repair {name}: {label}-edited ({sum(1 for r in rewrites.values() if label in r.get('sets', ()))} clauses)"
            _rubric, rv, _created = _add(s, doc, "editor", note, parent=parent, editor=editor)
            ids[label] = rv.id
        it.contested_version_id, it.control_version_id = ids["contested"], ids["control"]
        study.mark_done(it, "rewrite", {"rewrites": dict(rewrites)})
        s.flush()
        return _record(s, it)


# ---------------------------------------------------------------- reads for the steps


@dataclass(frozen=True)
class ClauseVerdictRow:
    item_id: int
    judge: str
    clause_key: str
    dimension: str
    met: bool
    rationale: str | None


def clause_verdict_rows(engine: Engine, campaign: str) -> list[ClauseVerdictRow]:
    """Every clause verdict with a met / not met value of a clause campaign's accepted replies
    (first repeat), in a stable order."""
    with session_scope(engine) as s:
        cid = campaign_by_name(s, campaign).id
        rows = s.execute(
            select(
                Job.item_id,
                Judge.name,
                Clause.clause_key,
                Clause.dimension,
                ClauseVerdict.met,
                ClauseVerdict.rationale,
            )
            .join(Judge, Judge.id == Job.judge_id)
            .join(Verdict, Verdict.job_id == Job.id)
            .join(ClauseVerdict, ClauseVerdict.verdict_id == Verdict.id)
            .join(Clause, Clause.id == ClauseVerdict.clause_id)
            .where(
                Job.campaign_id == cid,
                Job.status == "done",
                Job.repeat == 0,
                Verdict.parse_status.in_(("ok", "partial")),
                ClauseVerdict.met.is_not(None),
            )
            .order_by(Job.item_id, Judge.name, Clause.position)
        ).all()
        return [ClauseVerdictRow(int(i), j, k, d, bool(m), r) for i, j, k, d, m, r in rows if i is not None]


@dataclass(frozen=True)
class ItemTexts:
    item_id: int
    external_id: str
    position: int
    input: str | None
    output: str | None


def item_texts(engine: Engine, item_ids: Sequence[int]) -> dict[int, ItemTexts]:
    if not item_ids:
        return {}
    with session_scope(engine) as s:
        return {
            i: ItemTexts(i, e, p, inp, out)
            for i, e, p, inp, out in s.execute(
                select(Item.id, Item.external_id, Item.position, Item.input, Item.output).where(
                    Item.id.in_(list(item_ids))
                )
            )
        }


def split_items(engine: Engine, dataset: str, split: str) -> int:
    with session_scope(engine) as s:
        ds = dataset_by_name(s, dataset)
        return int(
            s.scalar(
                select(func.count()).select_from(Item).where(Item.dataset_id == ds.id, Item.split == split)
            )
            or 0
        )


def human_means(
    engine: Engine, dataset: str, dimensions: Sequence[str], *, group: str | None = None
) -> dict[str, dict[int, float]]:
    """dimension -> item id -> mean numeric label over the dataset's human annotators (of `group`)."""
    with session_scope(engine) as s:
        ds = dataset_by_name(s, dataset)
        q = (
            select(Label.dimension, Label.item_id, func.avg(Label.value_num))
            .join(Annotator, Annotator.id == Label.annotator_id)
            .join(Item, Item.id == Label.item_id)
            .where(
                Item.dataset_id == ds.id,
                Annotator.kind == "human",
                Label.dimension.in_(list(dimensions)),
                Label.value_num.is_not(None),
            )
            .group_by(Label.dimension, Label.item_id)
        )
        if group is not None:
            q = q.where(Annotator.group == group)
        out: dict[str, dict[int, float]] = defaultdict(dict)
        for dim, iid, v in s.execute(q):
            out[dim][int(iid)] = float(v)
        return dict(out)


def item_groups(engine: Engine, item_ids: Sequence[int]) -> dict[int, str | None]:
    """item id -> its group key (article, dialogue; None when it has none)."""
    if not item_ids:
        return {}
    with session_scope(engine) as s:
        return {
            int(i): g
            for i, g in s.execute(select(Item.id, Item.group_key).where(Item.id.in_(list(item_ids))))
        }


def split_members(engine: Engine, dataset: str, split: str) -> list[tuple[str, str | None]]:
    """(external id, group key) of a split's items, in dataset order."""
    with session_scope(engine) as s:
        ds = dataset_by_name(s, dataset)
        return [
            (e, g)
            for e, g in s.execute(
                select(Item.external_id, Item.group_key)
                .where(Item.dataset_id == ds.id, Item.split == split)
                .order_by(Item.position)
            )
        ]


def campaign_items(engine: Engine, campaign: str) -> set[str]:
    """External ids of the items a campaign planned jobs for."""
    with session_scope(engine) as s:
        cid = campaign_by_name(s, campaign).id
        return set(
            s.scalars(
                select(Item.external_id)
                .join(Job, Job.item_id == Item.id)
                .where(Job.campaign_id == cid)
                .distinct()
            )
        )
