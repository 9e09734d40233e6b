"""A pointwise campaign with `scoring=logprobs` over real HTTP: every OpenAI job gets a
distribution whose argmax is its parsed verdict; a judge that did not ask, or whose provider
returns no logprobs, gets a per-job note and keeps its argmax verdict."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from judgepanel.errors import BadInput
from judgepanel.fake.server import FakeServerProcess
from judgepanel.protocol.logprobs import NO_LOGPROBS
from judgepanel.store.engine import make_engine
from judgepanel.store.logprob_scores import NOT_REQUESTED, campaign_logprob_scores
from tests.helpers import cli
from tests.runner.conftest import create_argv, load_tiny


@pytest.fixture
def db(sqlite_url: str) -> tuple[str, Engine]:
    assert cli("db", "upgrade", db=sqlite_url).code == 0
    eng = make_engine(sqlite_url)
    load_tiny(eng)
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
    from judgepanel.store.logprob_scores import UNPARSED

    url, eng = db
    judge = f"openai:lp!parse_error_rate=1?base_url={fake.url}/v1&scoring=logprobs&top_logprobs=5"
    created = cli(*create_argv("bad", judge, extra=("--condition", "none", "--limit", "3")), db=url)
    assert created.code == 0, created.stderr
    ran = cli("campaign", "run", "bad", "--json", db=url)
    assert ran.code == 3  # every reply unparseable: the jobs end failed
    rows = campaign_logprob_scores(eng, "bad")
    assert rows and all(r.verdict is None for r in rows)
    assert all(r.logprobs.note == UNPARSED and r.logprobs.expectation is None for r in rows)
