"""JSON schemas of the replies we ask for, written to satisfy the strictest structured-output mode.

OpenAI's strict `json_schema` mode needs every property `required` and `additionalProperties:
false`, and ignores numeric bounds, so the score (1..5, or the dimension's own levels) is an `enum`. The same schemas serve as the
`input_schema` of an Anthropic tool. Properties are listed rationale first: a model that fills the
object in order writes its reasons before committing to a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal

from judgepanel.rubrics import LEVELS

SchemaName = Literal["pairwise_verdict", "pointwise_verdict", "clause_verdicts"]
SCHEMA_NAMES: Final[tuple[str, ...]] = ("pairwise_verdict", "pointwise_verdict", "clause_verdicts")

PAIRWISE_CHOICES: Final[tuple[str, ...]] = ("A", "B", "tie")


def pairwise_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "rationale": {"type": "string", "description": "Your comparison, before the verdict."},
            "verdict": {"type": "string", "enum": list(PAIRWISE_CHOICES)},
        },
        "required": ["rationale", "verdict"],
        "additionalProperties": False,
    }


def pointwise_schema(levels: Sequence[int] = LEVELS) -> dict[str, Any]:
    """`levels`: the score levels allowed, 1..5 unless the rubric dimension has its own scale."""
    return {
        "type": "object",
        "properties": {
            "rationale": {"type": "string", "description": "Your assessment, before the score."},
            "score": {"type": "integer", "enum": list(levels)},
        },
        "required": ["rationale", "score"],
        "additionalProperties": False,
    }


def clauses_schema(clause_ids: Sequence[str]) -> dict[str, Any]:
    """The ids are an enum so structured output cannot invent one, and the list holds exactly one
    entry per clause (`minItems` = `maxItems` = the number of clauses), so a reply answering only
    some clauses does not conform. A schema cannot say "each enum value exactly once", so the parser
    still checks that every expected id was answered and marks a reply missing some as partial."""
    return {
        "type": "object",
        "properties": {
            "rationale": {"type": "string", "description": "Your overall assessment."},
            "clauses": {
                "type": "array",
                "minItems": len(clause_ids),
                "maxItems": len(clause_ids),
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "enum": list(clause_ids)},
                        "rationale": {"type": "string"},
                        "met": {"type": "boolean"},
                    },
                    "required": ["id", "rationale", "met"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["rationale", "clauses"],
        "additionalProperties": False,
    }
