"""Test helpers: run the real CLI entry point in-process and capture what a user would see."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from typing import Any

from judgepanel.cli import main
from judgepanel.resources import sample_path


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self, *, code: int = 0) -> Any:
        """The one JSON object printed, after checking the exit code (3: a run left jobs without
        a verdict, which still prints its summary)."""
        assert self.code == code, self.stderr
        lines = [ln for ln in self.stdout.splitlines() if ln.strip()]
        assert len(lines) == 1, f"expected exactly one JSON line, got {self.stdout!r}"
        return json.loads(lines[0])


def cli(*args: str, db: str | None = None) -> CliResult:
    argv = ([f"--db={db}"] if db else []) + [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return CliResult(code, out.getvalue(), err.getvalue())


def load_summeval_sample(db: str, name: str | None = "se", *, articles: bool = True) -> None:
    """Migrate `db` and import the bundled SummEval sample (with its source articles unless told
    not to) as dataset `name` (None: the importer's default name)."""
    assert cli("db", "upgrade", db=db).code == 0
    args = ["data", "import-summeval", str(sample_path("summeval_sample.jsonl.gz"))]
    if articles:
        args += ["--articles", str(sample_path("summeval_articles_sample.jsonl.gz"))]
    if name is not None:
        args += ["--name", name]
    r = cli(*args, db=db)
    assert r.code == 0, r.stderr


def chromium_driver() -> object:
    """Debian's headless Chromium through Selenium (skipped without it, failed when
    JUDGEPANEL_REQUIRE_BROWSER is set); the report and viewer browser tests share it."""
    import os
    import shutil

    import pytest

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    chromedriver = shutil.which("chromedriver")
    if not (chromium and chromedriver):
        if os.environ.get("JUDGEPANEL_REQUIRE_BROWSER", "") not in ("", "0"):
            pytest.fail("chromium and chromedriver are required (JUDGEPANEL_REQUIRE_BROWSER=1)")
        pytest.skip("no chromium/chromedriver on this machine")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,1800",
    ):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=chromedriver), options=opts)
