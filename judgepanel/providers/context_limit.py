"""Telling a context-window refusal apart from other 4xx answers, and reading its token figures.

A request longer than the model's context window is refused with a 400 (413 by some proxies) that
asking again never cures: only a larger window or a shorter prompt does. The servers say so in
their own words, and most give the two figures that make the advice concrete:

    llama.cpp   {"error": {"type": "exceed_context_size_error", "n_prompt_tokens": 930,
                 "n_ctx": 512, "message": "request (930 tokens) exceeds the available context
                 size (512 tokens), try increasing it"}}          (seen from llama-server, b7e4c0a9)
    OpenAI      {"error": {"code": "context_length_exceeded", "message": "This model's maximum
                 context length is 8192 tokens. However, your messages resulted in 9000 tokens…"}}
    vLLM        the OpenAI wording: "…However, you requested 5000 tokens (4900 in the messages,
                 100 in the completion)…"
    Anthropic   {"error": {"type": "invalid_request_error", "message": "prompt is too long:
                 215000 tokens > 200000 maximum"}}

Anything else stays the plain `Fatal` it was. Bounded to these phrasings on purpose: a refusal
that merely mentions "context" is not one of these.
"""

from __future__ import annotations

import json
import re
from typing import Any

from judgepanel.errors import ContextTooLong

_LLAMA = re.compile(r"request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)", re.I)
_OPENAI = re.compile(
    r"maximum context length is (\d+) tokens.*?(?:resulted in|requested) (\d+) tokens", re.I | re.S
)
_ANTHROPIC = re.compile(r"prompt is too long: (\d+) tokens > (\d+) maximum", re.I)
_CODES = ("exceed_context_size_error", "context_length_exceeded")


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def _error_object(body: str) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except ValueError:
        return {}
    err = payload.get("error") if isinstance(payload, dict) else None
    return err if isinstance(err, dict) else {}


def context_refusal(status: int, body: str, message: str) -> ContextTooLong | None:
    """A `ContextTooLong` for a 400/413 whose body is one of the refusals above, else None.
    `message` is the line the caller built (kept as the error's text)."""
    if status not in (400, 413):
        return None
    err = _error_object(body)
    text = str(err.get("message") or body)
    request = limit = None
    if m := _LLAMA.search(text):
        request, limit = int(m.group(1)), int(m.group(2))
    elif m := _OPENAI.search(text):
        limit, request = int(m.group(1)), int(m.group(2))
    elif m := _ANTHROPIC.search(text):
        request, limit = int(m.group(1)), int(m.group(2))
    elif err.get("type") not in _CODES and err.get("code") not in _CODES:
        return None
    request = _int(err.get("n_prompt_tokens")) or request
    limit = _int(err.get("n_ctx")) or limit
    return ContextTooLong(message, status=status, raw_body=body, request_tokens=request, limit_tokens=limit)
