"""Datasets, pair sets and their label dimensions looked up by name, in SQLAlchemy Core.

The rating matrices (`store.matrices`, behind `metrics agreement` and every `metrics` command)
read through these and `store.tables`, so a reading command never loads the ORM (issue 20). Each
function takes a Connection or an ORM Session (both execute Core statements) and returns rows
whose columns read as attributes (`ds.id`, `ds.meta`), as the ORM objects did; `store.queries`
keeps the ORM look-ups that writers need and shares the rest from here. Through a Session, a Core
statement autoflushes as an ORM query does (SQLAlchemy ≥ 2.0.16, issue #9809), so a writer's
pending changes (`queries.record_pair_set`) are seen here too (tests/store/test_pair_set_lookups.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, select

from judgepanel.errors import BadInput, NotFound
from judgepanel.store.tables import Annotator, Dataset, Item, Label, PairSet

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    Reader = Connection | Session

LABELS = ("A", "B", "T")  # a pair label: A preferred, B preferred, a tie


def dataset_row(s: Reader, name: str) -> Any:
    ds = s.execute(select(Dataset).where(Dataset.name == name)).one_or_none()
    if ds is None:
        known = ", ".join(s.scalars(select(Dataset.name).order_by(Dataset.name)).all()) or "none"
        raise NotFound(f"no dataset named {name!r} (known: {known})")
    return ds


def pair_set_row(s: Reader, name: str) -> Any:
    ps = s.execute(select(PairSet).where(PairSet.name == name)).one_or_none()
    if ps is None:
        raise NotFound(
            f"no pair set named {name!r}: create it with `judgepanel data pairs DATASET --name {name}`"
        )
    return ps


def label_dimensions(s: Reader, ds: Any) -> list[str]:
    """The label dimensions a dataset's labels use, sorted (``[""]`` for unnamed ones)."""
    return sorted(
        d
        for (d,) in s.execute(
            select(Label.dimension)
            .join(Item, Label.item_id == Item.id)
            .where(Item.dataset_id == ds.id)
            .distinct()
        )
    )


def resolve_dimension(s: Reader, ds: Any, dimension: str | None) -> str:
    """The dimension a command works on: the one asked for, or the dataset's only one."""
    dims = label_dimensions(s, ds)
    if not dims:
        raise NotFound(f"dataset {ds.name!r} has no labels")
    if dimension is None:
        if len(dims) == 1:
            return dims[0]
        raise BadInput(
            f"dataset {ds.name!r} has several dimensions; choose one with --dimension ({', '.join(dims)})"
        )
    if dimension not in dims:
        if dims == [""]:
            raise NotFound(f"dataset {ds.name!r} has no named dimensions; leave out --dimension")
        raise NotFound(f"dataset {ds.name!r} has no dimension {dimension!r} (known: {', '.join(dims)})")
    return dimension


def scored_annotators(s: Reader, dataset_id: int) -> list[int]:
    """Ids of the annotators with at least one numeric label in the dataset, sorted."""
    return sorted(
        a
        for (a,) in s.execute(
            select(Label.annotator_id)
            .join(Item, Label.item_id == Item.id)
            .where(Item.dataset_id == dataset_id, Label.value_num.is_not(None))
            .distinct()
        )
    )


def stale_annotators(s: Reader, ps: Any) -> list[str]:
    """Names of the annotators scored in the dataset that ``ps`` derived no labels for (or derived
    labels for but that are gone); empty when the pair set is current or predates the record."""
    meta = s.execute(select(Dataset.meta).where(Dataset.id == ps.dataset_id)).scalar_one()
    recorded = (meta or {}).get("pair_sets", {}).get(str(ps.id))
    if recorded is None:
        return []
    changed = set(scored_annotators(s, ps.dataset_id)) ^ set(recorded)
    if not changed:
        return []
    names = dict(s.execute(select(Annotator.id, Annotator.name).where(Annotator.id.in_(changed))).all())
    return sorted(names.get(a, f"#{a}") for a in changed)


def check_pair_set_current(s: Reader, ps: Any) -> None:
    """Refuse a pair set whose labels were derived before annotators were attached or removed."""
    stale = stale_annotators(s, ps)
    if stale:
        ds_name = s.execute(select(Dataset.name).where(Dataset.id == ps.dataset_id)).scalar_one()
        shown = ", ".join(stale[:6]) + (f" and {len(stale) - 6} more" if len(stale) > 6 else "")
        raise BadInput(
            f"pair set {ps.name!r} was derived before annotators {shown} were attached to {ds_name!r}; "
            f"re-create it with `judgepanel data pairs {ds_name} --name {ps.name} --replace`"
        )
