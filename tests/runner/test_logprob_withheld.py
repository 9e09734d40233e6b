"""Issue 30 §4: a logprob judge whose expectation is withheld (less than half the probability at
the answer on the scale) keeps its argmax score, and the commands that read the expectation —
`metrics prevalence`, `validate alt-test/rank --scorer neg-rmse --campaign` — say per judge how
often (`logprob_withheld`, and one line of text). A scripted OpenAI-compatible judge: its reply to
about half the items puts only 0.30 of the probability at the answer on the scale."""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, select

from judgepanel.datasets.records import AnnotatorRecord, LabelRecord, ParsedDataset
from judgepanel.protocol.logprobs import LOW_MASS
from judgepanel.providers.base import ChatRequest, ChatResult
from judgepanel.runner import campaign as api
from judgepanel.runner.logprob_scores import campaign_logprob_scores, withheld_by_judge
from judgepanel.runner.options import RunOptions
from judgepanel.store.engine import make_engine
from judgepanel.store.imports import import_parsed
from judgepanel.store.models import Verdict
from tests.helpers import cli, migrate_db
from tests.runner.conftest import FAKE_KEYS, ScriptedProvider, make_items, reply

JUDGE = "openai:lp?base_url=http://127.0.0.1:9/v1&scoring=logprobs"
NAME = "lp"  # the short name every table and JSON shows


def _low(request: ChatRequest) -> bool:
    """Whether this request gets the low-mass reply (about half, fixed by the prompt's text)."""
    return zlib.crc32(request.messages[-1]["content"].encode()) % 2 == 0


def _script(request: ChatRequest, n: int) -> ChatResult:
    score = 2 + zlib.crc32(request.messages[-1]["content"].encode()) % 3
    text = f'{{"score": {score}}}'
    tops = (
        [(str(score), math.log(0.25)), ("five", math.log(0.5)), (str(score + 1), math.log(0.05))]
        if _low(request)
        else [(str(score), -0.2), (str(score + 1), -2.0)]
    )
    content = [
        {
            "token": '{"score": ',
            "logprob": -0.01,
            "top_logprobs": [{"token": '{"score": ', "logprob": -0.01}],
        },
        {
            "token": str(score),
            "logprob": tops[0][1],
            "top_logprobs": [{"token": t, "logprob": lp} for t, lp in tops],
        },
        {"token": "}", "logprob": -0.01, "top_logprobs": [{"token": "}", "logprob": -0.01}]},
    ]
    body = json.dumps({"choices": [{"message": {"content": text}, "logprobs": {"content": content}}]})
    out = reply(text)
    return ChatResult(
        text=out.text,
        raw_body=body,
        model_returned=out.model_returned,
        input_tokens=out.input_tokens,
        output_tokens=out.output_tokens,
    )


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Engine, int]]:
    url = f"sqlite:///{tmp_path_factory.mktemp('withheld') / 'w.db'}"
    migrate_db(url)
    engine = make_engine(url)
    items = make_items(3, 4)
    labels = [
        LabelRecord(it.external_id, h, "overall", float(1 + (k + i) % 5), str(1 + (k + i) % 5))
        for k, it in enumerate(items)
        for i, h in enumerate(("h1", "h2", "h3"))
    ]
    parsed = ParsedDataset(
        kind="items",
        source_hash="withheld",
        items=items,
        annotators=[AnnotatorRecord(h, "human", "expert") for h in ("h1", "h2", "h3")],
        labels=labels,
    )
    import_parsed(engine, "tiny", parsed)
    provider = ScriptedProvider("openai:lp", _script)
    with pytest.MonkeyPatch.context() as mp:
        for k, v in FAKE_KEYS.items():
            mp.setenv(k, v)
        api.create(engine, "w", dataset="tiny", protocol="pointwise", judges=[JUDGE], dimensions=("overall",))
        api.run(engine, "w", RunOptions(flush_ms=10), provider_factory=lambda spec, n: provider)
    low = sum(_low(r) for r in provider.calls)
    assert 0 < low < len(provider.calls) == 12
    yield url, engine, low
    engine.dispose()


def test_a_withheld_expectation_leaves_the_argmax_and_is_counted(db: tuple[str, Engine, int]) -> None:
    _, engine, low = db
    rows = campaign_logprob_scores(engine, "w")
    assert sum(r.logprobs.note == LOW_MASS for r in rows) == low
    with engine.connect() as c:
        stored = c.execute(select(Verdict.score, Verdict.value_presented).order_by(Verdict.job_id)).all()
    for r, (score, value) in zip(rows, stored, strict=True):
        if r.logprobs.note == LOW_MASS:
            assert score == float(value)  # the argmax stands
        else:
            assert r.logprobs.expectation == pytest.approx(score, abs=1e-12) and score != float(value)
    (cov,) = withheld_by_judge(rows).values()
    assert (cov.verdicts, cov.expectation, cov.withheld, cov.below_mass_floor) == (12, 12 - low, low, low)
    assert cov.share == pytest.approx(low / 12)


def test_prevalence_reports_the_withheld_share(db: tuple[str, Engine, int]) -> None:
    url, _, low = db
    argv = ("metrics", "prevalence", "--campaign", "w", "--human-group", "expert", "--threshold", "3")
    out = cli(*argv, "--bootstrap", "50", "--json", db=url).json()
    assert out["score_source"] == "expectation"
    entry = out["logprob_withheld"][NAME]
    assert entry == {
        "verdicts": 12,
        "expectation": 12 - low,
        "withheld": low,
        "share": pytest.approx(low / 12),
        "below_mass_floor": low,
        "reasons": {LOW_MASS: low},
        "fallback": "argmax",
    }
    text = cli(*argv, "--bootstrap", "50", db=url)
    assert text.code == 0
    assert f"judge {NAME}: no logprob expectation on {low} of its 12 verdicts" in text.stderr
    assert f"{low} below the probability-mass floor); those items count at their argmax score" in text.stderr


def test_the_alt_test_on_the_expectation_reports_it_and_on_the_argmax_does_not(
    db: tuple[str, Engine, int],
) -> None:
    url, _, low = db
    base = (
        "validate",
        "alt-test",
        "--campaign",
        "w",
        "--judge",
        NAME,
        "--epsilon",
        "0.2",
        "--min-instances",
        "5",
    )
    rmse = cli(*base, "--scorer", "neg-rmse", "--json", db=url).json()
    assert rmse["score_source"] == "expectation"
    assert rmse["logprob_withheld"][NAME]["withheld"] == low
    assert "logprob_withheld" not in cli(*base, "--scorer", "accuracy", "--json", db=url).json()
    text = cli(*base, "--scorer", "neg-rmse", db=url)
    assert f"no logprob expectation on {low} of its 12 verdicts" in text.stderr
