"""The sorted verdict list of a campaign, kept between requests (issue 33 §1, §4): the order of the
whole, unfiltered and unsearched list by score, latency, cost or disagreement, read once per
change of the stored results and then paged without asking the database to sort.

Boundary: this module only reads (one SELECT of every verdict id of the campaign with its sort key,
computed by the very SQL expression `store.find` orders by) and keeps numpy arrays per engine. It
knows nothing of filters, search or rows: `store.find.search_page` asks it for the ids of a page
and reads those rows by primary key.

Why: a sorted page needs every verdict's key (a top-N sort over the whole campaign; the
disagreement key is a subquery per verdict), so at 10⁶ verdicts each page, previous/next and
direction change cost a full scan. The order is the same for every page of the list, so it is
computed once and kept.

Staleness: an order is used only while `fingerprint.database_key` (newest ids and row counts of
every results table, the newest job change, the newest campaign, the newest annotation event: a
queue's label edited in place) is what it was when it was read; any new, deleted or edited
verdict, response or label therefore reads it again. A campaign deleted and made again is a new
campaign row (its own key). At most `SIZE` orders are kept (least recently used dropped).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Engine

from judgepanel.store.engine import PerEngine
from judgepanel.store.fingerprint import database_key


@dataclass(frozen=True)
class Order:
    """A list's verdict ids in list order, and where each id sits in it."""

    ids: Any  # int64, list order
    by_id: Any  # int64: positions into `ids` sorted by id
    sorted_ids: Any  # int64: `ids[by_id]`

    def position(self, verdict_id: int) -> int | None:
        k = int(np.searchsorted(self.sorted_ids, verdict_id))
        if k < self.sorted_ids.size and int(self.sorted_ids[k]) == verdict_id:
            return int(self.by_id[k])
        return None

    def page(self, *, after: int | None, before: int | None, limit: int) -> tuple[list[int], bool]:
        """The ids of up to `limit` rows after (or just before, in list order) the row `after`
        (`before`), and whether more follow that way; no rows when the cursor is not in the list."""
        n = int(self.ids.size)
        if before is not None:
            at = self.position(before)
            if at is None:
                return [], False
            start = max(0, at - limit)
            return [int(i) for i in self.ids[start:at]], start > 0
        start = 0
        if after is not None:
            at = self.position(after)
            if at is None:
                return [], False
            start = at + 1
        end = min(n, start + limit)
        return [int(i) for i in self.ids[start:end]], end < n


def make_order(ids: Any, keys: Any, descending: bool) -> Order:
    """The list's order: the key ascending (descending), ties by id ascending."""
    ids = np.asarray(ids, dtype=np.int64)
    keys = np.asarray(keys, dtype=np.float64)
    by = np.lexsort((ids, -keys if descending else keys))
    ordered = ids[by]
    by_id = np.argsort(ordered, kind="stable")
    return Order(ordered, by_id, ordered[by_id])


class _Orders:
    SIZE = 6

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entries: OrderedDict[tuple[Any, ...], tuple[tuple[Any, ...], Order]] = OrderedDict()
        self.reads = 0  # orders read from the database (for tests and the benchmark)


_orders_of = PerEngine(_Orders)


def changes_key(engine: Engine) -> tuple[Any, ...]:
    """What an order is trusted under: `database_key` (with the newest annotation event)."""
    return database_key(engine)


def reads(engine: Engine) -> int:
    return _orders_of(engine).reads


def kept_order(engine: Engine, which: tuple[Any, ...], select_ids_keys: Any, descending: bool) -> Order:
    """The order of list `which` (campaign id, sort, direction), read with `select_ids_keys` (a
    SELECT of verdict id and sort key over the whole list) unless kept under today's key."""
    orders = _orders_of(engine)
    now = changes_key(engine)
    with orders.lock:
        got = orders.entries.get(which)
        if got is not None and got[0] == now:
            orders.entries.move_to_end(which)
            return got[1]
    with engine.connect() as conn:
        sql = str(select_ids_keys.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
        driver: Any = conn.connection.driver_connection  # plain tuples: 10⁶ rows at a time
        cur = driver.cursor()
        try:
            cur.execute(sql)
            rows = cur.fetchall()
        finally:
            cur.close()
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    keys = np.fromiter((float(r[1]) for r in rows), dtype=np.float64, count=len(rows))
    order = make_order(ids, keys, descending)
    with orders.lock:
        orders.reads += 1
        orders.entries[which] = (now, order)
        orders.entries.move_to_end(which)
        while len(orders.entries) > orders.SIZE:
            orders.entries.popitem(last=False)
    return order


__all__ = ["Order", "changes_key", "kept_order", "make_order", "reads"]
