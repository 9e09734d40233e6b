"""The working viewer in headless Chromium (issue 33 §6): search and sort by clicking, a shared link
with filters opens the same view, previous / next by keyboard, the compare page, the static bundle
opened from file:// with no console error (its search included), and the XSS payload set inert on
every new page and in the bundle."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from judgepanel.demo import PAIRWISE, POINTWISE
from tests import xss
from tests.helpers import cli
from tests.view.conftest import Viewer, console_errors, left_the_page

pytestmark = pytest.mark.slow


def _ids(driver: Any) -> list[int]:
    return [
        int(r.get_attribute("data-verdict")) for r in driver.find_elements(By.CSS_SELECTOR, "tr.verdict-row")
    ]


def _wait_new_page(driver: Any, act: Any) -> None:
    old = driver.find_element(By.TAG_NAME, "html")
    act()
    WebDriverWait(driver, 20).until(left_the_page(old))


def test_search_sort_shared_link_and_keys(demo_viewer: Viewer, driver: Any) -> None:
    base = f"{demo_viewer.url}/campaigns/{PAIRWISE}/verdicts"
    driver.get(base)
    box = driver.find_element(By.ID, "search")
    _wait_new_page(driver, lambda: (box.send_keys("merson"), box.send_keys(Keys.ENTER)))
    assert "q=merson" in driver.current_url
    found = _ids(driver)
    with urllib.request.urlopen(
        f"{demo_viewer.url}/api/campaigns/{PAIRWISE}/verdicts?q=merson&limit=50"
    ) as r:
        assert found == [row["verdict_id"] for row in json.load(r)["rows"]] and found
    # sort by latency, descending, by clicking the column twice
    _wait_new_page(
        driver, lambda: driver.find_element(By.CSS_SELECTOR, 'a.sort[data-sort="latency"]').click()
    )
    _wait_new_page(
        driver, lambda: driver.find_element(By.CSS_SELECTOR, 'a.sort[data-sort="latency"]').click()
    )
    assert "sort=latency" in driver.current_url and "desc=1" in driver.current_url
    shown = [
        float(r.find_elements(By.TAG_NAME, "td")[11].text)
        for r in driver.find_elements(By.CSS_SELECTOR, "tr.verdict-row")
    ]
    assert shown and shown == sorted(shown, reverse=True)
    link = driver.current_url
    # the link, opened afresh, is the same view
    driver.get("about:blank")
    driver.get(link)
    assert driver.find_element(By.ID, "search").get_attribute("value") == "merson"
    assert [
        float(r.find_elements(By.TAG_NAME, "td")[11].text)
        for r in driver.find_elements(By.CSS_SELECTOR, "tr.verdict-row")
    ] == shown
    # a whole rationale on expand
    details = driver.find_elements(By.CSS_SELECTOR, "details.whole")
    if details:
        details[0].find_element(By.TAG_NAME, "summary").click()
        assert details[0].find_element(By.CSS_SELECTOR, ".full").is_displayed()
    # open the first case, then walk with the keyboard
    _wait_new_page(driver, lambda: driver.find_element(By.CSS_SELECTOR, "tr.verdict-row td.case a").click())
    first = driver.current_url
    assert "/cases/" in first and "q=merson" in first
    _wait_new_page(driver, lambda: driver.find_element(By.TAG_NAME, "body").send_keys("j"))
    second = driver.current_url
    assert second != first and "/cases/" in second and "sort=latency" in second
    _wait_new_page(driver, lambda: driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_LEFT))
    assert driver.current_url.split("/cases/")[1].split("?")[0] == first.split("/cases/")[1].split("?")[0]
    _wait_new_page(driver, lambda: driver.find_element(By.TAG_NAME, "body").send_keys("u"))
    assert "/verdicts" in driver.current_url and "q=merson" in driver.current_url
    assert console_errors(driver) == []


def test_compare_page_in_the_browser(demo_viewer: Viewer, driver: Any) -> None:
    driver.get(f"{demo_viewer.url}/compare?a={POINTWISE}&b={POINTWISE}")
    assert driver.find_element(By.ID, "compare-summary").text.endswith("0 verdicts changed.")
    assert driver.find_elements(By.CSS_SELECTOR, "#compare-columns tr[data-column]")
    driver.get(f"{demo_viewer.url}/campaigns/{PAIRWISE}")
    assert driver.find_elements(By.CSS_SELECTOR, 'figure[data-plot="distribution"] svg rect title')
    assert console_errors(driver) == []


def _bundle(url: str, folder: Path) -> Path:
    r = cli("view", "--bundle", str(folder), db=url)
    assert r.code == 0, r.stderr
    return folder


def test_the_bundle_opens_from_the_file_system(demo_url: str, tmp_path: Path, driver: Any) -> None:
    folder = _bundle(demo_url, tmp_path / "b")
    driver.get((folder / "index.html").as_uri())
    assert console_errors(driver) == []
    link = driver.find_element(By.CSS_SELECTOR, f'tr[data-campaign="{PAIRWISE}"] a')
    _wait_new_page(driver, link.click)
    assert driver.find_elements(By.CSS_SELECTOR, "figure[data-plot] svg") and console_errors(driver) == []
    table = next(folder.glob("c/demo-pairwise-*/verdicts.html"))
    driver.get(table.as_uri())
    WebDriverWait(driver, 10).until(
        lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-rendered")
    )
    every = len(_ids(driver))
    assert every == 50
    box = driver.find_element(By.ID, "search")
    box.send_keys("merson")
    box.send_keys(Keys.ENTER)
    WebDriverWait(driver, 10).until(lambda d: "q=merson" in d.current_url)
    WebDriverWait(driver, 10).until(
        lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-rendered") == "2"
    )
    hits = driver.find_element(By.ID, "match-count").text
    assert hits.split(" of ")[0] != "360" and int(hits.split(" ")[0]) > 0
    # the same hits as the live viewer's search over the same rows (every word a prefix, rationales
    # and case names; the live one also searches the items' whole texts, so it may find more)
    driver.find_element(By.TAG_NAME, "body").send_keys("n")
    WebDriverWait(driver, 10).until(lambda d: "page=1" in d.current_url)
    _wait_new_page(driver, lambda: driver.find_element(By.CSS_SELECTOR, "tr.verdict-row td.case a").click())
    assert "/cases/" in driver.current_url and driver.find_element(By.ID, "next-case")
    _wait_new_page(driver, lambda: driver.find_element(By.TAG_NAME, "body").send_keys("j"))
    assert driver.current_url.endswith(".html") and console_errors(driver) == []
    r = cli("view", "--bundle", str(folder), db=demo_url)
    assert r.code == 2 and "not an empty folder" in r.stderr


def test_hostile_text_runs_nothing_on_the_new_pages(
    xss_url: str, xss_viewer: Viewer, tmp_path: Path, driver: Any
) -> None:
    from sqlalchemy import create_engine, text

    eng = create_engine(xss_url)
    with eng.connect() as conn:
        camp = conn.execute(text("SELECT name FROM campaign WHERE protocol = 'pairwise'")).scalar()
        case = conn.execute(
            text(
                "SELECT min(pair_id) FROM job j JOIN campaign c ON c.id = j.campaign_id WHERE c.protocol = 'pairwise'"
            )
        ).scalar()
    eng.dispose()
    from urllib.parse import quote

    c = quote(str(camp), safe="")
    for path in [
        f"/campaigns/{c}/verdicts?q=xss&sort=latency&desc=1",
        f"/campaigns/{c}/verdicts?q=script",
        f"/campaigns/{c}/cases/{case}?q=xss&v=1",
        f"/campaigns/{c}",
        f"/compare?a={c}&b={c}",
        f"/compare?a={POINTWISE}&b={POINTWISE}",
        "/",
    ]:
        xss.assert_page_runs_nothing(driver, xss_viewer.url + path, inline_scripts=0, settle=0.2)
    driver.get(f"{xss_viewer.url}/campaigns/{c}/verdicts?q=xss")
    assert "<script>window.__xss=1</script>" in driver.find_element(By.TAG_NAME, "main").text
    folder = _bundle(xss_url, tmp_path / "xb")
    pages = sorted(folder.rglob("*.html"))
    for page in pages:  # every page's markup (reading a file costs nothing)
        xss.assert_escaped(page.read_text(encoding="utf-8").split("</head>", 1)[1])
    # in Chromium, one page of each kind in each campaign (the first 40 pages in path order were 40
    # case pages of one campaign, one template and one payload): the index, each campaign's page
    # and its first three case pages
    shown = [folder / "index.html", *sorted(folder.glob("c/*/index.html"))]
    for campaign in sorted(folder.glob("c/*/cases")):
        shown += sorted(campaign.glob("*.html"), key=lambda f: int(f.stem))[:3]
    assert set(shown) <= set(pages) and len(shown) >= 14, shown
    for page in shown:
        # the bundle's own inline script, allowed by its hash
        xss.assert_page_runs_nothing(driver, page.as_uri() + "#q=xss", inline_scripts=1)
        assert console_errors(driver) == [], page
