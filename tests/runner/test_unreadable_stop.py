"""A run whose first 20 answers all fail to parse stops early (issue 19 §5): it says why, quoting
the first failure, exits 3, and loses no job — what was answered is stored, the rest stays pending
for the next run. Over real HTTP (the fake server in its own process) through the real CLI, and
through a worker, which then leaves the campaign alone instead of spending round after round."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from judgepanel.fake.server import FakeServerProcess
from judgepanel.runner.campaign import run
from judgepanel.runner.options import UNREADABLE_STOP, RunOptions
from judgepanel.runner.worker import work
from judgepanel.store.engine import make_engine
from judgepanel.store.migrate import upgrade
from judgepanel.store.models import Job, Response
from tests.helpers import cli
from tests.runner.conftest import create_argv, load_tiny

JOBS = 12 * 5  # the tiny dataset's 12 items, 5 repeats


@pytest.fixture
def db(sqlite_url: str) -> tuple[str, Engine]:
    eng = make_engine(sqlite_url)
    upgrade(eng)
    load_tiny(eng)
    return sqlite_url, eng


def _jobs(eng: Engine) -> dict[str, int]:
    with eng.connect() as c:
        return dict(c.execute(select(Job.status, func.count()).group_by(Job.status)).all())


def _status(url: str, name: str) -> dict[str, Any]:
    out: dict[str, Any] = cli("campaign", "status", name, "--json", db=url).json()
    return out


def test_a_run_whose_first_answers_all_fail_to_parse_stops_and_says_why(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    url, eng = db
    judge = f"openai:garbled!parse_error_rate=1?base_url={fake.url}/v1"
    assert cli(*create_argv("g", judge, extra=("--repeats", "5")), db=url).code == 0
    out = cli("campaign", "run", "g", "--concurrency", "4", "--json", db=url)
    assert out.code == 3, out.stderr
    got = json.loads(out.stdout)
    assert got["status"] == "unreadable"
    answered = got["calls"]
    assert UNREADABLE_STOP <= answered < UNREADABLE_STOP + 4  # the calls in flight when it stopped
    assert got["failed"] == answered and got["done"] == 0
    assert got["pending"] == JOBS - answered > 0
    first = got["stopped"]
    assert first.startswith(f"stopped early: the first {answered} answers all failed to parse")
    with eng.connect() as c:
        texts = list(c.scalars(select(Response.text).where(Response.text.is_not(None))))
    assert len(texts) == answered  # every answer stored, none sent beyond them
    assert any(" ".join(t.split())[:40] in first for t in texts)  # the first failure's own text
    assert "stopped early" in cli("campaign", "run", "g", db=url).stderr  # the plain CLI says it too
    # nothing lost: every job is failed (answered) or pending, none left leased
    jobs = _jobs(eng)
    assert set(jobs) <= {"failed", "pending"} and sum(jobs.values()) == JOBS
    assert _status(url, "g")["pending"] == jobs["pending"]


def test_a_judge_that_parses_some_of_the_time_runs_to_the_end(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    url, _ = db
    judge = f"openai:flaky!parse_error_rate=0.6,prose_rate=0?base_url={fake.url}/v1"
    assert cli(*create_argv("f", judge, extra=("--repeats", "5")), db=url).code == 0
    got = json.loads(cli("campaign", "run", "f", "--json", db=url).stdout)
    assert got["status"] == "incomplete" and got["stopped"] is None
    assert got["pending"] == 0 and got["calls"] == JOBS
    assert 0 < got["failed"] < JOBS


def test_a_run_stopped_early_loses_no_job_and_a_fixed_judge_finishes_it(db: tuple[str, Engine]) -> None:
    url, eng = db
    assert cli(*create_argv("s", "sim:broken?parse_error_rate=1", extra=("--repeats", "5")), db=url).code == 0
    first = json.loads(cli("campaign", "run", "s", "--concurrency", "1", "--json", db=url).stdout)
    assert first["status"] == "unreadable" and first["calls"] == UNREADABLE_STOP
    assert first["pending"] == JOBS - UNREADABLE_STOP
    # the stop applies per run: with the check off, the same judge is asked for every job left
    rest = run(eng, "s", RunOptions(unreadable_stop=None))
    assert rest.status == "incomplete" and rest.calls == JOBS - UNREADABLE_STOP and rest.pending == 0


def test_a_worker_leaves_an_unreadable_campaign_alone(db: tuple[str, Engine]) -> None:
    url, eng = db
    assert cli(*create_argv("w", "sim:broken?parse_error_rate=1", extra=("--repeats", "5")), db=url).code == 0
    summary = work(eng, RunOptions(concurrency=2), campaigns=["w"])
    assert UNREADABLE_STOP <= summary.calls < UNREADABLE_STOP + 2
    assert summary.campaigns["w"]["pending"] == JOBS - summary.calls
    assert any("stopped early" in w for w in summary.warnings)
