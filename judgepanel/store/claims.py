"""In-flight claims on request hashes (`request_claim`, issue 28 §2): pay for a request once.

The request cache answers a request that was answered before; it cannot answer one that is being
asked *right now* — by another job of the same run (two conditions rendering the same prompt), or
by a concurrent run (two alignments of one judge). The run that is about to ask a request claims
its hash; any other job with that hash, in this run or another, waits for the answer and is then
answered from the cache.

- `claim` inserts the hashes this owner does not hold yet and returns those it got. A claim of
  another owner is taken over when it has expired, or when its owner is certainly dead
  (`store.liveness`: on SQLite a process of this host that no longer exists; on PostgreSQL an
  owner whose advisory lock is free, judged only for claims older than `liveness.GRACE_S`, as a
  live owner re-takes its lock within a second after a reconnect).
- A claim goes away in the transaction that stores the answer (`release_in`, called by the
  results writer), so a twin that sees the claim gone finds the answer in the cache; `renew`
  moves `expires` with the owner's leases; `release_owner` drops what is left when a run ends.
- A killed claimant leaves its claims behind: they block its twins only until the claimant is
  seen dead or the claim expires (the lease time, 120 s by default).

Reads and writes rows; decides nothing about jobs (the runner does).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta

from sqlalchemy import Connection, Engine, and_, delete, select, update

from judgepanel.store import liveness
from judgepanel.store.engine import in_chunks
from judgepanel.store.tables import request_claim, utcnow


def _insert(conn: Connection, owner: str, hashes: list[str], now: datetime, expires: datetime) -> set[str]:
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        stmt = pg_insert(request_claim)
    else:
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        stmt = sqlite_insert(request_claim)  # type: ignore[assignment]
    rows = [{"request_hash": h, "owner": owner, "expires": expires, "created_at": now} for h in hashes]
    got = conn.execute(
        stmt.values(rows)
        .on_conflict_do_nothing(index_elements=["request_hash"])
        .returning(request_claim.c.request_hash)
    ).all()
    return {str(r[0]) for r in got}


def claim(engine: Engine, owner: str, hashes: Collection[str], *, lease_seconds: float) -> set[str]:
    """Claim `hashes` for `owner`; returns those it holds now and did not hold before."""
    if not hashes:
        return set()
    now = utcnow()
    expires = now + timedelta(seconds=lease_seconds)
    got: set[str] = set()
    with engine.begin() as conn:
        for chunk in in_chunks(hashes):
            got |= _insert(conn, owner, chunk, now, expires)
        taken = [h for h in hashes if h not in got]
        if taken:
            got |= _take_over(conn, owner, taken, now, expires)
    return got


def _take_over(conn: Connection, owner: str, hashes: list[str], now: datetime, expires: datetime) -> set[str]:
    """The claims of other owners that expired or whose owner is dead become `owner`'s."""
    held: list[tuple[str, str, datetime, datetime]] = []
    for chunk in in_chunks(hashes):
        held += [
            (str(h), str(o), e, c)
            for h, o, e, c in conn.execute(
                select(
                    request_claim.c.request_hash,
                    request_claim.c.owner,
                    request_claim.c.expires,
                    request_claim.c.created_at,
                ).where(request_claim.c.request_hash.in_(chunk), request_claim.c.owner != owner)
            )
        ]
    if not held:
        return set()
    settled = now - timedelta(seconds=liveness.GRACE_S)
    suspects = sorted({o for _h, o, e, c in held if e >= now and c <= settled})
    dead = set(liveness.dead_owners(conn, suspects)) if suspects else set()
    got: set[str] = set()
    for h, o, e, _c in held:
        if e >= now and o not in dead:
            continue
        moved = conn.execute(
            update(request_claim)
            .where(request_claim.c.request_hash == h, request_claim.c.owner == o)
            .values(owner=owner, expires=expires, created_at=now)
        ).rowcount
        if moved:
            got.add(h)
    return got


def holders(engine: Engine, hashes: Collection[str]) -> dict[str, str]:
    """request hash -> the owner claiming it now (hashes nobody claims are left out)."""
    out: dict[str, str] = {}
    with engine.connect() as conn:
        for chunk in in_chunks(hashes):
            out.update(
                {
                    str(h): str(o)
                    for h, o in conn.execute(
                        select(request_claim.c.request_hash, request_claim.c.owner).where(
                            request_claim.c.request_hash.in_(chunk)
                        )
                    )
                }
            )
    return out


def release_in(conn: Connection, owner: str, hashes: Collection[str]) -> None:
    """Drop `owner`'s claims on `hashes` inside the caller's transaction (with the answers)."""
    for chunk in in_chunks(hashes):
        conn.execute(
            delete(request_claim).where(
                and_(request_claim.c.owner == owner, request_claim.c.request_hash.in_(chunk))
            )
        )


def renew(engine: Engine, owner: str, *, lease_seconds: float) -> None:
    with engine.begin() as conn:
        conn.execute(
            update(request_claim)
            .where(request_claim.c.owner == owner)
            .values(expires=utcnow() + timedelta(seconds=lease_seconds))
        )


def release(engine: Engine, owner: str, hashes: Collection[str]) -> None:
    """Drop `owner`'s claims on `hashes` (claimed for a request that turned out to be answered)."""
    with engine.begin() as conn:
        release_in(conn, owner, hashes)


def release_owner(engine: Engine, owner: str) -> None:
    """Everything `owner` still claims (a run ending, stopped or not)."""
    with engine.begin() as conn:
        conn.execute(delete(request_claim).where(request_claim.c.owner == owner))


__all__ = ["claim", "holders", "release", "release_in", "release_owner", "renew"]
