"""What the owner of an annotation queue reads: progress per annotator, time per label, labels per
unit, and the panel the certification state is computed from (issue 32 §4).

Boundary: reading only, in SQLAlchemy Core (the owner's page recomputes as labels arrive, at 10⁵
labels within a second); the statistics run in `judgepanel.annotate.certify`.

The panel: the queue's units (items or pairs) × the queue's annotators' latest labels (`label` /
`pair_label`, so an edit counts as the new value), each unit's completion time (when its last
seat was done; None while incomplete), and the stored judges' labels of the same units:
imported judges (annotators of kind llm in the dataset) and every campaign that judged the units
(pointwise: its first parsed score per item, dimension matched; pairwise: its AB and BA verdicts
combined, `protocol.pairs.combine_orders`, an inconsistent pair counting as a tie). Nothing of a
judge ever reaches the annotator's page: only this reader sees them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Engine, case, func, select

from judgepanel.errors import NotFound
from judgepanel.protocol.pairs import as_label, combine_orders, to_canonical
from judgepanel.store import tables as base
from judgepanel.store.annotation import EV, MB, SL, UN, queue_row
from judgepanel.store.campaigns.readers import judge_names_in


@dataclass(frozen=True)
class MemberStats:
    name: str
    labels: int
    edits: int
    skips: int
    reserved: int  # live reservations now
    seconds: tuple[float, ...]  # seconds per first label
    revoked: bool
    last_label_at: datetime | None


@dataclass(frozen=True)
class QueueRows:
    queue: Any  # the queue row
    dataset: str
    units: int
    seats: int
    done: int
    reserved: int  # live reservations
    per_unit_done: dict[int, int]  # labels done -> units with that many
    complete: int  # units with every seat done
    members: tuple[MemberStats, ...]
    rubric: str | None  # NAME@VERSION of the checklist, if any


def queue_rows(engine: Engine, name: str, now: datetime) -> QueueRows:
    with engine.connect() as conn:
        q = queue_row(conn, name)
        ds = conn.scalar(select(base.dataset.c.name).where(base.dataset.c.id == q.dataset_id))
        done_n = func.sum(case((SL.c.state == "done", 1), else_=0))
        per_unit = (
            select(SL.c.unit_id, func.count().label("seats"), done_n.label("done"))
            .where(SL.c.queue_id == q.id)
            .group_by(SL.c.unit_id)
            .subquery()
        )
        hist: dict[int, int] = {}
        complete = units = seats = done = 0
        for n_seats, n_done, k in conn.execute(
            select(per_unit.c.seats, per_unit.c.done, func.count()).group_by(
                per_unit.c.seats, per_unit.c.done
            )
        ):
            units += int(k)
            seats += int(n_seats) * int(k)
            done += int(n_done) * int(k)
            hist[int(n_done)] = hist.get(int(n_done), 0) + int(k)
            if n_done == n_seats:
                complete += int(k)
        reserved = int(
            conn.scalar(
                select(func.count()).where(
                    SL.c.queue_id == q.id, SL.c.state == "reserved", SL.c.reserved_until > now
                )
            )
            or 0
        )
        members = conn.execute(
            select(MB.c.id, MB.c.name, MB.c.revoked_at).where(MB.c.queue_id == q.id).order_by(MB.c.id)
        ).all()
        counts: dict[tuple[int, str], int] = {
            (int(m), str(k)): int(n)
            for m, k, n in conn.execute(
                select(EV.c.member_id, EV.c.kind, func.count())
                .where(EV.c.queue_id == q.id)
                .group_by(EV.c.member_id, EV.c.kind)
            )
        }
        seconds: dict[int, list[float]] = defaultdict(list)
        for m, sec in _fetch(
            conn, select(EV.c.member_id, EV.c.seconds).where(EV.c.queue_id == q.id, EV.c.kind == "label")
        ):
            if sec is not None:
                seconds[m].append(sec)
        last = dict(
            conn.execute(
                select(EV.c.member_id, func.max(EV.c.created_at))
                .where(EV.c.queue_id == q.id, EV.c.kind == "label")
                .group_by(EV.c.member_id)
            ).all()
        )
        live: dict[Any, Any] = dict(
            conn.execute(
                select(SL.c.member_id, func.count())
                .where(SL.c.queue_id == q.id, SL.c.state == "reserved", SL.c.reserved_until > now)
                .group_by(SL.c.member_id)
            ).all()
        )
        rubric = None
        if q.rubric_version_id is not None:
            rv = base.rubric_version
            row = conn.execute(
                select(base.rubric.c.name, rv.c.version)
                .join(base.rubric, base.rubric.c.id == rv.c.rubric_id)
                .where(rv.c.id == q.rubric_version_id)
            ).one_or_none()
            rubric = None if row is None else f"{row[0]}@{row[1]}"
    stats = tuple(
        MemberStats(
            name=str(n),
            labels=counts.get((int(m), "label"), 0),
            edits=counts.get((int(m), "edit"), 0),
            skips=counts.get((int(m), "skip"), 0),
            reserved=int(live.get(m, 0)),
            seconds=tuple(seconds.get(int(m), [])),
            revoked=rev is not None,
            last_label_at=last.get(int(m)),
        )
        for m, n, rev in members
    )
    return QueueRows(
        q, str(ds), units, seats, done, reserved, dict(sorted(hist.items())), complete, stats, rubric
    )


# ---------------------------------------------------------------- the certification panel


Value = float | str  # a label: its number where it has one (scores), else its text (A/B/T, categories)


@dataclass(frozen=True)
class QueuePanel:
    """Labels by unit: `humans[name][unit]`, `judges[name][unit]`; `completed` maps each complete
    unit to when its last seat was done (units missing from it are incomplete)."""

    units: tuple[int, ...]  # queue order
    completed: dict[int, Any]  # a timestamp (as the driver returns it: sortable)
    humans: dict[str, dict[int, Value]]
    judges: dict[str, dict[int, Value]]
    unit_kind: str  # item | pair
    # the item (pair) id of each unit, as `units`: a queue's units never change, so
    # `panel_update` maps label rows to units from here instead of reading the units again
    refs: tuple[int, ...] = ()


def _number(text: str | None) -> float | None:
    try:
        return None if text is None else float(text)
    except ValueError:
        return None


def _fetch(conn: Any, stmt: Any) -> list[tuple[Any, ...]]:
    """Every row of a SELECT as plain tuples, straight from the driver's cursor: the panel reads
    10⁵ rows at a time, and SQLAlchemy's per-row result processing cost more than the query. The
    statement's parameters (ids and the dimension) are rendered as literals by the dialect; the
    values read are ints, floats, texts and (unconverted) timestamps, used only for ordering."""
    sql = str(stmt.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
    cur = conn.connection.driver_connection.cursor()
    try:
        cur.execute(sql)
        return list(cur.fetchall())
    finally:
        cur.close()


@dataclass(frozen=True)
class PanelKey:
    """What a queue's panel was read from, as a key a cache can trust (`panel_key`): the queue
    (id, creation time: a queue deleted and made again is another), its members, what the judges'
    labels come from (the dataset's llm annotators, the campaigns that may judge its units, the
    newest verdict id and job change: verdicts are only ever inserted, or deleted with their
    campaign), the newest id of the label table the humans write (`label`, or `pair_label` for
    pairs) and how many rows of it the panel's annotators have (a deleted row changes it), and
    the newest `annotation_event` of any queue and how many there are (a label edited in place
    always comes with one, also in another queue sharing the annotator; the count catches an
    event committed after a later-numbered one). Read by indexes and primary keys, and the
    events' count (a scan of the table's smallest b-tree)."""

    queue: tuple[Any, ...]
    members: tuple[tuple[int, int, str], ...]
    judges: tuple[Any, ...]
    labels: tuple[int, int]
    events: tuple[int, int]  # the newest event id and how many events there are


def panel_key(conn: Any, q: Any) -> PanelKey:
    ann, c = base.annotator, base.campaign
    members = tuple(
        (int(i), int(a), str(n))
        for i, a, n in conn.execute(
            select(MB.c.id, MB.c.annotator_id, MB.c.name).where(MB.c.queue_id == q.id).order_by(MB.c.id)
        )
    )
    llms = tuple(
        (int(i), str(n))
        for i, n in conn.execute(
            select(ann.c.id, ann.c.name)
            .where(ann.c.dataset_id == q.dataset_id, ann.c.kind == "llm")
            .order_by(ann.c.id)
        )
    )
    protocol = "pointwise" if q.kind == "pointwise" else "pairwise"
    campaigns = tuple(
        (int(i), str(n), str(t))
        for i, n, t in conn.execute(
            select(c.c.id, c.c.name, c.c.created_at)
            .where(c.c.dataset_id == q.dataset_id, c.c.protocol == protocol)
            .order_by(c.c.id)
        )
    )
    table = base.label if q.kind == "pointwise" else base.pair_label
    ours = [a for _, a, _ in members] + ([a for a, _ in llms] if q.kind == "pointwise" else [])
    row = conn.execute(
        select(
            select(func.max(base.verdict.c.id)).scalar_subquery(),
            select(func.max(base.job.c.updated_at)).scalar_subquery(),
            select(func.max(table.c.id)).scalar_subquery(),
            select(func.count())
            .select_from(table)
            .where(table.c.annotator_id.in_(ours or [-1]))
            .scalar_subquery(),
            select(func.max(EV.c.id)).scalar_subquery(),
            select(func.count()).select_from(EV).scalar_subquery(),
        )
    ).one()
    return PanelKey(
        queue=(int(q.id), str(q.created_at), int(q.dataset_id), str(q.kind), str(q.dimension), q.pair_set_id),
        members=members,
        judges=(llms, campaigns, int(row[0] or 0), str(row[1])),
        labels=(int(row[2] or 0), int(row[3] or 0)),
        events=(int(row[4] or 0), int(row[5] or 0)),
    )


def queue_panel(engine: Engine, name: str) -> QueuePanel:
    return queue_panel_keyed(engine, name)[0]


def queue_panel_keyed(engine: Engine, name: str) -> tuple[QueuePanel, PanelKey]:
    """The panel and the key it was read under. The key is read first: whatever is written while
    the panel is read is then newer than the key, so `panel_update` reads it again (setting a
    value to what is stored is idempotent) and never misses it."""
    with engine.connect() as conn:
        q = queue_row(conn, name)
        key = panel_key(conn, q)
        units = _fetch(
            conn,
            select(UN.c.id, UN.c.item_id, UN.c.pair_id).where(UN.c.queue_id == q.id).order_by(UN.c.position),
        )
        completed = _completion(conn, q, None)
        members = {a: n for _, a, n in key.members}
        humans: dict[str, dict[int, Value]] = {n: {} for n in members.values()}
        if q.kind == "pointwise":
            unit_of = {int(i): int(u) for u, i, _ in units}
            _read_labels(conn, q, unit_of, {a: humans[n] for a, n in members.items()})
            kind = "item"
        else:
            unit_of = {int(p): int(u) for u, _, p in units}
            pl = base.pair_label
            for pid, aid, value in _fetch(
                conn,
                select(pl.c.pair_id, pl.c.annotator_id, pl.c.value)
                .join(UN, UN.c.pair_id == pl.c.pair_id)
                .where(UN.c.queue_id == q.id, pl.c.annotator_id.in_(list(members) or [-1])),
            ):
                humans[str(members[aid])][unit_of[int(pid)]] = str(value)
            kind = "pair"
        judges = _read_judges(conn, q, unit_of, key)
    refs = tuple(int(i) for _, i, _ in units) if kind == "item" else tuple(int(p) for _, _, p in units)
    panel = QueuePanel(tuple(int(u) for u, _, _ in units), completed, humans, judges, kind, refs)
    return panel, key


def _completion(conn: Any, q: Any, units: Sequence[int] | None) -> dict[int, Any]:
    """unit -> when its last seat was done, for the complete units (of `units`, or every one)."""
    done_n = func.sum(case((SL.c.state == "done", 1), else_=0))
    where = [SL.c.queue_id == q.id]
    if units is not None:
        where.append(SL.c.unit_id.in_(list(units)))
    return {
        int(u): t
        for u, n, d, t in _fetch(
            conn,
            select(SL.c.unit_id, func.count(), done_n, func.max(SL.c.done_at))
            .where(*where)
            .group_by(SL.c.unit_id),
        )
        if n == d
    }


def _read_labels(
    conn: Any,
    q: Any,
    unit_of: dict[int, int],
    target: dict[int, dict[int, Value]],
    items: Sequence[int] | None = None,
) -> None:
    """The `label` rows of the annotators of `target` (annotator id -> unit -> value) on the queue's
    dimension and units (of `items` only, if given). One query per annotator, by its index: the
    rows of the queue's few annotators, not a probe per unit and annotator."""
    lb = base.label
    for aid, values in target.items():
        where = [lb.c.annotator_id == aid, lb.c.dimension == q.dimension]
        if items is not None:
            where.append(lb.c.item_id.in_(list(items)))
        rows = _fetch(conn, select(lb.c.item_id, lb.c.value_num, lb.c.value_text).where(*where))
        get = unit_of.get
        for item, num, txt in rows:
            u = get(item)
            if u is not None:
                values[u] = float(num) if num is not None else str(txt)


def _read_judges(conn: Any, q: Any, unit_of: dict[int, int], key: PanelKey) -> dict[str, dict[int, Value]]:
    """The stored judges' labels of the units: imported llm annotators (pointwise) and campaigns."""
    judges: dict[str, dict[int, Value]] = {}
    if q.kind == "pointwise":
        llms = dict(key.judges[0])
        _read_labels(conn, q, unit_of, {a: judges.setdefault(n, {}) for a, n in llms.items()})
        _campaign_scores(conn, q, unit_of, judges)
    else:
        _campaign_pairs(conn, q, unit_of, judges)
    return {name: labels for name, labels in judges.items() if labels}  # judges of these units only


_INCREMENT_ROWS = 20_000  # more new rows than this: read the panel again instead


def panel_update(
    engine: Engine, name: str, panel: QueuePanel, key: PanelKey
) -> tuple[QueuePanel, PanelKey] | None:
    """The panel brought from `key` to what is stored now by reading only what changed since: new
    label rows (by id), the labels named by new events (edits update a row in place; they may
    come from another queue sharing an annotator) and the completion of the queue's units those
    events touched; the judges again only when their part of the key moved. None when only a
    fresh read is safe: another queue, other members, a label row deleted (the count is not the
    old one plus the new rows), or too much new to be worth it. Unchanged parts are shared with
    `panel`, changed ones copied."""
    with engine.connect() as conn:
        q = queue_row(conn, name)
        now = panel_key(conn, q)
        if now == key:
            return panel, now
        if now.queue != key.queue or now.members != key.members:
            return None
        if now.labels[0] - key.labels[0] > _INCREMENT_ROWS or now.events[0] - key.events[0] > _INCREMENT_ROWS:
            return None
        # an event whose id is below the newest one read (on PostgreSQL a transaction may commit
        # after a later-numbered one) would be missed by `id > newest`: the count shows it
        newer = select(func.count()).select_from(EV).where(EV.c.id > key.events[0])
        if now.events[1] != key.events[1] + int(conn.scalar(newer) or 0):
            return None
        pointwise = q.kind == "pointwise"
        table = base.label if pointwise else base.pair_label
        members = {a: n for _, a, n in now.members}
        llms = dict(now.judges[0]) if pointwise else {}
        ours = [*members, *llms]
        added = select(func.count()).select_from(table)
        added = added.where(table.c.id > key.labels[0], table.c.annotator_id.in_(ours or [-1]))
        if now.labels[1] != key.labels[1] + int(conn.scalar(added) or 0):
            return None  # a row of the panel's annotators was deleted: its value may sit in the panel
        if len(panel.refs) != len(panel.units):
            return None  # a panel made without its units' items or pairs
        unit_of = dict(zip(panel.refs, panel.units, strict=True))
        humans = dict(panel.humans)
        judges = dict(panel.judges) if now.judges == key.judges else None
        changed: dict[int, dict[int, Value]] = {}

        def values_of(aid: int) -> dict[int, Value] | None:
            if aid not in changed:
                if aid in members:
                    changed[aid] = humans[members[aid]] = dict(humans[members[aid]])
                elif aid in llms and judges is not None:
                    changed[aid] = judges[llms[aid]] = dict(judges.get(llms[aid], {}))
                else:
                    return None
            return changed[aid]

        # which (annotator, item or pair) to read again: rows inserted since, rows events name
        touched: dict[int, set[int]] = defaultdict(set)
        for ref, aid in conn.execute(
            select(table.c.item_id if pointwise else table.c.pair_id, table.c.annotator_id).where(
                table.c.id > key.labels[0], table.c.annotator_id.in_(ours or [-1])
            )
        ):
            touched[int(aid)].add(int(ref))
        finished: set[int] = set()
        for qid, unit, kind, aid, item, pair in conn.execute(
            select(EV.c.queue_id, EV.c.unit_id, EV.c.kind, MB.c.annotator_id, UN.c.item_id, UN.c.pair_id)
            .join(MB, MB.c.id == EV.c.member_id)
            .join(UN, UN.c.id == EV.c.unit_id)
            .where(EV.c.id > key.events[0])
        ):
            if qid == q.id and kind == "label":
                finished.add(int(unit))
            ref = item if pointwise else pair
            if kind != "skip" and int(aid) in members and ref is not None:
                touched[int(aid)].add(int(ref))
        for aid, refs in touched.items():
            target = values_of(aid)
            if target is None:
                continue
            if pointwise:
                _read_labels(conn, q, unit_of, {aid: target}, sorted(refs))
            else:
                pl = base.pair_label
                for pid, value in conn.execute(
                    select(pl.c.pair_id, pl.c.value).where(
                        pl.c.annotator_id == aid, pl.c.pair_id.in_(sorted(refs))
                    )
                ):
                    u = unit_of.get(int(pid))
                    if u is not None:
                        target[u] = str(value)
        completed = panel.completed
        if finished:
            completed = {**completed, **_completion(conn, q, sorted(finished))}
        if judges is None:
            judges = _read_judges(conn, q, unit_of, now)
        else:
            judges = {n: v for n, v in judges.items() if v}
    return QueuePanel(panel.units, completed, humans, judges, panel.unit_kind, panel.refs), now


def _campaign_rows(conn: Any, q: Any, protocol: str) -> Sequence[Any]:
    c = base.campaign
    where = [c.c.dataset_id == q.dataset_id, c.c.protocol == protocol]
    if protocol == "pairwise":
        where.append(c.c.pair_set_id == q.pair_set_id)
    return cast(Sequence[Any], conn.execute(select(c).where(*where).order_by(c.c.id)).all())


def _judge_label(
    conn: Any, campaign: Any, spec: str, condition: str | None, conditions: set[str | None]
) -> str:
    short = judge_names_in(conn, campaign).get(spec, spec)
    label = f"{campaign.name}/{short}"
    return label + (f"/{condition}" if len(conditions) > 1 and condition else "")


def _campaign_scores(conn: Any, q: Any, unit_of: dict[int, int], judges: dict[str, dict[int, Value]]) -> None:
    """Pointwise campaigns on the dataset's items and the queue's dimension: first parsed score."""
    job, v, jd = base.job, base.verdict, base.judge
    dim = job.c.dimension.is_(None) if not q.dimension else job.c.dimension == q.dimension
    for c in _campaign_rows(conn, q, "pointwise"):
        rows = conn.execute(
            select(jd.c.name, job.c.condition, job.c.item_id, v.c.value_presented, v.c.score)
            .join(jd, jd.c.id == job.c.judge_id)
            .join(v, v.c.job_id == job.c.id)
            .where(
                job.c.campaign_id == c.id,
                dim,
                job.c.status == "done",
                job.c.repeat == 0,
                v.c.parse_status == "ok",
            )
            .order_by(job.c.id, v.c.id)
        ).all()
        conditions = {r[1] for r in rows}
        for spec, cond, item, shown, score in rows:
            if item is None or int(item) not in unit_of:
                continue
            value = _number(shown) if shown is not None else score
            if value is None:
                continue
            per = judges.setdefault(_judge_label(conn, c, spec, cond, conditions), {})
            per.setdefault(unit_of[int(item)], float(value))  # a re-asked job keeps its first


def _campaign_pairs(conn: Any, q: Any, unit_of: dict[int, int], judges: dict[str, dict[int, Value]]) -> None:
    """Pairwise campaigns on the queue's pair set: both orders combined into A, B or T."""
    job, v, jd = base.job, base.verdict, base.judge
    for c in _campaign_rows(conn, q, "pairwise"):
        rows = conn.execute(
            select(jd.c.name, job.c.condition, job.c.pair_id, job.c.order, v.c.value_presented)
            .join(jd, jd.c.id == job.c.judge_id)
            .join(v, v.c.job_id == job.c.id)
            .where(
                job.c.campaign_id == c.id, job.c.status == "done", job.c.repeat == 0, v.c.parse_status == "ok"
            )
            .order_by(job.c.id, v.c.id)
        ).all()
        conditions = {r[1] for r in rows}
        orders: dict[tuple[str, int], dict[str, str]] = defaultdict(dict)
        for spec, cond, pid, order, shown in rows:
            if pid is None or int(pid) not in unit_of or order not in ("AB", "BA") or shown is None:
                continue
            try:
                canon = to_canonical(str(shown), order)
            except ValueError:
                continue
            orders[(_judge_label(conn, c, spec, cond, conditions), int(pid))].setdefault(order, canon)
        for (label, pid), by in orders.items():
            value = as_label(combine_orders(by.get("AB"), by.get("BA")))
            if value is not None:
                judges.setdefault(label, {})[unit_of[pid]] = value


# ---------------------------------------------------------------- human position bias


def presented_pairs(engine: Engine, name: str) -> list[tuple[int, str, str]]:
    """(unit, order shown, side picked as shown) of every pairwise label's latest value in the
    queue, oldest first: what `metrics.bias.position_bias` reads for the humans."""
    with engine.connect() as conn:
        q = queue_row(conn, name)
        latest = (
            select(func.max(EV.c.id))
            .where(EV.c.queue_id == q.id, EV.c.kind != "skip")
            .group_by(EV.c.member_id, EV.c.unit_id)
        )
        return [
            (int(u), str(o), str(p))
            for u, o, p in conn.execute(
                select(EV.c.unit_id, EV.c.shown_order, EV.c.presented)
                .where(EV.c.id.in_(latest), EV.c.presented.is_not(None))
                .order_by(EV.c.id)
            )
        ]


# ---------------------------------------------------------------- what a new queue is made of


@dataclass(frozen=True)
class SourceUnit:
    item_id: int | None
    pair_id: int | None
    group: str | None
    assignees: tuple[str, ...] = ()


def dataset_id(engine: Engine, name: str) -> int:
    from judgepanel.store.lookups import dataset_row

    with engine.connect() as conn:
        return int(dataset_row(conn, name).id)


def dataset_items(engine: Engine, ds_id: int) -> list[SourceUnit]:
    it = base.item
    with engine.connect() as conn:
        return [
            SourceUnit(int(i), None, g)
            for i, g in conn.execute(
                select(it.c.id, it.c.group_key).where(it.c.dataset_id == ds_id).order_by(it.c.position)
            )
        ]


def pair_units(engine: Engine, pair_set: str) -> tuple[int, int, list[SourceUnit]]:
    """(pair set id, its dataset id, its pairs in the set's order)."""
    from judgepanel.store.lookups import pair_set_row

    p, it = base.pair, base.item
    with engine.connect() as conn:
        ps = pair_set_row(conn, pair_set)
        rows = conn.execute(
            select(p.c.id, it.c.group_key)
            .join(it, it.c.id == p.c.item_a_id)
            .where(p.c.pair_set_id == ps.id)
            .order_by(p.c.position)
        ).all()
    return int(ps.id), int(ps.dataset_id), [SourceUnit(None, int(pid), g) for pid, g in rows]


def allocation_units(engine: Engine, name: str) -> tuple[int, int, list[SourceUnit]]:
    """(allocation id, its dataset id, its items each with the annotators assigned to it), in the
    order the annotators were given them (an item's earliest position in any list first)."""
    al, ai, it = base.allocation, base.allocation_item, base.item
    with engine.connect() as conn:
        row = conn.execute(select(al.c.id, al.c.dataset_id).where(al.c.name == name)).one_or_none()
        if row is None:
            known = ", ".join(conn.scalars(select(al.c.name).order_by(al.c.name)).all()) or "none"
            raise NotFound(f"no allocation named {name!r} (known: {known}); make one with `plan allocate`")
        rows = conn.execute(
            select(ai.c.item_id, ai.c.annotator, ai.c.position, it.c.group_key)
            .join(it, it.c.id == ai.c.item_id)
            .where(ai.c.allocation_id == row.id)
            .order_by(ai.c.position, ai.c.annotator, ai.c.item_id)
        ).all()
    names: dict[int, list[str]] = {}
    groups: dict[int, str | None] = {}
    for item, who, _pos, g in rows:
        names.setdefault(int(item), []).append(str(who))
        groups[int(item)] = g
    return (
        int(row.id),
        int(row.dataset_id),
        [SourceUnit(i, None, groups[i], tuple(sorted(w))) for i, w in names.items()],
    )


def dataset_judge_labels(
    engine: Engine, ds_id: int, dimension: str, *, pair_set_id: int | None = None
) -> dict[str, dict[int, Value]]:
    """judge -> {item id (pair id for a pair set): label} of the stored judges (imported llm
    annotators and campaigns), for ordering a new queue by their disagreement or strata."""
    from types import SimpleNamespace

    q = SimpleNamespace(dataset_id=ds_id, dimension=dimension, pair_set_id=pair_set_id)
    judges: dict[str, dict[int, Value]] = {}
    with engine.connect() as conn:
        if pair_set_id is not None:
            ids = conn.scalars(select(base.pair.c.id).where(base.pair.c.pair_set_id == pair_set_id)).all()
            _campaign_pairs(conn, q, {int(i): int(i) for i in ids}, judges)
            return judges
        lb, ann, it = base.label, base.annotator, base.item
        for item, num, txt, name in conn.execute(
            select(lb.c.item_id, lb.c.value_num, lb.c.value_text, ann.c.name)
            .join(ann, ann.c.id == lb.c.annotator_id)
            .join(it, it.c.id == lb.c.item_id)
            .where(it.c.dataset_id == ds_id, ann.c.kind == "llm", lb.c.dimension == dimension)
        ):
            judges.setdefault(str(name), {})[int(item)] = float(num) if num is not None else str(txt)
        ids = conn.scalars(select(it.c.id).where(it.c.dataset_id == ds_id)).all()
        _campaign_scores(conn, q, {int(i): int(i) for i in ids}, judges)
    return judges


def rubric_clauses(engine: Engine, rubric_version_id: int, dimension: str) -> list[dict[str, str]]:
    cl = base.clause
    with engine.connect() as conn:
        return [
            {"id": str(k), "text": str(t)}
            for k, t in conn.execute(
                select(cl.c.clause_key, cl.c.text)
                .where(cl.c.rubric_version_id == rubric_version_id, cl.c.dimension == dimension)
                .order_by(cl.c.position)
            )
        ]
