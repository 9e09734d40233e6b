"""What `judgepanel compare` reads beyond a campaign's facts and verdict columns: which items a
unit is (so two campaigns' units can be matched even across pair sets) and its group (the article,
for the group bootstrap). Rows out, nothing computed.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Engine, select

from judgepanel.store.models import Item, Pair


def unit_items(
    engine: Engine, protocol: str, units: Iterable[int]
) -> dict[int, tuple[tuple[int, ...], str | None]]:
    """Unit id → (its item ids: one, or a pair's A and B in order; the group key of its first
    item)."""
    ids = sorted(set(units))
    if not ids:
        return {}
    with engine.connect() as conn:
        if protocol == "pairwise":
            pairs = conn.execute(
                select(Pair.id, Pair.item_a_id, Pair.item_b_id).where(Pair.id.in_(ids))
            ).all()
            wanted = sorted({int(a) for _, a, _ in pairs})
            groups = dict(conn.execute(select(Item.id, Item.group_key).where(Item.id.in_(wanted))).all())
            return {int(p): ((int(a), int(b)), groups.get(a)) for p, a, b in pairs}
        rows = conn.execute(select(Item.id, Item.group_key).where(Item.id.in_(ids))).all()
        return {int(i): ((int(i),), g) for i, g in rows}


__all__ = ["unit_items"]
