"""`kill -9` at random moments, then resume: every job done exactly once, nothing stored is lost,
nothing already stored is bought again, and SQLite's integrity check passes.

The runner is the real CLI in a subprocess; the fake provider server is another process."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from judgepanel.fake.server import FakeServerProcess
from judgepanel.runner import campaign as api
from tests.runner.conftest import DATASET, FAKE_KEYS, tiny_db

JOBS = 240


@pytest.fixture(scope="module")
def slow_fake() -> Iterator[FakeServerProcess]:
    # slow enough that a run cannot finish between the "done" count reaching its target and the
    # kill (at 0.03 s the faster runner sometimes finished all 240 jobs before the third kill)
    with FakeServerProcess("--latency", "0.1", "--jitter", "0.03") as server:
        yield server


def chat_requests(fake: FakeServerProcess) -> int:
    return int(fake.stats()["by_path"].get("/v1/chat/completions", 0))


def settled_chat_requests(fake: FakeServerProcess) -> int:
    """The count once no request is still being answered: the server counts a request when its
    (delayed) reply is ready, so one sent just before a kill is counted up to a latency later."""
    last, stable_since = chat_requests(fake), time.monotonic()
    while time.monotonic() - stable_since < 0.3:
        time.sleep(0.05)
        now = chat_requests(fake)
        if now != last:
            last, stable_since = now, time.monotonic()
    return last


def snapshot(db: Path) -> tuple[dict[int, tuple[int, str]], dict[str, int]]:
    """ok verdicts by job (verdict id, value) and job counts by status, read like any other reader."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        verdicts = {
            job: (vid, value)
            for vid, job, value in con.execute(
                "SELECT id, job_id, value_presented FROM verdict WHERE parse_status = 'ok'"
            )
        }
        counts = dict(con.execute("SELECT status, count(*) FROM job GROUP BY status").fetchall())
    finally:
        con.close()
    return verdicts, counts


def start_run(url: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, **FAKE_KEYS}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "judgepanel",
            "--db",
            url,
            "campaign",
            "run",
            "k",
            "--concurrency",
            "8",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def test_sigkill_at_random_moments_then_resume(tmp_path: Path, slow_fake: FakeServerProcess) -> None:
    db = tmp_path / "kill.db"
    url = f"sqlite:///{db}"
    eng = tiny_db(url, n_groups=12, per_group=10)
    judge = f"openai:killtest?base_url={slow_fake.url}/v1"
    info = api.create(eng, "k", dataset=DATASET, protocol="pointwise", judges=[judge], repeats=2)
    eng.dispose()
    assert info.jobs == JOBS
    rng = random.Random(20240501)
    kept: dict[int, tuple[int, str]] = {}
    for _round in range(3):
        verdicts, counts = snapshot(db)
        proc = start_run(url)
        target = counts.get("done", 0) + rng.randint(10, 50)
        deadline = time.monotonic() + 60
        while snapshot(db)[1].get("done", 0) < target and proc.poll() is None:
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 0.3))
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        assert proc.returncode == -signal.SIGKILL
        after, counts = snapshot(db)
        # nothing stored earlier was lost or changed
        assert all(after.get(job) == v for job, v in verdicts.items())
        kept = after
        con = sqlite3.connect(db)
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        con.close()
    assert 0 < len(kept) < JOBS
    # resume: exactly the missing jobs are asked, once each
    _, counts = snapshot(db)
    missing = JOBS - counts.get("done", 0)
    before = settled_chat_requests(slow_fake)
    # the resume is not killed: its calls need no latency (the count below is of requests made)
    slow_fake.set_latency(0)
    try:
        proc = start_run(url)
        out, err = proc.communicate(timeout=120)
    finally:
        slow_fake.set_latency(0.1, jitter=0.03)
    assert proc.returncode == 0, err.decode()
    assert json.loads(out)["status"] == "done"
    assert chat_requests(slow_fake) - before == missing
    final, counts = snapshot(db)
    assert counts == {"done": JOBS}
    assert all(final[job] == v for job, v in kept.items())
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        per_job = con.execute(
            "SELECT j.id, j.attempts, count(r.id), sum(v.parse_status = 'ok') FROM job j "
            "JOIN request r ON r.job_id = j.id LEFT JOIN verdict v ON v.request_id = r.id GROUP BY j.id"
        ).fetchall()
    finally:
        con.close()
    assert len(per_job) == JOBS
    assert all(att == n_req == 1 and n_ok == 1 for _, att, n_req, n_ok in per_job)


def test_ctrl_c_stops_cleanly_and_exits_130(tmp_path: Path, slow_fake: FakeServerProcess) -> None:
    db = tmp_path / "int.db"
    url = f"sqlite:///{db}"
    eng = tiny_db(url, n_groups=12, per_group=10)
    api.create(
        eng,
        "k",
        dataset=DATASET,
        protocol="pointwise",
        judges=[f"openai:ctrlc?base_url={slow_fake.url}/v1"],
        repeats=2,
    )
    eng.dispose()
    before = settled_chat_requests(slow_fake)
    proc = start_run(url)
    deadline = time.monotonic() + 60
    while snapshot(db)[1].get("done", 0) < 30:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()
    assert "interrupted" in err.decode() and "Traceback" not in err.decode()
    assert json.loads(out)["status"] == "interrupted"
    verdicts, counts = snapshot(db)
    # every call the server answered finished and was stored; no job is left leased
    assert counts.get("running", 0) == 0
    assert len(verdicts) == counts["done"] == chat_requests(slow_fake) - before
    assert 30 <= counts["done"] < JOBS
