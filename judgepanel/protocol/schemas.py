"""JSON schemas of the replies we ask for, written to satisfy the strictest structured-output mode.

OpenAI's strict `json_schema` mode needs every property `required` and `additionalProperties:
false`, and ignores numeric bounds, so the score (1..5, or the dimension's own levels) is an `enum`. The same schemas serve as the
`input_schema` of an Anthropic tool. Properties are listed rationale first: a model that fills the
object in order writes its reasons before committing to a verdict.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final, Literal

from judgepanel.rubrics import LEVELS

SchemaName = Literal["pairwise_verdict", "pointwise_verdict", "clause_verdicts"]
SCHEMA_NAMES: Final[tuple[str, ...]] = ("pairwise_verdict", "pointwise_verdict", "clause_verdicts")

PAIRWISE_CHOICES: Final[tuple[str, ...]] = ("A", "B", "tie")


def _answer(rationale: str, key: str, value: dict[str, Any]) -> dict[str, Any]:
    """An answer object: a `rationale` string described as `rationale`, then `key` (`value`'s schema)."""
    return {
        "type": "object",
        "properties": {"rationale": {"type": "string", "description": rationale}, key: value},
        "required": ["rationale", key],
        "additionalProperties": False,
    }


def pairwise_schema() -> dict[str, Any]:
    verdict = {"type": "string", "enum": list(PAIRWISE_CHOICES)}
    return _answer("Your comparison, before the verdict.", "verdict", verdict)


def pointwise_schema(levels: Sequence[int] = LEVELS) -> dict[str, Any]:
    """`levels`: the score levels allowed, 1..5 unless the rubric dimension has its own scale."""
    return _answer("Your assessment, before the score.", "score", {"type": "integer", "enum": list(levels)})


def clauses_schema(clause_ids: Sequence[str]) -> dict[str, Any]:
    """The ids are an enum so structured output cannot invent one, and the list holds exactly one
    entry per clause (`minItems` = `maxItems` = the number of clauses), so a reply answering only
    some clauses does not conform. A schema cannot say "each enum value exactly once", so the parser
    still checks that every expected id was answered and marks a reply missing some as partial."""
    clause = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "enum": list(clause_ids)},
            "rationale": {"type": "string"},
            "met": {"type": "boolean"},
        },
        "required": ["id", "rationale", "met"],
        "additionalProperties": False,
    }
    n = len(clause_ids)
    return _answer(
        "Your overall assessment.",
        "clauses",
        {"type": "array", "minItems": n, "maxItems": n, "items": clause},
    )


def shortest_answer(schema: Any) -> Any:
    """The smallest instance of `schema` (the kinds above): every required key, empty strings, the
    first enum value, `false`, `minItems` shortest items. What no cap below its size can hold."""
    if not isinstance(schema, dict):
        return None
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: shortest_answer(props.get(k)) for k in schema.get("required") or ()}
    if kind == "array":
        return [shortest_answer(schema.get("items")) for _ in range(int(schema.get("minItems") or 0))]
    return {"string": "", "integer": 0, "number": 0, "boolean": False}.get(str(kind))


def shortest_answer_tokens(schema: Any) -> int:
    """A lower bound of the output tokens the shortest answer in `schema`'s format takes: its
    compact JSON at 4 characters a token (a BPE tokenizer splits JSON punctuation finer than that,
    so the true count is higher; a cap below this bound cannot hold any answer)."""
    text = json.dumps(shortest_answer(schema), separators=(",", ":"))
    return max(1, -(-len(text) // 4))
