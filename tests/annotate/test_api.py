"""The annotators' JSON API and the owner's pages, against `judgepanel annotate serve` running as a
real server on 127.0.0.1 (issue 32 §2–4): authentication, CSRF, the 4xx of every input problem
with nothing written twice, revocation at the next request, the owner's token, and the viewer
serving the owner's pages read-only."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from judgepanel.store.engine import make_engine
from tests.annotate.conftest import Server
from tests.helpers import cli, load_summeval_sample

OWNER = "owner-token-for-the-annotate-tests-0123"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('annotate-api') / 'judgepanel.db'}"
    load_summeval_sample(url)
    for args in (
        ["q", "--items", "8", "--per-item", "2"],
        ["fast", "--items", "2", "--per-item", "1", "--reserve-minutes", "0.02"],
        ["shut", "--items", "2", "--per-item", "1"],
    ):
        r = cli("annotate", "create", *args, "--dataset", "se", "--dimension", "coherence", db=url)
        assert r.code == 0, r.stderr
    return url


@pytest.fixture(scope="module")
def server(db: str) -> Iterator[Server]:
    s = Server(db)
    yield s
    s.stop()


def invite(db: str, queue: str, name: str) -> str:
    r = cli("annotate", "invite", queue, name, "--json", db=db)
    assert r.code == 0, r.stderr
    return str(r.json()["token"])


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def events(db: str) -> int:
    eng = make_engine(db)
    try:
        with eng.connect() as c:
            return int(c.execute(text("SELECT count(*) FROM annotation_event")).scalar() or 0)
    finally:
        eng.dispose()


def test_the_api_needs_the_annotators_own_token(server: Server, db: str) -> None:
    assert httpx.get(f"{server.url}/api/annotate/q/next").status_code == 401
    r = httpx.get(f"{server.url}/api/annotate/q/next", headers=bearer("jpa-not-a-real-token-000000000000"))
    assert r.status_code == 401 and r.json() == {
        "ok": False,
        "error": "unknown annotator link for this queue",
    }
    other = invite(db, "shut", "someone")  # a token of another queue opens nothing here
    assert httpx.get(f"{server.url}/api/annotate/q/next", headers=bearer(other)).status_code == 401
    r = httpx.get(f"{server.url}/api/annotate/q/next", headers=bearer(OWNER))
    assert r.status_code == 401
    assert "content-security-policy" in r.headers and r.headers["x-frame-options"] == "DENY"


def test_a_label_round_trip_and_every_bad_request(server: Server, db: str) -> None:
    token = invite(db, "q", "ann")
    h = bearer(token)
    nxt = httpx.get(f"{server.url}/api/annotate/q/next", headers=h).json()
    assert set(nxt) >= {"slot", "item", "order", "csrf", "progress"} and nxt["progress"] == {
        "done": 0,
        "total": 8,
    }
    assert "judge" not in str(nxt).lower() and "expert" not in str(nxt)  # no judge, no other label
    url = f"{server.url}/api/annotate/q/label"
    ok = {"slot": nxt["slot"], "value": 3, "csrf": nxt["csrf"]}
    before = events(db)
    cases = [
        ({"slot": nxt["slot"], "value": 3}, 403, "CSRF"),
        ({**ok, "csrf": "0" * 64}, 403, "CSRF"),
        ({**ok, "value": 6}, 400, "not on this queue's scale"),
        ({**ok, "value": None}, 400, "not on this queue's scale"),
        ({**ok, "slot": 999999}, 404, "no item"),
        ({**ok, "slot": "1"}, 400, "integer"),
        ({**ok, "comment": 5}, 400, "text"),
        ({**ok, "skip_reason": ""}, 400, "reason"),
    ]
    for body, code, words in cases:
        r = httpx.post(url, json=body, headers=h)
        assert r.status_code == code and words in r.json()["error"], (body, r.text)
    r = httpx.post(
        url, content=b"value=3", headers={**h, "Content-Type": "application/x-www-form-urlencoded"}
    )
    assert r.status_code == 400 and "JSON" in r.json()["error"]
    r = httpx.post(url, content=b"{not json", headers={**h, "Content-Type": "application/json"})
    assert r.status_code == 400
    r = httpx.post(
        url, content=b'{"x": "' + b"a" * 70000 + b'"}', headers={**h, "Content-Type": "application/json"}
    )
    assert r.status_code == 400 and "larger" in r.json()["error"]
    r = httpx.post(url, json=ok, headers={**h, "Origin": "http://evil.example"})
    assert r.status_code == 403 and "Origin" in r.json()["error"]
    assert events(db) == before  # nothing written by any of them
    r = httpx.post(url, json={**ok, "comment": "fine"}, headers=h)
    assert r.status_code == 200 and r.json() == {
        "ok": True,
        "kind": "label",
        "progress": {"done": 1, "total": 8},
    }
    r = httpx.post(url, json={**ok, "comment": "fine"}, headers=h)  # a double submit
    assert r.status_code == 409 and "already recorded" in r.json()["error"]
    assert events(db) == before + 1
    mine = httpx.get(f"{server.url}/api/annotate/q/mine", headers=h).json()["slots"]
    assert [s["value"] for s in mine] == ["3"]
    again = httpx.get(f"{server.url}/api/annotate/q/slot/{nxt['slot']}", headers=h).json()
    assert again["mine"] == {"value": "3", "comment": "fine"} and again["state"] == "done"


def test_a_reload_resumes_and_a_lapsed_reservation_taken_by_another_is_refused(
    server: Server, db: str
) -> None:
    a, b = bearer(invite(db, "fast", "a")), bearer(invite(db, "fast", "b"))
    first = httpx.get(f"{server.url}/api/annotate/fast/next", headers=a).json()
    assert (
        httpx.get(f"{server.url}/api/annotate/fast/next", headers=a).json()["slot"] == first["slot"]
    )  # resume
    time.sleep(1.5)  # the reservation (0.02 min) lapses
    b_next = [httpx.get(f"{server.url}/api/annotate/fast/next", headers=b).json()["slot"] for _ in range(1)]
    assert b_next == [first["slot"]]  # the lapsed seat went back to the queue, to b
    r = httpx.post(
        f"{server.url}/api/annotate/fast/label",
        json={"slot": first["slot"], "value": 2, "csrf": first["csrf"]},
        headers=a,
    )
    assert r.status_code == 409 and "not reserved for you" in r.json()["error"]


def test_a_revoked_link_stops_at_its_next_request_and_a_closed_queue_is_409(server: Server, db: str) -> None:
    token = invite(db, "shut", "leaver")
    h = bearer(token)
    nxt = httpx.get(f"{server.url}/api/annotate/shut/next", headers=h).json()
    assert nxt["slot"] is not None
    assert cli("annotate", "revoke", "shut", "leaver", db=db).code == 0
    r = httpx.get(f"{server.url}/api/annotate/shut/next", headers=h)
    assert r.status_code == 403 and "revoked" in r.json()["error"]
    other = bearer(invite(db, "shut", "stayer"))
    nxt = httpx.get(f"{server.url}/api/annotate/shut/next", headers=other).json()
    assert cli("annotate", "close", "shut", db=db).code == 0
    r = httpx.post(
        f"{server.url}/api/annotate/shut/label",
        json={"slot": nxt["slot"], "value": 2, "csrf": nxt["csrf"]},
        headers=other,
    )
    assert r.status_code == 409 and "closed" in r.json()["error"]
    assert cli("annotate", "close", "shut", "--reopen", db=db).code == 0


def test_the_link_sets_an_httponly_cookie_and_drops_the_token_from_the_address(
    server: Server, db: str
) -> None:
    token = invite(db, "q", "linker")
    with httpx.Client(base_url=server.url) as c:
        r = c.get(f"/a/q?token={token}")
        assert r.status_code == 303 and r.headers["location"] == "/a/q"
        cookie = r.headers["set-cookie"].lower()
        assert (
            "httponly" in cookie and "samesite=lax" in cookie and token.lower() not in r.headers["location"]
        )
        page = c.get("/a/q")
        assert page.status_code == 200 and "linker" in page.text and token not in page.text
        assert c.get("/api/annotate/q/next").status_code == 200  # the cookie authenticates the API


def test_owner_pages_are_read_only_and_answer_on_loopback_only(server: Server, db: str) -> None:
    r = httpx.get(f"{server.url}/api/annotate/q")
    assert r.status_code == 200 and r.json()["queue"] == "q" and "certification" in r.json()
    assert httpx.get(f"{server.url}/annotate/q").status_code == 200
    assert httpx.get(f"{server.url}/api/annotate").json()["queues"][0]["name"] == "fast"
    assert httpx.post(f"{server.url}/api/annotate/q").status_code == 405
    assert httpx.get(f"{server.url}/api/annotate/q", headers={"Host": "evil.example"}).status_code == 403
    assert httpx.get(f"{server.url}/api/annotate/nope").status_code == 404


def test_with_an_owner_token_the_owner_pages_need_it_and_annotators_need_theirs(db: str) -> None:
    s = Server(db, "--token", OWNER)
    try:
        assert httpx.get(f"{s.url}/api/annotate/q").status_code == 401
        assert httpx.get(f"{s.url}/api/annotate/q", headers=bearer(OWNER)).status_code == 200
        token = invite(db, "q", "remote")
        assert httpx.get(f"{s.url}/api/annotate/q/next", headers=bearer(token)).status_code == 200
        assert httpx.get(f"{s.url}/api/annotate/q/next", headers=bearer(OWNER)).status_code == 401
    finally:
        s.stop()


def test_a_public_address_without_an_owner_token_is_refused(db: str) -> None:
    r = cli("annotate", "serve", "--host", "0.0.0.0", "--port", "0", db=db)
    assert r.code == 2 and r.stderr.count("\n") == 1 and "--token" in r.stderr


def test_the_viewer_shows_the_owner_page_and_writes_nothing(db: str, tmp_path: Path) -> None:
    from tests.view.conftest import Viewer

    v = Viewer(db)
    try:
        r = httpx.get(f"{v.url}/api/annotate/q")
        assert r.status_code == 200 and r.json()["queue"] == "q"
        assert httpx.get(f"{v.url}/annotate/q").status_code == 200
        token = invite(db, "q", "viewer-visitor")
        for path in ("/api/annotate/q/next", "/a/q"):
            assert httpx.get(f"{v.url}{path}", headers=bearer(token)).status_code == 404
        assert httpx.post(f"{v.url}/api/annotate/q/label", json={}, headers=bearer(token)).status_code in (
            404,
            405,
        )
    finally:
        v.stop()


def test_a_link_with_an_unknown_token_sets_no_cookie(server: Server) -> None:
    r = httpx.get(f"{server.url}/a/q?token=jpa-forged-0000000000000000000000", follow_redirects=False)
    assert r.status_code == 401 and "set-cookie" not in r.headers
