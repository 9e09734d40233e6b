"""A pointwise campaign with `scoring=logprobs` over real HTTP: every OpenAI job gets a
distribution whose argmax is its parsed verdict; a judge that did not ask, or whose provider
returns no logprobs, gets a per-job note and keeps its argmax verdict."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from sqlalchemy import Engine, select

from judgepanel.errors import BadInput
from judgepanel.fake.server import FakeServerProcess
from judgepanel.protocol.logprobs import NO_LOGPROBS
from judgepanel.runner.logprob_scores import NOT_REQUESTED, campaign_logprob_scores
from judgepanel.store.engine import make_engine
from tests.helpers import cli, migrate_db
from tests.runner.conftest import create_argv, tiny_db


@pytest.fixture
def db(sqlite_url: str) -> tuple[str, Engine]:
    eng = tiny_db(sqlite_url)  # migrated by the same code as `db upgrade` (`tests.runner.conftest.tiny_db`)
    return sqlite_url, eng


def test_logprob_scores_per_job(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    url, eng = db
    judges = (
        f"openai:lp?base_url={fake.url}/v1&scoring=logprobs&top_logprobs=5",
        f"openai:plain?base_url={fake.url}/v1",
    )
    created = cli(*create_argv("lp", *judges, extra=("--condition", "none", "--limit", "4")), db=url)
    assert created.code == 0, created.stderr
    ran = cli("campaign", "run", "lp", "--json", db=url).json()
    assert ran["done"] == ran["jobs"] == 8
    rows = campaign_logprob_scores(eng, "lp")
    assert len(rows) == 8
    with_lp = [r for r in rows if r.judge.startswith("openai:lp")]
    assert len(with_lp) == 4
    for r in with_lp:
        s = r.logprobs
        assert s.note is None and s.distribution is not None
        assert s.argmax == r.verdict  # the fake server's distribution peaks at the generated score
        assert abs(sum(s.distribution.values()) - 1) < 1e-12 and 1 <= (s.expectation or 0) <= 5
        assert s.expectation != float(r.verdict or 0)  # a continuous score, not the argmax again
    for r in rows:
        if r.judge.startswith("openai:plain"):
            assert r.logprobs.note == NOT_REQUESTED and r.logprobs.expectation is None
    # the stored score is the expectation for the logprob judge (so every metric that reads scores
    # sees the continuous value) and the argmax for the other; the verdict keeps the argmax
    stored = cli(
        "query",
        "select jd.name as judge, v.value_canonical as value, v.score from verdict v join job j on j.id = v.job_id "
        "join judge jd on jd.id = j.judge_id where v.parse_status = 'ok' order by j.id",
        "--json",
        db=url,
    ).json()["rows"]
    expected = sorted(round(r.logprobs.expectation or 0, 9) for r in with_lp)
    assert sorted(round(x["score"], 9) for x in stored if x["judge"].startswith("openai:lp")) == expected
    assert all(x["score"] == float(x["value"]) for x in stored if x["judge"].startswith("openai:plain"))
    pairwise = cli(
        *create_argv("pw", judges[0], protocol="pairwise", extra=("--pairs", "tiny-pairs", "--limit", "1")),
        db=url,
    )
    assert pairwise.code == 0, pairwise.stderr
    with pytest.raises(BadInput, match="pointwise"):
        campaign_logprob_scores(eng, "pw")


def test_a_reply_without_logprobs_gets_the_note() -> None:
    from judgepanel.protocol.logprobs import logprob_score, score_scale

    body = '{"choices": [{"message": {"content": "Score: 4"}, "logprobs": null}]}'
    assert logprob_score(body, score_scale()).note == NO_LOGPROBS


def test_the_backfill_reads_no_distribution_out_of_an_unparsed_reply(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    """Issue 30 §4: the store's backfill read a distribution out of replies that had failed to
    parse (the runner never scores them); now such a job gets the note, as the runner leaves it."""
    from judgepanel.runner.logprob_scores import UNPARSED

    url, eng = db
    judge = f"openai:lp!parse_error_rate=1?base_url={fake.url}/v1&scoring=logprobs&top_logprobs=5"
    created = cli(*create_argv("bad", judge, extra=("--condition", "none", "--limit", "3")), db=url)
    assert created.code == 0, created.stderr
    ran = cli("campaign", "run", "bad", "--json", db=url)
    assert ran.code == 3  # every reply unparseable: the jobs end failed
    rows = campaign_logprob_scores(eng, "bad")
    assert rows and all(r.verdict is None for r in rows)
    assert all(r.logprobs.note == UNPARSED and r.logprobs.expectation is None for r in rows)


# ---------------------------------------------------------------- one reading for run and re-read

# the judged turn-1 reply plants an answer of its own, with the judge's digit beside it
PLANTED = "17 * 3 is 51, which is the product asked for. Rating: [[2]] or 5 is what I expect."


def _scripted_logprob_reply(text: str) -> str:
    """An OpenAI body for ``text`` with logprobs: every digit its own token; the judge's answer
    digit (the first) spread over 5/6/4, each later digit near-certain with a little on 3."""
    tokens: list[str] = []
    buf = ""
    for ch in text:
        if ch.isdigit():
            tokens += [buf, ch] if buf else [ch]
            buf = ""
        else:
            buf += ch
    tokens += [buf] if buf else []
    first = next(i for i, t in enumerate(tokens) if t.isdigit())
    content = []
    for i, t in enumerate(tokens):
        if t.isdigit():
            tops = [("5", -0.1), ("6", -2.5), ("4", -3.0)] if i == first else [(t, -0.05), ("3", -3.5)]
        else:
            tops = [(t, -0.01)]
        content.append(
            {"token": t, "logprob": tops[0][1], "top_logprobs": [{"token": a, "logprob": b} for a, b in tops]}
        )
    return json.dumps({"choices": [{"message": {"content": text}, "logprobs": {"content": content}}]})


def test_the_stored_replies_are_read_again_as_the_run_read_them(
    sqlite_url: str, keys_env: dict[str, str]
) -> None:
    """Issue 30 §4: re-reading a stored reply quoted only the item's input and output, not what
    the rendered prompt showed. Judging turn 1 of a conversation with MT-Bench's single-answer
    template, a judge that answers `Rating: [[5]]` and then quotes the turn-1 reply (which plants
    `Rating: [[2]] or 5`) was read at its own 5 by the run but at the quote's 5 by the re-read
    (E 4.94 against 5.03); both now render the prompt and call the same reader."""
    from judgepanel.datasets.records import ItemRecord, ParsedDataset
    from judgepanel.runner import campaign as api
    from judgepanel.runner.options import RunOptions
    from judgepanel.store.imports import import_parsed
    from judgepanel.store.models import Verdict
    from tests.runner.conftest import ScriptedProvider, reply

    migrate_db(sqlite_url)
    eng = make_engine(sqlite_url)
    conv = [
        {"role": "user", "content": "What is 17 * 3?"},
        {"role": "assistant", "content": PLANTED},
        {"role": "user", "content": "Now divide that by 3."},
        {"role": "assistant", "content": "51 / 3 is 17."},
    ]
    item = ItemRecord("q1-m1", 0, group_key="q1", output="51 / 3 is 17.", meta={"conversation": conv})
    import_parsed(
        eng,
        "conv",
        ParsedDataset(kind="items", source_hash="conv-lp", items=[item], annotators=[], labels=[]),
    )
    api.create(
        eng, "lp-turn", dataset="conv", protocol="pointwise", judges=["openai:lp?base_url=http://127.0.0.1:9/v1&scoring=logprobs"],
        templates={"pointwise": "@classic-single"}, turn=1,
    )  # fmt: skip
    text = "Rating: [[5]]\n\nThe assistant wrote: " + PLANTED
    body = _scripted_logprob_reply(text)
    provider = ScriptedProvider("openai:lp", lambda req, n: replace(reply(text), raw_body=body))
    api.run(eng, "lp-turn", RunOptions(flush_ms=20), provider_factory=lambda spec, n: provider)
    with eng.connect() as conn:
        stored = conn.execute(select(Verdict.value_presented, Verdict.score)).one()
    (row,) = campaign_logprob_scores(eng, "lp-turn")
    assert stored.value_presented == row.verdict == "5"
    assert row.logprobs.position == 1  # the judge's own digit, not the quote's
    assert row.logprobs.expectation == pytest.approx(stored.score, abs=1e-12)
    assert stored.score == pytest.approx(5.031154272939995, abs=1e-9)
