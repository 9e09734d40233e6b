"""Alignments whose calls fail (issue 34 §1), against the fake server:

* a failed editor round (a refusal, an unusable reply such as the answer format's placeholder) is
  exit 3 with the `align` step left pending — never "kept round 0 … the step done" — and
  `align run NAME --retry-failed` asks it again;
* failed judge jobs are exit 3 with their count, and every comparison is computed on the items
  every version answered, saying how many were left out; `--retry-failed` re-asks the evaluation
  ones (and recomputes the comparison), never the development ones behind a choice already made.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from judgepanel.fake.server import FakeServerProcess
from tests.align.conftest import run_args
from tests.helpers import cli
from tests.repair.conftest import prepare_db
from tests.runner.conftest import FAKE_KEYS

PATHS = ("/v1/chat/completions", "/v1/messages")


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServerProcess]:
    with FakeServerProcess("--seed", "5") as server:
        yield server


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in FAKE_KEYS.items():
        monkeypatch.setenv(k, v)


def _calls(fake: FakeServerProcess) -> int:
    by = fake.stats()["by_path"]
    return sum(int(by.get(p, 0)) for p in PATHS)


def _status(db: str, name: str) -> dict[str, Any]:
    out: dict[str, Any] = cli("align", "status", name, "--json", db=db).json()
    return out


def _instructions(name: str, editor: str, *extra: str) -> list[str]:
    args = run_args(name, "instructions", "--editor", editor, "--rounds", "1", *extra)
    args[args.index("--limit") + 1] = "8"
    return args


def test_a_refused_editor_leaves_the_step_pending_and_retry_failed_asks_again(
    sqlite_url: str, fake: FakeServerProcess
) -> None:
    prepare_db(sqlite_url)
    editor = f"openai:editor?base_url={fake.url}/v1"  # the judge is simulated in-process
    fake.set_context(60)
    try:
        out = cli(*_instructions("ref", editor), "--json", db=sqlite_url)
    finally:
        fake.set_context(0)
    assert out.code == 3, out.stderr
    err = " ".join(out.stderr.split())
    assert "round 1: the editor gave no usable revision: 1 refused as longer than the server's context" in err
    assert "then `judgepanel align run ref --retry-failed` asks again" in err
    steps = _status(sqlite_url, "ref")["steps"]
    assert steps["dev"] == "done" and steps["align"] == "pending"
    before = _calls(fake)
    again = cli("align", "run", "ref", db=sqlite_url)  # a plain resume does not re-ask the refusal
    assert again.code == 3 and _calls(fake) == before
    done = cli("align", "run", "ref", "--retry-failed", "--json", db=sqlite_url)
    assert done.code == 0, done.stderr
    result = done.json()
    assert set(result["steps"].values()) == {"done"} and result["failed_jobs"] == {}
    assert result["choices"]["rounds"][1]["reason"].startswith("[simulated editor]")
    assert _calls(fake) == before + 1  # the one editor call, asked again once


def test_the_editors_placeholder_is_an_unusable_reply(sqlite_url: str, fake: FakeServerProcess) -> None:
    prepare_db(sqlite_url)
    editor = f"openai:editor?base_url={fake.url}/v1"
    # what a real 0.5B editor answered: the wording of the answer format, not a revision
    fake.answer(
        [
            (
                "instructions_to_revise",
                '{"reason": "r", "instructions": "The revised instructions, plain text"}',
            )
        ]
    )
    try:
        out = cli(*_instructions("ph", editor), db=sqlite_url)
        assert out.code == 3, out.stdout + out.stderr
        err = " ".join(out.stderr.split())
        assert "1 answered with nothing usable" in err
        assert "repeats the answer format's placeholder ('The revised instructions, plain text')" in err
        assert _status(sqlite_url, "ph")["steps"]["align"] == "pending"
        rows = cli(
            "query",
            "SELECT j.status, j.error_class FROM job j JOIN campaign c ON c.id = j.campaign_id "
            "WHERE c.name = 'ph-editor-r1'",
            "--format",
            "json",
            db=sqlite_url,
        ).json()["rows"]
        assert rows == [{"status": "failed", "error_class": "parse"}]
    finally:
        fake.answer([])
    retried = cli("align", "run", "ph", "--retry-failed", "--json", db=sqlite_url)
    assert retried.code == 0, retried.stderr
    rounds = retried.json()["choices"]["rounds"]
    assert len(rounds) == 2 and "The revised instructions, plain text" not in rounds[1].get(
        "instructions", ""
    )


def test_failed_judge_jobs_exit_3_and_every_version_is_compared_on_the_same_items(
    sqlite_url: str, fake: FakeServerProcess
) -> None:
    prepare_db(sqlite_url)
    # a judge that cuts about a third of its replies at the output cap (seeded per request body)
    judge = f"openai:cutter!length@0.3?base_url={fake.url}/v1"
    out = cli(*run_args("cut", "fewshot", "--k", "2", judge=judge), "--json", db=sqlite_url)
    result = out.json(code=3)
    failed = result["failed_jobs"]
    n_failed = sum(n for by in failed.values() for n in by.values())
    assert n_failed > 0 and {c for by in failed.values() for c in by} == {"truncated"}
    err = " ".join(out.stderr.split())
    assert f"{n_failed} judge job(s) failed (truncated {n_failed})" in err
    assert "every comparison uses the items every version answered" in err
    comparison = result["comparison"]
    items = {v: d["agreement"]["items"] for v, d in comparison["versions"].items()}
    assert items == {"original": comparison["units"]["eval"], "aligned": comparison["units"]["eval"]}
    # the two versions failed on different items (their prompts differ): some items were left out
    assert comparison["left_out"]["eval"] > 0 or comparison["left_out"]["dev"] > 0
    dev = result["choices"]["dev_agreement"]
    assert dev["original"]["items"] == dev["aligned"]["items"]
    text = cli("align", "run", "cut", db=sqlite_url)  # the same, for people: said, and exit 3
    assert text.code == 3 and "chose 2 of" in text.stdout and "judge job(s) failed" in text.stderr
    if result["choices"]["dev_left_out"]:
        assert (
            f"{result['choices']['dev_left_out']} development item(s) left out of the choice" in text.stdout
        )
    assert f"({comparison['left_out']['eval']} left out" in text.stdout or not comparison["left_out"]["eval"]
    assert result["choices"]["dev_left_out"] == comparison["left_out"]["dev"]
    # --retry-failed: the evaluation's failed jobs are asked again and the comparison recomputed;
    # the development ones fed the choice already made and are not
    in_eval = sum(
        n
        for camp, by in failed.items()
        if camp in (result["campaigns"]["eval-original"], result["campaigns"]["eval-aligned"])
        for n in by.values()
    )
    assert in_eval > 0
    before = _calls(fake)
    again = cli("align", "run", "cut", "--retry-failed", "--json", db=sqlite_url)
    assert again.code in (0, 3), again.stderr
    assert _calls(fake) - before == in_eval
    after = again.json(code=again.code)
    dev_failed = {c: by for c, by in after["failed_jobs"].items() if c.startswith("cut-dev")}
    assert dev_failed == {c: by for c, by in failed.items() if c.startswith("cut-dev")}
    assert after["comparison"]["units"]["eval"] >= comparison["units"]["eval"]
