"""The viewer's pages and JSON twins over the demo database, through Starlette's test client:
the JSON keys and figures agree with the matching `--json` commands, keyset paging and filters
agree with an independent pandas path, and the safety rules (token, host, no writes, escaping)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import create_engine, text
from starlette.testclient import TestClient

from judgepanel import api
from judgepanel.demo import PAIRWISE, POINTWISE
from judgepanel.store.readonly import read_only_engine
from judgepanel.view.app import COOKIE, create_app
from tests import xss
from tests.helpers import cli
from tests.view.conftest import TOKEN

LOCAL = "http://127.0.0.1"


@pytest.fixture(scope="module")
def client(demo_url: str) -> Iterator[TestClient]:
    eng = read_only_engine(demo_url)
    with TestClient(create_app(eng, n_boot=50), base_url=LOCAL) as c:
        yield c
    eng.dispose()


def _first(demo_url: str, sql: str) -> Any:
    eng = create_engine(demo_url)
    with eng.connect() as conn:
        v = conn.execute(text(sql)).scalar()
    eng.dispose()
    return v


def pages(url: str) -> list[str]:
    case = _first(
        url,
        "SELECT min(pair_id) FROM job j JOIN campaign c ON c.id = j.campaign_id WHERE c.protocol = 'pairwise'",
    )
    camp = _first(url, "SELECT name FROM campaign WHERE protocol = 'pairwise' ORDER BY id LIMIT 1")
    rid = _first(
        url,
        "SELECT min(r.id) FROM request r JOIN job j ON j.id = r.job_id JOIN campaign c ON c.id = j.campaign_id WHERE c.protocol = 'pairwise'",
    )
    rubric = _first(url, "SELECT name FROM rubric ORDER BY id LIMIT 1")
    iteration = _first(url, "SELECT name FROM repair_iteration ORDER BY id LIMIT 1")
    from urllib.parse import quote

    c = quote(camp, safe="")
    return [
        "/",
        f"/campaigns/{c}",
        f"/campaigns/{c}/verdicts",
        f"/campaigns/{c}/verdicts?judges_disagree=1&order=AB",
        f"/campaigns/{c}/cases/{case}",
        f"/campaigns/{c}/requests/{rid}",
        "/rubrics",
        f"/rubrics/{quote(rubric, safe='')}",
        "/repair",
        f"/repair/{quote(iteration, safe='')}",
    ]


def test_every_page_and_its_json_twin(client: TestClient, demo_url: str) -> None:
    for path in pages(demo_url):
        page = client.get(path)
        assert page.status_code == 200, (path, page.text[:300])
        assert page.headers["content-type"].startswith("text/html")
        assert "script-src 'self'" in page.headers["content-security-policy"]
        twin = client.get("/api" + (path if path != "/" else "/campaigns"))
        assert twin.status_code == 200, path
        assert isinstance(twin.json(), dict)
    # the demo's campaigns are simulated: every page on them says so
    assert "SIMULATED" in client.get("/").text
    assert client.get("/api/campaigns").json()["simulated"] is True


def test_campaign_json_has_the_keys_and_figures_of_the_cli(client: TestClient, demo_url: str) -> None:
    listed = cli("campaign", "list", "--json", db=demo_url).json()["campaigns"]
    ours = {c["name"]: c for c in client.get("/api/campaigns").json()["campaigns"]}
    for row in listed:
        mine = ours[row["name"]]
        assert {k: mine[k] for k in row} == row
        assert mine["simulated"] is True and mine["progress"]["eta_s"] is None
    status = cli("campaign", "status", PAIRWISE, "--json", db=demo_url).json()
    page = client.get(f"/api/campaigns/{PAIRWISE}").json()
    assert {k: page[k] for k in status} == status
    bias = cli("metrics", "bias", "--campaign", PAIRWISE, "--json", db=demo_url).json()
    for judge, b in bias["judges"].items():
        for k, v in b.items():  # keyed by short name, `spec` inside (issue 19 §3)
            want = v if isinstance(v, str) else pytest.approx(v, rel=1e-9)
            assert page["bias"]["judges"][judge][k] == want, (judge, k)
    assert page["matrix"]["raters"] and len(page["matrix"]["kappa"]) == len(page["matrix"]["raters"])
    assert page["cost_split"]["paid_usd"] == status["cost_usd"]
    point = client.get(f"/api/campaigns/{POINTWISE}").json()
    assert point["versus"] and point["agreement"]


def test_rubric_and_repair_json_match_the_cli(client: TestClient, demo_url: str) -> None:
    assert client.get("/api/rubrics").json() == cli("rubric", "list", "--json", db=demo_url).json()
    name = cli("rubric", "list", "--json", db=demo_url).json()["rubrics"][0]["name"]
    shown = cli("rubric", "show", name, "--json", db=demo_url).json()
    mine = client.get(f"/api/rubrics/{name}").json()
    assert {k: mine[k] for k in shown} == shown
    for h in mine["history"]:
        if h["diff"] is not None:
            want = cli(
                "rubric", "diff", f"{name}@{h['diff_from']}", f"{name}@{h['version']}", "--json", db=demo_url
            )
            assert h["diff"] == want.json()
    its = cli("repair", "list", "--json", db=demo_url).json()
    assert client.get("/api/repair").json() == {**its, "simulated": True}
    it = its["iterations"][0]["name"]
    status = cli("repair", "status", it, "--json", db=demo_url).json()
    mine = client.get(f"/api/repair/{it}").json()
    assert {k: mine[k] for k in status} == status
    assert mine["simulated"] is True and mine["comparison"]["verdict"]
    page = client.get(f"/repair/{it}").text
    assert "data-plot='forest'" in page and "diff-new" in page


def _all_ids(client: TestClient, camp: str, query: str, limit: int = 25) -> list[int]:
    ids: list[int] = []
    after: int | None = None
    while True:
        q = f"{query}&limit={limit}" + (f"&after={after}" if after is not None else "")
        page = client.get(f"/api/campaigns/{camp}/verdicts?{q}").json()
        ids += [r["verdict_id"] for r in page["rows"]]
        assert len(page["rows"]) <= limit
        after = page["next_after"]
        if after is None:
            return ids


def test_keyset_pages_and_filters_agree_with_pandas(client: TestClient, demo_url: str) -> None:
    eng = create_engine(demo_url)
    frame = pd.read_sql(
        text(
            'SELECT v.id, j.name AS judge, job.pair_id, job.item_id, job."order", job.condition, job.dimension, '
            "v.parse_status, v.failure_kind, v.value_canonical, v.score FROM verdict v JOIN job ON job.id = v.job_id "
            "JOIN judge j ON j.id = job.judge_id JOIN campaign c ON c.id = job.campaign_id WHERE c.name = :c ORDER BY v.id"
        ),
        eng.connect(),
        params={"c": PAIRWISE},
    )
    labels = pd.read_sql(
        text(
            "SELECT pl.pair_id, pl.value FROM pair_label pl JOIN annotator a ON a.id = pl.annotator_id WHERE a.kind = 'human'"
        ),
        eng.connect(),
    )
    eng.dispose()
    assert _all_ids(client, PAIRWISE, "x=1") == frame["id"].tolist()
    judge = frame["judge"].iloc[0]
    want = frame[(frame["judge"] == judge) & (frame["order"] == "BA")]["id"].tolist()
    assert (
        want
        and _all_ids(
            client,
            PAIRWISE,
            f"judge={judge.replace('&', '%26').replace('?', '%3F').replace('=', '%3D')}&order=BA",
        )
        == want
    )
    # judges disagree: another judge's accepted verdict on the same pair differs
    ok = frame[frame["parse_status"] == "ok"]
    values = ok.groupby("pair_id")["value_canonical"].apply(list)
    per = ok.groupby(["pair_id", "judge"])["value_canonical"].apply(set)
    dis = [
        r.id
        for r in ok.itertuples()
        if any(
            v != r.value_canonical for (p, j), vs in per.loc[[r.pair_id]].items() if j != r.judge for v in vs
        )
    ]
    assert values.size and _all_ids(client, PAIRWISE, "judges_disagree=1", limit=100) == dis
    # judge vs humans: more human annotators chose another label than this verdict's
    counts = labels.groupby("pair_id")["value"].apply(list).to_dict()
    mine = {"A": "A", "B": "B", "tie": "T"}
    against = [
        r.id
        for r in ok.itertuples()
        if r.value_canonical is not None
        and sum(v != mine.get(r.value_canonical, r.value_canonical) for v in counts.get(r.pair_id, []))
        > sum(v == mine.get(r.value_canonical, r.value_canonical) for v in counts.get(r.pair_id, []))
    ]
    assert against and _all_ids(client, PAIRWISE, "humans_disagree=1", limit=100) == against


def test_pointwise_humans_disagree_is_a_point_away_from_their_mean(client: TestClient, demo_url: str) -> None:
    v = api.verdicts(demo_url, POINTWISE)
    labels = api.labels(demo_url, POINTWISE)
    humans = labels[labels["kind"] == "human"] if "kind" in labels else labels
    ids = _all_ids(client, POINTWISE, "humans_disagree=1", limit=200)
    page_rows = []
    after = None
    while True:
        p = client.get(
            f"/api/campaigns/{POINTWISE}/verdicts?humans_disagree=1&limit=200"
            + (f"&after={after}" if after else "")
        ).json()
        page_rows += p["rows"]
        after = p["next_after"]
        if after is None:
            break
    assert [r["verdict_id"] for r in page_rows] == ids and ids
    means = humans.groupby(["item", "dimension"])["value_num"].mean()
    ok = v[v["parse_status"] == "ok"]
    want = sum(
        1
        for r in ok.itertuples()
        if (r.item, r.dimension) in means.index and abs(means[(r.item, r.dimension)] - r.score) >= 1.0
    )
    assert len(ids) == want


def test_bad_filter_values_are_400_with_one_message(client: TestClient) -> None:
    for q, needle in [
        ("order=XY", "order must be"),
        ("limit=7", "limit must be"),
        ("after=abc", "whole numbers"),
        ("failure_kind=zzz", "failure_kind"),
    ]:
        r = client.get(f"/api/campaigns/{PAIRWISE}/verdicts?{q}")
        assert r.status_code == 400 and needle in r.json()["error"]
    assert client.get("/api/campaigns/no-such").status_code == 404
    assert client.get("/campaigns/no-such").status_code == 404


def test_no_write_endpoints(client: TestClient, demo_url: str) -> None:
    before = _first(demo_url, "SELECT count(*) FROM verdict")
    for path in [*pages(demo_url), "/static/viewer.js"]:
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            r = client.request(method, path)
            assert r.status_code == 405, (method, path, r.status_code)
            api_path = "/api" + (path if path != "/" else "/campaigns")
            if not path.startswith("/static"):
                assert client.request(method, api_path).status_code == 405
    assert _first(demo_url, "SELECT count(*) FROM verdict") == before


def test_read_only_engine_refuses_writes_on_sqlite(demo_url: str) -> None:
    eng = read_only_engine(demo_url)
    with pytest.raises(Exception, match=r"readonly|read-only|query_only"), eng.begin() as conn:
        conn.execute(text("DELETE FROM verdict"))
    eng.dispose()
    assert _first(demo_url, "SELECT count(*) FROM verdict") > 0


def test_token_is_checked_on_every_request(demo_url: str) -> None:
    eng = read_only_engine(demo_url)
    app = create_app(eng, token=TOKEN)
    with TestClient(app, base_url="http://203.0.113.5:8765") as c:
        for path in ("/", "/api/campaigns", "/static/viewer.js", f"/campaigns/{PAIRWISE}", "/nope"):
            assert c.get(path).status_code == 401
            assert c.get(path, headers={"Authorization": "Bearer wrong-token-0123456789"}).status_code == 401
            assert c.get(path, headers={"Authorization": "Bearer " + TOKEN[:-1]}).status_code == 401
        assert c.get("/api/campaigns", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        # ?token= once: a redirect that drops it from the address and sets the cookie
        r = c.get(f"/campaigns/{PAIRWISE}/verdicts?order=AB&token={TOKEN}", follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == f"/campaigns/{PAIRWISE}/verdicts?order=AB"
        assert COOKIE in r.headers["set-cookie"] and "HttpOnly" in r.headers["set-cookie"]
    for cookie, code in ((TOKEN, 200), ("x" * len(TOKEN), 401)):
        with TestClient(app, base_url="http://203.0.113.5:8765", cookies={COOKIE: cookie}) as c:
            assert c.get("/api/campaigns").status_code == code
            assert c.get("/static/viewer.js").status_code == code
    eng.dispose()


def test_without_a_token_only_loopback_host_names_are_answered(demo_url: str) -> None:
    eng = read_only_engine(demo_url)
    with TestClient(create_app(eng), base_url="http://evil.example:8765") as c:
        assert c.get("/api/campaigns").status_code == 403
    for host in ("127.0.0.1:8765", "localhost:8765", "[::1]:8765"):
        with TestClient(create_app(eng), base_url=f"http://{host}") as c:
            assert c.get("/api/campaigns").status_code == 200, host
    # a port that is no port: the name before it is not what the header names
    with TestClient(create_app(eng), base_url="http://127.0.0.1:8765") as c:
        for host in (
            "127.0.0.1:80@evil.example",
            "[::1]@evil.example",
            "[::1]:1x",
            "localhost:",
            "127.0.0.1:-1",
        ):
            assert c.get("/api/campaigns", headers={"Host": host}).status_code == 403, host
    eng.dispose()


def test_the_cli_refuses_a_public_address_without_a_token(demo_url: str) -> None:
    for args, needle in [
        (("--host", "0.0.0.0"), "--token"),
        (("--host", "192.0.2.1", "--token", "short"), "at least 16"),
        (("--port", "70000"), "--port"),
    ]:
        r = cli("view", *args, db=demo_url)
        assert r.code == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_every_page_escapes_stored_text(xss_url: str) -> None:
    eng = read_only_engine(xss_url)
    with TestClient(create_app(eng, n_boot=20), base_url=LOCAL) as c:
        shown = []
        for path in pages(xss_url):
            r = c.get(path)
            assert r.status_code == 200, (path, r.text[:300])
            xss.assert_escaped(r.text)
            if "&lt;script&gt;window.__xss=1&lt;/script&gt;" in r.text:
                shown.append(path.split("/")[1] + ("/" + path.split("/")[3] if path.count("/") > 2 else ""))
            j = c.get("/api" + (path if path != "/" else "/campaigns"))
            assert j.status_code == 200
        # the hostile text is on the pages, as text
        assert {"campaigns/verdicts", "campaigns/cases", "campaigns/requests", "repair"} <= {
            p.split("?")[0] for p in shown
        }, shown
    eng.dispose()


@pytest.mark.postgres
def test_on_postgresql_the_viewer_reads_as_the_query_role(pg_url: str) -> None:
    from judgepanel.store.migrate import READER_ROLE

    assert cli("demo", "--json", db=pg_url).code == 0
    eng = read_only_engine(pg_url)
    with eng.connect() as conn:
        assert conn.execute(text("SELECT current_user")).scalar() == READER_ROLE
        assert conn.execute(text("SHOW transaction_read_only")).scalar() == "on"
    with pytest.raises(Exception, match=r"read-only|permission denied"), eng.begin() as conn:
        conn.execute(text("DELETE FROM verdict"))
    with TestClient(create_app(eng, n_boot=20), base_url=LOCAL) as c:
        for path in pages(pg_url):
            assert c.get(path).status_code == 200, path
            assert c.get("/api" + (path if path != "/" else "/campaigns")).status_code == 200, path
        assert re.search(r"SIMULATED", c.get("/").text)
    eng.dispose()
