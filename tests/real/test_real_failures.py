"""The error paths of issue 34 §1, exercised once against the real server (their regression tests
run against the fake server in the default suite):

* a prompt over the server's context window: class `context`, the real server's figures in the
  advice, and `--retry-failed` finishing after the window was raised (a second llama-server with a
  512-token context, restarted with a larger one on the same port — a refusal needs no inference);
* an alignment whose editor is refused: exit 3, the step pending, `--retry-failed` after the
  change finishes it;
* `max_tokens=6`: the truncation advice says the cap cannot hold an answer;
* a worker killed with SIGKILL: its campaign reads `running` while its leases live, then
  `interrupted`, and a resumed run asks only what is missing; `progress` is active meanwhile.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import cli
from tests.real.conftest import (
    KEY,
    LocalModel,
    _free_port,
    assert_every_job_classified,
    responses,
    wait_for,
)

pytestmark = pytest.mark.real


def _server(port: int, ctx: int, *, stop: bool = False) -> None:
    cache = Path(os.environ.get("JUDGEPANEL_LLM_CACHE", Path.home() / ".cache/judgepanel-llm"))
    subprocess.run([str(cache / "stop.sh"), str(port)], check=False, stdout=subprocess.DEVNULL)
    if stop:
        return
    env = {**os.environ, "JUDGEPANEL_LLM_CTX": str(ctx), "JUDGEPANEL_LLM_PARALLEL": "1"}
    subprocess.run([str(cache / "start.sh"), str(port)], check=True, env=env, stdout=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def small(llm: LocalModel) -> Iterator[LocalModel]:
    """A second server of the same model with a 512-token context (one slot)."""
    port = _free_port()
    _server(port, 512)
    try:
        yield LocalModel(f"http://127.0.0.1:{port}/v1", llm.model, port, 1)
    finally:
        _server(port, 0, stop=True)


def test_a_context_refusal_from_the_real_server_and_retry_after_raising_it(
    small: LocalModel, summeval_db: str
) -> None:
    db = summeval_db
    judge = small.spec("small", max_tokens=64)
    made = cli("campaign", "create", "r-ctx", "--dataset", "se", "--protocol", "pointwise", "--rubric", "summeval",
               "--condition", "rubric", "--dimension", "coherence", "--limit", "1", "--judge", judge, db=db)  # fmt: skip
    assert made.code == 0, made.stderr
    first = cli("campaign", "run", "r-ctx", "--json", db=db)
    summary = first.json(code=3)
    assert summary["errors"] == {"context": 1}
    advice = next(w for w in summary["warnings"] if "context window" in w)
    assert re.search(r"the longest request was [\d,]+ tokens, the server accepts 512\b", advice), advice
    _server(small.port, 4096)  # the server's context raised
    again = cli("campaign", "run", "r-ctx", "--json", db=db)
    assert again.json(code=3)["calls"] == 0  # a refusal is not re-asked by itself
    retried = cli("campaign", "run", "r-ctx", "--retry-failed", "--json", db=db)
    assert retried.code in (0, 3), retried.stderr
    assert json.loads(retried.stdout)["calls"] == 1
    states = assert_every_job_classified(db, "r-ctx")
    assert all(c != "context" for _s, c in states)
    _server(small.port, 512)


def test_an_alignment_whose_editor_is_refused_then_retried(
    llm: LocalModel, small: LocalModel, summeval_db: str
) -> None:
    db = summeval_db
    args = [
        "align", "run", "ra-ref", "--dataset", "se", "--judge", llm.spec("qwen", max_tokens=160),
        "--human-group", "expert", "--dimension", "coherence", "--rubric", "summeval", "--method",
        "instructions", "--editor", small.spec(max_tokens=400), "--rounds", "1",
        "--limit", "2", "--seed", "3", "--bootstrap", "100",
    ]  # fmt: skip
    out = cli(*args, db=db)
    assert out.code == 3, out.stderr
    if "editor gave no usable revision" not in out.stderr:
        pytest.skip("the judge agreed with the humans on every development item: no editor round was asked")
    assert "refused as longer than the server's context window" in out.stderr
    assert "the server accepts 512" in " ".join(out.stderr.split())
    assert cli("align", "status", "ra-ref", "--json", db=db).json()["steps"]["align"] == "pending"
    _server(small.port, 8192)
    try:
        again = cli("align", "run", "ra-ref", "--retry-failed", "--json", db=db)
        assert again.code in (0, 3), again.stderr
        if again.code == 3 and "editor gave no usable revision" in again.stderr:
            assert "refused as longer" not in again.stderr  # another cause now, said as such
        else:
            steps = json.loads(again.stdout)["steps"]
            assert steps["align"] == "done"
    finally:
        _server(small.port, 512)


def test_a_cap_that_cannot_hold_an_answer(llm: LocalModel, summeval_db: str) -> None:
    db = summeval_db
    judge = llm.spec("qwen-six", max_tokens=6)
    made = cli("campaign", "create", "r-six", "--dataset", "se", "--protocol", "pointwise", "--dimension",
               "coherence", "--limit", "1", "--judge", judge, db=db)  # fmt: skip
    assert made.code == 0, made.stderr
    summary = cli("campaign", "run", "r-six", "--json", db=db).json(code=3)
    assert summary["failed"] == 1
    advice = next(w for w in summary["warnings"] if "cut at the output cap" in w)
    assert "max_tokens=6 cannot hold even the shortest answer" in advice and "lower the cap" not in advice


def test_a_killed_worker_reads_interrupted_and_a_resume_buys_only_the_rest(
    llm: LocalModel, summeval_db: str
) -> None:
    db = summeval_db
    judge = llm.spec("qwen-kill", max_tokens=96)
    made = cli("campaign", "create", "r-kill", "--dataset", "se", "--protocol", "pointwise", "--dimension",
               "coherence", "--limit", "3", "--judge", judge, db=db)  # fmt: skip
    assert made.code == 0, made.stderr
    lease = 8.0
    proc = subprocess.Popen(
        [sys.executable, "-m", "judgepanel", "--db", db, "worker", "--campaign", "r-kill", "--lease-seconds",
         str(lease), "--json"],
        env={**os.environ, "OPENAI_API_KEY": KEY},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    before = responses(db)
    try:
        assert wait_for(lambda: responses(db) > before or proc.poll() is not None, 900)
        status = cli("campaign", "status", "r-kill", "--json", db=db).json()
        if proc.poll() is None and status["pending"]:
            assert status["status"] == "running" and status["progress"]["active"] is True
            assert (
                status["progress"]["mean_latency_s"] is not None and status["progress"]["mean_latency_s"] > 0
            )
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        time.sleep(lease + 1)
        after = cli("campaign", "status", "r-kill", "--json", db=db).json()
        if after["pending"]:
            assert after["status"] == "interrupted", after["status"]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    stored = responses(db)
    resumed = cli("campaign", "run", "r-kill", "--json", db=db)
    assert resumed.code in (0, 3), resumed.stderr
    assert responses(db) - stored == json.loads(resumed.stdout)["calls"]
    assert_every_job_classified(db, "r-kill")
    ok = cli("query", "SELECT j.id, sum(CASE WHEN v.parse_status = 'ok' THEN 1 ELSE 0 END) AS n FROM job j "
             "JOIN campaign c ON c.id = j.campaign_id LEFT JOIN verdict v ON v.job_id = j.id "
             "WHERE c.name = 'r-kill' GROUP BY j.id", "--format", "json", db=db).json()["rows"]  # fmt: skip
    assert len(ok) == 3 and all((r["n"] or 0) <= 1 for r in ok)
