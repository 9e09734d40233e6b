"""Hostile requests against the annotators' API, in process (`annotate serve`'s app over the
restricted writing engine) on a real SQLite file and a real PostgreSQL database: every malformed,
oversized or racing request is one message and a 4xx with nothing written, never a 500."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, func, select
from starlette.testclient import TestClient

from judgepanel.annotate.serve import create_serve_app
from judgepanel.store import annotation as store
from judgepanel.store import annotation_tables as at
from judgepanel.store.annotation_engine import annotation_engine
from judgepanel.store.readonly import read_only_engine
from tests.annotate.conftest import make_queue, member

BASE = "http://127.0.0.1:8765"


@pytest.fixture
def api(sample: tuple[str, Engine]) -> Iterator[tuple[TestClient, Engine, str]]:
    """The serving app over queue `q`, annotator `ann`'s token, and the owner's engine."""
    url, eng = sample
    make_queue(eng)
    _, token = member(eng, "q", "ann")
    write, read = annotation_engine(url), read_only_engine(url)
    app = create_serve_app(write, read)
    with TestClient(app, base_url=BASE, raise_server_exceptions=False) as client:
        client.headers["Authorization"] = f"Bearer {token}"
        yield client, eng, token
    write.dispose()
    read.dispose()


def _events(eng: Engine) -> int:
    with eng.connect() as c:
        return int(c.scalar(select(func.count()).select_from(at.annotation_event)) or 0)


def _post(client: TestClient, raw: str | bytes) -> Any:
    return client.post("/api/annotate/q/label", content=raw, headers={"Content-Type": "application/json"})


def test_malformed_label_bodies_are_4xx_and_write_nothing(api: tuple[TestClient, Engine, str]) -> None:
    """Absurd nesting (RecursionError in the JSON parser), a CSRF token that is not ASCII
    (`hmac.compare_digest` refuses such str), a slot beyond any id the database holds, and NUL or a
    lone surrogate in a comment or skip reason (PostgreSQL refuses NUL in text, neither driver
    encodes a lone surrogate) each answered 500."""
    client, eng, _ = api
    nxt = client.get("/api/annotate/q/next").json()
    slot, csrf = nxt["slot"], nxt["csrf"]

    def body(**fields: object) -> str:
        return json.dumps(fields)

    # JSON escapes that Python's json.loads turns into lone surrogates (json.dumps writes none)
    surrogate = body(slot=slot, value=3, csrf=csrf, comment="@").replace("@", "\\ud800")
    bodies = {
        "deep": body(slot=slot, value=3, csrf=csrf, x=0).replace("0}", "[" * 20000 + "]" * 20000 + "}"),
        "deep and unclosed": "[" * 60000,
        "csrf not ascii": body(slot=slot, value=3, csrf="é" * 64),
        "csrf lone surrogate": body(slot=slot, value=3, csrf="@").replace("@", "\\ud800"),
        "slot beyond 64 bits": body(slot=2**70, value=3, csrf=csrf),
        "slot beyond 32 bits": body(slot=2**31, value=3, csrf=csrf),
        "comment with NUL": body(slot=slot, value=3, csrf=csrf, comment="a\x00b"),
        "comment lone surrogate": surrogate,
        "skip with NUL": body(slot=slot, csrf=csrf, skip_reason="a\x00b"),
        "skip lone surrogate": body(slot=slot, csrf=csrf, skip_reason="@").replace("@", "\\udfff"),
    }
    answers = {name: _post(client, raw) for name, raw in bodies.items()}
    assert {k: r.status_code for k, r in answers.items() if not 400 <= r.status_code < 500} == {}
    assert all(r.json()["ok"] is False and r.json()["error"] for r in answers.values())
    assert _events(eng) == 0
    for path in ("/api/annotate/q/slot/99999999999999999999", f"/api/annotate/q/slot/{2**31}"):
        r = client.get(path)
        assert r.status_code == 404 and r.json()["ok"] is False, (path, r.text[:200])
    # and the seat still takes a proper label
    assert _post(client, json.dumps({"slot": slot, "value": 3, "csrf": csrf})).status_code == 200


def test_a_double_submit_racing_itself_is_one_label_and_409s(api: tuple[TestClient, Engine, str]) -> None:
    """Four identical first labels of one seat at once (a double click, two tabs): on PostgreSQL
    the losers inserted the same `label` row and answered 500 (unique violation)."""
    client, eng, token = api
    m = store.member_by_token(eng, "q", store.token_hash(token))
    for _ in range(3):
        slot = store.next_slot(eng, m)
        assert slot is not None
        body = json.dumps(
            {"slot": slot, "value": 4, "csrf": client.get("/api/annotate/q/next").json()["csrf"]}
        )
        codes: list[int] = []
        gate = threading.Barrier(4)

        def send(body: str = body, codes: list[int] = codes, gate: threading.Barrier = gate) -> None:
            gate.wait()
            codes.append(_post(client, body).status_code)

        threads = [threading.Thread(target=send) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(codes) == [200, 409, 409, 409], codes
    with eng.connect() as c:
        kinds = c.execute(
            select(at.annotation_event.c.kind, func.count()).group_by(at.annotation_event.c.kind)
        )
        assert dict(kinds.all()) == {"label": 3}


def test_nul_in_an_address_is_400(api: tuple[TestClient, Engine, str]) -> None:
    """A queue name with NUL in the annotators' and the owner's addresses answered 500 on
    PostgreSQL (which refuses NUL in text)."""
    client, _, _ = api
    for path in (
        "/api/annotate/%00/next",
        "/api/annotate/q%00/meta",
        "/a/%00",
        "/a/q?token=%00",
        "/annotate/%00",
    ):
        r = client.get(path)
        assert r.status_code == 400 and "NUL" in r.text, (path, r.status_code)
        assert r.headers["x-frame-options"] == "DENY"


def test_no_free_connection_is_a_503_with_retry_after(sample: tuple[str, Engine]) -> None:
    """As the viewer (issue 29 §6): with every connection in use a request is told to come back,
    instead of waiting out SQLAlchemy's 30 s and answering 500."""
    url, eng = sample
    make_queue(eng)
    _, token = member(eng, "q", "ann")
    write = annotation_engine(url, pool_size=1, pool_timeout=0.5)
    read = read_only_engine(url, pool_size=1, pool_timeout=0.5)
    app = create_serve_app(write, read)
    try:
        with TestClient(app, base_url=BASE, raise_server_exceptions=False) as client:
            auth = {"Authorization": f"Bearer {token}"}
            with write.connect(), read.connect():  # each pool's only connection, held elsewhere
                for path, headers in (
                    ("/api/annotate/q/next", auth),
                    ("/api/annotate/q", {}),
                    ("/annotate/q", {}),
                ):
                    r = client.get(path, headers=headers)
                    assert r.status_code == 503 and int(r.headers["retry-after"]) >= 1, (path, r.status_code)
                    assert "busy" in r.text and r.headers["x-frame-options"] == "DENY"
            assert client.get("/api/annotate/q/next", headers=auth).status_code == 200
    finally:
        write.dispose()
        read.dispose()


def test_the_losers_of_a_double_submit_are_told_it_is_recorded(api: tuple[TestClient, Engine, str]) -> None:
    """On SQLite a loser of that race could read the seat as still reserved, find it labelled when it
    wrote, and answer "your reservation of this item lapsed and another annotator has it now": about
    the annotator's own other click. Every loser now says the label is recorded."""
    client, _eng, token = api
    m = store.member_by_token(_eng, "q", store.token_hash(token))
    messages: list[str] = []
    for _ in range(6):
        slot = store.next_slot(_eng, m)
        if slot is None:
            break
        body = json.dumps(
            {"slot": slot, "value": 2, "csrf": client.get("/api/annotate/q/next").json()["csrf"]}
        )
        gate = threading.Barrier(6)
        answers: list[tuple[int, str]] = []

        def send(
            body: str = body, gate: threading.Barrier = gate, answers: list[tuple[int, str]] = answers
        ) -> None:
            gate.wait()
            r = _post(client, body)
            answers.append((r.status_code, r.json().get("error", "")))

        threads = [threading.Thread(target=send) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(code for code, _ in answers) == [200, 409, 409, 409, 409, 409], answers
        messages += [msg for code, msg in answers if code == 409]
    assert len(messages) >= 25
    assert all(msg.startswith("already recorded") for msg in messages), sorted(set(messages))
