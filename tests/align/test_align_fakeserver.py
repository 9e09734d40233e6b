"""An alignment against the fake provider server: resuming after `kill -9` in each step (the
development campaign, an editor round, a revised-instructions campaign, the evaluation) without
buying any answer twice — the calls are counted at the server — and no key in any stored body."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from judgepanel.fake.server import FakeServerProcess
from tests.align.conftest import run_args
from tests.repair.conftest import prepare_db
from tests.runner.conftest import FAKE_KEYS

PATHS = ("/v1/chat/completions", "/v1/messages")


@pytest.fixture(scope="module")
def slow_fake() -> Iterator[FakeServerProcess]:
    with FakeServerProcess("--latency", "0.03", "--jitter", "0.01") as server:
        yield server


def calls(fake: FakeServerProcess) -> int:
    by = fake.stats()["by_path"]
    return sum(int(by.get(p, 0)) for p in PATHS)


def settled(fake: FakeServerProcess) -> int:
    last, since = calls(fake), time.monotonic()
    while time.monotonic() - since < 0.3:
        time.sleep(0.05)
        now = calls(fake)
        if now != last:
            last, since = now, time.monotonic()
    return last


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _start(url: str, fake: FakeServerProcess) -> subprocess.Popen[bytes]:
    args = run_args(
        "k",
        "instructions",
        "--editor",
        f"anthropic:editor?base_url={fake.url}",
        "--rounds",
        "2",
        judge=f"openai:judge-o?base_url={fake.url}/v1",
    )
    args[args.index("--limit") + 1] = "8"
    return subprocess.Popen(
        [sys.executable, "-m", "judgepanel", "--db", url, *args, "--concurrency", "2", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **FAKE_KEYS},
    )


@pytest.mark.slow  # five CLI processes against a server with latency: about 45 s, the price of a kill in each step
def test_sigkill_in_each_step_then_resume_without_rebuying(
    tmp_path: Path, slow_fake: FakeServerProcess
) -> None:
    db = tmp_path / "kill.db"
    url = f"sqlite:///{db}"
    prepare_db(url)
    done_sql = "SELECT count(*) FROM job WHERE status = 'done'"
    # 8 development jobs, one editor job per round, 8 per revised round, then 2 × 8 evaluation jobs
    for target in (4, 9, 13, 22):
        kept = _rows(db, "SELECT job_id, id FROM verdict WHERE parse_status = 'ok'")
        before = settled(slow_fake)
        stored_before = _rows(db, "SELECT count(*) FROM response WHERE cached_from IS NULL")[0][0]
        proc = _start(url, slow_fake)
        deadline = time.monotonic() + 120
        while proc.poll() is None and _rows(db, done_sql)[0][0] < target:
            assert time.monotonic() < deadline, "no progress"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        now = dict(_rows(db, "SELECT job_id, id FROM verdict WHERE parse_status = 'ok'"))
        assert all(now.get(j) == v for j, v in kept)  # nothing stored before was lost or changed
        assert _rows(db, "PRAGMA integrity_check") == [("ok",)]
        # every call the server answered before the kill is stored, or was in flight at the kill
        made = settled(slow_fake) - before
        stored = _rows(db, "SELECT count(*) FROM response WHERE cached_from IS NULL")[0][0] - stored_before
        assert 0 <= made - stored <= 4
    steps = json.loads(str(_rows(db, "SELECT steps FROM alignment WHERE name = 'k'")[0][0]))
    assert "pending" in steps.values()
    before = settled(slow_fake)
    stored_before = _rows(db, "SELECT count(*) FROM response WHERE cached_from IS NULL")[0][0]
    proc = _start(url, slow_fake)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err.decode()
    result = json.loads(out)
    assert set(result["steps"].values()) == {"done"}
    after = settled(slow_fake)
    stored_after = _rows(db, "SELECT count(*) FROM response WHERE cached_from IS NULL")[0][0]
    # the resumed run asked exactly what was not stored yet, once each
    assert after - before == stored_after - stored_before
    per_job = _rows(
        db,
        "SELECT j.id, count(v.id), sum(v.parse_status = 'ok') FROM job j "
        "LEFT JOIN verdict v ON v.job_id = j.id GROUP BY j.id",
    )
    assert per_job and all(n_ok == 1 for _j, _n, n_ok in per_job)
    assert _rows(db, "SELECT count(*) FROM job WHERE status != 'done'") == [(0,)]
    body = _rows(db, "SELECT group_concat(raw_body) FROM response")[0][0]
    assert all(key not in str(body) for key in FAKE_KEYS.values())
    # the editor answered over the Anthropic wire, the judge over OpenAI's
    assert result["choices"]["rounds"][1]["reason"].startswith("[simulated editor]")
    assert result["comparison"]["simulated"] is True
