"""What each provider family supports, in one table instead of conditionals spread over the code.

| family            | structured output          | temperature | output cap parameter    | logprobs | probe |
|-------------------|----------------------------|-------------|-------------------------|----------|-------|
| openai            | response_format json_schema| 0..2        | max_completion_tokens   | yes      | no    |
| azure             | response_format json_schema| 0..2        | max_completion_tokens   | yes      | no    |
| openai-compatible | response_format json_schema| 0..2        | max_tokens              | served¹  | yes   |
| anthropic         | a forced tool              | 0..1        | max_tokens              | no       | no    |
| sim               | the simulator's JSON       | 0..2        | max_tokens              | no       | no    |

¹ when the server implements them: llama.cpp's `llama-server` returns `logprobs` and
`top_logprobs` on `/v1/chat/completions` (tried with a real GGUF model), and so does vLLM; a server
that sends none leaves `scoring=logprobs` without a distribution (the verdict is read from the text).

`openai-compatible` is an `openai:` judge with a `base_url` (vLLM, llama.cpp, Ollama, Together,
Groq, Gemini's and Mistral's OpenAI endpoints): servers differ in what they accept, so such a
judge *probes*: its first call goes alone, and a 400 that names a parameter it sent (OpenAI's
`error.param`, or the name quoted in the message) drops that parameter for the rest of the run,
with one warning, instead of failing every job with the same 400.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Capabilities:
    family: str
    structured: bool  # can be asked for schema-constrained output
    temperature: tuple[float, float]  # the range the API accepts
    max_tokens_param: str  # the name of the output-cap parameter on the wire
    logprobs: (
        bool  # may return token log-probabilities when asked (compatible servers: if they implement them)
    )
    probe: bool  # unknown server: learn what it refuses from its first 400s


TABLE: dict[str, Capabilities] = {
    c.family: c
    for c in (
        Capabilities("openai", True, (0.0, 2.0), "max_completion_tokens", True, False),
        Capabilities("azure", True, (0.0, 2.0), "max_completion_tokens", True, False),
        Capabilities("openai-compatible", True, (0.0, 2.0), "max_tokens", True, True),  # logprobs: if served
        Capabilities("anthropic", True, (0.0, 1.0), "max_tokens", False, False),
        Capabilities("sim", True, (0.0, 2.0), "max_tokens", False, False),
    )
}


def family(provider: str, base_url: str | None) -> str:
    return "openai-compatible" if provider == "openai" and base_url else provider


def capabilities(provider: str, base_url: str | None = None) -> Capabilities:
    return TABLE[family(provider, base_url)]


def refused_parameter(body: str, sent: Iterable[str]) -> str | None:
    """The parameter a 400 body says the server does not take, if it is one that was sent: the
    OpenAI error's `param` when its `code` says unsupported/unknown, else a sent name next to
    refusal words in the message ("Unsupported parameter: 'seed'", "response_format is not
    supported"). A 400 about a parameter's *value* ("'temperature' must be <= 1") is not a
    refusal: that judge's spec is wrong, and the error stands. Longest names are tried first, so
    `max_completion_tokens` is not read as `max_tokens`."""
    names = sorted(set(sent), key=len, reverse=True)
    try:
        payload = json.loads(body)
    except ValueError:
        payload = None
    text = body
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict):
        param, code = error.get("param"), str(error.get("code") or "")
        if isinstance(param, str) and param in names and re.search(r"unsupported|unknown|unrecognized", code):
            return param
        message = error.get("message")
        text = message if isinstance(message, str) else body
    refusal = r"(?:unsupported|unknown|unrecognized|not supported|not allowed|not permitted)"
    for name in names:
        n = re.escape(name)
        if re.search(rf"\b{refusal}\b[^.\n]*\b{n}\b", text, re.IGNORECASE) or re.search(
            rf"\b{n}\b[^.\n]*\b{refusal}\b", text, re.IGNORECASE
        ):
            return name
    return None
