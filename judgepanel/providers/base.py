"""The one small async protocol every provider implements, and the judge spec.

A judge is named `PROVIDER:MODEL[?param=value&…]`, e.g. `openai:gpt-4o-mini`,
`anthropic:claude-haiku-4-5`, `openai:qwen2.5-7b-instruct?base_url=http://127.0.0.1:8000/v1&temperature=0`,
`sim:panel-a?position_bias=0.2`. Keys never appear in a spec: they come only from the environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class ChatRequest:
    """What is sent: messages plus output-relevant parameters (temperature, max_tokens, seed, …).

    `schema` is a JSON schema for structured output where the provider supports it; `schema_name`
    names it. The request hash (the cache key) covers model, params, messages and schema."""

    messages: list[dict[str, str]]
    params: dict[str, Any] = field(default_factory=dict)
    schema: dict[str, Any] | None = None
    schema_name: str = "verdict"
    # where stable prefixes of the final message end (character offsets into its content, ascending):
    # a provider with explicit prompt caching (Anthropic) marks each as a cache breakpoint. Not part
    # of the request hash: it changes what is billed, never what is answered.
    cache_breaks: tuple[int, ...] = ()


@dataclass(frozen=True)
class ChatResult:
    """What came back. `raw_body` is the HTTP body as received (the whole JSON), always kept."""

    text: str
    raw_body: str
    model_returned: str | None = None
    system_fingerprint: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: float | None = None
    http_status: int | None = 200
    structured: dict[str, Any] | None = None  # parsed structured output / tool input, if any
    finish_reason: str | None = None  # OpenAI `finish_reason` / Anthropic `stop_reason`, as returned
    # prompt caching: `input_tokens` counts every prompt token on both wires; these are the parts of
    # it read from / written to the provider's prompt cache (None when the provider does not say)
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None


class Provider(Protocol):
    """One model endpoint. `complete` raises only `judgepanel.errors.ProviderError` subclasses
    (RateLimited / Transient / Fatal) and never retries itself: retries live in the runner."""

    name: str

    async def complete(self, request: ChatRequest, *, timeout: float) -> ChatResult: ...

    async def aclose(self) -> None: ...


class ReportsServedModel(Protocol):
    """Optional: a provider that can ask its endpoint which model it actually serves."""

    async def served_model(self, *, timeout: float) -> str | None:
        """The model a custom endpoint says it serves (`GET /v1/models`), None when it does not say."""
        ...
