"""Anthropic Messages through the official async SDK.

System messages are lifted into the `system` field. The key is `ANTHROPIC_API_KEY` (the SDK also
reads `ANTHROPIC_AUTH_TOKEN`); the endpoint is the spec's `base_url`, else `ANTHROPIC_BASE_URL` as
the SDK reads it, else api.anthropic.com.

Structured output: with a `ChatRequest.schema` (and `structured` not turned off) the request offers
one tool whose `input_schema` is the schema and forces it with `tool_choice`; the tool call's
`input` is returned as `ChatResult.structured` and, serialised, as the end of `ChatResult.text`.

Sampling parameters. SDK 2.x sends `anthropic-version: 2026-10-21` and no longer takes
`temperature`, `top_p` or `top_k`; that API version rejects them with 400. When a spec sets one,
they travel in the body (`extra_body`) under `anthropic-version: 2023-06-01`, the version that
accepts them, unless the spec names its own `anthropic_version`. A judge without sampling
parameters uses the SDK's default version.

`max_tokens` is required by the API: 1024 unless the spec says otherwise.

The call goes through the SDK's generic `post` with `cast_to` the SDK's own HTTP response class
(as the OpenAI provider does), not `messages.with_raw_response.create`: the SDK still owns the
wire (auth, `anthropic-version`, the connection pool, timeouts, status errors) and the body is the
one `create` sends, while the raw-response wrapper, its tracing span and the per-call argument
handling are skipped (a test compares what the server receives from both). The body goes as
`content`, already encoded with the SDK's encoder settings (`wire_json`), so `post` neither
deep-copies it (`_copy_and_prepare`: about 40 µs a call, which OpenAI's SDK does not spend) nor
encodes it again; the server receives the JSON `create` sends, encoded as its encoder encodes it
(a test compares them).
The URL is merged with the base URL once per judge, as the SDK merges it, and handed to `post`
already parsed, so no URL is parsed per call.

Prompt caching. The system text goes as one text block marked `cache_control: {"type":
"ephemeral"}`, and the final user message is cut at `ChatRequest.cache_breaks` (where the prompt's
stable parts end: instructions and rubric, then the shared source) into text blocks, each stable
block marked the same way (at most `MAX_BREAKPOINTS` marks in all, the API's limit; the last
ones win). The text the model reads is unchanged: blocks are concatenated. A spec parameter
`prompt_cache=false` sends plain strings instead. Anthropic counts `input_tokens` without the
cached parts; `ChatResult.input_tokens` is the whole prompt (`input_tokens +
cache_read_input_tokens + cache_creation_input_tokens`), as OpenAI counts it, with the two cache
counts beside it.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import time
from typing import Any, cast

import anthropic

from judgepanel.errors import BadInput, ProviderError
from judgepanel.providers import errors, sdk
from judgepanel.providers.base import ChatRequest, ChatResult
from judgepanel.providers.keys import api_key
from judgepanel.providers.replies import bad_count, token_count
from judgepanel.providers.spec import JudgeSpec, max_reply_bytes

DEFAULT_MAX_TOKENS = 1024
SAMPLING_API_VERSION = "2023-06-01"  # the last API version that takes temperature / top_p / top_k
PLACEHOLDER_KEY = "no-key"
_SAMPLING = ("temperature", "top_p", "top_k")
MAX_BREAKPOINTS = 4  # cache_control marks the Messages API accepts in one request
_EPHEMERAL = {"type": "ephemeral"}

_WIRE_RESPONSE = sdk.wire_response_class(anthropic.DefaultAsyncHttpxClient)
_ERRORS = sdk.SdkErrors(anthropic.APITimeoutError, anthropic.APIConnectionError, anthropic.APIStatusError)


def deprecated_models() -> dict[str, str]:
    """The SDK's table of deprecated models and their end-of-life dates ({} if it has none)."""
    try:
        module = importlib.import_module("anthropic.resources.messages.messages")
    except ImportError:  # pragma: no cover - another SDK layout
        return {}
    table = getattr(module, "DEPRECATED_MODELS", {})
    return {str(k): str(v) for k, v in table.items()} if isinstance(table, dict) else {}


class AnthropicProvider:
    """`Provider` for `anthropic:` specs."""

    def __init__(self, spec: JudgeSpec, *, max_connections: int | None = None) -> None:
        self.name = spec.name
        self.spec = spec
        self.model = spec.model
        base_url = spec.base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        key = api_key(spec, "ANTHROPIC_API_KEY")
        # a judge that names its key variable uses that key only, never the ambient auth token
        token = None if spec.get("key_env") else os.environ.get("ANTHROPIC_AUTH_TOKEN") or None
        if key is None and token is None:
            if base_url is None:
                raise BadInput(f"judge {spec.name}: ANTHROPIC_API_KEY is not set")
            key = PLACEHOLDER_KEY
        # what the SDK's `create` would have warned about, said once per judge in the run summary
        self.warnings: list[str] = [
            f"judge {spec.name}: Anthropic lists {spec.model!r} as deprecated, end of life {when}"
            for when in [deprecated_models().get(spec.model)]
            if when
        ]
        self._secrets = tuple(s for s in (key, token) if s)
        self._custom_endpoint = base_url is not None
        self._max_reply = max_reply_bytes(spec)
        http_client = sdk.http_client(
            anthropic.DefaultAsyncHttpxClient, anthropic.DEFAULT_CONNECTION_LIMITS, max_connections
        )
        self._client = anthropic.AsyncAnthropic(
            api_key=key,
            auth_token=None if key else token,
            base_url=base_url,
            max_retries=0,
            http_client=http_client,
        )
        # `/v1/messages` merged with the base URL once, as the SDK's `_prepare_url` merges it (the
        # base URL ends in `/`), handed to `post` as its own URL type: `post` then takes it as
        # absolute and parses no URL per call (about half of the SDK's request building)
        base = self._client.base_url
        self._messages_url = base.copy_with(raw_path=base.raw_path + b"v1/messages")

    def __repr__(self) -> str:
        return f"AnthropicProvider({self.name!r})"

    def _arguments(self, request: ChatRequest) -> tuple[dict[str, Any], str | None]:
        params = {**self.spec.request_params(), **request.params}
        system = "\n\n".join(m["content"] for m in request.messages if m.get("role") == "system")
        messages: list[dict[str, Any]] = [
            {"role": m["role"], "content": m["content"]}
            for m in request.messages
            if m.get("role") != "system"
        ]
        kwargs: dict[str, Any] = {
            "messages": messages,
            "max_tokens": int(params.get("max_tokens", DEFAULT_MAX_TOKENS)),
        }
        caching = self.spec.params.get("prompt_cache", True) is not False
        if system:
            kwargs["system"] = (
                [{"type": "text", "text": system, "cache_control": _EPHEMERAL}] if caching else system
            )
        if caching and messages:
            budget = MAX_BREAKPOINTS - (1 if system else 0)
            messages[-1] = {
                **messages[-1],
                "content": cache_blocks(messages[-1]["content"], request.cache_breaks, budget),
            }
        sampling = {k: params[k] for k in _SAMPLING if k in params}
        headers: dict[str, str] = {}
        if sampling:
            kwargs["extra_body"] = sampling
            headers["anthropic-version"] = SAMPLING_API_VERSION
        if "anthropic_version" in params:
            headers["anthropic-version"] = str(params["anthropic_version"])
        if headers:
            kwargs["extra_headers"] = headers
        tool: str | None = None
        if request.schema is not None and bool(params.get("structured", True)):
            tool = re.sub(r"[^a-zA-Z0-9_-]", "_", request.schema_name)[:64] or "verdict"
            kwargs["tools"] = [
                {
                    "name": tool,
                    "description": "Record your answer. Call this tool exactly once with the complete answer.",
                    "input_schema": request.schema,
                }
            ]
            kwargs["tool_choice"] = {"type": "tool", "name": tool}
        return kwargs, tool

    async def complete(self, request: ChatRequest, *, timeout: float) -> ChatResult:
        kwargs, tool = self._arguments(request)
        started = time.perf_counter()
        failure: ProviderError | None = None
        headers = kwargs.pop("extra_headers", None)
        sent = {"model": self.model, **kwargs, **kwargs.pop("extra_body", {})}
        sent.pop("extra_body", None)
        # the body as the bytes `create` sends (`wire_json`): handed to `post` as `content`, so the
        # SDK does not deep-copy it (`_copy_and_prepare`, which OpenAI's `post` does not do) and then
        # encode the copy; a body it cannot encode goes the SDK's way, to fail or succeed as there
        content = wire_json(sent)
        try:
            with sdk.reply_cap(self._max_reply):
                raw = await self._client.post(
                    cast(str, self._messages_url),
                    cast_to=_WIRE_RESPONSE,
                    body=sent if content is None else None,
                    content=content,
                    options={
                        "timeout": sdk.request_timeout(anthropic.DefaultAsyncHttpxClient, timeout),
                        "headers": headers or {},
                    },
                )
            body = raw.text
            status = raw.status_code
        except sdk.ReplyTooLarge as exc:
            failure = sdk.oversize("anthropic", exc)
        except anthropic.AnthropicError as exc:
            failure = sdk.sdk_failure(
                exc, _ERRORS, provider="anthropic", timeout=timeout, secrets=self._secrets
            )
        if failure is not None:
            raise failure  # outside the except block: no __context__ pointing at the SDK's request
        latency_ms = (time.perf_counter() - started) * 1000
        return self._result(body, status, latency_ms, tool)

    # ---- Message Batches (`runner.batch`): one request's params, one result message read back

    @property
    def client(self) -> anthropic.AsyncAnthropic:
        return self._client

    @property
    def secrets(self) -> tuple[str, ...]:
        return self._secrets

    def batch_params(self, request: ChatRequest) -> tuple[dict[str, Any], str | None, dict[str, str]]:
        """The `params` of one Message Batches request (what `complete` would send: sampling
        parameters travel in the params themselves), the forced tool's name, and the headers the
        batch's create call needs (`anthropic-version` when the spec pins one)."""
        kwargs, tool = self._arguments(request)
        headers = kwargs.pop("extra_headers", {})
        params = {"model": self.model, **kwargs, **kwargs.pop("extra_body", {})}
        params.pop("extra_body", None)
        return params, tool, headers

    def batch_result(self, body: str, status: int, tool: str | None) -> ChatResult:
        """A `succeeded` result's `message`, read exactly as a realtime reply is."""
        return self._result(body, status, 0.0, tool)

    def _result(self, body: str, status: int, latency_ms: float, tool: str | None) -> ChatResult:
        payload = sdk.reply_object("anthropic", body, status=status, secrets=self._secrets)
        blocks = payload.get("content")
        if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
            raise errors.malformed(
                "anthropic", body, "no content blocks", status=status, secrets=self._secrets
            )
        texts = [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
        structured: dict[str, Any] | None = None
        if tool is not None:
            for block in blocks:
                if (
                    block.get("type") == "tool_use"
                    and block.get("name") == tool
                    and isinstance(block.get("input"), dict)
                ):
                    structured = block["input"]
        if structured is not None:
            texts.append(json.dumps(structured, ensure_ascii=False))
        if not texts:
            raise errors.malformed(
                "anthropic", body, "no text or tool_use block", status=status, secrets=self._secrets
            )
        usage = payload.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        uncached = token_count(usage.get("input_tokens"))
        sent_read, sent_written = (
            usage.get("cache_read_input_tokens"),
            usage.get("cache_creation_input_tokens"),
        )
        read, written = token_count(sent_read), token_count(sent_written)
        if bad_count(sent_read) or bad_count(sent_written):
            uncached = read = written = None  # the prompt's size is their sum: unknown
        model = payload.get("model")
        stop = payload.get("stop_reason")
        return ChatResult(
            text="\n".join(t for t in texts if t),
            raw_body=errors.redact(body, self._secrets),
            model_returned=model if isinstance(model, str) else None,
            system_fingerprint=None,  # the Messages API has none; the dated model id is the version
            input_tokens=None if uncached is None else token_count(uncached + (read or 0) + (written or 0)),
            output_tokens=token_count(usage.get("output_tokens")),
            latency_ms=latency_ms,
            http_status=status,
            structured=structured,
            finish_reason=stop if isinstance(stop, str) else None,
            cache_read_tokens=read,
            cache_write_tokens=written,
        )

    async def served_model(self, *, timeout: float) -> str | None:
        """What a custom endpoint says it serves; None for api.anthropic.com or when it does not say."""
        if not self._custom_endpoint:
            return None
        return await sdk.served_model(
            self._client, self.model, anthropic.AnthropicError, timeout=timeout, secrets=self._secrets
        )

    async def aclose(self) -> None:
        await self._client.close()


_WIRE_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def wire_json(body: dict[str, Any]) -> bytes | None:
    """`body` as JSON bytes encoded as the SDK's `messages.create` encodes its body (no spaces,
    UTF-8 as is, keys in the order given), or None when it holds what plain JSON cannot encode: the SDK then
    encodes it itself (it knows dates and models) or raises its own error (NaN)."""
    try:
        return _WIRE_ENCODER.encode(body).encode()
    except (TypeError, ValueError):
        return None


def cache_blocks(text: str, breaks: tuple[int, ...], budget: int) -> str | list[dict[str, Any]]:
    """`text` as text blocks cut at `breaks`, every block before a break marked for caching (the
    last `budget` of them, as a longer cached prefix also serves the shorter ones' purpose);
    the plain string when there is nothing to mark."""
    cuts = sorted({b for b in breaks if 0 < b < len(text)})[-budget:] if budget > 0 else []
    if not cuts:
        return text
    blocks: list[dict[str, Any]] = []
    start = 0
    for cut in cuts:
        blocks.append({"type": "text", "text": text[start:cut], "cache_control": _EPHEMERAL})
        start = cut
    blocks.append({"type": "text", "text": text[start:]})
    return blocks
