"""The viewer under load and hostile addresses (issue 29 §6): one database connection per request
(no page holds one while asking for another), a 503 with `Retry-After` when none is free instead
of a stall, the token redirect that cannot leave the viewer, and bad paths or cursors that are
400s, never 500s."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import cast

import pytest
from sqlalchemy import Engine
from starlette.testclient import TestClient

from judgepanel.demo import PAIRWISE, POINTWISE
from judgepanel.store.readonly import read_only_engine
from judgepanel.view.app import create_app
from tests.view.conftest import TOKEN, Viewer
from tests.view.test_app import pages

REMOTE = "http://203.0.113.5:8765"


@pytest.fixture(scope="module")
def one_connection(demo_url: str) -> Iterator[Engine]:
    """The viewer's engine with a pool of exactly one connection that is waited for at most 1 s."""
    eng = read_only_engine(demo_url, pool_size=1, pool_timeout=1.0)
    yield eng
    eng.dispose()


def test_every_page_needs_one_connection_at_a_time(one_connection: Engine, demo_url: str) -> None:
    # a page that held a connection while asking for a second would wait for itself (then fail)
    with TestClient(create_app(one_connection, n_boot=20), base_url="http://127.0.0.1") as c:
        for path in [*pages(demo_url), f"/campaigns/{POINTWISE}"]:
            assert c.get(path).status_code == 200, path
            assert c.get("/api" + (path if path != "/" else "/campaigns")).status_code == 200, path


def test_no_free_connection_is_a_503_with_retry_after(one_connection: Engine) -> None:
    app = create_app(one_connection, n_boot=20)
    with (
        TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as c,
        one_connection.connect(),  # the pool's only connection, held elsewhere
    ):
        for path in ("/api/campaigns", f"/campaigns/{PAIRWISE}/verdicts"):
            r = c.get(path)
            assert r.status_code == 503, (path, r.status_code)
            assert int(r.headers["retry-after"]) >= 1
            assert "busy" in r.text
    with TestClient(app, base_url="http://127.0.0.1") as c:  # and once it is free again, answers
        assert c.get("/api/campaigns").status_code == 200


def test_sixteen_concurrent_campaign_pages_all_answer(demo_url: str) -> None:
    """Issue 29 §6: 16 at once exhausted the pool (5 + 10), each page waiting 30 s for a second
    connection while holding one, and some answered 500."""
    viewer = Viewer(demo_url)
    results: list[int] = []
    lock = threading.Lock()

    def get(k: int) -> None:
        name = PAIRWISE if k % 2 else POINTWISE
        try:
            with urllib.request.urlopen(f"{viewer.url}/campaigns/{name}", timeout=60) as r:
                status = r.status
        except urllib.error.HTTPError as e:
            status = e.code
            assert status != 503 or int(e.headers["Retry-After"]) >= 1
        with lock:
            results.append(status)

    try:
        threads = [threading.Thread(target=get, args=(k,)) for k in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(90)
    finally:
        viewer.stop()
    assert len(results) == 16 and set(results) <= {200, 503}, results
    assert results.count(200) >= 1, results


def test_the_token_redirect_stays_on_the_viewer() -> None:
    """`//evil.example?token=T` answered `303 Location: //evil.example` (a protocol-relative URL:
    another site); a path that is not Latin-1 answered 500."""
    app = create_app(cast(Engine, _NoDatabase()), token=TOKEN)
    with TestClient(app, base_url=REMOTE, raise_server_exceptions=False) as c:
        for path, want in [
            ("//evil.example", "/evil.example"),
            ("///evil.example/x", "/evil.example/x"),
            ("/%5C%5Cevil.example", "/evil.example"),  # a browser reads `/\\host` as `//host`
            ("/%5Cevil.example", "/evil.example"),
            ("/x/%5C/y", "/x/%5C/y"),
            ("/caf%C3%A9%E2%82%AC", "/caf%C3%A9%E2%82%AC"),
            ("/a%20b%3Fc%23d", "/a%20b%3Fc%23d"),
            ("/campaigns/x", "/campaigns/x"),
        ]:
            r = c.get(f"{REMOTE}{path}?token={TOKEN}&order=AB", follow_redirects=False)
            assert r.status_code == 303, (path, r.status_code)
            assert r.headers["location"] == want + "?order=AB", path
            assert "set-cookie" in r.headers


def test_a_cursor_beyond_64_bits_is_400(demo_url: str) -> None:
    eng = read_only_engine(demo_url)
    with TestClient(create_app(eng), base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        for after in ("99999999999999999999999", "-99999999999999999999999", "9223372036854775808"):
            r = c.get(f"/api/campaigns/{PAIRWISE}/verdicts?after={after}")
            assert r.status_code == 400 and "after" in r.json()["error"], (after, r.text[:200])
            assert c.get(f"/campaigns/{PAIRWISE}/verdicts?after={after}").status_code == 400
        assert c.get(f"/api/campaigns/{PAIRWISE}/verdicts?after=9223372036854775807").status_code == 200
    eng.dispose()


class _NoDatabase:
    """The redirect is answered before any page: an engine nobody may touch."""

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"the gate touched the database ({name})")


@pytest.fixture
def one_campaign(db_url: str) -> Iterator[TestClient]:
    """The viewer over a database (each backend) with the SummEval sample and one empty campaign."""
    from sqlalchemy import text

    from judgepanel.store.engine import make_engine
    from tests.helpers import load_summeval_sample

    load_summeval_sample(db_url)
    owner = make_engine(db_url)
    with owner.begin() as c:
        c.execute(
            text(
                "INSERT INTO campaign (name, dataset_id, protocol, repeats, status, spec, created_at) "
                "SELECT 'c', id, 'pointwise', 1, 'done', '{}', CURRENT_TIMESTAMP FROM dataset WHERE name = 'se'"
            )
        )
    owner.dispose()
    eng = read_only_engine(db_url)
    with TestClient(create_app(eng), base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        yield client
    eng.dispose()


def test_nul_in_an_address_and_ids_beyond_the_columns_are_4xx(one_campaign: TestClient) -> None:
    """On PostgreSQL a NUL anywhere in a name or filter (it refuses NUL in text) and a cursor
    beyond its 32-bit INTEGER ids answered 500; on both backends so did a case or request number
    beyond 64 bits."""
    paths = [
        "/campaigns/%00",
        "/api/campaigns/%00/verdicts",
        "/rubrics/%00",
        "/repair/%00",
        "/align/%00",
        "/annotate/%00",
        "/api/annotate/x%00y",
        "/campaigns/c/verdicts?judge=%00",
        "/api/campaigns/c/verdicts?dimension=a%00",
        "/api/campaigns/c/verdicts?condition=%00",
        "/compare?a=%00&b=c",
        "/campaigns/c/cases/99999999999999999999",
        f"/api/campaigns/c/cases/{2**31}",
        "/campaigns/c/requests/99999999999999999999",
        f"/api/campaigns/c/requests/{2**31}",
    ]
    answers = {p: one_campaign.get(p).status_code for p in paths}
    assert {p: s for p, s in answers.items() if not 400 <= s < 500} == {}
    for query in (
        "after=9223372036854775807",
        "after=-9223372036854775808&sort=score",
        "before=2147483648&sort=latency&desc=1",
        "before=-2147483649",
    ):
        r = one_campaign.get(f"/api/campaigns/c/verdicts?{query}")
        assert r.status_code == 200 and r.json()["rows"] == [], (query, r.text[:200])
