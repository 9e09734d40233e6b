"""The items behind a campaign's units, read in one place: a pointwise unit is one item, a pairwise
unit (a pair) its two items, a then b. The viewer (`store.browse`: a page's unit labels, a case's
texts) and the report (`store.report.unit_texts`) both read through `unit_items`; rows out,
nothing computed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, select

from judgepanel.store.tables import Item, Pair


def unit_items(conn: Connection, protocol: str, units: Iterable[int], *columns: Any) -> dict[int, list[Any]]:
    """unit id -> the rows (`item.id`, then `columns` of `item`) of its items: [item] pointwise,
    [a, b] pairwise. Units that are not stored are left out."""
    ids = sorted(set(units))
    if not ids:
        return {}
    if protocol != "pairwise":
        return {int(r[0]): [r] for r in conn.execute(select(Item.id, *columns).where(Item.id.in_(ids)))}
    pairs = conn.execute(select(Pair.id, Pair.item_a_id, Pair.item_b_id).where(Pair.id.in_(ids))).all()
    wanted = {i for _, a, b in pairs for i in (a, b)}
    items = {r[0]: r for r in conn.execute(select(Item.id, *columns).where(Item.id.in_(wanted)))}
    return {int(p): [items[a], items[b]] for p, a, b in pairs if a in items and b in items}
