"""The campaign CLI: contract JSON keys, clear one-line errors with exit 2, re-asking parse failures."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import Engine, select

from judgepanel.fake.server import FakeServerProcess
from judgepanel.store.models import Request, Response
from tests.helpers import cli
from tests.runner.conftest import PAIRS, create_argv, tiny_db


@pytest.fixture
def db(sqlite_url: str) -> tuple[str, Engine]:
    eng = tiny_db(sqlite_url)
    return sqlite_url, eng


def test_contract_keys(db: tuple[str, Engine]) -> None:
    url, _ = db
    argv = create_argv(
        "c", "sim:a", "sim:b", protocol="pairwise", extra=("--pairs", PAIRS, "--repeats", "2", "--json")
    )
    made = cli(*argv, db=url).json()
    assert made["jobs"] == made["added"] == 18 * 2 * 2 * 2
    plan = cli("campaign", "plan", "c", "--json", db=url).json()
    assert list(plan)[:5] == ["jobs", "calls", "input_tokens", "output_tokens", "cost_usd"]
    assert plan["cost_usd"] == 0.0  # simulated judges are free
    run = cli("campaign", "run", "c", "--concurrency", "4", "--json", db=url).json()
    assert run["status"] == "done"
    status = cli("campaign", "status", "c", "--json", db=url).json()
    assert list(status)[:6] == ["jobs", "done", "failed", "pending", "calls", "cost_usd"]
    assert (status["jobs"], status["done"], status["pending"]) == (144, 144, 0)
    listed = cli("campaign", "list", "--json", db=url).json()
    assert [c["name"] for c in listed["campaigns"]] == ["c"]
    human = cli("campaign", "status", "c", db=url)
    assert human.code == 0 and "144/144 done" in human.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("campaign", "status", "nope", "--json"), "no campaign named 'nope'"),
        (("campaign", "run", "nope"), "no campaign named 'nope'"),
        (create_argv("x", "sim:a", protocol="pairwise"), "--pairs"),
        (create_argv("x", "sim:a", dataset="nope"), "no dataset"),
        (create_argv("x", "magic:a"), "unknown provider"),
        (create_argv("x", "sim:a", extra=("--condition", "rubric")), "--rubric"),
        (create_argv("x", "sim:a", extra=("--rubric", "nope", "--condition", "criteria")), "no rubric named"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    db: tuple[str, Engine], args: tuple[str, ...], message: str
) -> None:
    url, _ = db
    out = cli(*args, db=url)
    assert out.code == 2, out.stderr
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert "Traceback" not in out.stderr


def test_run_options_are_checked(db: tuple[str, Engine]) -> None:
    url, _ = db
    assert (
        cli(
            *create_argv("o", "sim:a"),
            db=url,
        ).code
        == 0
    )
    for args, message in (
        (("--concurrency", "0"), "--concurrency"),
        (("--rpm", "-5"), "--rpm"),
        (("--max-attempts", "0"), "--max-attempts"),
        (("--max-cost", "-1"), "--max-cost"),
    ):
        out = cli("campaign", "run", "o", *args, db=url)
        assert out.code == 2 and message in out.stderr, out.stderr


def test_retry_parse_failures_reasks_with_a_note(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    url, eng = db
    judge = f"openai:j!parse_error_rate=0.5,prose_rate=0?base_url={fake.url}/v1"
    assert (
        cli(
            *create_argv("pf", judge, extra=("--repeats", "3")),
            db=url,
        ).code
        == 0
    )
    first = cli("campaign", "run", "pf", "--json", db=url).json(code=3)  # jobs failed: exit 3
    assert 0 < first["failed"] < first["jobs"] and first["errors"]["parse"] == first["failed"]
    # the simulator garbles a structured reply by cutting it at the output cap: `truncated`
    # failures, which are re-asked only when asked for (issue 17 §6; tests/runner/test_truncation.py)
    again_run = cli("campaign", "retry-parse-failures", "pf", "--truncated", "--json", db=url)
    again = json.loads(again_run.stdout)
    assert again_run.code == (0 if again["done"] == again["jobs"] else 3), again_run.stderr
    assert again["calls"] == first["failed"]  # only the unreadable ones are asked again
    assert again["failed"] < first["failed"] and again["done"] > first["done"]
    with eng.connect() as conn:
        reasked = (
            conn.execute(
                select(Request.messages)
                .join(Response, Response.request_id == Request.id)
                .where(Request.attempt == 2)
            )
            .scalars()
            .all()
        )
    assert len(reasked) == first["failed"]
    assert all("could not be read" in m[-1]["content"] for m in reasked)
