"""Writing split assignments onto a dataset's items (`judgepanel data split`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, bindparam, select, update

from judgepanel.datasets.splits import assign_splits
from judgepanel.errors import BadInput
from judgepanel.store.engine import session_scope
from judgepanel.store.models import Item, table_of
from judgepanel.store.queries import dataset_by_name


@dataclass(frozen=True)
class SplitResult:
    dataset: str
    seed: int
    by: str  # item | group
    fractions: dict[str, float]
    splits: dict[str, int]  # split -> items
    groups: dict[str, int]  # split -> distinct groups (an item without a group is its own)

    def as_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "seed": self.seed,
            "by": self.by,
            "fractions": self.fractions,
            "splits": self.splits,
            "groups": self.groups,
        }


def split_dataset(
    engine: Engine, dataset: str, fractions: Mapping[str, float], *, seed: int = 0, by_group: bool = False
) -> SplitResult:
    """Assign every item of `dataset` a split (overwriting earlier ones); the same seed and
    fractions give the same assignment. With `by_group` whole groups are assigned."""
    if not fractions:
        raise BadInput("--fractions needs at least one NAME=FRACTION")
    with session_scope(engine) as s:
        ds = dataset_by_name(s, dataset)
        rows = s.execute(
            select(Item.id, Item.external_id, Item.group_key)
            .where(Item.dataset_id == ds.id)
            .order_by(Item.position, Item.id)
        ).all()
        if not rows:
            raise BadInput(f"dataset {dataset!r} has no items to split")
        # a group key never collides with an item key: they live in different namespaces
        unit_of = {iid: (f"g:{g}" if by_group and g is not None else f"i:{ext}") for iid, ext, g in rows}
        units = list(dict.fromkeys(unit_of.values()))
        chosen = assign_splits(units, fractions, seed)
        s.execute(
            update(table_of(Item)).where(table_of(Item).c.id == bindparam("b_id")),
            [{"b_id": iid, "split": chosen[unit_of[iid]]} for iid, _e, _g in rows],
        )
        items: dict[str, int] = dict.fromkeys(fractions, 0)
        groups: dict[str, set[str]] = defaultdict(set)
        for iid, ext, g in rows:
            name = chosen[unit_of[iid]]
            items[name] += 1
            groups[name].add(f"g:{g}" if g is not None else f"i:{ext}")
        return SplitResult(
            ds.name,
            seed,
            "group" if by_group else "item",
            dict(fractions),
            items,
            {k: len(groups[k]) for k in fractions},
        )
