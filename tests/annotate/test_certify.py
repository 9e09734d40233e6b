"""The owner's status (issue 32 §4): the certification state recomputed as labels arrive, each
stored judge's agreement, Krippendorff's α against the `krippendorff` package, --stop-when-decided,
and the humans' position bias computed exactly as `metrics bias` computes a judge's."""

from __future__ import annotations

import csv
import random
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import Engine, text

from judgepanel.annotate import certify
from judgepanel.store import annotation as store
from judgepanel.store.engine import make_engine
from tests.annotate.conftest import as_judge_campaign, make_queue, member
from tests.helpers import cli, migrate_db

N_ITEMS = 40


def _synthetic(url: str, tmp_path: Path) -> tuple[Engine, dict[str, int]]:
    """Items with a hidden truth on a 1–3 scale and two imported judges: `good` says the truth,
    `wrong` never does."""
    rng = random.Random(1)
    truth = {f"i{k}": rng.randint(1, 3) for k in range(N_ITEMS)}
    path = tmp_path / "judges.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["item_id", "annotator", "group", "dimension", "value", "kind"])
        for item, t in truth.items():
            w.writerow([item, "good", "judges", "q", t, "llm"])
            w.writerow([item, "wrong", "judges", "q", t % 3 + 1, "llm"])
    migrate_db(url)
    r = cli("data", "import-labels", str(path), "--dataset", "syn", db=url)
    assert r.code == 0, r.stderr
    eng = make_engine(url)
    with eng.connect() as c:
        ids = dict(c.execute(text("SELECT id, external_id FROM item")).all())
    return eng, {str(k): truth[e] for k, e in ids.items()}


def _truth_of(engine: Engine, m: store.Member, slot: int, truth: dict[str, int]) -> int:
    with engine.connect() as c:
        item = c.execute(
            text(
                "SELECT u.item_id FROM annotation_slot s JOIN annotation_unit u ON u.id = s.unit_id WHERE s.id = :s"
            ),
            {"s": slot},
        ).scalar()
    return truth[str(item)]


def _label_all(
    engine: Engine,
    members: list[store.Member],
    truth: dict[str, int],
    accuracy: float,
    seed: int,
    *,
    stop: int | None = None,
) -> int:
    """Annotators take turns, each right with probability `accuracy`; returns the labels given.
    `stop`: after each completed unit, what the server does for --stop-when-decided."""
    rng = random.Random(seed)
    given = 0
    active = list(members)
    while active:
        for m in list(active):
            s = store.next_slot(engine, m)
            if s is None:
                active.remove(m)
                continue
            t = _truth_of(engine, m, s, truth)
            value = t if rng.random() < accuracy else rng.choice([v for v in (1, 2, 3) if v != t])
            done = store.submit(engine, m, s, value=value)
            given += 1
            if stop is not None and done.completed_unit:
                certify.refresh_decided(engine, "q")
    return given


def test_the_state_follows_the_labels_and_names_each_judge(sqlite_url: str, tmp_path: Path) -> None:
    eng, truth = _synthetic(sqlite_url, tmp_path)
    make_queue(
        eng,
        dataset="syn",
        dimension="q",
        items=N_ITEMS,
        per_item=3,
        scale="1-3",
        scorer="accuracy",
        epsilon=0.2,
    )
    members = [member(eng, "q", f"h{k}")[0] for k in range(3)]
    early = certify.status(eng, "q", n_boot=50)
    assert set(early["judges"]) == {"good", "wrong"}
    assert all(j["state"] == "undecided" for j in early["judges"].values())
    _label_all(eng, members, truth, accuracy=0.9, seed=2)
    st = certify.status(eng, "q", n_boot=50)
    assert st["progress"] == {
        "units": N_ITEMS,
        "complete": N_ITEMS,
        "labels_done": 3 * N_ITEMS,
        "labels_total": 3 * N_ITEMS,
        "reserved": 0,
    }
    assert st["labels_per_unit"] == {"3": N_ITEMS}
    good, wrong = st["judges"]["good"], st["judges"]["wrong"]
    assert good["state"] == "certified" and good["message"].startswith("certified at ε = 0.2")
    assert wrong["state"] == "fails" and wrong["message"].startswith("fails")
    assert good["omega"] == 1.0 and good["fixed_sample"]["passed"] is True
    assert all(h["n"] == N_ITEMS for h in good["humans"].values())
    assert st["certification"]["decided"] is True
    assert {m["labels"] for m in st["annotators"].values()} == {N_ITEMS}
    # α among the humans: the krippendorff package on the same matrix (interval level, 1-3 scale)
    import krippendorff

    with eng.connect() as c:
        rows = c.execute(
            text(
                "SELECT a.name, l.item_id, l.value_num FROM label l JOIN annotator a ON a.id = l.annotator_id WHERE a.kind = 'human'"
            )
        ).all()
    names = sorted({r[0] for r in rows})
    items = sorted({r[1] for r in rows})
    m = np.full((len(names), len(items)), np.nan)
    for n, i, v in rows:
        m[names.index(n), items.index(i)] = v
    want = krippendorff.alpha(reliability_data=m, level_of_measurement="interval")
    assert st["agreement"]["value"] == pytest.approx(want, rel=1e-9)
    lo, hi = st["agreement"]["ci"]
    assert lo <= st["agreement"]["value"] <= hi


def test_stop_when_decided_stops_handing_out_items(sqlite_url: str, tmp_path: Path) -> None:
    eng, truth = _synthetic(sqlite_url, tmp_path)
    # only the good judge: it is decided (certified) long before the 40 items are labelled
    with eng.begin() as c:
        c.execute(
            text("DELETE FROM label WHERE annotator_id IN (SELECT id FROM annotator WHERE name = 'wrong')")
        )
    make_queue(eng, dataset="syn", dimension="q", items=N_ITEMS, per_item=3, scale="1-3", scorer="accuracy",
               epsilon=0.3, stop_when_decided=True)  # fmt: skip
    members = [member(eng, "q", f"h{k}")[0] for k in range(3)]
    given = _label_all(eng, members, truth, accuracy=0.95, seed=3, stop=1)
    st = certify.status(eng, "q", n_boot=0)
    assert st["judges"]["good"]["state"] == "certified" and st["decided_at"] is not None
    assert given < 3 * N_ITEMS  # stopped early: fewer labels than labelling everything
    assert all(store.next_slot(eng, m) is None for m in members)
    assert st["progress"]["complete"] >= 30  # not before the humans could enter the test


def test_human_position_bias_equals_metrics_bias_on_the_same_data(sample: tuple[str, Engine]) -> None:
    """Pairs seen in both orders by the queue's annotators give (v_AB, v_BA) exactly as a judge's
    swapped verdicts do; stored as a judge's verdicts, `metrics bias` reports the same figures."""
    url, eng = sample
    assert cli("data", "pairs", "se", "--name", "sp", "--sample", "40", "--seed", "2", db=url).code == 0
    make_queue(eng, name="q", kind="pairwise", pairs="sp", items=None, dimension=None, per_item=2, seed=5)
    a, _ = member(eng, "q", "a")
    b, _ = member(eng, "q", "b")
    rng = random.Random(4)
    for m in (a, b):
        while (s := store.next_slot(eng, m)) is not None:
            store.submit(eng, m, s, value=rng.choices(["A", "B", "T"], weights=[6, 3, 1])[0])  # leans left
    human = certify.human_position_bias(eng, "q")
    assert human is not None and human["pairs"] >= 10
    # the same presented answers, stored as one judge's AB and BA verdicts of a campaign
    as_judge_campaign(eng, "q", "se", "sp", "hb")
    judged = cli("metrics", "bias", "--campaign", "hb", "--json", db=url).json()["judges"]
    (figures,) = judged.values()
    for key in ("back_wins", "front_wins", "consistent", "inconsistent"):
        assert figures[key] == human[key], key
    assert figures["p_value"] == pytest.approx(human["p_value"], rel=1e-12)


def test_queue_labels_are_a_human_group_the_other_commands_read_at_once(
    sqlite_url: str, tmp_path: Path
) -> None:
    eng, truth = _synthetic(sqlite_url, tmp_path)
    make_queue(eng, dataset="syn", dimension="q", items=10, per_item=2, scale="1-3", group="lab")
    members = [member(eng, "q", f"h{k}")[0] for k in range(2)]
    _label_all(eng, members, truth, accuracy=0.9, seed=4)
    out = cli("metrics", "agreement", "--dataset", "syn", "--dimension", "q", "--group", "lab", "--metric", "alpha",
              "--json", db=sqlite_url).json()  # fmt: skip
    assert out["n_raters"] == 2 and out["n_units"] == 10
    # and the queue's α is the same coefficient over the same labels (interval level on a 1-3 scale)
    st = certify.status(eng, "q", n_boot=0)
    again = cli("metrics", "agreement", "--dataset", "syn", "--dimension", "q", "--group", "lab", "--metric", "alpha",
                "--level", "interval", "--json", db=sqlite_url).json()  # fmt: skip
    assert st["agreement"]["value"] == pytest.approx(again["value"], rel=1e-12)


def _same(a: object, b: object, path: str = "") -> None:
    """Equal, floats to 1e-12 relative (the bootstrap interval's replicates are summed in other
    blocks when its draws are kept)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), path
        for k in a:
            _same(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-12, abs=1e-15), path
    else:
        assert a == b, path


def test_the_cached_and_updated_state_equals_a_recompute_from_scratch(
    sqlite_url: str, tmp_path: Path
) -> None:
    """The owner's page keeps each queue's panel and result (`certify._Cache`): unchanged, the
    result is reused; after new labels, an edit, a skip, another queue's edit of a shared
    annotator or new judge labels, only what changed is read; after a deleted label row, all of it.
    Each time the state equals the one computed from a panel read from scratch."""
    from judgepanel.store import annotation_read as read

    eng, _truth = _synthetic(sqlite_url, tmp_path)
    make_queue(eng, dataset="syn", dimension="q", items=N_ITEMS, per_item=3, scale="1-3", scorer="accuracy",
               epsilon=0.2)  # fmt: skip
    make_queue(
        eng, name="q2", dataset="syn", dimension="q", items=N_ITEMS, per_item=1, scale="1-3", group="q"
    )
    members = [member(eng, "q", f"h{k}")[0] for k in range(3)]
    other = member(eng, "q2", "h0")[0]  # the same annotator as h0, in another queue
    rng = random.Random(8)
    cache = certify._cache_of(eng)

    def label(m: store.Member, n: int) -> None:
        for _ in range(n):
            s = store.next_slot(eng, m)
            assert s is not None
            store.submit(eng, m, s, value=rng.choice([1, 2, 3]))

    def check(n_boot: int = 50) -> None:
        cached = certify.certification(eng, "q", n_boot=n_boot)
        scratch = certify.certification(eng, "q", n_boot=n_boot, panel=read.queue_panel(eng, "q"))
        _same(cached, scratch)
        decided = certify.certification(eng, "q", n_boot=0, decision_only=True)
        _same(
            decided,
            certify.certification(eng, "q", n_boot=0, decision_only=True, panel=read.queue_panel(eng, "q")),
        )

    for m in members:
        label(m, 25)
    check()
    assert (cache.reads, cache.updates) == (1, 0)
    computed = cache.computations
    check()  # nothing changed: the results are reused
    assert cache.computations == computed and cache.reads == 1
    label(members[0], 3)
    label(members[1], 1)
    check()
    assert (cache.reads, cache.updates) == (1, 1)
    # an edit (the label row updated in place) and a skip
    mine = store.my_slots(eng, members[2])[0]
    store.submit(eng, members[2], mine["slot"], value=int(mine["value"]) % 3 + 1)
    s = store.next_slot(eng, members[2])
    assert s is not None
    store.submit(eng, members[2], s, skip_reason="unclear")
    check()
    # another queue edits h0's label of an item both queues hold: the same label row
    label(other, 30)
    done_by_other = store.my_slots(eng, other)
    for d in done_by_other[:5]:
        store.submit(eng, other, d["slot"], value=int(d["value"]) % 3 + 1, comment="other queue")
    check()
    # labels of a new llm annotator (as an import writes them): the judges are read again
    with eng.begin() as c:
        c.execute(text("INSERT INTO annotator (dataset_id, name, kind, \"group\") "
                       "SELECT id, 'late', 'llm', 'judges' FROM dataset WHERE name = 'syn'"))  # fmt: skip
        c.execute(text("INSERT INTO label (item_id, annotator_id, dimension, value_num, value_text) "
                       "SELECT i.id, a.id, 'q', 1 + i.id % 3, CAST(1 + i.id % 3 AS TEXT) FROM item i, annotator a "
                       "WHERE a.name = 'late'"))  # fmt: skip
    check()
    assert "late" in certify.certification(eng, "q", n_boot=0)["judges"]
    assert cache.reads == 1
    # a label row deleted: only a fresh read is safe
    with eng.begin() as c:
        c.execute(text("DELETE FROM label WHERE id = (SELECT min(l.id) FROM label l JOIN annotator a "
                       "ON a.id = l.annotator_id WHERE a.name = 'h1')"))  # fmt: skip
    check()
    assert cache.reads == 2


def test_a_pairwise_queues_updated_state_equals_a_recompute_from_scratch(sample: tuple[str, Engine]) -> None:
    """As above for pairs (`pair_label`, both backends), with a campaign's AB/BA verdicts as the judge."""
    from judgepanel.store import annotation_read as read

    url, eng = sample
    assert cli("data", "pairs", "se", "--name", "sp", "--sample", "30", "--seed", "2", db=url).code == 0
    make_queue(eng, name="q", kind="pairwise", pairs="sp", items=None, dimension=None, per_item=2, seed=5)
    a, _ = member(eng, "q", "a")
    b, _ = member(eng, "q", "b")
    rng = random.Random(6)
    cache = certify._cache_of(eng)

    def label(m: store.Member, n: int) -> None:
        for _ in range(n):
            s = store.next_slot(eng, m)
            assert s is not None
            store.submit(eng, m, s, value=rng.choice(["A", "B", "T"]))

    def check() -> None:
        scratch = certify.certification(eng, "q", n_boot=20, panel=read.queue_panel(eng, "q"))
        _same(certify.certification(eng, "q", n_boot=20), scratch)

    label(a, 12)
    label(b, 10)
    check()
    as_judge_campaign(eng, "q", "se", "sp", "hb")  # a judge appears: read again
    check()
    label(a, 5)
    label(b, 8)
    first = store.my_slots(eng, b)[0]
    store.submit(eng, b, first["slot"], value="T" if first["value"] != "T" else "A")
    check()
    assert cache.reads == 1 and cache.updates == 2


@pytest.mark.parametrize("seed", [11, 12])
def test_randomized_label_edit_delete_sequences_keep_the_state_equal_to_a_recompute(
    db_url: str, tmp_path: Path, seed: int
) -> None:
    """Random sequences of what changes a queue's panel — labels, skips, edits, another queue's
    labels and edits of a shared annotator, deleted label rows (alone, or with a row inserted in
    the same transaction, so the row count is unchanged), a new judge — on both backends: after
    every step the kept and updated certification state equals one computed from a panel read from
    scratch, and the incremental path was taken (not a fresh read every time)."""
    from judgepanel.store import annotation_read as read

    eng, _truth = _synthetic(db_url, tmp_path)
    make_queue(eng, dataset="syn", dimension="q", items=N_ITEMS, per_item=2, scale="1-3", scorer="accuracy",
               epsilon=0.2)  # fmt: skip
    make_queue(
        eng, name="q2", dataset="syn", dimension="q", items=N_ITEMS, per_item=1, scale="1-3", group="q"
    )
    members = [member(eng, "q", f"h{k}")[0] for k in range(3)]
    other = member(eng, "q2", "h0")[0]  # the same annotator as h0, in another queue
    rng = random.Random(seed)
    cache = certify._cache_of(eng)
    judges = 0

    def label(m: store.Member) -> None:
        s = store.next_slot(eng, m)
        if s is None:
            return
        if rng.random() < 0.15:
            store.submit(eng, m, s, skip_reason="unclear")
        else:
            store.submit(eng, m, s, value=rng.choice([1, 2, 3]))

    def edit(m: store.Member) -> None:
        mine = [d for d in store.my_slots(eng, m) if d["value"] is not None]
        if mine:
            d = rng.choice(mine)
            store.submit(eng, m, d["slot"], value=int(d["value"]) % 3 + 1)

    def delete(reinsert: bool) -> None:
        with eng.begin() as c:
            rows = c.execute(text("SELECT id, item_id, annotator_id FROM label ORDER BY id")).all()
            lid, item, aid = rng.choice(rows)
            c.execute(text("DELETE FROM label WHERE id = :i"), {"i": lid})
            if reinsert:  # another row of the same annotator and item: the count stays as it was
                v = rng.choice([1, 2, 3])
                c.execute(
                    text("INSERT INTO label (item_id, annotator_id, dimension, value_num, value_text) "
                         "VALUES (:it, :a, 'q', :v, :t)"),
                    {"it": item, "a": aid, "v": v, "t": str(v)},
                )  # fmt: skip

    def new_judge() -> None:
        nonlocal judges
        judges += 1
        with eng.begin() as c:
            c.execute(text("INSERT INTO annotator (dataset_id, name, kind, \"group\") "
                           f"SELECT id, 'late{judges}', 'llm', 'judges' FROM dataset WHERE name = 'syn'"))  # fmt: skip
            c.execute(text("INSERT INTO label (item_id, annotator_id, dimension, value_num, value_text) "
                           "SELECT i.id, a.id, 'q', 1 + (i.id + :s) % 3, CAST(1 + (i.id + :s) % 3 AS TEXT) "
                           "FROM item i, annotator a WHERE a.name = :n"),
                      {"s": rng.randrange(3), "n": f"late{judges}"})  # fmt: skip

    def check() -> None:
        for n_boot, only in ((10, False), (0, True)):
            cached = certify.certification(eng, "q", n_boot=n_boot, decision_only=only)
            scratch = certify.certification(
                eng, "q", n_boot=n_boot, decision_only=only, panel=read.queue_panel(eng, "q")
            )
            _same(cached, scratch)

    try:
        for m in members:  # enough complete units for the tests to run
            for _ in range(12):
                label(m)
        check()
        steps = ["label"] * 8 + ["edit"] * 3 + ["other"] * 2 + ["delete", "swap", "judge"]
        for _ in range(30):
            step = rng.choice(steps)
            if step == "label":
                for _ in range(rng.randint(1, 3)):
                    label(rng.choice(members))
            elif step == "edit":
                edit(rng.choice(members))
            elif step == "other":
                label(other) if rng.random() < 0.5 else edit(other)
            elif step in ("delete", "swap"):
                delete(reinsert=step == "swap")
            else:
                new_judge()
            check()
        assert cache.updates > 0  # the incremental path was exercised
    finally:
        eng.dispose()


def test_an_edit_committed_after_a_later_numbered_event_is_not_missed(db_url: str, tmp_path: Path) -> None:
    """On PostgreSQL two writers may commit out of id order: an edit's event numbered below the
    newest event the kept panel was read under. The panel's key counts the events, so the edit is
    read (a fresh read); by newest id alone the kept state stayed the old one."""
    from judgepanel.store import annotation_read as read

    eng, _truth = _synthetic(db_url, tmp_path)
    try:
        make_queue(
            eng, dataset="syn", dimension="q", items=N_ITEMS, per_item=2, scale="1-3", scorer="accuracy"
        )
        members = [member(eng, "q", f"h{k}")[0] for k in range(2)]
        for m in members:
            for _ in range(20):
                s = store.next_slot(eng, m)
                assert s is not None
                store.submit(eng, m, s, value=1)
        with eng.begin() as c:  # a later-numbered event, committed first: ids below it stay free
            c.execute(
                text("INSERT INTO annotation_event (id, queue_id, unit_id, slot_id, member_id, kind, value, created_at) "
                     "SELECT max(id) + 10, queue_id, unit_id, slot_id, member_id, 'label', '1', created_at "
                     "FROM annotation_event GROUP BY queue_id, unit_id, slot_id, member_id, created_at "
                     "ORDER BY max(id) DESC LIMIT 1")
            )  # fmt: skip
        kept = certify.certification(eng, "q", n_boot=10)
        mine = store.my_slots(eng, members[0])
        with eng.begin() as c:  # the edit: its label row changed in place, its event numbered lower
            row = c.execute(
                text("SELECT u.item_id, s.unit_id, s.id FROM annotation_slot s JOIN annotation_unit u "
                     "ON u.id = s.unit_id WHERE s.id = :s"), {"s": mine[0]["slot"]}
            ).one()  # fmt: skip
            c.execute(
                text(
                    "UPDATE label SET value_num = 3, value_text = '3' WHERE item_id = :i AND annotator_id = :a"
                ),
                {"i": row[0], "a": members[0].annotator_id},
            )
            c.execute(
                text("INSERT INTO annotation_event (id, queue_id, unit_id, slot_id, member_id, kind, value, created_at) "
                     "SELECT max(id) - 5, :q, :u, :s, :m, 'edit', '3', CURRENT_TIMESTAMP FROM annotation_event"),
                {"q": members[0].queue.id, "u": row[1], "s": row[2], "m": members[0].id},
            )  # fmt: skip
        scratch = certify.certification(eng, "q", n_boot=10, panel=read.queue_panel(eng, "q"))
        assert scratch != kept  # the edit moves the figures
        _same(certify.certification(eng, "q", n_boot=10), scratch)
    finally:
        eng.dispose()
