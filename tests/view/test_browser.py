"""The viewer in Debian's headless Chromium: every page loads without a console error, the
verdict filters and keyset paging work by clicking, the campaigns page follows a run against the
fake server without a reload, and hostile stored text runs nothing on any page (nor in the report)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from judgepanel.demo import PAIRWISE
from judgepanel.fake.server import FakeServerProcess
from judgepanel.store.engine import make_engine
from tests import xss
from tests.helpers import cli
from tests.runner.conftest import FAKE_KEYS, create_argv, tiny_db
from tests.view.conftest import Viewer, console_errors, left_the_page
from tests.view.test_app import pages

pytestmark = pytest.mark.slow


def test_every_page_loads_without_console_errors(demo_viewer: Viewer, demo_url: str, driver: Any) -> None:
    for path in pages(demo_url):
        driver.get(demo_viewer.url + path)
        assert driver.find_element(By.TAG_NAME, "h1").text, path
        assert console_errors(driver) == [], path
        if path != "/rubrics":  # the list of rubrics rests on no answer
            assert "SIMULATED" in driver.find_element(By.TAG_NAME, "main").text, path
    # the campaign page draws its κ heatmap and bias chart, and (issue 33 §3) the distributions
    driver.get(f"{demo_viewer.url}/campaigns/{PAIRWISE}")
    assert len(driver.find_elements(By.CSS_SELECTOR, "figure[data-plot] svg")) == 3
    for plot in ("kappa", "bias", "distribution"):
        assert driver.find_elements(By.CSS_SELECTOR, f'figure[data-plot="{plot}"] svg'), plot
    # a case: both orders side by side; the raw request and reply load when opened
    case = next(p for p in pages(demo_url) if "/cases/" in p)
    driver.get(demo_viewer.url + case)
    orders = {e.get_attribute("data-order") for e in driver.find_elements(By.CSS_SELECTOR, ".verdict")}
    assert {"AB", "BA"} <= orders
    details = driver.find_elements(By.CSS_SELECTOR, "details.raw")[0]
    details.find_element(By.TAG_NAME, "summary").click()
    body = details.find_element(By.CSS_SELECTOR, "pre.raw-body")
    WebDriverWait(driver, 10).until(lambda d: '"messages"' in body.text)
    assert '"raw_body"' in body.text and console_errors(driver) == []


def _go(driver: Any, element: Any) -> None:
    """Click a link or button that loads another page, and wait until it has."""
    old = driver.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(driver, 20).until(left_the_page(old))


def _ids(driver: Any) -> list[int]:
    return [
        int(r.get_attribute("data-verdict")) for r in driver.find_elements(By.CSS_SELECTOR, "tr.verdict-row")
    ]


def test_filters_and_keyset_paging_by_clicking(demo_viewer: Viewer, demo_url: str, driver: Any) -> None:
    driver.get(f"{demo_viewer.url}/campaigns/{PAIRWISE}/verdicts")
    first = _ids(driver)
    assert len(first) == 50 and first == sorted(first)
    _go(driver, driver.find_element(By.ID, "next-page"))
    second = _ids(driver)
    assert second and min(second) > max(first) and "after=" in driver.current_url
    _go(driver, driver.find_element(By.ID, "first-page"))
    assert _ids(driver) == first
    # filter: one judge, BA order only, 25 a page
    form = driver.find_element(By.ID, "filters")
    judge = Select(form.find_element(By.NAME, "judge"))
    name = judge.options[2].text  # the judge's short name; the option's value is its spec
    spec = judge.options[2].get_attribute("value")
    judge.select_by_index(2)
    Select(form.find_element(By.NAME, "order")).select_by_value("BA")
    Select(form.find_element(By.NAME, "limit")).select_by_visible_text("25")
    _go(driver, form.find_element(By.CSS_SELECTOR, "button[type=submit]"))
    rows = driver.find_elements(By.CSS_SELECTOR, "tr.verdict-row")
    assert len(rows) == 25
    for r in rows:
        cells = r.find_elements(By.TAG_NAME, "td")
        assert cells[2].text == name and cells[3].text == "BA"
    seen = _ids(driver)
    while driver.find_elements(By.ID, "next-page"):
        _go(driver, driver.find_element(By.ID, "next-page"))
        page = _ids(driver)
        assert min(page) > max(seen)
        seen += page
        assert all(
            r.find_elements(By.TAG_NAME, "td")[3].text == "BA"
            for r in driver.find_elements(By.CSS_SELECTOR, "tr.verdict-row")
        )
    assert driver.find_elements(By.ID, "last-page") and len(seen) == len(set(seen))
    # the filters survive paging: every BA verdict of that judge, once
    with make_engine(demo_url).connect() as conn:
        want = (
            conn.exec_driver_sql(
                "SELECT v.id FROM verdict v JOIN job j ON j.id = v.job_id JOIN judge g ON g.id = j.judge_id "
                "JOIN campaign c ON c.id = j.campaign_id WHERE c.name = ? AND j.\"order\" = 'BA' AND g.name = ? "
                "ORDER BY v.id",
                (PAIRWISE, spec),
            )
            .scalars()
            .all()
        )
    assert seen == list(want)
    # a case link from the table opens the case
    _go(driver, driver.find_element(By.CSS_SELECTOR, "tr.verdict-row td:nth-child(2) a"))
    assert "/cases/" in driver.current_url and console_errors(driver) == []


def test_the_campaigns_page_follows_a_run_live(tmp_path: Path, driver: Any) -> None:
    url = f"sqlite:///{tmp_path / 'live.db'}"
    eng = tiny_db(url, n_groups=6, per_group=4)
    eng.dispose()
    with FakeServerProcess("--latency", "0.35", "--seed", "3") as fake:
        judges = [f"openai:judge-{k}?base_url={fake.url}/v1" for k in ("a", "b")]
        assert cli(*create_argv("live", *judges), db=url).code == 0
        viewer = Viewer(url)
        run = None
        try:
            driver.get(viewer.url + "/")
            row = driver.find_element(By.CSS_SELECTOR, 'tr[data-campaign="live"]')
            jobs = int(row.find_element(By.CSS_SELECTOR, '[data-field="jobs"]').text.split("/")[1])
            assert jobs == 48 and row.find_element(By.CSS_SELECTOR, '[data-field="done"]').text == "0"
            driver.execute_script("window.__still_here = 42;")  # gone if the page reloads
            run = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "judgepanel",
                    "--db",
                    url,
                    "campaign",
                    "run",
                    "live",
                    "--concurrency",
                    "2",
                ],
                env={**os.environ, **FAKE_KEYS},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            seen: list[tuple[int, str, str, str]] = []
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                row = driver.find_element(By.CSS_SELECTOR, 'tr[data-campaign="live"]')
                done = int(row.find_element(By.CSS_SELECTOR, '[data-field="done"]').text)
                rate = row.find_element(By.CSS_SELECTOR, '[data-field="calls_per_s"]').text
                eta = row.find_element(By.CSS_SELECTOR, '[data-field="eta"]').text
                status = row.find_element(By.CSS_SELECTOR, '[data-field="status"]').text
                if not seen or seen[-1][0] != done:
                    seen.append((done, rate, eta, status))
                if done == jobs:
                    break
                time.sleep(0.5)
            _, err = run.communicate(timeout=60)
            assert run.returncode == 0, err
            assert seen[-1][0] == jobs, seen
            mid = [s for s in seen if 0 < s[0] < jobs]
            assert len(mid) >= 2, seen  # progress seen while the run was going
            assert any(float(s[1]) > 0 and s[2] != "—" and s[3] == "running" for s in mid), seen
            assert driver.execute_script("return window.__still_here;") == 42  # never reloaded
            assert int(driver.find_element(By.TAG_NAME, "body").get_attribute("data-polled")) >= 3
            assert console_errors(driver) == []
            # the fake server's answers are labelled simulated although the judges are named openai:…
            # (the row was drawn before any answer; the badge arrives with the first simulated reply)
            assert row.find_element(By.CSS_SELECTOR, '[data-field="simulated"]').text == "simulated"
        finally:
            if run is not None and run.poll() is None:
                run.terminate()
                run.communicate(timeout=10)
            viewer.stop()


def test_hostile_stored_text_runs_nothing_on_any_page(xss_url: str, xss_viewer: Viewer, driver: Any) -> None:
    for path in pages(xss_url):
        xss.assert_page_runs_nothing(driver, xss_viewer.url + path, inline_scripts=0, settle=0.2)
    # the payload is there, as text
    case = next(p for p in pages(xss_url) if "/cases/" in p)
    driver.get(xss_viewer.url + case)
    assert "<script>window.__xss=1</script>" in driver.find_element(By.TAG_NAME, "main").text


def test_hostile_stored_text_runs_nothing_in_the_report(xss_url: str, tmp_path: Path, driver: Any) -> None:
    out = tmp_path / "r.html"
    from sqlalchemy import create_engine, text

    eng = create_engine(xss_url)
    with eng.connect() as conn:
        names = [
            r[0]
            for r in conn.execute(
                text("SELECT name FROM campaign WHERE protocol IN ('pairwise', 'pointwise')")
            )
        ]
        iteration = conn.execute(text("SELECT name FROM repair_iteration")).scalar()
    eng.dispose()
    r = cli(
        "report", *names, "--iteration", str(iteration), "--out", str(out), "--bootstrap", "20", db=xss_url
    )
    assert r.code == 0, r.stderr
    html = out.read_text(encoding="utf-8")
    xss.assert_escaped(html)
    driver.get(out.resolve().as_uri())
    assert driver.execute_script(xss.OPEN_DETAILS_JS) > 0
    probe = driver.execute_script(xss.PROBE_JS)
    assert {k: probe[k] for k in xss.CLEAN} == xss.CLEAN, probe
    assert probe["inline_scripts"] == 1  # the report's own search script
    assert "<script>window.__xss=1</script>" in driver.find_element(By.TAG_NAME, "main").text
