"""Study rows in the store: what every stored study (a repair iteration, an alignment) keeps the
same way — a unique name, its inputs, each step's state in the `steps` JSON column (`pending`,
`done`, `stopped`), the campaigns it made, and `updated_at`.

Boundary: finding a study row by name, starting it or finding the same one, and changing step
states together with what the step produced, inside the caller's transaction (so a step is
recorded with its result or not at all). The columns one kind of study adds (a selection, the
templates, rubric versions) and its reads stay in its own module (`store/repair.py`,
`store/align.py`); the order of the steps and when they run is `runner/study.py`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from judgepanel.errors import BadInput, NotFound
from judgepanel.store.models import Alignment, Dataset, RepairIteration, utcnow

STATES = ("pending", "done", "stopped")

# the kinds of study row; a new study adds its mapped class here
Row = TypeVar("Row", RepairIteration, Alignment)


def find(s: Session, model: type[Row], name: str) -> Row | None:
    return s.scalar(select(model).where(model.name == name))


def by_name(s: Session, model: type[Row], name: str, noun: str) -> Row:
    """The row named `name`, or NotFound naming the known ones (`noun`: "alignment", …)."""
    row = find(s, model, name)
    if row is None:
        known = ", ".join(s.scalars(select(model.name).order_by(model.name))) or "none"
        raise NotFound(f"no {noun} named {name!r} (known: {known})")
    return row


def same_start(
    s: Session, model: type[Row], name: str, inputs: Mapping[str, Any], *, noun: str, command: str
) -> Row | None:
    """The row started before under `name` with the same inputs (the same command resumes it), None
    when there is none yet; other inputs under the same name are refused."""
    row = find(s, model, name)
    if row is not None and dict(row.inputs) != dict(inputs):
        raise BadInput(
            f"{noun} {name!r} exists with other inputs; resume it with `judgepanel {command} run {name}` "
            "alone, or choose another name"
        )
    return row


def step_states(row: RepairIteration | Alignment, steps: Sequence[str]) -> dict[str, str]:
    """Each step's state, in the study's order (a step the row does not mention is pending)."""
    return {k: str(row.steps.get(k, "pending")) for k in steps}


def pending_steps(steps: Sequence[str]) -> dict[str, str]:
    """The `steps` value of a study that has just started."""
    return dict.fromkeys(steps, "pending")


def mark_done(row: RepairIteration | Alignment, step: str, fields: Mapping[str, Any]) -> None:
    """`step` done, with what it produced set on the row; `campaigns` adds to the ones the study
    already has (a step names the campaigns it made)."""
    for k, v in fields.items():
        if k == "campaigns":
            v = {**row.campaigns, **v}
        setattr(row, k, v)
    row.steps = {**row.steps, step: "done"}
    row.updated_at = utcnow()


def mark_pending(row: RepairIteration | Alignment, steps: Sequence[str]) -> None:
    row.steps = {**row.steps, **dict.fromkeys(steps, "pending")}
    row.updated_at = utcnow()


def mark_stopped(row: RepairIteration | Alignment) -> None:
    """Every step not done is `stopped`: a rule of the study ended it for good."""
    row.steps = {k: (v if v == "done" else "stopped") for k, v in row.steps.items()}
    row.updated_at = utcnow()


def dataset_name(s: Session, dataset_id: int) -> str:
    ds = s.get(Dataset, dataset_id)
    return ds.name if ds is not None else "?"
