"""A campaign's spending cap, shared by every run, worker and batch submission through the database.

What counts against the cap (`campaign.max_cost_usd`) is what the campaign's stored replies cost
(`response.cost_usd`) plus what its live owners have reserved for calls in flight or replies not yet
stored (`budget_hold`, one row per campaign and lease owner). A reservation is granted in one
transaction that first takes the campaign row's write lock (a row lock on PostgreSQL, the database
write lock on SQLite), so two processes can never both be granted the last dollar. A reservation
is released (`release`) in the same transaction that stores the reply it was made for, so at every
moment the stored cost plus the holds covers every call sent. A hold whose owner stopped renewing
it (`expires` passed: the owner died) no longer counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import Connection, Engine, delete, func, insert, or_, select, update

# Core tables, not the ORM models: `campaign status` reads the budget without loading
# `sqlalchemy.orm` (see `store.tables`); every statement here names only these tables
from judgepanel.store.tables import BudgetHold, Campaign, Job, Request, Response, utcnow


@dataclass(frozen=True)
class BudgetState:
    max_cost_usd: float | None
    spent_usd: float  # what the campaign's stored replies cost (known prices)
    reserved_usd: float  # held by live owners for calls in flight or not yet stored

    @property
    def left_usd(self) -> float | None:
        if self.max_cost_usd is None:
            return None
        return max(0.0, self.max_cost_usd - self.spent_usd - self.reserved_usd)


def _spent_q(campaign_id: int) -> Any:
    return (
        select(func.coalesce(func.sum(Response.cost_usd), 0.0))
        .join(Request, Request.id == Response.request_id)
        .join(Job, Job.id == Request.job_id)
        .where(Job.campaign_id == campaign_id)
        .scalar_subquery()
    )


def _held_q(campaign_id: int) -> Any:
    return (
        select(func.coalesce(func.sum(BudgetHold.amount_usd), 0.0))
        .where(
            BudgetHold.campaign_id == campaign_id,
            or_(BudgetHold.expires.is_(None), BudgetHold.expires > utcnow()),
        )
        .scalar_subquery()
    )


def spent_and_held(conn: Connection, campaign_id: int) -> tuple[float, float]:
    """What the campaign's stored replies cost and what live owners hold, read in ONE statement:
    on PostgreSQL (READ COMMITTED) two statements could straddle a commit that moves money from
    held to spent, and count it in neither."""
    spent, held = conn.execute(select(_spent_q(campaign_id), _held_q(campaign_id))).one()
    return float(spent or 0.0), max(0.0, float(held or 0.0))


def spent_in(conn: Connection, campaign_id: int) -> float:
    return spent_and_held(conn, campaign_id)[0]


def held_in(conn: Connection, campaign_id: int) -> float:
    return spent_and_held(conn, campaign_id)[1]


def budget_state(engine: Engine, campaign_id: int) -> BudgetState:
    with engine.begin() as conn:
        cap = conn.execute(select(Campaign.max_cost_usd).where(Campaign.id == campaign_id)).scalar()
        return BudgetState(cap, *spent_and_held(conn, campaign_id))


def set_cap(engine: Engine, campaign_id: int, max_cost_usd: float | None) -> None:
    """Record the campaign's cap (`campaign run --max-cost` sets or raises it for every later run)."""
    with engine.begin() as conn:
        conn.execute(update(Campaign).where(Campaign.id == campaign_id).values(max_cost_usd=max_cost_usd))


def reserve(
    engine: Engine, campaign_id: int, owner: str, need: float, extra: float, lease_seconds: float
) -> float:
    """Add to `owner`'s hold `need` USD plus up to `extra` more (what still fits), if `need` fits
    under the cap with what is spent and held; returns what was added (0.0: `need` does not fit).
    Without a cap everything fits."""
    with engine.begin() as conn:
        # the write lock first: reservations of one campaign are granted one at a time
        cap = conn.execute(
            update(Campaign)
            .where(Campaign.id == campaign_id)
            .values(max_cost_usd=Campaign.max_cost_usd)
            .returning(Campaign.max_cost_usd)
        ).scalar_one()
        if cap is None:
            grant = need + extra
        else:
            spent, held = spent_and_held(conn, campaign_id)
            left = cap - spent - held
            if need > left:
                return 0.0
            grant = need + max(0.0, min(extra, left - need))
        expires = utcnow() + timedelta(seconds=lease_seconds)
        where = (BudgetHold.campaign_id == campaign_id, BudgetHold.owner == owner)
        res = conn.execute(
            update(BudgetHold).where(*where).values(amount_usd=BudgetHold.amount_usd + grant, expires=expires)
        )
        if not res.rowcount:
            conn.execute(
                insert(BudgetHold).values(
                    campaign_id=campaign_id, owner=owner, amount_usd=grant, expires=expires
                )
            )
        return grant


def release(conn: Connection, owner: str, amounts: Sequence[tuple[int, float]]) -> None:
    """Take `amounts` ((campaign id, USD) per call) off `owner`'s holds, inside the caller's
    transaction (the one that stores the replies they were reserved for)."""
    totals: dict[int, float] = {}
    for campaign_id, amount in amounts:
        totals[campaign_id] = totals.get(campaign_id, 0.0) + amount
    for campaign_id, amount in sorted(totals.items()):
        if amount:
            conn.execute(
                update(BudgetHold)
                .where(BudgetHold.campaign_id == campaign_id, BudgetHold.owner == owner)
                .values(amount_usd=BudgetHold.amount_usd - amount)
            )


def move_hold(conn: Connection, campaign_id: int, from_owner: str, to_owner: str, amount: float) -> None:
    """Hand `amount` of one owner's hold to another that never expires (a provider batch, until it
    is closed), inside the caller's transaction."""
    conn.execute(
        update(BudgetHold)
        .where(BudgetHold.campaign_id == campaign_id, BudgetHold.owner == from_owner)
        .values(amount_usd=BudgetHold.amount_usd - amount)
    )
    conn.execute(
        insert(BudgetHold).values(campaign_id=campaign_id, owner=to_owner, amount_usd=amount, expires=None)
    )


def drop_hold(engine: Engine, campaign_id: int, owner: str) -> None:
    """The owner is done with the campaign: whatever it still holds is free again."""
    with engine.begin() as conn:
        conn.execute(
            delete(BudgetHold).where(BudgetHold.campaign_id == campaign_id, BudgetHold.owner == owner)
        )
