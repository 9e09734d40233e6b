"""Queues in the store (issue 32 §1–2), on a real SQLite file and a real PostgreSQL database:
reservations, distinct annotators per item, resume, skips, edits with their history, and the
input errors that must write nothing."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import Engine, func, select

from judgepanel.errors import BadInput, NotFound
from judgepanel.store import annotation as store
from judgepanel.store import annotation_tables as at
from judgepanel.store import tables as base
from judgepanel.store.tables import utcnow
from tests.annotate.conftest import make_queue, member


def _count(engine: Engine, table: object, *where: object) -> int:
    with engine.connect() as c:
        return int(c.scalar(select(func.count()).select_from(table).where(*where)) or 0)  # type: ignore[arg-type]


def test_a_label_is_an_ordinary_label_row_with_its_annotator_and_group(sample: tuple[str, Engine]) -> None:
    _, eng = sample
    make_queue(eng, group="lab")
    alice, _ = member(eng, "q", "alice")
    slot = store.next_slot(eng, alice)
    assert slot is not None
    done = store.submit(eng, alice, slot, value=4, comment="clear")
    assert done.kind == "label" and done.progress == {"done": 1, "total": 6}
    with eng.connect() as c:
        row = c.execute(
            select(base.label.c.value_num, base.label.c.value_text, base.label.c.rationale, base.label.c.dimension,
                   base.annotator.c.kind, base.annotator.c.group)
            .join(base.annotator, base.annotator.c.id == base.label.c.annotator_id)
            .where(base.annotator.c.name == "alice")
        ).one()  # fmt: skip
    assert tuple(row) == (4.0, "4", "clear", "coherence", "human", "lab")


def test_edits_keep_the_latest_in_label_and_every_value_in_the_history(sample: tuple[str, Engine]) -> None:
    _, eng = sample
    make_queue(eng)
    alice, _ = member(eng, "q", "alice")
    slot = store.next_slot(eng, alice)
    assert slot is not None
    store.submit(eng, alice, slot, value=2)
    with pytest.raises(store.Conflict, match="already recorded"):  # a double submit writes nothing
        store.submit(eng, alice, slot, value=2)
    assert store.submit(eng, alice, slot, value=5).kind == "edit"
    assert store.submit(eng, alice, slot, value=3, comment="on reflection").kind == "edit"
    with eng.connect() as c:
        history = c.execute(
            select(at.annotation_event.c.kind, at.annotation_event.c.value).order_by(at.annotation_event.c.id)
        ).all()
        latest = c.execute(
            select(base.label.c.value_text).where(base.label.c.annotator_id == alice.annotator_id)
        ).all()
    assert [tuple(r) for r in history] == [("label", "2"), ("edit", "5"), ("edit", "3")]
    assert [r[0] for r in latest] == ["3"]  # one label row: the latest counts


def test_per_item_counts_distinct_annotators_and_two_never_hold_one_seat(sample: tuple[str, Engine]) -> None:
    _, eng = sample
    make_queue(eng, items=3, per_item=2)
    a, _ = member(eng, "q", "a")
    b, _ = member(eng, "q", "b")
    c, _ = member(eng, "q", "c")
    held: dict[str, list[int]] = {"a": [], "b": [], "c": []}
    for _ in range(3):
        for m in (a, b, c):
            s = store.next_slot(eng, m)
            if s is not None:
                held[m.name].append(s)
                store.submit(eng, m, s, value=3)
    every = [s for v in held.values() for s in v]
    assert len(every) == len(set(every)) == 6  # 3 items × 2 seats, each taken once
    with eng.connect() as conn:
        per_unit = conn.execute(
            select(at.annotation_slot.c.unit_id, func.count(func.distinct(at.annotation_slot.c.member_id)))
            .where(at.annotation_slot.c.state == "done")
            .group_by(at.annotation_slot.c.unit_id)
        ).all()
    assert sorted(n for _, n in per_unit) == [2, 2, 2]
    assert store.next_slot(eng, a) is None and store.next_slot(eng, c) is None  # nothing left


def test_concurrent_requests_never_hand_one_seat_to_two_annotators(sample: tuple[str, Engine]) -> None:
    _, eng = sample
    make_queue(eng, items=4, per_item=1)
    members = [member(eng, "q", f"m{i}")[0] for i in range(6)]
    got: dict[str, int | None] = {}
    barrier = threading.Barrier(len(members))

    def ask(m: store.Member) -> None:
        barrier.wait()
        try:
            got[m.name] = store.next_slot(eng, m)
        except store.Conflict:
            got[m.name] = None

    threads = [threading.Thread(target=ask, args=(m,)) for m in members]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    slots = [s for s in got.values() if s is not None]
    assert len(slots) == len(set(slots)) == 4  # four seats, four holders, two left without
    assert _count(eng, at.annotation_slot, at.annotation_slot.c.state == "reserved") == 4


def test_a_lapsed_reservation_goes_back_and_resumes_for_its_holder_when_free(
    sample: tuple[str, Engine],
) -> None:
    _, eng = sample
    make_queue(eng, items=1, per_item=1, reserve_minutes=5)
    a, _ = member(eng, "q", "a")
    b, _ = member(eng, "q", "b")
    t0 = utcnow()
    s = store.next_slot(eng, a, t0)
    assert s is not None
    assert store.next_slot(eng, b, t0 + timedelta(minutes=4)) is None  # still a's
    assert store.next_slot(eng, a, t0 + timedelta(minutes=4)) == s  # a reload resumes it
    later = t0 + timedelta(minutes=20)
    assert store.next_slot(eng, a, later) == s  # lapsed, but nobody took it: still a's on return
    # lapsed again, and now b takes it: a's label is refused, nothing written
    assert store.next_slot(eng, b, later + timedelta(minutes=6)) == s
    with pytest.raises(store.Conflict, match="not reserved for you"):
        store.submit(eng, a, s, value=3, now=later + timedelta(minutes=7))
    assert _count(eng, at.annotation_event) == 0
    assert store.submit(eng, b, s, value=3, now=later + timedelta(minutes=7)).kind == "label"


def test_a_skip_gives_the_seat_back_and_never_offers_the_unit_again(sample: tuple[str, Engine]) -> None:
    _, eng = sample
    make_queue(eng, items=2, per_item=1)
    a, _ = member(eng, "q", "a")
    b, _ = member(eng, "q", "b")
    s = store.next_slot(eng, a)
    assert s is not None
    with pytest.raises(BadInput, match="reason"):
        store.submit(eng, a, s, skip_reason="  ")
    assert store.submit(eng, a, s, skip_reason="not English").kind == "skip"
    nxt = store.next_slot(eng, a)
    assert nxt is not None and nxt != s
    assert store.next_slot(eng, b) == s  # the skipped seat went back to the queue
    with eng.connect() as c:
        assert store.progress(c, a) == {"done": 0, "total": 1}


def test_bad_input_writes_nothing(sample: tuple[str, Engine]) -> None:
    _, eng = sample
    make_queue(eng, items=2)
    a, _ = member(eng, "q", "a")
    s = store.next_slot(eng, a)
    assert s is not None
    before = (_count(eng, base.label), _count(eng, at.annotation_event))
    with pytest.raises(BadInput, match="not on this queue's scale"):
        store.submit(eng, a, s, value=6)
    with pytest.raises(BadInput, match="not on this queue's scale"):
        store.submit(eng, a, s, value=True)
    with pytest.raises(NotFound):
        store.submit(eng, a, 10**9, value=3)
    store.set_status(eng, "q", "closed")
    with pytest.raises(store.Conflict, match="closed"):
        store.submit(eng, a, s, value=3)
    with pytest.raises(store.Conflict, match="closed"):
        store.next_slot(eng, a)
    assert (_count(eng, base.label), _count(eng, at.annotation_event)) == before


def test_revoked_tokens_stop_and_give_back_their_reservations(sample: tuple[str, Engine]) -> None:
    _, eng = sample
    make_queue(eng, items=1, per_item=1)
    a, token = member(eng, "q", "a")
    b, _ = member(eng, "q", "b")
    s = store.next_slot(eng, a)
    out = store.revoke(eng, "q", "a")
    assert out["released"] == 1
    with pytest.raises(store.Gone):
        store.member_by_token(eng, "q", store.token_hash(token))
    assert store.next_slot(eng, b) == s


def test_tokens_are_stored_only_as_their_hash(sample: tuple[str, Engine]) -> None:
    _, eng = sample
    make_queue(eng)
    _, token = member(eng, "q", "alice")
    with eng.connect() as c:
        stored = c.execute(select(at.annotation_member.c.token_hash)).scalars().all()
        dumped = " ".join(str(v) for t in at.metadata.sorted_tables for r in c.execute(select(t)) for v in r)
    assert stored == [store.token_hash(token)] and token not in dumped


def test_invite_refuses_a_judge_or_another_group_and_assigned_needs_a_seat(
    sample: tuple[str, Engine],
) -> None:
    _, eng = sample
    make_queue(eng)
    with pytest.raises(BadInput, match="already has an annotator 'expert_1'"):
        member(eng, "q", "expert_1")  # an imported expert of group 'expert'
    assert _count(eng, at.annotation_member) == 0


def test_delete_is_refused_while_a_reservation_is_live_and_keeps_the_labels(
    sample: tuple[str, Engine],
) -> None:
    _, eng = sample
    make_queue(eng, items=2, per_item=1)
    a, _ = member(eng, "q", "a")
    s = store.next_slot(eng, a)
    assert s is not None
    store.submit(eng, a, s, value=2)
    store.next_slot(eng, a)  # a second item, reserved now
    with pytest.raises(BadInput, match="live reservation"):
        store.delete_queue(eng, "q")
    assert _count(eng, at.annotation_unit) == 2
    out = store.delete_queue(eng, "q", force=True)
    assert out["units"] == 2
    assert all(_count(eng, t) == 0 for t in at.metadata.sorted_tables)
    assert _count(eng, base.label, base.label.c.annotator_id == a.annotator_id) == 1


def test_pairwise_orders_are_stored_and_labels_mapped_back_to_canonical(sample: tuple[str, Engine]) -> None:
    from tests.helpers import cli

    url, eng = sample
    assert cli("data", "pairs", "se", "--name", "sp", "--sample", "6", "--seed", "3", db=url).code == 0
    make_queue(eng, name="pq", kind="pairwise", pairs="sp", items=None, dimension=None, per_item=2, seed=1)
    a, _ = member(eng, "pq", "a")
    shown = []
    while (s := store.next_slot(eng, a)) is not None:
        v = store.slot_view(eng, a, s)
        assert v.order in ("AB", "BA")
        store.submit(eng, a, s, value="A")  # always the left one
        shown.append(v.order)
    assert len(shown) == 6 and set(shown) == {"AB", "BA"}  # both orders occur (seeded)
    with eng.connect() as c:
        values = c.execute(
            select(at.annotation_event.c.shown_order, at.annotation_event.c.value).order_by(
                at.annotation_event.c.id
            )
        ).all()
        pair_labels = (
            c.execute(select(base.pair_label.c.value).where(base.pair_label.c.annotator_id == a.annotator_id))
            .scalars()
            .all()
        )
    assert [v for _, v in values] == ["A" if o == "AB" else "B" for o, _ in values]
    assert sorted(pair_labels) == sorted(v for _, v in values)


def test_progress_counts_the_queue_once_and_a_new_queue_again(sample: tuple[str, Engine]) -> None:
    """An annotator's `total` (the queue's units, fixed when it is made) is counted at the first
    request only: later requests read the member's own seats, not the whole queue. A queue deleted
    and made again under the same name is counted afresh."""
    from sqlalchemy import event

    _, eng = sample
    make_queue(eng, items=6)
    alice, _ = member(eng, "q", "alice")
    seen: list[str] = []
    event.listen(eng, "before_cursor_execute", lambda c, cur, sql, *a: seen.append(sql))
    with eng.connect() as c:
        assert store.progress(c, alice) == {"done": 0, "total": 6}
    assert any("FROM annotation_unit" in s for s in seen)
    seen.clear()
    slot = store.next_slot(eng, alice)
    assert slot is not None
    assert store.submit(eng, alice, slot, value=3).progress == {"done": 1, "total": 6}
    assert not any("FROM annotation_unit" in s and "count" in s for s in seen)
    store.delete_queue(eng, "q", force=True)
    make_queue(eng, items=4)
    alice, _ = member(eng, "q", "alice")
    with eng.connect() as c:
        assert store.progress(c, alice) == {"done": 0, "total": 4}
