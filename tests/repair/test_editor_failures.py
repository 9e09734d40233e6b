"""A repair iteration whose editor calls fail (issue 34 §1), against the fake server's imitation of a
llama.cpp server with a small context per slot:

* a request over the server's window is a `context` failure whose message gives the figures and
  the change that helps ("raise the server's context"), never bare `--retry-failed` advice;
* after the window is raised, `--retry-failed` asks again and the iteration finishes (it never
  could: `fatal` failures were not re-asked);
* the failure message is grouped per cause: clauses that timed out are not blamed on the 400.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from judgepanel.fake.server import FakeServerProcess
from judgepanel.runner.failures import describe_failures, group_failures
from judgepanel.store.editor import FailedCall
from tests.helpers import cli
from tests.repair.conftest import PANEL_SIM, prepare_db, run_args
from tests.runner.conftest import FAKE_KEYS


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServerProcess]:
    with FakeServerProcess("--seed", "11") as server:
        yield server


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in FAKE_KEYS.items():
        monkeypatch.setenv(k, v)


def _editor_steps(db: str, name: str) -> dict[str, str]:
    steps: dict[str, str] = cli("repair", "status", name, "--json", db=db).json()["steps"]
    return steps


def test_a_context_refusal_says_what_helps_and_retry_failed_finishes_after_the_change(
    sqlite_url: str, fake: FakeServerProcess
) -> None:
    prepare_db(sqlite_url)
    editor = f"openai:editor?base_url={fake.url}/v1"
    fake.set_context(60)  # every editor prompt is longer; the judges are simulated in-process
    try:
        out = cli(*run_args("ctx", PANEL_SIM, editor), "--stop-after", "rewrite", db=sqlite_url)
        assert out.code == 3, out.stderr
        err = " ".join(out.stderr.split())
        assert "refused as longer than the server's context window" in err
        assert re.search(r"the longest request was [\d,]+ tokens, the server accepts 60", err)
        assert "asking again unchanged cannot help" in err and "raise the server's context" in err
        assert "then `judgepanel repair run ctx --retry-failed` asks again" in err
        assert _editor_steps(sqlite_url, "ctx")["rewrite"] == "pending"
        classes = cli(
            "query",
            "SELECT DISTINCT error_class FROM job WHERE status = 'failed'",
            "--format",
            "json",
            db=sqlite_url,
        ).json()["rows"]
        assert classes == [{"error_class": "context"}]
    finally:
        fake.set_context(0)  # the server's context raised: the same requests now fit
    # a plain resume does not re-ask a refusal …
    again = cli("repair", "run", "ctx", "--stop-after", "rewrite", db=sqlite_url)
    assert again.code == 3 and _editor_steps(sqlite_url, "ctx")["rewrite"] == "pending"
    # … the explicit retry does, and the step finishes
    retried = cli("repair", "run", "ctx", "--stop-after", "rewrite", "--retry-failed", db=sqlite_url)
    assert retried.code == 0, retried.stderr
    assert _editor_steps(sqlite_url, "ctx")["rewrite"] == "done"


def test_the_failure_message_is_grouped_per_cause(sqlite_url: str, fake: FakeServerProcess) -> None:
    prepare_db(sqlite_url)
    # half the editor calls hang until the 1 s timeout (twice: one retry for a timeout), the rest
    # reach a server whose window they overflow
    editor = f"openai:editor!hang@0.5?base_url={fake.url}/v1&timeout=1"
    fake.set_context(60)
    try:
        out = cli(*run_args("mix", PANEL_SIM, editor), "--stop-after", "rewrite", db=sqlite_url)
    finally:
        fake.set_context(0)
    assert out.code == 3, out.stderr
    err = " ".join(out.stderr.split())
    total = int(re.search(r"no usable rewrite for (\d+) of \d+ clauses", err).group(1))  # type: ignore[union-attr]
    refused = re.search(r"(\d+) refused as longer than the server's context window", err)
    timed = re.search(r"(\d+) timed out \(([^:]+): [^)]*no complete answer within 1 s", err)
    assert refused is not None and timed is not None, err
    assert int(refused.group(1)) + int(timed.group(1)) == total  # each clause under its own cause
    # the timed-out clauses are not said to be over the window, and their advice is to ask again
    assert "timed out" in err.split("refused as longer")[1]
    assert err.index("refused as longer") < err.index("timed out")


def test_causes_are_grouped_and_advised_without_a_server() -> None:
    body = (
        '{"error":{"code":400,"message":"request (5316 tokens) exceeds the available context size (4096 tokens), '
        'try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5316,"n_ctx":4096}}'
    )
    failures = {
        "coherence.2": FailedCall("context", 400, "openai HTTP 400: request (5316 tokens) exceeds …", body),
        "coherence.1": FailedCall("transient", None, "openai: no answer within 900 s"),
        "coherence.3": FailedCall("transient", None, "openai: no answer within 900 s"),
        "coherence.4": FailedCall("transient", None, "openai: no answer within 900 s"),
    }
    groups = group_failures(failures)
    assert [(g.cause, g.keys) for g in groups] == [
        ("context", ("coherence.2",)),
        ("timeout", ("coherence.1", "coherence.3", "coherence.4")),
    ]
    text = describe_failures(failures, "repair run it --retry-failed")
    assert text.startswith(
        "1 refused as longer than the server's context window (coherence.2; the longest request was "
        "5,316 tokens, the server accepts 4,096)"
    )
    assert "3 timed out (coherence.1, coherence.3, coherence.4: openai: no answer within 900 s): " in text
    fatal = describe_failures({"c": FailedCall("fatal", 401, "openai HTTP 401: bad key")}, "R")
    assert "asking again unchanged fails the same way" in fatal and "then `R` asks again" in fatal
