"""Fixtures for the viewer: the demo database, a copy of it full of hostile text, the viewer as
the real CLI in a subprocess, and headless Chromium (set up as the report's browser test does)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from tests import xss
from tests.helpers import ServedCli

TOKEN = "t0ken-for-the-viewer-tests-0123456789"


def inject_payloads(url: str) -> None:
    """Hostile text in every kind of stored text a page shows."""
    eng = create_engine(url)
    p = xss.TEXT
    with eng.begin() as conn:
        conn.execute(
            text("UPDATE item SET output = :p || output, input = :p || coalesce(input, '')"), {"p": p}
        )
        conn.execute(text("UPDATE verdict SET rationale = :p || coalesce(rationale, '')"), {"p": p})
        conn.execute(text("UPDATE response SET raw_body = :p, text = :p || coalesce(text, '')"), {"p": p})
        conn.execute(text("UPDATE label SET rationale = :p"), {"p": p})
        conn.execute(text("UPDATE rubric_version SET change_note = :p"), {"p": p})
        conn.execute(text("UPDATE item SET system = 'sys<script>window.__xss=1</script>'"))
        # a judge name and a campaign name: they reach tables, plots (matplotlib's SVG) and URLs
        conn.execute(
            text("UPDATE judge SET name = name || :p WHERE id = (SELECT min(id) FROM judge)"),
            {"p": "&x=<img src=x onerror=window.__xss=1>"},
        )
        conn.execute(
            text(
                "UPDATE campaign SET name = :n WHERE id = (SELECT min(id) FROM campaign WHERE protocol = 'pairwise')"
            ),
            {"n": xss.NAME},
        )
        for rid, rewrites in conn.execute(text("SELECT id, rewrites FROM repair_iteration")).all():
            doc = json.loads(rewrites) if isinstance(rewrites, str) else rewrites
            for r in (doc or {}).values():
                r["reason"] = p
                r["new"] = p + str(r.get("new", ""))
            conn.execute(
                text("UPDATE repair_iteration SET rewrites = :r WHERE id = :i"),
                {"r": json.dumps(doc), "i": rid},
            )
    eng.dispose()


@pytest.fixture(scope="session")
def xss_url(demo_url: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("view-xss")
    src = Path(demo_url.removeprefix("sqlite:///"))
    dst = folder / "xss.db"
    # a consistent copy (the demo database is in WAL mode)
    eng = create_engine(demo_url)
    with eng.connect() as conn:
        conn.exec_driver_sql(f"VACUUM INTO '{dst}'")
    eng.dispose()
    assert src.exists()
    url = f"sqlite:///{dst}"
    inject_payloads(url)
    return url


class Viewer(ServedCli):
    """`judgepanel view` in its own process; `url` is what it printed first."""

    def __init__(self, db: str, *args: str) -> None:
        super().__init__(db, "view", "--port", "0", *args)


@pytest.fixture(scope="session")
def demo_viewer(demo_url: str) -> Iterator[Viewer]:
    """One viewer of the read-only demo database per run and xdist worker (a `judgepanel view`
    start-up is about 1.2 s of CPU); it logs no requests, so its unread stderr cannot fill."""
    v = Viewer(demo_url)
    yield v
    v.stop()


@pytest.fixture(scope="session")
def xss_viewer(xss_url: str) -> Iterator[Viewer]:
    """One viewer of the read-only hostile-text database per run and xdist worker."""
    v = Viewer(xss_url)
    yield v
    v.stop()


@pytest.fixture
def driver(chromium: object) -> object:
    """The run's headless Chromium (tests/conftest.py's `chromium`)."""
    return chromium


def console_errors(driver: object) -> list[dict[str, object]]:
    return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]  # type: ignore[attr-defined]


def left_the_page(old: object) -> Any:
    """A `WebDriverWait` condition: the element `old` (e.g. the page's `<html>`) belongs to a page
    the browser has left. Selenium's `staleness_of` lets one error through: Chromium can answer a
    query about a node of the document being replaced with "Node with given id does not belong to
    the document" (a plain `WebDriverException`, not a stale-element error), which failed a click
    test once in a full run; that answer means the same as stale."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

    def gone(_driver: object) -> bool:
        try:
            old.is_enabled()  # type: ignore[attr-defined]
        except StaleElementReferenceException:
            return True
        except WebDriverException as e:
            if "does not belong to the document" in str(e):
                return True
            raise
        return False

    return gone
