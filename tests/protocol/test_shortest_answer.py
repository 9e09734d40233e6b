"""The shortest answer each reply format allows, and its token lower bound (issue 34: the advice for
a cap too small to hold any answer rests on it)."""

from __future__ import annotations

import json

from judgepanel.protocol.parse import parse_reply
from judgepanel.protocol.schemas import (
    clauses_schema,
    pairwise_schema,
    pointwise_schema,
    shortest_answer,
    shortest_answer_tokens,
)


def test_each_format_has_a_shortest_answer_that_its_parser_accepts() -> None:
    point = shortest_answer(pointwise_schema())
    assert point == {"rationale": "", "score": 1}
    assert parse_reply("pointwise_verdict", json.dumps(point), None).score == 1
    pair = shortest_answer(pairwise_schema())
    assert pair == {"rationale": "", "verdict": "A"}
    assert parse_reply("pairwise_verdict", json.dumps(pair), None).ok
    clauses = shortest_answer(clauses_schema(["c.1", "c.2", "c.3"]))
    assert [c["id"] for c in clauses["clauses"]] == [
        "c.1",
        "c.1",
        "c.1",
    ]  # minItems entries, each the smallest


def test_token_bound_is_the_compact_json_at_four_characters_a_token() -> None:
    assert shortest_answer_tokens(pointwise_schema()) == 7  # {"rationale":"","score":1}: 26 characters
    assert shortest_answer_tokens(pairwise_schema()) == 8  # {"rationale":"","verdict":"A"}: 30
    five = shortest_answer_tokens(clauses_schema([f"coherence.{k}" for k in range(1, 6)]))
    text = json.dumps(shortest_answer(clauses_schema(["coherence.1"] * 5)), separators=(",", ":"))
    assert five == -(-len(text) // 4)
    assert five > 60  # five clause entries: a cap of 64 cannot hold them
    assert shortest_answer_tokens(None) == 1 and shortest_answer(None) is None
