"""A repair iteration against the fake provider server (OpenAI and Anthropic wire formats), and
resuming after `kill -9` at several moments without buying any answer twice."""

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
from tests.helpers import cli
from tests.repair.conftest import prepare_db, run_args
from tests.runner.conftest import FAKE_KEYS

PATHS = ("/v1/chat/completions", "/v1/messages")


@pytest.fixture(scope="module")
def slow_fake() -> Iterator[FakeServerProcess]:
    with FakeServerProcess("--latency", "0.02", "--jitter", "0.01") as server:
        yield server


def calls(fake: FakeServerProcess) -> dict[str, int]:
    by = fake.stats()["by_path"]
    return {p: int(by.get(p, 0)) for p in PATHS}


def settled(fake: FakeServerProcess) -> dict[str, int]:
    last, since = calls(fake), time.monotonic()
    while time.monotonic() - since < 0.3:
        time.sleep(0.05)
        now = calls(fake)
        if now != last:
            last, since = now, time.monotonic()
    return last


def panel(fake: FakeServerProcess) -> tuple[tuple[str, ...], str]:
    judges = (f"openai:judge-o?base_url={fake.url}/v1", f"anthropic:judge-a?base_url={fake.url}")
    return judges, f"openai:editor?base_url={fake.url}/v1"


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_iteration_against_both_wire_formats(
    tmp_path: Path, slow_fake: FakeServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    for k, v in FAKE_KEYS.items():
        monkeypatch.setenv(k, v)
    db = tmp_path / "wire.db"
    url = f"sqlite:///{db}"
    prepare_db(url)
    judges, editor = panel(slow_fake)
    before = settled(slow_fake)
    out = cli(*run_args("w", judges, editor), "--json", db=url).json()
    assert set(out["steps"].values()) == {"done"}
    after = settled(slow_fake)
    made = {p: after[p] - before[p] for p in PATHS}
    stored = _rows(db, "SELECT count(*) FROM response WHERE cached_from IS NULL AND ok = 1")[0][0]
    assert made["/v1/chat/completions"] > 0 and made["/v1/messages"] > 0
    assert sum(made.values()) == stored
    # the editor's calls went over the OpenAI wire (the kill test uses Anthropic's) and were stored like judge calls
    editor_rows = _rows(
        db,
        "SELECT count(*), sum(v.parse_status = 'ok') FROM job j JOIN campaign c ON c.id = j.campaign_id "
        "JOIN verdict v ON v.job_id = j.id WHERE c.name = 'w-editor'",
    )[0]
    assert editor_rows[0] > 0 and editor_rows[0] == editor_rows[1]
    body = _rows(db, "SELECT group_concat(raw_body) FROM response")[0][0]
    assert all(key not in str(body) for key in FAKE_KEYS.values())
    cmp_ = out["comparison"]
    assert cmp_["units"]["eval"] == 12 and cmp_["clauses_edited"]["contested"] >= 1


def _start(url: str, judges: tuple[str, ...], editor: str) -> subprocess.Popen[bytes]:
    editor = editor.replace("openai:editor", "anthropic:editor").replace("/v1", "")  # the other wire
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "judgepanel",
            "--db",
            url,
            *run_args("k", judges, editor),
            "--concurrency",
            "2",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **FAKE_KEYS},
    )


def test_sigkill_during_steps_then_resume_without_rebuying(
    tmp_path: Path, slow_fake: FakeServerProcess
) -> None:
    db = tmp_path / "kill.db"
    url = f"sqlite:///{db}"
    prepare_db(url)
    judges, editor = panel(slow_fake)
    rng = random.Random(11)
    done_sql = "SELECT count(*) FROM job WHERE status = 'done'"
    # kill in the dev campaign, then around the editor / first evaluation campaign, then later
    for target in (rng.randint(5, 15), rng.randint(26, 40), rng.randint(55, 80)):
        kept = _rows(db, "SELECT job_id, id FROM verdict WHERE parse_status = 'ok'") if db.exists() else []
        proc = _start(url, judges, editor)
        deadline = time.monotonic() + 90
        while proc.poll() is None and _rows(db, done_sql)[0][0] < target:
            assert time.monotonic() < deadline, "no progress"
            time.sleep(0.03)
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        # nothing stored before was lost or changed
        now = dict(_rows(db, "SELECT job_id, id FROM verdict WHERE parse_status = 'ok'"))
        assert all(now.get(j) == v for j, v in kept)
        assert _rows(db, "PRAGMA integrity_check") == [("ok",)]
    steps = json.loads(str(_rows(db, "SELECT steps FROM repair_iteration WHERE name = 'k'")[0][0]))
    assert "pending" in steps.values()
    before = settled(slow_fake)
    stored_before = _rows(db, "SELECT count(*) FROM response WHERE cached_from IS NULL")[0][0]
    proc = _start(url, judges, editor)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err.decode()
    assert set(json.loads(out)["steps"].values()) == {"done"}
    after = settled(slow_fake)
    stored_after = _rows(db, "SELECT count(*) FROM response WHERE cached_from IS NULL")[0][0]
    # the resumed run asked exactly what was not stored yet, once each
    assert sum(after.values()) - sum(before.values()) == stored_after - stored_before
    per_job = _rows(
        db,
        "SELECT j.id, count(r.id), sum(v.parse_status = 'ok') FROM job j JOIN request r ON r.job_id = j.id "
        "LEFT JOIN verdict v ON v.request_id = r.id GROUP BY j.id",
    )
    assert per_job and all(n_req == 1 and n_ok == 1 for _j, n_req, n_ok in per_job)
    assert _rows(db, "SELECT count(*) FROM job WHERE status != 'done'") == [(0,)]


@pytest.mark.parametrize("fault", ["surrogate", "bigtokens"])
def test_an_editor_reply_with_a_lone_surrogate_or_a_huge_count_is_one_reply_not_a_lost_batch(
    tmp_path: Path, slow_fake: FakeServerProcess, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    """Issue 29 §1: an editor whose replies carry a lone surrogate (in `model` and its reasons) or
    token counts of 10**40 crashed the writer's batch in `repair run` (rc 1, nothing stored, every
    re-run paying again). Now the replies are stored cleaned and the iteration finishes."""
    for k, v in FAKE_KEYS.items():
        monkeypatch.setenv(k, v)
    db = tmp_path / "editor.db"
    url = f"sqlite:///{db}"
    prepare_db(url)
    judges = (f"openai:judge-o?base_url={slow_fake.url}/v1", f"openai:judge-p?base_url={slow_fake.url}/v1")
    editor = f"openai:editor!{fault}?base_url={slow_fake.url}/v1"
    out = cli(*run_args("e", judges, editor), "--json", db=url)
    assert out.code == 0, out.stderr
    assert set(out.json()["steps"].values()) == {"done"}
    rows = _rows(
        db,
        "SELECT r.model_returned, r.input_tokens FROM response r JOIN request q ON q.id = r.request_id "
        "JOIN job j ON j.id = q.job_id JOIN judge g ON g.id = j.judge_id WHERE g.model LIKE 'editor%'",
    )
    assert rows
    if fault == "surrogate":
        assert all("\ufffd" in str(m) for m, _ in rows)
    else:
        assert all(n is None for _, n in rows)
