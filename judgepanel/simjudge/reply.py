"""What a simulated reply is: the reply kinds, the simulator's knobs (`SimSettings`), the reply
itself (`SimReply`), the seed every random draw of a request comes from, and the token count of
its usage figures.

Boundary: types and two small functions that every part of `judgepanel.simjudge` shares; no
reading of prompts, no judging.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

PAIRWISE = "pairwise_verdict"
POINTWISE = "pointwise_verdict"
CLAUSES = "clause_verdicts"
REWRITE = "clause_rewrite"
CHECKER = "clause_checker"
SPLIT = "dimension_split"
ALIGN = "instructions_revision"
REPLY_KINDS = (PAIRWISE, POINTWISE, CLAUSES, REWRITE, SPLIT, CHECKER, ALIGN)

ReplyStyle = Literal["json", "prose", "garbled"]


@dataclass(frozen=True)
class SimSettings:
    """The simulator's knobs, read from spec / request parameters of the same names."""

    position_bias: float = 0.0
    noise: float = 0.05
    parse_error_rate: float = 0.0
    prose_rate: float = 0.1
    q_low: float = 0.70  # pointwise: the q̃ at which the lowest level is reached
    q_span: float = 0.28  # … and how much more q̃ the highest level needs
    error_rate: float = 0.0
    keep_rate: float = 0.0  # editor: the share of rewrite requests answered with the clause as it was
    latency: float = 0.0
    jitter: float = 0.0
    # editor replies: a rewrite this many characters long, a split into this many clauses
    editor_sprawl: float = 0.0

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> SimSettings:
        defaults = cls()
        values = {
            name: float(params[name]) if name in params else getattr(defaults, name)
            for name in cls.__dataclass_fields__
        }
        return cls(**values)


@dataclass(frozen=True)
class SimReply:
    """One simulated reply: the text as a model would send it, and the JSON object behind it."""

    kind: str
    text: str
    structured: dict[str, Any] | None  # set when the text is exactly this JSON object
    style: ReplyStyle
    finish_reason: Literal["stop", "length"]
    input_tokens: int
    output_tokens: int


def request_seed(
    model: str, params: Mapping[str, Any], messages: Sequence[Mapping[str, Any]], kind: str
) -> int:
    """A 64-bit seed from everything that identifies the request."""
    blob = json.dumps(
        [model, dict(sorted(params.items())), list(messages), kind], sort_keys=True, default=str
    )
    return int.from_bytes(hashlib.blake2b(blob.encode(), digest_size=8).digest(), "big")


def count_tokens(text: str) -> int:
    """A rough token count (≈ 4 characters a token), enough for simulated usage figures."""
    return max(1, math.ceil(len(text) / 4))
