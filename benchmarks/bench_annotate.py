"""Annotation queues at scale (issue 32 §5): the annotator's next-item request and a label POST with
10⁶ labels stored, and the owner's page recomputing the certification state at 10⁵ labels.

1. A SQLite database with 10⁶ labels: a queue of `UNITS` items × 3 seats whose first 95 % are
   labelled (3 annotators; their `label` rows and `annotation_event` history), two imported judges
   labelling every item, and imported labels of other annotators to make 10⁶. A fourth annotator
   then asks for an item and labels it, `REPEATS` times, through the whole ASGI stack in-process
   (`annotate serve`'s app over the restricted writing engine: routing, token look-up, CSRF, the
   compare-and-set reservation, the label, the event): the median server time of `GET …/next` and
   of `POST …/label`. Reference in the same run: the same engine's round trip for a one-row
   primary-key SELECT (what every request pays at least).
2. A queue of 10⁵ labels (`UNITS_OWNER` items × 3 annotators, all complete) with two imported
   judges: the median time of the certification state (`annotate.certify.certification`: reading
   the panel, the advantages, the anytime tests with their bounds, the fixed-sample reference, α
   with 200 bootstrap resamples) from scratch (a fresh engine, so nothing kept), after one new
   label (the kept panel brought up to date, everything recomputed on it), and unchanged (the kept
   result); the whole owner status from scratch; reference: reading the panel alone.

Targets: ≤ 50 ms per request, ≤ 1 s for the recomputation. Run: `python -m benchmarks annotate`.
"""

from __future__ import annotations

import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

UNITS = int(os.environ.get("JP_BENCH_ANNOTATE_UNITS", "200000"))
UNITS_OWNER = int(os.environ.get("JP_BENCH_ANNOTATE_OWNER_UNITS", "33334"))
LABELS = 1_000_000
REPEATS = 50


def _median(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    return _medians(fn, repeats)[0]


def _medians(fn: Callable[[], object], repeats: int = REPEATS) -> tuple[float, float]:
    """(wall, CPU) medians: on a shared machine the wall time includes waiting for a core, the
    process CPU time does not."""
    wall, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu)


def _load() -> str:
    return "load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg())


def _build(path: Path, units: int, done_share: float, extra_labels: int) -> str:
    """The database: items, two judges on every item, a queue of `units` × 3 seats with the first
    `done_share` labelled by m0–m2, `extra_labels` more imported labels; returns its URL."""
    from judgepanel.annotate.queues import CreateOptions, create
    from judgepanel.store import migrate
    from judgepanel.store.engine import make_engine

    url = f"sqlite:///{path}"
    eng = make_engine(url)
    migrate.upgrade(eng)
    raw = sqlite3.connect(path)
    raw.execute(
        "INSERT INTO dataset (name, kind, source_hash, meta, created_at) VALUES ('bench', 'labels', 'x', '{}', CURRENT_TIMESTAMP)"
    )
    raw.executemany(
        "INSERT INTO item (id, dataset_id, external_id, position, group_key, input, output, meta) VALUES (?, 1, ?, ?, ?, ?, ?, '{}')",
        ((i + 1, f"i{i}", i, f"g{i // 16}", "an article " * 40, "a summary " * 10) for i in range(units)),
    )
    raw.executemany(
        'INSERT INTO annotator (id, dataset_id, name, kind, "group") VALUES (?, 1, ?, ?, ?)',
        [(1, "judge_a", "llm", "judges"), (2, "judge_b", "llm", "judges"), (3, "other", "human", "crowd")],
    )
    raw.executemany(
        "INSERT INTO label (item_id, annotator_id, dimension, value_num, value_text) VALUES (?, ?, 'q', ?, ?)",
        ((i + 1, a, float(1 + (i * a) % 5), str(1 + (i * a) % 5)) for a in (1, 2) for i in range(units)),
    )
    raw.executemany(
        "INSERT INTO label (item_id, annotator_id, dimension, value_num, value_text) VALUES (?, 3, ?, 3, '3')",
        ((1 + k % units, f"d{k // units}") for k in range(extra_labels)),
    )
    raw.commit()
    raw.close()
    create(
        eng, CreateOptions(name="q", dataset="bench", dimension="q", items=units, per_item=3, order="random")
    )
    tokens = {}
    for k in range(5):
        from judgepanel.annotate.queues import invite

        tokens[f"m{k}"] = invite(eng, "q", f"m{k}", "http://127.0.0.1")["token"]
    raw = sqlite3.connect(path)
    done = int(units * done_share)
    members = dict(raw.execute("SELECT name, id FROM annotation_member").fetchall())
    annotators = dict(raw.execute("SELECT name, annotator_id FROM annotation_member").fetchall())
    rows = raw.execute(
        "SELECT s.id, s.unit_id, s.seat, u.item_id FROM annotation_slot s JOIN annotation_unit u ON u.id = s.unit_id "
        "WHERE s.position < ?",
        (done,),
    ).fetchall()
    raw.executemany(
        "UPDATE annotation_slot SET state = 'done', member_id = ?, reserved_at = CURRENT_TIMESTAMP, done_at = CURRENT_TIMESTAMP WHERE id = ?",
        ((members[f"m{seat}"], sid) for sid, _, seat, _ in rows),
    )
    raw.executemany(
        "INSERT INTO label (item_id, annotator_id, dimension, value_num, value_text) VALUES (?, ?, 'q', ?, ?)",
        (
            (item, annotators[f"m{seat}"], float(1 + (item + seat) % 5), str(1 + (item + seat) % 5))
            for _, _, seat, item in rows
        ),
    )
    raw.executemany(
        "INSERT INTO annotation_event (queue_id, unit_id, slot_id, member_id, kind, value, seconds, created_at) "
        "VALUES (1, ?, ?, ?, 'label', ?, 12.0, CURRENT_TIMESTAMP)",
        ((unit, sid, members[f"m{seat}"], str(1 + (item + seat) % 5)) for sid, unit, seat, item in rows),
    )
    raw.commit()
    raw.execute("ANALYZE")
    raw.close()
    eng.dispose()
    os.environ["_JP_BENCH_TOKEN"] = tokens["m3"]
    return url


def requests_at_a_million(folder: Path) -> None:
    from starlette.testclient import TestClient

    from judgepanel.annotate.serve import create_serve_app
    from judgepanel.store.annotation_engine import annotation_engine
    from judgepanel.store.readonly import read_only_engine

    t = time.perf_counter()
    queue_labels = int(UNITS * 0.95) * 3
    url = _build(folder / "million.db", UNITS, 0.95, LABELS - 2 * UNITS - queue_labels)
    raw = sqlite3.connect(folder / "million.db")
    stored = raw.execute("SELECT count(*) FROM label").fetchone()[0]
    raw.close()
    print(
        f"built {stored:,} labels ({UNITS:,} queue items × 3 seats, 95 % labelled) in {time.perf_counter() - t:.0f} s"
    )
    write = annotation_engine(url)
    app = create_serve_app(write, read_only_engine(url), allowed_hosts=None)
    client = TestClient(app, base_url="http://127.0.0.1")
    headers = {"Authorization": "Bearer " + os.environ["_JP_BENCH_TOKEN"]}
    timed: dict[str, list[tuple[float, float]]] = {"next": [], "label": []}
    value = 1
    for _ in range(REPEATS):
        t, c = time.perf_counter(), time.process_time()
        got = client.get("/api/annotate/q/next", headers=headers).json()
        timed["next"].append((time.perf_counter() - t, time.process_time() - c))
        t, c = time.perf_counter(), time.process_time()
        r = client.post(
            "/api/annotate/q/label",
            headers=headers,
            json={"slot": got["slot"], "value": value, "csrf": got["csrf"]},
        )
        timed["label"].append((time.perf_counter() - t, time.process_time() - c))
        assert r.status_code == 200, r.text
        value = value % 5 + 1

    def reference() -> None:
        with write.connect() as c:
            c.exec_driver_sql("SELECT id FROM annotation_queue WHERE id = 1").all()

    ref = _median(reference)
    print(f"({_load()}; reference: a primary-key SELECT, {ref * 1000:.2f} ms)")
    for what, label in (("next", "GET  /next "), ("label", "POST /label")):
        wall = statistics.median(w for w, _ in timed[what])
        cpu = statistics.median(c for _, c in timed[what])
        print(
            f"{label} median {wall * 1000:.1f} ms wall, {cpu * 1000:.1f} ms CPU ({wall / ref:.0f}× the reference)"
        )
    write.dispose()


def owner_at_a_hundred_thousand(folder: Path) -> None:
    from sqlalchemy import text

    from judgepanel.annotate import certify
    from judgepanel.store import annotation as store
    from judgepanel.store import annotation_read as read
    from judgepanel.store.engine import make_engine

    url = _build(folder / "owner.db", UNITS_OWNER, 1.0, 0)
    eng = make_engine(url)
    raw = sqlite3.connect(folder / "owner.db")
    queue_labels = raw.execute("SELECT count(*) FROM annotation_event").fetchone()[0]
    raw.close()

    def scratch() -> None:  # a fresh engine: nothing kept, the panel read and everything computed
        fresh = make_engine(url)
        certify.certification(fresh, "q")
        fresh.dispose()

    panel = _medians(lambda: read.queue_panel(eng, "q"), 5)
    cert = _medians(scratch, 5)
    whole = _medians(lambda: certify.status(make_engine(url), "q"), 5)
    state = certify.certification(eng, "q")
    kept = _medians(lambda: certify.certification(eng, "q"), 5)
    # one new label each time (an edit of m0's, as labels keep arriving while the owner watches)
    with eng.connect() as c:
        m_id, a_id = c.execute(text("SELECT id, annotator_id FROM annotation_member WHERE name = 'm0'")).one()
        slots = [
            r[0]
            for r in c.execute(
                text("SELECT id FROM annotation_slot WHERE member_id = :m LIMIT 5"), {"m": m_id}
            )
        ]
    m0 = store.Member(int(m_id), "m0", int(a_id), store.queue(eng, "q"))
    edits = iter(range(100))

    def after_a_label() -> None:
        k = next(edits)
        store.submit(eng, m0, slots[k % len(slots)], value=k % 5 + 1, comment=f"edit {k}")
        t, c = time.perf_counter(), time.process_time()
        certify.certification(eng, "q")
        timed.append((time.perf_counter() - t, time.process_time() - c))

    timed: list[tuple[float, float]] = []
    for _ in range(5):
        after_a_label()
    updated = statistics.median(w for w, _ in timed), statistics.median(c for _, c in timed)
    print(f"{queue_labels:,} queue labels, {len(state['judges'])} judges ({_load()}), wall / CPU seconds: "
          f"certification state from scratch {cert[0]:.2f} / {cert[1]:.2f}, after one new label "
          f"{updated[0]:.3f} / {updated[1]:.3f}, unchanged {kept[0]:.4f} / {kept[1]:.4f}; whole owner status from "
          f"scratch {whole[0]:.2f} / {whole[1]:.2f}; reading the panel alone {panel[0]:.2f} / {panel[1]:.2f} "
          f"(from scratch {cert[1] / panel[1]:.1f}x its CPU, after a label {updated[1] / panel[1]:.2f}x)")  # fmt: skip
    eng.dispose()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="jp-bench-annotate-") as tmp:
        folder = Path(tmp)
        owner_at_a_hundred_thousand(folder)
        requests_at_a_million(folder)


if __name__ == "__main__":
    main()
