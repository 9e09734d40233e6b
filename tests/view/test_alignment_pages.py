"""The viewer's alignment pages: the JSON twin of `/align/NAME` has the keys and values of
`align compare --json`, the list and the campaign pages link to it, and in headless Chromium every
alignment page loads without a console error, says SIMULATED, draws its forest plots, and runs
none of the hostile text planted in what an alignment stores."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from sqlalchemy import create_engine, text
from starlette.testclient import TestClient

from judgepanel.store.readonly import read_only_engine
from judgepanel.view.app import create_app
from tests import xss
from tests.alignview import plant, world
from tests.helpers import cli
from tests.view.conftest import Viewer, console_errors

LOCAL = "http://127.0.0.1"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return world(tmp_path_factory, "alignview-pages")


@pytest.fixture(scope="module")
def client(db: str) -> Iterator[TestClient]:
    eng = read_only_engine(db)
    with TestClient(create_app(eng, n_boot=50), base_url=LOCAL) as c:
        yield c
    eng.dispose()


def test_json_twin_has_the_compare_keys_and_values(db: str, client: TestClient) -> None:
    for name in ("f", "i", "g"):
        compared = cli("align", "compare", name, "--json", db=db).json()
        twin = client.get(f"/api/align/{name}").json()
        assert {k: twin[k] for k in compared} == compared, name
        assert "comparison" not in twin and twin["compared"] is True  # one copy of the keys
        assert {"versions", "delta", "overfit_gap", "equivalence", "cost_usd", "simulated"} <= set(twin)
        page = client.get(f"/align/{name}")
        assert page.status_code == 200 and page.text.count("data-plot='forest'") == 2
        # the page's campaign links lead to the campaigns it was measured on
        for v in compared["versions"].values():
            assert f"href='/campaigns/{quote(v['campaign'], safe='')}'" in page.text
    listed = client.get("/api/align").json()
    assert [r["alignment"] for r in listed["alignments"]] == ["f", "g", "i"] and listed["simulated"] is True
    for r in listed["alignments"]:
        delta = cli("align", "compare", r["alignment"], "--json", db=db).json()["delta"][
            "aligned_vs_original"
        ]
        assert r["delta_qwk"] == delta["qwk"] and r["compared"] is True


def test_campaign_pages_link_their_alignment(db: str, client: TestClient) -> None:
    status = cli("align", "status", "i", "--json", db=db).json()
    for camp in set(status["campaigns"].values()):
        twin = client.get(f"/api/campaigns/{quote(camp, safe='')}").json()
        assert "i" in twin["alignments"], camp
        assert 'href="/align/i"' in client.get(f"/campaigns/{quote(camp, safe='')}").text
    # a campaign of no alignment links none: the repair's, and the ones `align compare f --repair
    # rp` made (`f-eval-repair-rp-…`: not made by `align run`)
    eng = create_engine(db)
    with eng.connect() as c:
        names = [n for (n,) in c.execute(text("SELECT name FROM campaign")).all()]
    eng.dispose()
    assert any(n.startswith("f-eval-repair-") for n in names)
    for n in names:
        linked = client.get(f"/api/campaigns/{quote(n, safe='')}").json()["alignments"]
        own = [a for a in ("f", "g", "i") if n.startswith(f"{a}-") and not n.startswith(f"{a}-eval-repair-")]
        assert linked == own, n


@pytest.fixture(scope="module")
def xss_db(db: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    dst = Path(tmp_path_factory.mktemp("alignview-pages-xss")) / "x.db"
    eng = create_engine(db)
    with eng.connect() as conn:
        conn.exec_driver_sql(f"VACUUM INTO '{dst}'")
    eng.dispose()
    url = f"sqlite:///{dst}"
    plant(url)
    eng = create_engine(url)
    with eng.begin() as conn:  # a hostile alignment name too: it reaches links and headings
        conn.execute(text("UPDATE alignment SET name = :n WHERE name = 'g'"), {"n": xss.NAME})
    eng.dispose()
    return url


def test_hostile_text_is_escaped_in_the_markup(xss_db: str) -> None:
    eng = read_only_engine(xss_db)
    with TestClient(create_app(eng, n_boot=50), base_url=LOCAL) as c:
        for path in ("/align", "/align/f", "/align/i", f"/align/{quote(xss.NAME, safe='')}"):
            page = c.get(path)
            assert page.status_code == 200, path
            xss.assert_escaped(page.text)
        assert "XSS &lt;script&gt;" in c.get("/align/i").text
    eng.dispose()


def _pages(url: str) -> list[str]:
    eng = create_engine(url)
    with eng.connect() as c:
        camp = c.execute(text("SELECT name FROM campaign WHERE name = 'f-eval-aligned'")).scalar_one()
        names = [n for (n,) in c.execute(text("SELECT name FROM alignment ORDER BY name")).all()]
    eng.dispose()
    return ["/align", *(f"/align/{quote(n, safe='')}" for n in names), f"/campaigns/{quote(camp, safe='')}"]


@pytest.mark.slow
def test_pages_in_chromium(db: str, xss_db: str, chromium: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.view.conftest import left_the_page

    driver = chromium
    for url in (db, xss_db):
        viewer = Viewer(url)
        try:
            for path in _pages(url):
                driver.get(viewer.url + path)
                assert driver.find_element(By.TAG_NAME, "h1").text, path
                assert console_errors(driver) == [], path
                assert "SIMULATED" in driver.find_element(By.TAG_NAME, "main").text, path
                probe = driver.execute_script(xss.PROBE_JS)
                assert {k: probe[k] for k in xss.CLEAN} == xss.CLEAN, (url, path)
                if path.startswith("/align/"):
                    figures = driver.find_elements(By.CSS_SELECTOR, "figure[data-plot] svg")
                    assert len(figures) == 2 and all(f.size["height"] > 50 for f in figures), path
            # from the campaign page to its alignment by clicking
            driver.get(viewer.url + "/campaigns/f-eval-aligned")
            old = driver.find_element(By.TAG_NAME, "html")
            driver.find_element(By.CSS_SELECTOR, "p[data-alignments] a").click()
            WebDriverWait(driver, 20).until(left_the_page(old))
            assert (
                driver.current_url.endswith("/align/f")
                and "Alignment f" in driver.find_element(By.TAG_NAME, "h1").text
            )
        finally:
            viewer.stop()


@pytest.mark.postgres
def test_on_postgresql_through_the_query_role(pg_url: str) -> None:
    """The alignment pages read the alignment table and its campaigns as the read-only role."""
    from tests.align.conftest import ok, run_args
    from tests.repair.conftest import prepare_db

    prepare_db(pg_url)
    ok(*run_args("f", "fewshot", "--k", "3"), db=pg_url)
    compared = cli("align", "compare", "f", "--json", db=pg_url).json()
    eng = read_only_engine(pg_url)
    try:
        with TestClient(create_app(eng, n_boot=20), base_url=LOCAL) as c:
            for path in ("/align", "/align/f", "/campaigns/f-eval-aligned"):
                assert c.get(path).status_code == 200, path
            twin = c.get("/api/align/f").json()
            assert {k: twin[k] for k in compared} == compared
            assert c.get("/api/campaigns/f-dev-original").json()["alignments"] == ["f"]
    finally:
        eng.dispose()
