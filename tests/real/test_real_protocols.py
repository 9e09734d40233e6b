"""Every protocol end to end against the real local model (issue 34 §2), on a handful of items:
pairwise AB/BA, pointwise under each condition, clauses, logprob scoring, a multi-turn MT-Bench
question (a killed run and its resume: test_real_failures). What is asserted holds whatever the model answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgepanel.runner import create
from judgepanel.store.engine import make_engine
from tests.helpers import cli
from tests.real.conftest import (
    ROOT,
    LocalModel,
    assert_every_job_classified,
    exit_of_run,
    responses,
)

pytestmark = pytest.mark.real


def _run(db: str, name: str) -> list[tuple[str, str | None]]:
    ran = cli("campaign", "run", name, "--json", db=db)
    assert ran.code in (0, 3), ran.stderr
    summary = json.loads(ran.stdout)
    states = assert_every_job_classified(db, name)
    exit_of_run(ran.code, states)
    assert summary["done"] + summary["failed"] == summary["jobs"] == len(states)
    if summary["failed"]:
        assert ran.stderr.strip(), "failures are loud"  # the run says what is left
    # resuming asks nothing: every job has its verdict or its classified failure
    before = responses(db)
    again = cli("campaign", "run", name, "--json", db=db)
    assert again.code == ran.code and json.loads(again.stdout)["calls"] == 0
    assert responses(db) == before
    return states


def test_pairwise_in_both_orders_and_its_position_bias(llm: LocalModel, summeval_db: str) -> None:
    db = summeval_db
    assert cli("data", "pairs", "se", "--name", "real-pairs", "--sample", "2", "--seed", "3", db=db).code == 0
    judge = llm.spec("qwen", max_tokens=160)
    assert (
        cli(
            "campaign",
            "create",
            "r-pair",
            "--dataset",
            "se",
            "--pairs",
            "real-pairs",
            "--protocol",
            "pairwise",
            "--judge",
            judge,
            db=db,
        ).code
        == 0
    )
    states = _run(db, "r-pair")
    assert len(states) == 4  # 2 pairs x AB/BA
    bias = cli("metrics", "bias", "--campaign", "r-pair", "--json", db=db)
    assert bias.code == 0, bias.stderr
    b = bias.json()["judges"]["qwen"]
    assert b["consistent"] + b["inconsistent"] <= 2


def test_pointwise_under_each_condition(llm: LocalModel, summeval_db: str) -> None:
    db = summeval_db
    judge = llm.spec("qwen", max_tokens=160)
    made = cli(
        "campaign",
        "create",
        "r-point",
        "--dataset",
        "se",
        "--protocol",
        "pointwise",
        "--rubric",
        "summeval",
        "--dimension",
        "coherence",
        "--condition",
        "none",
        "--condition",
        "criteria",
        "--condition",
        "rubric",
        "--limit",
        "1",
        "--judge",
        judge,
        db=db,
    )
    assert made.code == 0, made.stderr
    states = _run(db, "r-point")
    assert len(states) == 3
    scores = cli(
        "query",
        "SELECT v.score FROM verdict v JOIN job j ON j.id = v.job_id JOIN campaign c "
        "ON c.id = j.campaign_id WHERE c.name = 'r-point' AND v.parse_status = 'ok'",
        "--format",
        "json",
        db=db,
    ).json()["rows"]
    assert all(1 <= r["score"] <= 5 for r in scores)


def test_clause_verdicts(llm: LocalModel, summeval_db: str) -> None:
    db = summeval_db
    judge = llm.spec("qwen", max_tokens=600)
    made = cli(
        "campaign",
        "create",
        "r-clause",
        "--dataset",
        "se",
        "--protocol",
        "clauses",
        "--rubric",
        "summeval",
        "--dimension",
        "coherence",
        "--limit",
        "1",
        "--judge",
        judge,
        db=db,
    )
    assert made.code == 0, made.stderr
    states = _run(db, "r-clause")
    assert len(states) == 1
    partial = cli("campaign", "status", "r-clause", "--json", db=db).json()["partial"]
    assert partial in (0, 1)


def test_logprob_scores(llm: LocalModel, summeval_db: str) -> None:
    db = summeval_db
    judge = llm.spec("qwen-lp", max_tokens=160, scoring="logprobs", top_logprobs=5)
    made = cli(
        "campaign",
        "create",
        "r-logprob",
        "--dataset",
        "se",
        "--protocol",
        "pointwise",
        "--dimension",
        "coherence",
        "--limit",
        "1",
        "--judge",
        judge,
        db=db,
    )
    assert made.code == 0, made.stderr
    _run(db, "r-logprob")
    from judgepanel.runner.logprob_scores import campaign_logprob_scores

    eng = make_engine(db)
    try:
        rows = campaign_logprob_scores(eng, "r-logprob")
    finally:
        eng.dispose()
    assert len(rows) <= 1  # the done job's score (a reply cut at the cap has none)
    for r in rows:
        s = r.logprobs
        # a distribution at the answer token, or a stated reason why there is none
        if s.note is None:
            assert s.distribution is not None and abs(sum(s.distribution.values()) - 1) < 1e-9
            assert s.expectation is not None and 1 <= s.expectation <= 5
        else:
            assert s.expectation is None and s.note.strip()
    raw = cli("query", "SELECT r.raw_body FROM response r JOIN request q ON q.id = r.request_id JOIN job j "
              "ON j.id = q.job_id JOIN campaign c ON c.id = j.campaign_id WHERE c.name = 'r-logprob'",
              "--format", "json", db=db).json()["rows"]  # fmt: skip
    assert all('"logprobs"' in (x["raw_body"] or "") for x in raw)  # the server was asked for them


def test_a_multi_turn_mtbench_question(llm: LocalModel, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'mt.db'}"
    assert cli("db", "upgrade", db=db).code == 0
    imported = cli("data", "import-mtbench", str(ROOT.parent / "shared/data/mtbench"), db=db)
    assert imported.code == 0, imported.stderr
    # the shortest second-turn item: its first turn (question and answer) is the judge's context
    rows = cli(
        "query",
        "SELECT external_id, meta FROM item WHERE substr(external_id, -3) = '__2' "
        "ORDER BY length(coalesce(output, '')) + length(coalesce(meta, '')) LIMIT 1",
        "--format",
        "json",
        db=db,
    ).json()["rows"]
    assert rows
    ext = rows[0]["external_id"]
    eng = make_engine(db)
    try:
        create(
            eng,
            "r-mt",
            dataset="mtbench",
            protocol="pointwise",
            judges=[llm.spec("qwen", max_tokens=160)],
            conditions=("none",),
            items=(ext,),
        )
    finally:
        eng.dispose()
    states = _run(db, "r-mt")
    assert len(states) == 1
    msgs = cli(
        "query",
        "SELECT r.messages FROM request r JOIN job j ON j.id = r.job_id JOIN campaign c "
        "ON c.id = j.campaign_id WHERE c.name = 'r-mt'",
        "--format",
        "json",
        db=db,
    ).json()["rows"]
    text = json.dumps(msgs)
    meta = rows[0]["meta"] if isinstance(rows[0]["meta"], dict) else json.loads(rows[0]["meta"] or "{}")
    assert meta["turn"] == 2
    first = meta["conversation"][0]["content"]  # the first turn reached the judge as context
    assert json.dumps(first[:40])[1:-1] in text
