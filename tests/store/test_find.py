"""store.find on a real SQLite file (FTS5, and the LIKE fallback) and a real PostgreSQL database
(to_tsvector indexes): search, sort and keyset paging in both directions agree with an
independent Python path over the same rows, and migration 0010_search's triggers keep the index
in step with inserts, updates and deletes."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, text

from judgepanel.errors import BadInput
from judgepanel.store import migrate
from judgepanel.store.engine import make_engine
from judgepanel.store.find import VerdictSearch, search_mode, search_page, search_terms
from tests.helpers import bulk_db

# no word is a piece of another except as its start, so a substring (LIKE) and a word-prefix
# (full-text) search find the same rows for these terms
WORDS = ("apple", "banana", "cherry", "damson", "elder", "fig", "grape", "hazel", "kiwi", "lemon")
TERMS = ("apple", "banana cherry", "dams", "fig", "hazel kiwi lemon", "zzz", "judge", "j1", "m1")


def _load(url: str) -> Engine:
    bulk_db(url, 160, judges=2, humans=3)
    eng = make_engine(url)
    rng = random.Random(7)
    with eng.begin() as conn:
        ids = [r[0] for r in conn.execute(text("SELECT id FROM verdict ORDER BY id"))]
        new = [{"r": " ".join(rng.choice(WORDS) for _ in range(3)) if v % 9 else None, "i": v} for v in ids]
        conn.execute(text("UPDATE verdict SET rationale = :r WHERE id = :i"), new)  # the update trigger
        items = [r[0] for r in conn.execute(text("SELECT id FROM item ORDER BY id"))]
        for iid in items[::5]:
            conn.execute(
                text("UPDATE item SET output = :o WHERE id = :i"), {"o": f"Cherry-{iid} tart", "i": iid}
            )
        conn.execute(text("UPDATE response SET latency_ms = NULL WHERE id % 7 = 0"))
    return eng


@pytest.fixture
def loaded(db_url: str) -> Iterator[Engine]:
    eng = _load(db_url)
    yield eng
    eng.dispose()


def _rows(eng: Engine) -> list[dict[str, Any]]:
    with eng.connect() as conn:
        got = conn.execute(
            text(
                "SELECT v.id, v.rationale, v.score, r.latency_ms, r.cost_usd, g.name, i.external_id, i.input, "
                "i.output, i.system, (SELECT avg(l.value_num) FROM label l JOIN annotator a ON a.id = l.annotator_id "
                "WHERE l.item_id = j.item_id AND a.kind = 'human' AND l.dimension = coalesce(j.dimension, '')) "
                "FROM verdict v JOIN job j ON j.id = v.job_id JOIN judge g ON g.id = j.judge_id "
                "JOIN item i ON i.id = j.item_id LEFT JOIN response r ON r.request_id = v.request_id ORDER BY v.id"
            )
        ).all()
    keys = (
        "id",
        "rationale",
        "score",
        "latency",
        "cost",
        "judge",
        "eid",
        "input",
        "output",
        "system",
        "mean",
    )
    return [dict(zip(keys, r, strict=True)) for r in got]


def _words(*texts: str | None) -> set[str]:
    return {w.lower() for t in texts for w in re.findall(r"[^\W_]+", t or "")}


def _want(rows: list[dict[str, Any]], q: str) -> list[int]:
    """Every word of `q` a prefix of some word of the rationale, the item's texts or the judge."""
    terms = search_terms(q)
    out = []
    for r in rows:
        where = [
            _words(r["rationale"]),
            _words(r["eid"], r["input"], r["output"], r["system"]),
            _words(r["judge"]),
        ]
        if all(any(any(w.startswith(t) for w in ws) for ws in where) for t in terms):
            out.append(r["id"])
    return out


def _walk(eng: Engine, s: VerdictSearch, limit: int = 7) -> list[int]:
    ids: list[int] = []
    after = None
    while True:
        rows, more = search_page(eng, "bench", s, after=after, limit=limit)
        ids += [r.row.verdict_id for r in rows]
        if not more:
            return ids
        after = rows[-1].row.verdict_id


def _walk_back(eng: Engine, s: VerdictSearch, last: int, limit: int = 7) -> list[int]:
    ids: list[int] = [last]
    before = last
    while True:
        rows, more = search_page(eng, "bench", s, before=before, limit=limit)
        ids = [r.row.verdict_id for r in rows] + ids
        if not more:
            return ids
        before = rows[0].row.verdict_id


def test_search_finds_what_a_python_scan_finds(loaded: Engine) -> None:
    assert search_mode(loaded) == ("fts5" if loaded.dialect.name == "sqlite" else "postgresql")
    rows = _rows(loaded)
    for q in TERMS:
        want = _want(rows, q)
        assert _walk(loaded, VerdictSearch(q=q)) == want, q
    assert _want(rows, "apple") and _want(rows, "zzz") == []


def test_sorts_and_keyset_pages_agree_with_python(loaded: Engine) -> None:
    rows = _rows(loaded)
    keys = {
        "score": lambda r: r["score"],
        "latency": lambda r: r["latency"],
        "cost": lambda r: r["cost"],
        "disagreement": lambda r: (
            None if r["mean"] is None or r["score"] is None else abs(r["mean"] - r["score"])
        ),
    }
    for sort, key in keys.items():
        for desc in (False, True):
            have = [r for r in rows if key(r) is not None]
            missing = [r["id"] for r in rows if key(r) is None]
            ordered = sorted(have, key=lambda r: (-key(r) if desc else key(r), r["id"]))
            want = [r["id"] for r in ordered] + missing
            s = VerdictSearch(sort=sort, descending=desc)
            got = _walk(loaded, s)
            assert got == want, (sort, desc)
            assert _walk_back(loaded, s, want[-1]) == want, (sort, desc)
    s = VerdictSearch(q="banana", sort="latency", descending=True)
    assert _walk(loaded, s) == [
        i
        for i in [
            r["id"] for r in sorted(rows, key=lambda r: (r["latency"] is None, -(r["latency"] or 0), r["id"]))
        ]
        if i in set(_want(rows, "banana"))
    ]
    # by id, descending
    ids = [r["id"] for r in rows]
    assert _walk(loaded, VerdictSearch(descending=True)) == ids[::-1]


def _sorted_ids(rows: list[dict[str, Any]], sort: str, desc: bool) -> list[int]:
    def key(r: dict[str, Any]) -> float | None:
        if sort == "disagreement":
            return None if r["mean"] is None or r["score"] is None else abs(r["mean"] - r["score"])
        return r[sort]  # type: ignore[no-any-return]

    have = [r for r in rows if key(r) is not None]
    ordered = sorted(have, key=lambda r: (-key(r) if desc else key(r), r["id"]))  # type: ignore[operator]
    return [r["id"] for r in ordered] + [r["id"] for r in rows if key(r) is None]


def test_a_kept_sort_order_is_read_again_after_any_change(loaded: Engine) -> None:
    """The whole list's order is kept between pages (`store.find_order`) and read again after a
    new label, a label edited in place by an annotation queue (its event), a deleted verdict and a
    new response: each time the pages equal a Python sort of the rows as they are now."""
    from judgepanel.annotate.queues import CreateOptions, create, invite
    from judgepanel.store import annotation as ann
    from judgepanel.store import find_order

    checked = [("disagreement", True), ("latency", False), ("score", True)]

    def agree() -> None:
        rows = _rows(loaded)
        for sort, desc in checked:
            assert _walk(loaded, VerdictSearch(sort=sort, descending=desc), limit=40) == _sorted_ids(
                rows, sort, desc
            ), (sort, desc)

    agree()
    reads = find_order.reads(loaded)
    agree()
    assert find_order.reads(loaded) == reads  # unchanged: every page from the kept orders
    with loaded.begin() as conn:  # a new human's label moves that item's disagreement
        item = conn.execute(
            text("SELECT j.item_id FROM verdict v JOIN job j ON j.id = v.job_id ORDER BY v.id LIMIT 1")
        ).scalar_one()
        conn.execute(text("INSERT INTO annotator (dataset_id, name, kind, \"group\") SELECT dataset_id, 'hx', "
                          "'human', 'expert' FROM item WHERE id = :i"), {"i": item})  # fmt: skip
        conn.execute(
            text("INSERT INTO label (item_id, annotator_id, dimension, value_num, value_text) "
                 "SELECT :i, id, 'coherence', 1, '1' FROM annotator WHERE name = 'hx'"), {"i": item}
        )  # fmt: skip
    agree()
    assert find_order.reads(loaded) == reads + len(checked)
    # a queue's annotator labels an item, then edits the label in place (the row keeps its id)
    create(
        loaded, CreateOptions(name="qq", dataset="d", dimension="coherence", items=4, per_item=1, scale="1-5")
    )
    token = invite(loaded, "qq", "ann", "http://127.0.0.1:1")["token"]
    m = ann.member_by_token(loaded, "qq", ann.token_hash(token))
    slot = ann.next_slot(loaded, m)
    assert slot is not None
    ann.submit(loaded, m, slot, value=1)
    agree()
    reads = find_order.reads(loaded)
    ann.submit(loaded, m, slot, value=5)
    agree()
    assert find_order.reads(loaded) == reads + len(checked)
    with loaded.begin() as conn:
        first = conn.execute(text("SELECT min(id) FROM verdict")).scalar()
        conn.execute(text("DELETE FROM verdict WHERE id = :i"), {"i": first})
    agree()
    with loaded.begin() as conn:  # a response replaced by a slower one: the count stays, the id moves
        rid = conn.execute(text("SELECT min(request_id) FROM response WHERE latency_ms IS NOT NULL")).scalar()
        conn.execute(text("DELETE FROM response WHERE request_id = :r"), {"r": rid})
        conn.execute(
            text(
                "INSERT INTO response (request_id, ok, latency_ms, created_at) VALUES (:r, :ok, 1e9, CURRENT_TIMESTAMP)"
            ),
            {"r": rid, "ok": True},
        )
    agree()


def test_the_index_follows_deletes_and_new_rows(loaded: Engine) -> None:
    rows = _rows(loaded)
    with loaded.begin() as conn:
        conn.execute(text("UPDATE verdict SET rationale = 'quince' WHERE id = :i"), {"i": rows[0]["id"]})
        conn.execute(text("DELETE FROM verdict WHERE id = :i"), {"i": rows[1]["id"]})
    assert _walk(loaded, VerdictSearch(q="quince")) == [rows[0]["id"]]
    after = _rows(loaded)
    assert _walk(loaded, VerdictSearch(q="apple")) == _want(after, "apple")
    if loaded.dialect.name == "sqlite":
        with loaded.begin() as conn:  # FTS5's own check that the index matches its content table
            conn.execute(text("INSERT INTO verdict_fts(verdict_fts) VALUES ('integrity-check')"))
            conn.execute(text("INSERT INTO item_fts(item_fts) VALUES ('integrity-check')"))


def test_without_the_index_a_like_scan_gives_the_same_rows(sqlite_url: str) -> None:
    eng = _load(sqlite_url)
    rows = _rows(eng)
    with eng.begin() as conn:  # as a table rebuild by a later migration would leave it
        conn.execute(text("DROP TRIGGER verdict_fts_au"))
    eng.dispose()
    eng = make_engine(sqlite_url)
    assert search_mode(eng) == "like"
    for q in TERMS:
        assert _walk(eng, VerdictSearch(q=q)) == _want(rows, q), q
    eng.dispose()


def test_search_words_are_checked() -> None:
    assert search_terms("  Apple, BANANA apple_x ") == ["apple", "banana", "x"]
    assert search_terms("") == [] and search_terms(None) == []
    for bad in ("<>!", "x" * 201):
        with pytest.raises(BadInput):
            search_terms(bad)


def test_search_revision_down_and_up(db_url: str) -> None:
    eng = _load(db_url)
    migrate.downgrade(eng, "0009_plan_shape")
    with eng.connect() as conn:
        if eng.dialect.name == "sqlite":
            left = conn.execute(text("SELECT name FROM sqlite_master WHERE name LIKE '%fts%'")).all()
        else:
            left = conn.execute(
                text("SELECT indexname FROM pg_indexes WHERE indexname LIKE '%_search'")
            ).all()
        assert left == []
        n = conn.execute(text("SELECT count(*) FROM verdict")).scalar_one()
    assert n > 0
    migrate.upgrade(eng)
    eng.dispose()
    eng = make_engine(db_url)  # a new engine: the search mode is looked up again
    assert search_mode(eng) != "like"
    assert _walk(eng, VerdictSearch(q="apple")) == _want(_rows(eng), "apple")
    assert migrate.drift(eng) == []
    eng.dispose()
