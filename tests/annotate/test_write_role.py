"""The writing engine of the annotators' pages (issue 32 §3): on PostgreSQL it works as the
`judgepanel_annotator` role that `db upgrade` creates, which can read everything and write only
the listed columns of the annotation tables; on SQLite an authorizer allows the same and nothing
else. Shown by trying every other write through that very engine."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from judgepanel.store import annotation as store
from judgepanel.store.annotation_engine import annotation_engine
from tests.annotate.conftest import make_queue, member

# writes the role must not be able to make (each on its own transaction)
FORBIDDEN = [
    "INSERT INTO judge (name, provider, model, params) VALUES ('x', 'sim', 'x', '{}')",
    "UPDATE dataset SET name = 'hijacked'",
    "UPDATE item SET output = 'changed'",
    "DELETE FROM label",
    "DELETE FROM pair_label",
    "DELETE FROM annotation_event",
    "UPDATE label SET item_id = item_id",  # a column of label it may not change
    "UPDATE label SET annotator_id = annotator_id",
    "UPDATE annotation_member SET token_hash = 'x', revoked_at = NULL",
    "UPDATE annotation_queue SET per_item = 1",
    "UPDATE annotation_queue SET status = 'open'",
    "INSERT INTO annotation_member (queue_id, annotator_id, name, token_hash, created_at, invited_at) "
    "SELECT id, 1, 'intruder', 'h', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP FROM annotation_queue",
    "INSERT INTO annotation_slot (queue_id, unit_id, position, seat, state) SELECT queue_id, id, 0, 99, 'free' FROM annotation_unit",
    "UPDATE annotator SET kind = 'llm'",
    "DROP TABLE verdict",
    "CREATE TABLE t (x integer)",
    # an upsert that changes a column it may not update, on either backend
    "INSERT INTO label (id, item_id, annotator_id, dimension) SELECT id, item_id, annotator_id, dimension "
    "FROM label WHERE true ON CONFLICT (id) DO UPDATE SET dimension = 'moved'",
    # SQLite's REPLACE deletes the row in its way without asking the authorizer: it rewrote any
    # label whole (item, annotator, dimension) and any history row (PostgreSQL: not its syntax)
    "INSERT OR REPLACE INTO label (id, item_id, annotator_id, dimension, value_text) "
    "SELECT id, item_id, annotator_id, 'moved', value_text FROM label",
    "REPLACE INTO annotation_event (id, queue_id, unit_id, member_id, kind, created_at) "
    "SELECT id, queue_id, unit_id, member_id, 'skip', created_at FROM annotation_event",
]


def _refused(eng: Engine, sql: str) -> bool:
    try:
        with eng.begin() as c:
            c.execute(text(sql))
    except DBAPIError:
        return True
    return False


def test_the_writing_engine_writes_labels_and_nothing_else(sample: tuple[str, Engine]) -> None:
    url, owner = sample
    make_queue(owner, items=2, per_item=1)
    member(owner, "q", "a")
    eng = annotation_engine(url)
    try:
        m = store.member_by_token(eng, "q", _token_hash(owner))
        slot = store.next_slot(eng, m)  # reading and reserving: allowed
        assert slot is not None
        assert store.submit(eng, m, slot, value=4).kind == "label"  # label + event + seat: allowed
        assert store.submit(eng, m, slot, value=2).kind == "edit"
        with eng.begin() as c:  # what --stop-when-decided records: allowed
            c.execute(text("UPDATE annotation_queue SET decided_at = CURRENT_TIMESTAMP"))
        refused = [sql for sql in FORBIDDEN if _refused(eng, sql)]
        assert refused == FORBIDDEN
        with owner.connect() as c:  # nothing of it happened
            assert c.execute(text("SELECT count(*) FROM dataset WHERE name = 'hijacked'")).scalar() == 0
            assert c.execute(text("SELECT count(*) FROM annotation_member")).scalar() == 1
            assert c.execute(text("SELECT count(*) FROM label WHERE dimension = 'moved'")).scalar() == 0
            assert c.execute(text("SELECT kind FROM annotation_event ORDER BY id")).scalars().all() == [
                "label",
                "edit",
            ]
            assert (
                c.execute(
                    text(
                        "SELECT value_text FROM label l JOIN annotator a ON a.id = l.annotator_id WHERE a.name = 'a'"
                    )
                ).scalar()
                == "2"
            )
    finally:
        eng.dispose()


def _token_hash(engine: Engine) -> str:
    with engine.connect() as c:
        return str(c.execute(text("SELECT token_hash FROM annotation_member")).scalar())


@pytest.mark.postgres
def test_on_postgresql_the_role_is_the_boundary(pg_url: str) -> None:
    """The grants themselves (not the engine's code): the role may insert into label but not into
    verdict, update only the listed columns, delete nothing, and is not a superuser."""
    from tests.helpers import load_summeval_sample

    load_summeval_sample(pg_url)
    from judgepanel.store.engine import make_engine

    eng = make_engine(pg_url)
    try:
        with eng.connect() as c:

            def may(table: str, what: str) -> bool:
                return bool(
                    c.execute(
                        text("SELECT has_table_privilege('judgepanel_annotator', :t, :w)"),
                        {"t": table, "w": what},
                    ).scalar()
                )

            assert (
                may("label", "INSERT") and may("pair_label", "INSERT") and may("annotation_event", "INSERT")
            )
            assert (
                not may("verdict", "INSERT")
                and not may("label", "DELETE")
                and not may("annotation_member", "UPDATE")
            )
            assert not any(may(t, "DELETE") for t in ("label", "annotation_slot", "annotation_event", "job"))
            col = c.execute(
                text("SELECT has_column_privilege('judgepanel_annotator', 'annotation_queue', 'decided_at', 'UPDATE'), "
                     "has_column_privilege('judgepanel_annotator', 'annotation_queue', 'per_item', 'UPDATE'), "
                     "(SELECT rolsuper FROM pg_roles WHERE rolname = 'judgepanel_annotator')")
            ).one()  # fmt: skip
            assert tuple(col) == (True, False, False)
    finally:
        eng.dispose()


@pytest.mark.postgres
def test_annotate_serve_labels_through_the_role_on_postgresql(pg_url: str) -> None:
    """The whole path on PostgreSQL: the server starts as the role, hands out an item, takes the
    label, and the owner's page reads it back."""
    import httpx

    from tests.annotate.conftest import Server
    from tests.helpers import cli, load_summeval_sample

    load_summeval_sample(pg_url)
    assert (
        cli(
            "annotate",
            "create",
            "q",
            "--dataset",
            "se",
            "--dimension",
            "coherence",
            "--items",
            "2",
            db=pg_url,
        ).code
        == 0
    )
    token = cli("annotate", "invite", "q", "pg-ann", "--json", db=pg_url).json()["token"]
    s = Server(pg_url)
    try:
        h = {"Authorization": f"Bearer {token}"}
        nxt = httpx.get(f"{s.url}/api/annotate/q/next", headers=h).json()
        r = httpx.post(
            f"{s.url}/api/annotate/q/label",
            json={"slot": nxt["slot"], "value": 5, "csrf": nxt["csrf"]},
            headers=h,
        )
        assert r.status_code == 200 and r.json()["progress"]["done"] == 1
        assert httpx.get(f"{s.url}/api/annotate/q").json()["annotators"]["pg-ann"]["labels"] == 1
    finally:
        s.stop()
