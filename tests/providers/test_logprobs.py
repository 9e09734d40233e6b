"""Logprob-weighted scores: the distribution at the answer position worked by hand, the
tokenisations " 4" / "4" / '"4"' merged, missing and partial logprobs, and the real HTTP path
through the OpenAI SDK against the fake server."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest

from judgepanel.errors import BadInput
from judgepanel.fake.logprobs import fake_logprobs, tokens
from judgepanel.fake.server import FakeServer
from judgepanel.protocol.logprobs import (
    NO_LOGPROBS,
    NO_POSITION,
    PARTIAL,
    answer_distribution,
    logprob_request,
    logprob_score,
    score_scale,
)
from judgepanel.providers import ChatRequest, make_provider, parse_spec

SCALE = score_scale()


def tok(token: str, p: float, top: list[tuple[str, float]] | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"token": token, "logprob": math.log(p)}
    if top is not None:
        entry["top_logprobs"] = [{"token": t, "logprob": math.log(q)} for t, q in top]
    return entry


def test_spaced_and_bare_digits_add_up_and_the_rest_is_renormalised() -> None:
    content = [
        tok("Score", 0.9, [("Score", 0.9)]),
        tok(":", 0.95, [(":", 0.95)]),
        tok(" 4", 0.5, [(" 4", 0.5), ("4", 0.2), (" 3", 0.15), ('"5"', 0.05), (" the", 0.1)]),
    ]
    s = answer_distribution(content, SCALE)
    # allowed mass 0.5 + 0.2 + 0.15 + 0.05 = 0.9; 4 gets 0.7 / 0.9
    assert s.mass == pytest.approx(0.9)
    assert s.distribution == pytest.approx({"1": 0, "2": 0, "3": 0.15 / 0.9, "4": 0.7 / 0.9, "5": 0.05 / 0.9})
    assert s.expectation == pytest.approx((3 * 0.15 + 4 * 0.7 + 5 * 0.05) / 0.9)
    assert (s.argmax, s.position, s.note) == ("4", 2, None)


def test_the_parsed_verdict_chooses_the_position_not_a_later_number() -> None:
    content = [
        tok(" 4", 0.6, [(" 4", 0.6), (" 5", 0.4)]),
        tok(" in", 0.9, [(" in", 0.9)]),
        tok(" 2", 0.99, [(" 2", 0.99)]),
        tok(" sentences", 0.9, [(" sentences", 0.9)]),
    ]
    assert answer_distribution(content, SCALE).position == 2  # the last score-like token
    s = answer_distribution(content, SCALE, verdict="4")
    assert s.position == 0 and s.expectation == pytest.approx(4.4)


def test_a_token_listed_twice_is_counted_once() -> None:
    content = [tok("4", 0.5, [("4", 0.5), ("4", 0.5), ("3", 0.25)])]
    assert answer_distribution(content, SCALE).distribution == pytest.approx(
        {"1": 0, "2": 0, "3": 1 / 3, "4": 2 / 3, "5": 0}
    )


@pytest.mark.parametrize("content", [None, []])
def test_missing_logprobs_say_so(content: Any) -> None:
    s = answer_distribution(content, SCALE)
    assert s.distribution is None and s.expectation is None and s.note == NO_LOGPROBS


def test_no_score_token_says_so() -> None:
    s = answer_distribution([tok("fine", 0.9, [("fine", 0.9)])], SCALE)
    assert s.distribution is None and s.note == NO_POSITION


@pytest.mark.parametrize("top", [None, [], [(" the", 0.7), (" a", 0.1)]])
def test_partial_logprobs_put_all_mass_on_the_generated_token(top: list[tuple[str, float]] | None) -> None:
    s = answer_distribution([tok(" 3", 0.7, top)], SCALE)
    assert s.note == PARTIAL and s.argmax == "3" and s.expectation == 3.0
    assert s.distribution is not None and s.distribution["3"] == 1.0
    assert s.mass == pytest.approx(0.7)


def test_non_finite_or_malformed_alternatives_are_skipped() -> None:
    content = [
        {
            "token": "2",
            "logprob": math.log(0.5),
            "top_logprobs": [
                {"token": "2", "logprob": math.log(0.5)},
                {"token": "3", "logprob": float("nan")},
                {"token": "4", "logprob": 0.7},  # a positive logprob is not a probability
                {"logprob": -1.0},
                "junk",
            ],
        }
    ]
    s = answer_distribution(content, SCALE)
    assert s.distribution is not None and s.distribution["2"] == 1.0 and s.note is None


def test_request_fields() -> None:
    assert logprob_request({}) == {} and logprob_request({"scoring": "text"}) == {}
    assert logprob_request({"scoring": "logprobs"}) == {"logprobs": True, "top_logprobs": 20}
    assert logprob_request({"scoring": "logprobs", "top_logprobs": 50}) == {
        "logprobs": True,
        "top_logprobs": 20,
    }
    assert parse_spec("openai:m?scoring=logprobs&top_logprobs=5").request_params() == {
        "scoring": "logprobs",
        "top_logprobs": 5,
    }
    with pytest.raises(BadInput, match="scoring"):
        parse_spec("openai:m?scoring=maybe")


def test_fake_logprobs_are_consistent() -> None:
    text = '{"rationale": "clear and 2 facts", "score": 4}'
    assert "".join(tokens(text)) == text
    lp = fake_logprobs(text, top_logprobs=8, seed=1)
    assert lp == fake_logprobs(text, top_logprobs=8, seed=1)  # deterministic
    for entry in lp["content"]:
        top = {t["token"]: t["logprob"] for t in entry["top_logprobs"]}
        assert top[entry["token"]] == entry["logprob"] and entry["logprob"] < 0
        assert sum(math.exp(v) for v in top.values()) <= 1 + 1e-9
    four = next(e for e in lp["content"] if e["token"].strip() == "4")
    assert {" 4", "4"} <= {t["token"] for t in four["top_logprobs"]}  # both tokenisations offered


POINTWISE = [
    {"role": "system", "content": "You are a careful judge."},
    {
        "role": "user",
        "content": "<source>The council approved the budget.</source>\n<candidate>The council approved the budget on Monday.</candidate>",
    },
]


async def test_openai_scoring_logprobs_over_http(fake: FakeServer) -> None:
    spec = parse_spec(f"openai:judge-1?base_url={fake.url}/v1&scoring=logprobs&top_logprobs=6")
    provider = make_provider(spec)
    try:
        result = await provider.complete(
            ChatRequest(messages=POINTWISE, params=spec.request_params(), schema_name="pointwise_verdict"),
            timeout=10,
        )
    finally:
        await provider.aclose()
    (record,) = fake.recent()
    body = json.loads(record.body)
    assert body["logprobs"] is True and body["top_logprobs"] == 6 and "scoring" not in body
    try:  # the simulated judge answers JSON, or prose ending in "Score: N"
        verdict = str(json.loads(result.text)["score"])
    except ValueError:
        verdict = re.findall(r"Score: (\d)", result.text)[-1]
    s = logprob_score(result.raw_body, SCALE, verdict=verdict)
    assert s.note is None and s.argmax == verdict and s.distribution is not None
    assert abs(sum(s.distribution.values()) - 1) < 1e-12 and 1 <= (s.expectation or 0) <= 5


async def test_no_logprobs_come_back_without_asking_or_from_anthropic(fake: FakeServer) -> None:
    for spec_text in (f"openai:judge-1?base_url={fake.url}/v1", f"anthropic:judge-1?base_url={fake.url}"):
        spec = parse_spec(spec_text)
        provider = make_provider(spec)
        try:
            result = await provider.complete(
                ChatRequest(messages=POINTWISE, params={**spec.request_params(), "max_tokens": 200}),
                timeout=10,
            )
        finally:
            await provider.aclose()
        assert logprob_score(result.raw_body, SCALE).note == NO_LOGPROBS


# ---------------------------------------------------------------- issue 17 §4: the reader


def _body(content: list[dict[str, Any]]) -> str:
    text = "".join(c["token"] for c in content)
    return json.dumps({"choices": [{"message": {"content": text}, "logprobs": {"content": content}}]})


def test_period_tokens_count_for_their_score() -> None:
    """`"4."` (a score ending its sentence) is score 4, in the generated token and the alternatives."""
    content = [
        tok("Score", 0.9, [("Score", 0.9)]),
        tok(":", 0.95, [(":", 0.95)]),
        tok(" 4.", 0.6, [(" 4.", 0.6), (" 3.", 0.2), ("4", 0.1), (" the", 0.1)]),
    ]
    s = answer_distribution(content, SCALE)
    assert s.position == 2 and s.note is None
    assert s.mass == pytest.approx(0.9)
    assert s.distribution == pytest.approx({"1": 0, "2": 0, "3": 0.2 / 0.9, "4": 0.7 / 0.9, "5": 0})
    assert logprob_score(_body(content), SCALE, verdict="4").expectation == pytest.approx(
        (3 * 0.2 + 4 * 0.7) / 0.9
    )


def test_below_the_mass_floor_the_argmax_stands_with_a_note() -> None:
    from judgepanel.protocol.logprobs import LOW_MASS, MASS_FLOOR

    content = [
        tok("Score", 0.9, [("Score", 0.9)]),
        tok(":", 0.95, [(":", 0.95)]),
        tok(" 4", 0.3, [(" 4", 0.3), (" 3", 0.1), (" very", 0.35), (" quite", 0.25)]),
    ]
    s = answer_distribution(content, SCALE)
    assert s.mass == pytest.approx(0.4) and s.mass < MASS_FLOOR
    assert (s.expectation, s.argmax, s.note) == (None, "4", LOW_MASS)


def test_the_token_at_the_parsed_answer_is_read_not_the_last_equal_one() -> None:
    """`Score: 4` then prose mentioning a 4: the answer is the first 4, on the `Score:` line."""
    content = [
        tok("Score", 0.9, [("Score", 0.9)]),
        tok(":", 0.95, [(":", 0.95)]),
        tok(" 4", 0.6, [(" 4", 0.6), (" 5", 0.4)]),
        tok("\n", 0.9, [("\n", 0.9)]),
        tok("It", 0.9, [("It", 0.9)]),
        tok(" meets", 0.9, [(" meets", 0.9)]),
        tok(" 4", 0.9, [(" 4", 0.9), (" 3", 0.1)]),
        tok(" of", 0.9, [(" of", 0.9)]),
        tok(" 5", 0.9, [(" 5", 0.9)]),
        tok(" criteria", 0.9, [(" criteria", 0.9)]),
        tok(".", 0.9, [(".", 0.9)]),
    ]
    s = logprob_score(_body(content), SCALE, verdict="4")
    assert s.position == 2
    assert s.expectation == pytest.approx(4 * 0.6 + 5 * 0.4)
    # a JSON answer whose rationale, after the score, mentions the same number: the token after "score"
    obj = [
        tok('{"', 0.9, [('{"', 0.9)]),
        tok("score", 0.9, [("score", 0.9)]),
        tok('": ', 0.9, [('": ', 0.9)]),
        tok("2", 0.7, [("2", 0.7), ("3", 0.3)]),
        tok(', "', 0.9, [(', "', 0.9)]),
        tok("rationale", 0.9, [("rationale", 0.9)]),
        tok('": "', 0.9, [('": "', 0.9)]),
        tok("2", 0.9, [("2", 0.9)]),
        tok(' issues"}', 0.9, [(' issues"}', 0.9)]),
    ]
    got = logprob_score(_body(obj), SCALE, verdict="2")
    assert got.position == 3 and got.expectation == pytest.approx(2 * 0.7 + 3 * 0.3)


def test_reason_then_score_reads_the_value_the_score_key_directly_precedes() -> None:
    """Issue 30 §4: `{"rationale": "a score of 3 is too low", "score": 3}` — the rationale's "3"
    follows the word "score" too; the reader took it (E = 2.90) instead of the score's (E = 3.45)."""
    obj = [
        tok('{"', 0.9, [('{"', 0.9)]),
        tok("rationale", 0.9, [("rationale", 0.9)]),
        tok('": "', 0.9, [('": "', 0.9)]),
        tok("a", 0.9, [("a", 0.9)]),
        tok(" score", 0.9, [(" score", 0.9)]),
        tok(" of", 0.9, [(" of", 0.9)]),
        tok(" 3", 0.8, [(" 3", 0.8), (" 2", 0.15), (" 4", 0.05)]),
        tok(" is", 0.9, [(" is", 0.9)]),
        tok(" too", 0.9, [(" too", 0.9)]),
        tok(" low", 0.9, [(" low", 0.9)]),
        tok('", "', 0.9, [('", "', 0.9)]),
        tok("score", 0.9, [("score", 0.9)]),
        tok('": ', 0.9, [('": ', 0.9)]),
        tok("3", 0.55, [("3", 0.55), ("4", 0.45)]),
        tok("}", 0.9, [("}", 0.9)]),
    ]
    got = logprob_score(_body(obj), SCALE, verdict="3")
    assert got.position == 13 and got.expectation == pytest.approx(3 * 0.55 + 4 * 0.45)  # 3.45
    rationale = answer_distribution(obj, SCALE).position  # without a parsed answer: the last score
    assert rationale == 13
    # bold Markdown keys count as keys too: `**Rating:** 4`
    md = [tok("**", 0.9, [("**", 0.9)]), tok("Rating", 0.9, [("Rating", 0.9)]), tok(":**", 0.9, [(":**", 0.9)]),
          tok(" 4", 0.6, [(" 4", 0.6), (" 5", 0.4)]), tok(" (a rating", 0.9, [(" (a rating", 0.9)]),
          tok(" of", 0.9, [(" of", 0.9)]), tok(" 5", 0.9, [(" 5", 0.9)]), tok(" would", 0.9, [(" would", 0.9)]),
          tok(" be", 0.9, [(" be", 0.9)]), tok(" generous)", 0.9, [(" generous)", 0.9)])]  # fmt: skip
    assert logprob_score(_body(md), SCALE, verdict="4").position == 3
