"""Annotation queues in the store: creating them, inviting annotators, handing out seats and
recording labels (issue 32).

Boundary: rows in, rows out. Which items a queue holds and in what order is decided above
(`judgepanel.annotate.queues`); what the owner's page shows is read by `store.annotation_read`.
Every function here runs in one transaction.

Reservations are compare-and-set updates: a seat is taken with `UPDATE … WHERE id = :id AND (it is
free OR its reservation lapsed)`, so of two annotators asking at once exactly one gets it (the
other's UPDATE matches no row and it tries the next seat), and the unique (unit, member) pair
keeps one annotator from holding two seats of a unit. A label is written as the annotator's
ordinary `label` / `pair_label` row (inserted, or updated on an edit) plus an `annotation_event`
row, in the same transaction as the seat turning `done`.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from weakref import WeakKeyDictionary

from sqlalchemy import Connection, Engine, and_, case, delete, exists, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from judgepanel.errors import BadInput, JudgepanelError, NotFound
from judgepanel.protocol.pairs import to_canonical
from judgepanel.store import annotation_tables as at
from judgepanel.store import tables as base
from judgepanel.store.tables import utcnow

QU, UN, MB, SL, EV = (
    at.annotation_queue,
    at.annotation_unit,
    at.annotation_member,
    at.annotation_slot,
    at.annotation_event,
)
_CANDIDATES = 16  # seats tried per round when others take them first
# ids are INTEGER columns (32 bits on PostgreSQL): a larger number names no seat, and binding it
# would fail in the driver (SQLite: beyond 64 bits) or the server (PostgreSQL: beyond 32)
_MAX_ID = 2**31 - 1


class Conflict(JudgepanelError):
    """The request cannot be honoured as things stand (a lapsed reservation someone else took, a
    double submit, a closed queue): HTTP 409; nothing was written."""

    exit_code = 2


class Gone(JudgepanelError):
    """The annotator's token was revoked (HTTP 403)."""

    exit_code = 2


def token_hash(token: str) -> str:
    """What is stored of a token: its SHA-256 in hex (a token has 256 random bits, so no salt is
    needed to keep it from being guessed back)."""
    return hashlib.sha256(token.encode()).hexdigest()


# ---------------------------------------------------------------- creating a queue


@dataclass(frozen=True)
class NewQueue:
    name: str
    dataset_id: int
    kind: str
    dimension: str
    scale: tuple[str, ...]
    source: str
    item_order: str
    seed: int
    per_item: int
    reserve_minutes: float
    access: str
    group_name: str
    epsilon: float
    q: float
    scorer: str
    stop_when_decided: bool = False
    rubric_version_id: int | None = None
    instructions: str | None = None
    allocation_id: int | None = None
    pair_set_id: int | None = None


@dataclass(frozen=True)
class NewUnit:
    item_id: int | None = None
    pair_id: int | None = None
    # the annotators whose seats these are (access assigned); empty: `per_item` open seats
    assignees: tuple[str, ...] = field(default_factory=tuple)
    seats: int | None = None  # seats without assignee (an allocation read with access any)


def create_queue(engine: Engine, spec: NewQueue, units: Sequence[NewUnit]) -> int:
    """Insert the queue, its units in order and their seats; refuse a name in use."""
    if not units:
        raise BadInput(f"queue {spec.name!r} would hold no items")
    with engine.begin() as conn:
        if conn.scalar(select(QU.c.id).where(QU.c.name == spec.name)) is not None:
            raise BadInput(f"a queue named {spec.name!r} exists; choose another name or `annotate delete` it")
        values = {k: getattr(spec, k) for k in spec.__dataclass_fields__}
        values["scale"] = list(spec.scale)
        qid = conn.scalar(insert(QU).values(**values, status="open", created_at=utcnow()).returning(QU.c.id))
        unit_rows = [
            {"queue_id": qid, "position": pos, "item_id": u.item_id, "pair_id": u.pair_id}
            for pos, u in enumerate(units)
        ]
        conn.execute(insert(UN), unit_rows)
        ids = dict(conn.execute(select(UN.c.position, UN.c.id).where(UN.c.queue_id == qid)).all())
        slots: list[dict[str, Any]] = []
        for pos, u in enumerate(units):
            names: Sequence[str | None] = u.assignees or [None] * (u.seats or spec.per_item)
            slots += [
                {
                    "queue_id": qid,
                    "unit_id": ids[pos],
                    "position": pos,
                    "seat": k,
                    "assignee": a,
                    "state": "free",
                }
                for k, a in enumerate(names)
            ]
        for start in range(0, len(slots), 5000):
            conn.execute(insert(SL), slots[start : start + 5000])
    return int(qid)


def queue_row(conn: Connection, name: str) -> Any:
    row = conn.execute(select(QU).where(QU.c.name == name)).one_or_none()
    if row is None:
        known = ", ".join(conn.scalars(select(QU.c.name).order_by(QU.c.name)).all()) or "none"
        raise NotFound(f"no annotation queue named {name!r} (known: {known})")
    return row


def queue(engine: Engine, name: str) -> Any:
    with engine.connect() as conn:
        return queue_row(conn, name)


def list_queues(engine: Engine) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        done = (
            select(SL.c.queue_id, func.count().label("n"), func.sum(case((SL.c.state == "done", 1), else_=0)))
            .group_by(SL.c.queue_id)
            .subquery()
        )
        members = select(MB.c.queue_id, func.count().label("m")).group_by(MB.c.queue_id).subquery()
        rows = conn.execute(
            select(
                QU.c.name,
                base.dataset.c.name,
                QU.c.kind,
                QU.c.dimension,
                QU.c.status,
                done.c[1],
                done.c[2],
                members.c.m,
            )
            .join(base.dataset, base.dataset.c.id == QU.c.dataset_id)
            .outerjoin(done, done.c.queue_id == QU.c.id)
            .outerjoin(members, members.c.queue_id == QU.c.id)
            .order_by(QU.c.name)
        ).all()
    return [
        {
            "name": n,
            "dataset": ds,
            "kind": kind,
            "dimension": dim or None,
            "status": status,
            "labels_done": int(d or 0),
            "labels_total": int(t or 0),
            "annotators": int(m or 0),
        }
        for n, ds, kind, dim, status, t, d, m in rows
    ]


def set_status(engine: Engine, name: str, status: str) -> None:
    with engine.begin() as conn:
        q = queue_row(conn, name)
        conn.execute(update(QU).where(QU.c.id == q.id).values(status=status))


def live_reservations(conn: Connection, queue_id: int, now: datetime) -> int:
    return int(
        conn.scalar(
            select(func.count()).where(
                SL.c.queue_id == queue_id, SL.c.state == "reserved", SL.c.reserved_until > now
            )
        )
        or 0
    )


def delete_queue(engine: Engine, name: str, *, force: bool = False) -> dict[str, int]:
    """Remove the queue, its units, seats, members and history (not the labels: they are the
    annotators' ordinary labels and stay). Refused while a reservation is live, unless `force`."""
    with engine.begin() as conn:
        q = queue_row(conn, name)
        live = live_reservations(conn, q.id, utcnow())
        if live and not force:
            raise BadInput(
                f"queue {name!r} has {live} live reservation(s): an annotator is labelling; wait, or use --force"
            )
        counts = {
            "units": int(conn.scalar(select(func.count()).where(UN.c.queue_id == q.id)) or 0),
            "events": int(conn.scalar(select(func.count()).where(EV.c.queue_id == q.id)) or 0),
            "members": int(conn.scalar(select(func.count()).where(MB.c.queue_id == q.id)) or 0),
        }
        # children first: SQLite cascades only with its foreign keys on, and PostgreSQL then
        # has nothing left to cascade
        for t in (EV, SL, MB, UN):
            conn.execute(delete(t).where(t.c.queue_id == q.id))
        conn.execute(delete(QU).where(QU.c.id == q.id))
    return counts


# ---------------------------------------------------------------- members


def invite(engine: Engine, queue_name: str, name: str, hashed: str) -> dict[str, Any]:
    """Give `name` a (new) token in the queue: its annotator row (kind human, the queue's group) is
    created or reused; an earlier token of the member stops working. Refused for a name the
    dataset already has as a judge or in another group, and with access assigned for a name no
    seat is assigned to."""
    if not name.strip() or len(name) > 200:
        raise BadInput("an annotator name must be 1-200 characters")
    with engine.begin() as conn:
        q = queue_row(conn, queue_name)
        if q.access == "assigned" and not conn.scalar(
            select(func.count()).where(SL.c.queue_id == q.id, SL.c.assignee == name)
        ):
            raise BadInput(f"queue {queue_name!r} assigns no item to {name!r} (access assigned)")
        ann = base.annotator
        row = conn.execute(
            select(ann.c.id, ann.c.kind, ann.c.group).where(
                ann.c.dataset_id == q.dataset_id, ann.c.name == name
            )
        ).one_or_none()
        if row is None:
            aid = conn.scalar(
                insert(ann)
                .values(dataset_id=q.dataset_id, name=name, kind="human", group=q.group_name)
                .returning(ann.c.id)
            )
        elif row.kind != "human" or row.group != q.group_name:
            raise BadInput(
                f"the dataset already has an annotator {name!r} ({row.kind}, group {row.group!r}); "
                f"this queue's annotators are humans of group {q.group_name!r}: choose another name"
            )
        else:
            aid = row.id
        now = utcnow()
        member = conn.execute(select(MB.c.id).where(MB.c.queue_id == q.id, MB.c.name == name)).scalar()
        if member is None:
            conn.execute(
                insert(MB).values(
                    queue_id=q.id,
                    annotator_id=aid,
                    name=name,
                    token_hash=hashed,
                    created_at=now,
                    invited_at=now,
                )
            )
            return {"queue": queue_name, "annotator": name, "new": True}
        conn.execute(
            update(MB).where(MB.c.id == member).values(token_hash=hashed, revoked_at=None, invited_at=now)
        )
    return {"queue": queue_name, "annotator": name, "new": False}


def revoke(engine: Engine, queue_name: str, name: str) -> dict[str, Any]:
    """Stop the member's token working and give back their live reservations."""
    with engine.begin() as conn:
        q = queue_row(conn, queue_name)
        member = conn.execute(select(MB.c.id).where(MB.c.queue_id == q.id, MB.c.name == name)).scalar()
        if member is None:
            raise NotFound(f"queue {queue_name!r} has no annotator {name!r}")
        conn.execute(update(MB).where(MB.c.id == member).values(revoked_at=utcnow()))
        released = conn.execute(
            update(SL)
            .where(SL.c.member_id == member, SL.c.state == "reserved")
            .values(member_id=None, state="free", reserved_at=None, reserved_until=None, shown_order=None)
        ).rowcount
    return {"queue": queue_name, "annotator": name, "released": int(released or 0)}


@dataclass(frozen=True)
class Member:
    id: int
    name: str
    annotator_id: int
    queue: Any  # the queue row


def member_by_token(engine: Engine, queue_name: str, hashed: str) -> Member:
    """The member whose token hashes to `hashed` in this queue; NotFound for no such queue or
    token (the caller answers 401 either way), Gone for a revoked one."""
    with engine.connect() as conn:
        q = conn.execute(select(QU).where(QU.c.name == queue_name)).one_or_none()
        row = (
            None
            if q is None
            else conn.execute(
                select(MB.c.id, MB.c.name, MB.c.annotator_id, MB.c.revoked_at).where(
                    MB.c.queue_id == q.id, MB.c.token_hash == hashed
                )
            ).one_or_none()
        )
    if q is None or row is None:
        raise NotFound("unknown annotator token for this queue")
    if row.revoked_at is not None:
        raise Gone("this annotator's link was revoked")
    return Member(row.id, row.name, row.annotator_id, q)


# ---------------------------------------------------------------- handing out seats


def shown_order(seed: int, member: str, unit_id: int) -> str:
    """AB or BA: the left/right order a member sees a pair in, random per member and unit (seeded,
    so a reload shows the same sides) and stored with the seat."""
    digest = hashlib.sha256(f"{seed}\x00{member}\x00{unit_id}".encode()).digest()
    return "AB" if digest[0] & 1 == 0 else "BA"


def _reserve(conn: Connection, m: Member, slot_id: int, unit_id: int, now: datetime, *, mine: bool) -> bool:
    q = m.queue
    until = now + timedelta(minutes=float(q.reserve_minutes))
    open_ = or_(SL.c.state == "free", and_(SL.c.state == "reserved", SL.c.reserved_until <= now))
    if mine:  # my own reservation, live or lapsed, if nobody took it meanwhile
        open_ = and_(SL.c.state == "reserved", SL.c.member_id == m.id)
    order = shown_order(q.seed, m.name, unit_id) if q.kind == "pairwise" else None
    try:
        with conn.begin_nested():
            n = conn.execute(
                update(SL)
                .where(SL.c.id == slot_id, open_)
                .values(
                    member_id=m.id, state="reserved", reserved_at=now, reserved_until=until, shown_order=order
                )
            ).rowcount
    except IntegrityError:  # this member holds another seat of the unit (two tabs at once)
        return False
    return n == 1


def _candidates(conn: Connection, m: Member, now: datetime) -> list[tuple[int, int]]:
    """Open seats this member may take, in queue order: free ones and lapsed reservations, of
    units the member holds no seat of and did not skip (with access assigned, their own seats)."""
    q = m.queue
    mine = SL.alias("mine")
    held = exists(select(mine.c.id).where(mine.c.unit_id == SL.c.unit_id, mine.c.member_id == m.id))
    skipped = exists(
        select(EV.c.id).where(EV.c.member_id == m.id, EV.c.unit_id == SL.c.unit_id, EV.c.kind == "skip")
    )
    who = SL.c.assignee == m.name if q.access == "assigned" else SL.c.assignee.is_(None)
    found: list[tuple[int, int, int, int]] = []
    for state in (SL.c.state == "free", and_(SL.c.state == "reserved", SL.c.reserved_until <= now)):
        found += conn.execute(
            select(SL.c.position, SL.c.seat, SL.c.id, SL.c.unit_id)
            .where(SL.c.queue_id == q.id, state, who, ~held, ~skipped)
            .order_by(SL.c.position, SL.c.seat)
            .limit(_CANDIDATES)
        ).all()
    found.sort()
    return [(sid, uid) for _, _, sid, uid in found[:_CANDIDATES]]


def decided_stop(q: Any) -> bool:
    return bool(q.stop_when_decided and q.decided_at is not None)


def next_slot(engine: Engine, m: Member, now: datetime | None = None) -> int | None:
    """The seat to show `m` now: their own reservation (live, or lapsed and still free: a reload or
    another day resumes where they were), else the first open seat in queue order, reserved for
    `reserve_minutes`. None when nothing is left for them (or the queue stopped)."""
    now = now or utcnow()
    with engine.begin() as conn:
        q = conn.execute(select(QU).where(QU.c.id == m.queue.id)).one()
        m = Member(m.id, m.name, m.annotator_id, q)
        if q.status != "open":
            raise Conflict(f"queue {q.name!r} is closed")
        own = conn.execute(
            select(SL.c.id, SL.c.unit_id)
            .where(SL.c.member_id == m.id, SL.c.state == "reserved")
            .order_by(SL.c.position)
        ).all()
        for sid, uid in own:
            if _reserve(conn, m, sid, uid, now, mine=True):
                return int(sid)
        if decided_stop(q):
            return None
        for _ in range(8):  # others may take every candidate first; a few rounds, then give up
            cands = _candidates(conn, m, now)
            if not cands:
                return None
            for sid, uid in cands:
                if _reserve(conn, m, sid, uid, now, mine=False):
                    return int(sid)
    raise Conflict("every open item was taken by other annotators while looking; try again")


# (queue id, creation time, assignee or None) -> how many units (or assigned seats) it has: fixed
# when the queue is made (units and seats are inserted then, and removed only with the queue), and
# counting them cost every annotator request a scan of the queue (6-12 ms at 200,000 units)
_TOTALS: WeakKeyDictionary[Engine, dict[tuple[int, str, str | None], int]] = WeakKeyDictionary()
_TOTALS_LOCK = threading.Lock()


def _total(conn: Connection, m: Member) -> int:
    q = m.queue
    key = (int(q.id), str(q.created_at), m.name if q.access == "assigned" else None)
    with _TOTALS_LOCK:
        known = _TOTALS.get(conn.engine, {}).get(key)
    if known is not None:
        return known
    if q.access == "assigned":
        total = int(
            conn.scalar(select(func.count()).where(SL.c.queue_id == q.id, SL.c.assignee == m.name)) or 0
        )
    else:
        total = int(conn.scalar(select(func.count()).where(UN.c.queue_id == q.id)) or 0)
    with _TOTALS_LOCK:
        _TOTALS.setdefault(conn.engine, {})[key] = total
    return total


def progress(conn: Connection, m: Member) -> dict[str, int]:
    """`done`: the member's labels in the queue; `total`: the units they may label (every unit with
    access any, their assigned seats with access assigned), less the ones they skipped."""
    done = int(conn.scalar(select(func.count()).where(SL.c.member_id == m.id, SL.c.state == "done")) or 0)
    total = _total(conn, m)
    skipped = int(
        conn.scalar(
            select(func.count(func.distinct(EV.c.unit_id))).where(
                EV.c.member_id == m.id,
                EV.c.kind == "skip",
                ~exists(select(SL.c.id).where(SL.c.unit_id == EV.c.unit_id, SL.c.member_id == m.id)),
            )
        )
        or 0
    )
    return {"done": done, "total": max(done, total - skipped)}


@dataclass(frozen=True)
class SlotView:
    """What the annotator's page shows for one seat: never a judge's verdict or another label."""

    slot: int
    state: str
    reserved_until: datetime | None
    unit: dict[str, Any]
    order: str | None
    mine: dict[str, Any] | None  # the member's own latest label of the unit, if any
    position: int


def slot_view(engine: Engine, m: Member, slot_id: int) -> SlotView:
    """A seat the member holds (reserved or done), with the unit's texts; NotFound otherwise."""
    item = base.item
    if not 0 < slot_id <= _MAX_ID:
        raise NotFound(f"no item {slot_id} of yours in this queue")
    with engine.connect() as conn:
        s = conn.execute(
            select(SL).where(SL.c.id == slot_id, SL.c.queue_id == m.queue.id, SL.c.member_id == m.id)
        ).one_or_none()
        if s is None:
            raise NotFound(f"no item {slot_id} of yours in this queue")
        u = conn.execute(select(UN).where(UN.c.id == s.unit_id)).one()
        cols = (item.c.id, item.c.external_id, item.c.input, item.c.output, item.c.system, item.c.group_key)
        if u.item_id is not None:
            it = conn.execute(select(*cols).where(item.c.id == u.item_id)).one()
            unit = {"id": it.external_id, "input": it.input, "output": it.output}
        else:
            p = conn.execute(select(base.pair).where(base.pair.c.id == u.pair_id)).one()
            a = conn.execute(select(*cols).where(item.c.id == p.item_a_id)).one()
            b = conn.execute(select(*cols).where(item.c.id == p.item_b_id)).one()
            left, right = (a, b) if s.shown_order == "AB" else (b, a)
            unit = {
                "id": f"{a.external_id}|{b.external_id}",
                "input": a.input,
                "left": {"id": left.external_id, "output": left.output},
                "right": {"id": right.external_id, "output": right.output},
            }
        last = conn.execute(
            select(EV.c.value, EV.c.presented, EV.c.comment)
            .where(EV.c.member_id == m.id, EV.c.unit_id == u.id, EV.c.kind != "skip")
            .order_by(EV.c.id.desc())
            .limit(1)
        ).one_or_none()
    mine = None
    if last is not None:
        mine = {
            "value": last.presented if m.queue.kind == "pairwise" else last.value,
            "comment": last.comment,
        }
    return SlotView(int(s.id), s.state, s.reserved_until, unit, s.shown_order, mine, int(s.position))


def my_slots(engine: Engine, m: Member) -> list[dict[str, Any]]:
    """The member's labelled seats in queue order with their latest value (to go back and edit)."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(SL.c.id, SL.c.position, SL.c.shown_order, SL.c.unit_id)
            .where(SL.c.member_id == m.id, SL.c.state == "done")
            .order_by(SL.c.done_at, SL.c.id)
        ).all()
        latest: dict[int, str | None] = {}
        for unit_id, value, presented in conn.execute(
            select(EV.c.unit_id, EV.c.value, EV.c.presented)
            .where(EV.c.member_id == m.id, EV.c.kind != "skip")
            .order_by(EV.c.id)
        ):
            latest[unit_id] = presented if m.queue.kind == "pairwise" else value
    return [{"slot": int(sid), "position": int(pos), "value": latest.get(uid)} for sid, pos, _o, uid in rows]


# ---------------------------------------------------------------- recording a label


def check_value(q: Any, value: Any) -> str:
    """The label as stored: a value of the queue's scale (pairs: A, B or T as presented)."""
    text = ("T" if value in ("tie", "T") else str(value)) if q.kind == "pairwise" else _scale_text(value)
    scale = ["A", "B", "T"] if q.kind == "pairwise" else list(q.scale)
    if text not in scale:
        raise BadInput(f"{value!r} is not on this queue's scale ({', '.join(scale)})")
    return text


def _scale_text(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


@dataclass(frozen=True)
class Recorded:
    kind: str  # label | edit | skip
    progress: dict[str, int]
    completed_unit: bool  # this label was the unit's last one


def submit(
    engine: Engine,
    m: Member,
    slot_id: int,
    *,
    value: Any = None,
    comment: str | None = None,
    skip_reason: str | None = None,
    now: datetime | None = None,
) -> Recorded:
    """Record the member's label (or skip) of a seat they hold, all in one transaction.

    - a reserved seat: the label is written and the seat is done; a lapsed reservation counts
      when nobody took the seat meanwhile (it is re-taken), else Conflict;
    - a done seat of theirs: an edit (the `label` row updated, the event kept); the same value
      and comment again is a double submit: Conflict, nothing written;
    - skip (`skip_reason`): the seat goes back to the queue and the unit is not offered to this
      member again; refused for a seat already labelled.
    """
    now = now or utcnow()
    skipping = skip_reason is not None
    if skip_reason is not None and not skip_reason.strip():
        raise BadInput("a skip needs a reason")
    if any(t is not None and len(t) > 5000 for t in (comment, skip_reason)):
        raise BadInput("a comment or skip reason may hold at most 5000 characters")
    if any(t is not None and not _storable(t) for t in (comment, skip_reason)):
        raise BadInput("a comment or skip reason may not hold a NUL character or a lone surrogate")
    with engine.begin() as conn:
        q = conn.execute(select(QU).where(QU.c.id == m.queue.id)).one()
        m = Member(m.id, m.name, m.annotator_id, q)
        if q.status != "open":
            raise Conflict(f"queue {q.name!r} is closed: no more labels")
        text = None if skipping else check_value(q, value)
        # the seat's row locked until this transaction ends (PostgreSQL; SQLite writes one at a
        # time anyway): a second submit of the same seat at once waits, then sees it done and is
        # a double submit or an edit, instead of inserting the same label row again
        s = (
            None
            if not 0 < slot_id <= _MAX_ID
            else conn.execute(
                select(SL).where(SL.c.id == slot_id, SL.c.queue_id == q.id).with_for_update()
            ).one_or_none()
        )
        if s is None:
            raise NotFound(f"no item {slot_id} in queue {q.name!r}")
        if s.member_id != m.id:
            # never handed to them, or their reservation lapsed and another annotator took it
            raise Conflict("this item is not reserved for you (a lapsed reservation goes back to the queue)")
        # a lapsed reservation nobody took is still theirs: the label counts
        if skipping:
            if s.state == "done":
                raise Conflict("this item is labelled; change the label instead of skipping it")
            conn.execute(
                update(SL)
                .where(SL.c.id == s.id, SL.c.member_id == m.id, SL.c.state == "reserved")
                .values(member_id=None, state="free", reserved_at=None, reserved_until=None, shown_order=None)
            )
            _log_event(conn, q, s, m, now, kind="skip", skip_reason=skip_reason, comment=comment)
            return Recorded("skip", progress(conn, m), False)
        assert text is not None
        canonical = to_canonical(text, s.shown_order) if q.kind == "pairwise" else text
        first = s.state == "reserved"
        if not first:
            last = conn.execute(
                select(EV.c.value, EV.c.comment)
                .where(EV.c.slot_id == s.id, EV.c.member_id == m.id, EV.c.kind != "skip")
                .order_by(EV.c.id.desc())
                .limit(1)
            ).one_or_none()
            if last is not None and last.value == canonical and (last.comment or None) == (comment or None):
                raise Conflict("already recorded: this label is stored (nothing changed)")
        unit = conn.execute(select(UN.c.item_id, UN.c.pair_id).where(UN.c.id == s.unit_id)).one()
        _write_label(conn, q, m, unit, canonical, comment)
        if first:
            n = conn.execute(
                update(SL)
                .where(SL.c.id == s.id, SL.c.member_id == m.id, SL.c.state == "reserved")
                .values(state="done", done_at=now, reserved_until=None)
            ).rowcount
            if n != 1:  # changed between our read and this write (a concurrent request)
                after = conn.execute(select(SL.c.member_id, SL.c.state).where(SL.c.id == s.id)).one()
                if after.member_id == m.id and after.state == "done":
                    # their own other request (a double click, a second tab) labelled it first: on
                    # SQLite, which takes no row lock, this one read the seat before that commit
                    raise Conflict(
                        "already recorded: your other request labelled this item a moment ago (nothing "
                        "changed by this one; change the label to replace it)"
                    )
                raise Conflict("your reservation of this item lapsed and another annotator has it now")
        seconds = (now - s.reserved_at).total_seconds() if first and s.reserved_at is not None else None
        _log_event(
            conn,
            q,
            s,
            m,
            now,
            kind="label" if first else "edit",
            value=canonical,
            presented=text if q.kind == "pairwise" else None,
            comment=comment,
            seconds=seconds,
        )
        completed = first and not conn.scalar(
            select(func.count()).where(SL.c.unit_id == s.unit_id, SL.c.state != "done")
        )
        return Recorded("label" if first else "edit", progress(conn, m), bool(completed))


def _log_event(conn: Connection, q: Any, s: Any, m: Member, now: datetime, **fields: Any) -> None:
    """One row of the queue's event log: what member `m` did on slot `s` (`fields`: kind, value, …)."""
    conn.execute(
        insert(EV).values(
            queue_id=q.id,
            unit_id=s.unit_id,
            slot_id=s.id,
            member_id=m.id,
            shown_order=s.shown_order,
            created_at=now,
            **fields,
        )
    )


def _storable(text: str) -> bool:
    """Text both backends store as given: PostgreSQL refuses NUL in text, and no driver encodes a
    lone surrogate (which JSON's `\\udXXX` escapes can carry)."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _write_label(conn: Connection, q: Any, m: Member, unit: Any, value: str, comment: str | None) -> None:
    """The annotator's ordinary label row: inserted, or updated when they change it."""
    if q.kind == "pairwise":
        pl = base.pair_label
        where = and_(pl.c.pair_id == unit.pair_id, pl.c.annotator_id == m.annotator_id)
        if conn.execute(update(pl).where(where).values(value=value)).rowcount == 0:
            conn.execute(insert(pl).values(pair_id=unit.pair_id, annotator_id=m.annotator_id, value=value))
        return
    lb = base.label
    where = and_(
        lb.c.item_id == unit.item_id, lb.c.annotator_id == m.annotator_id, lb.c.dimension == q.dimension
    )
    values = {"value_num": _number(value), "value_text": value, "rationale": comment}
    if conn.execute(update(lb).where(where).values(**values)).rowcount == 0:
        conn.execute(
            insert(lb).values(
                item_id=unit.item_id, annotator_id=m.annotator_id, dimension=q.dimension, **values
            )
        )


def set_decided(engine: Engine, queue_id: int, when: datetime | None) -> None:
    with engine.begin() as conn:
        conn.execute(update(QU).where(QU.c.id == queue_id).values(decided_at=when))
