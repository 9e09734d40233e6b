"""The one small async protocol every provider implements, and the judge spec.

A judge is named `PROVIDER:MODEL[?param=value&…]`, e.g. `openai:gpt-4o-mini`,
`anthropic:claude-haiku-4-5`, `openai:qwen2.5-7b-instruct?base_url=http://127.0.0.1:8000/v1&temperature=0`,
`sim:panel-a?position_bias=0.2`. Keys never appear in a spec: they come only from the environment.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar
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


class CallClock:
    """When one call waited and when its request left, as its provider saw it.

    The runner puts a clock in `CURRENT_CLOCK` around each `Provider.complete`; a provider that
    knows better than the runner says `waiting()` when the call queues inside it (an OpenAI-
    compatible judge's calls wait for its first, probing call) and `sent()` when the request is
    handed to the HTTP client (the SDK's request hook). The runner's per-attempt deadline is
    paused while waiting and restarts at `sent()`, and the time before `sent()` is stored as
    `queued_ms`, apart from the latency. A provider that says nothing (the simulator) is timed
    from the start, as before."""

    def __init__(
        self,
        on_waiting: Callable[[], None] | None = None,
        on_sent: Callable[[], None] | None = None,
    ) -> None:
        self.started = time.perf_counter()
        self.sent_at: float | None = None
        self.bind(on_waiting=on_waiting, on_sent=on_sent)

    def bind(
        self,
        *,
        on_waiting: Callable[[], None] | None = None,
        on_sent: Callable[[], None] | None = None,
    ) -> None:
        self._on_waiting = on_waiting
        self._on_sent = on_sent

    def waiting(self) -> None:
        if self.sent_at is None and self._on_waiting is not None:
            self._on_waiting()

    def sent(self) -> None:
        self.sent_at = time.perf_counter()
        if self._on_sent is not None:
            self._on_sent()

    @property
    def queued_ms(self) -> float | None:
        """Milliseconds from the start of the call to its request leaving (None: never sent)."""
        return None if self.sent_at is None else (self.sent_at - self.started) * 1000

    def since_sent_ms(self, now: float | None = None) -> float:
        """Milliseconds since the request left (since the start when it was never sent)."""
        return ((now or time.perf_counter()) - (self.sent_at or self.started)) * 1000


CURRENT_CLOCK: ContextVar[CallClock | None] = ContextVar("judgepanel_call_clock", default=None)
