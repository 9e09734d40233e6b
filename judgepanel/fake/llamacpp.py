"""What a small local server (llama.cpp's `llama-server`) does that the hosted APIs rarely do, for
the fake server to imitate (issue 34): a context window per slot that a long prompt overflows.

`llama-server -c 8192 --parallel 2` gives each slot 4,096 tokens and refuses a longer prompt with
HTTP 400 before any inference (the body as llama-server b7e4c0a9 sends it, measured):

    {"error": {"code": 400, "message": "request (930 tokens) exceeds the available context size
     (512 tokens), try increasing it", "type": "exceed_context_size_error",
     "n_prompt_tokens": 930, "n_ctx": 512}}

On the Anthropic wire the refusal is the API's own ("prompt is too long: N tokens > M maximum").

The limit is the server's (`FakeServer(context_tokens=N)`, `--context N`, changed while running
with `POST /_fake/context?tokens=N`, 0 for none) or one model's (`judge!context=N`); raising it
is what "raise the server's context" means to a test. Prompt tokens are counted as the sim brain
counts its `input_tokens` (≈ 4 characters a token, plus 4 a message), so the figure in the refusal
is the one a reply would have reported.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from judgepanel.simjudge.reading import content_text


def prompt_tokens(payload: Mapping[str, Any]) -> int:
    """The request's prompt tokens as the sim brain reports them (system prompt included)."""
    messages = [m for m in payload.get("messages") or [] if isinstance(m, Mapping)]
    system = payload.get("system")
    chars = sum(len(content_text(m.get("content"))) for m in messages)
    if system is not None:
        chars += len(content_text(system))
        messages.append({})
    return max(1, math.ceil(chars / 4)) + 4 * len(messages)


def context_refusal(wire: str, payload: Mapping[str, Any], limit: int) -> bytes | None:
    """The 400 body refusing `payload` when its prompt exceeds `limit` tokens, else None."""
    if limit <= 0:
        return None
    n = prompt_tokens(payload)
    if n <= limit:
        return None
    if wire == "anthropic":
        body: dict[str, Any] = {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": f"prompt is too long: {n} tokens > {limit} maximum",
            },
        }
    else:
        body = {
            "error": {
                "code": 400,
                "message": f"request ({n} tokens) exceeds the available context size ({limit} tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": n,
                "n_ctx": limit,
            }
        }
    return json.dumps(body).encode()
