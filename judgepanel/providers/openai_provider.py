"""OpenAI Chat Completions through the official async SDK, and any OpenAI-compatible server.

vLLM, llama.cpp's server and Ollama speak the same wire format: give the spec a `base_url`
(`openai:qwen2.5:7b?base_url=http://127.0.0.1:11434/v1`). Without one, `OPENAI_BASE_URL` is used as
the SDK uses it, else api.openai.com. The key is `OPENAI_API_KEY`; a custom endpoint may run
without one (local servers ignore the key, so a placeholder is sent).

Structured output: with a `ChatRequest.schema` (and `structured` not turned off) the request
carries `response_format={"type": "json_schema", …}`, strict when the schema allows it, and the
reply's JSON object is returned as `ChatResult.structured`.

The SDK never retries (`max_retries=0`): the runner does. The body is read raw and decoded here,
so a malformed 200 (truncated JSON, an HTML page, missing fields) becomes `Transient` with the body
kept instead of an SDK parsing exception.

The call goes through the SDK's documented generic `post` (its README, "Undocumented endpoints")
with `cast_to=httpx2.Response`, not `chat.completions.create`: the SDK still owns the wire (auth,
headers, connection pool, timeouts, status errors), but skips `create`'s per-request TypedDict
transform, which walked every message and the whole JSON schema and was the largest CPU cost per
call at zero latency (about a quarter of the runner's profiled time). The request body is plain
JSON (strings, numbers and the schema dict), which that transform passes through unchanged.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import httpx2
import openai

from judgepanel.errors import BadInput, ProviderError
from judgepanel.protocol.logprobs import logprob_request
from judgepanel.providers import errors, sdk
from judgepanel.providers.base import ChatRequest, ChatResult
from judgepanel.providers.spec import JudgeSpec

PLACEHOLDER_KEY = "no-key"  # what local OpenAI-compatible servers get when no key is configured
_SENT = ("temperature", "top_p", "seed", "frequency_penalty", "presence_penalty", "reasoning_effort")


def strict_compatible(schema: dict[str, Any]) -> bool:
    """OpenAI's strict mode needs every object closed (`additionalProperties: false`) with all its
    properties required; send `strict: true` only for schemas that already are."""
    if schema.get("type") == "object" or "properties" in schema:
        props = schema.get("properties", {})
        if schema.get("additionalProperties") is not False or set(schema.get("required", [])) != set(props):
            return False
        if not all(strict_compatible(p) for p in props.values() if isinstance(p, dict)):
            return False
    items = schema.get("items")
    return not (isinstance(items, dict) and not strict_compatible(items))


_ERRORS = sdk.SdkErrors(openai.APITimeoutError, openai.APIConnectionError, openai.APIStatusError)


class OpenAIProvider:
    """`Provider` for `openai:` specs."""

    def __init__(self, spec: JudgeSpec, *, max_connections: int | None = None) -> None:
        self.name = spec.name
        self.spec = spec
        self.model = spec.model
        base_url = spec.base_url or os.environ.get("OPENAI_BASE_URL") or None
        key = os.environ.get("OPENAI_API_KEY") or None
        if key is None:
            if base_url is None:
                raise BadInput(
                    f"judge {spec.name}: OPENAI_API_KEY is not set (or give a base_url for a local server)"
                )
            key = PLACEHOLDER_KEY
        self._secrets = (key,)
        self._custom_endpoint = base_url is not None
        http_client = None
        if max_connections:
            http_client = openai.DefaultAsyncHttpxClient(
                limits=sdk.connection_limits(openai.DEFAULT_CONNECTION_LIMITS, max_connections)
            )
        self._client = openai.AsyncOpenAI(
            api_key=key, base_url=base_url, max_retries=0, http_client=http_client
        )

    def __repr__(self) -> str:
        return f"OpenAIProvider({self.name!r})"

    def _arguments(self, request: ChatRequest) -> tuple[dict[str, Any], bool]:
        params = {**self.spec.request_params(), **request.params}
        kwargs: dict[str, Any] = {k: params[k] for k in _SENT if k in params}
        if "max_tokens" in params:
            # api.openai.com's newer models accept only max_completion_tokens; compatible servers
            # (vLLM, llama.cpp, Ollama) have always read max_tokens.
            kwargs["max_tokens" if self._custom_endpoint else "max_completion_tokens"] = params["max_tokens"]
        kwargs.update(logprob_request(params))  # scoring=logprobs (protocol.logprobs)
        structured = request.schema is not None and bool(params.get("structured", True))
        if structured and request.schema is not None:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": request.schema_name,
                    "schema": request.schema,
                    "strict": strict_compatible(request.schema),
                },
            }
        return kwargs, structured

    async def complete(self, request: ChatRequest, *, timeout: float) -> ChatResult:
        kwargs, structured = self._arguments(request)
        started = time.perf_counter()
        failure: ProviderError | None = None
        try:
            raw = await self._client.post(
                "/chat/completions",
                cast_to=httpx2.Response,
                body={"model": self.model, "messages": request.messages, **kwargs},
                options={"timeout": timeout, "security": {"bearer_auth": True}},
            )
            body = raw.text
            status = raw.status_code
        except openai.OpenAIError as exc:
            failure = sdk.sdk_failure(exc, _ERRORS, provider="openai", timeout=timeout, secrets=self._secrets)
        if failure is not None:
            raise failure  # outside the except block: no __context__ pointing at the SDK's request
        latency_ms = (time.perf_counter() - started) * 1000
        return self._result(body, status, latency_ms, structured)

    def _result(self, body: str, status: int, latency_ms: float, structured: bool) -> ChatResult:
        payload = sdk.reply_object("openai", body, status=status, secrets=self._secrets)
        choices = payload.get("choices")
        message = (
            choices[0].get("message")
            if isinstance(choices, list) and choices and isinstance(choices[0], dict)
            else None
        )
        if not isinstance(message, dict):
            raise errors.malformed(
                "openai", body, "no choices[0].message", status=status, secrets=self._secrets
            )
        finish = choices[0].get("finish_reason") if isinstance(choices, list) else None
        content = message.get("content")
        if content is None:
            content = message.get("refusal")
        if not isinstance(content, str):
            raise errors.malformed("openai", body, "no message content", status=status, secrets=self._secrets)
        parsed: dict[str, Any] | None = None
        if structured:
            try:
                candidate = json.loads(content)
            except ValueError:
                candidate = None
            parsed = candidate if isinstance(candidate, dict) else None
        usage = payload.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        return ChatResult(
            text=content,
            raw_body=errors.redact(body, self._secrets),
            model_returned=_str_or_none(payload.get("model")),
            system_fingerprint=_str_or_none(payload.get("system_fingerprint")),
            input_tokens=sdk.int_or_none(usage.get("prompt_tokens")),
            output_tokens=sdk.int_or_none(usage.get("completion_tokens")),
            latency_ms=latency_ms,
            http_status=status,
            structured=parsed,
            finish_reason=_str_or_none(finish),
        )

    async def served_model(self, *, timeout: float) -> str | None:
        """What a custom endpoint says it serves; None for api.openai.com or when it does not say."""
        if not self._custom_endpoint:
            return None
        try:
            page = await self._client.models.list(timeout=timeout)
            ids = [getattr(m, "id", None) for m in page.data]
        except (openai.OpenAIError, ValueError, TypeError, AttributeError):
            return None
        return sdk.pick_served(self.model, ids, secrets=self._secrets)

    async def aclose(self) -> None:
        await self._client.close()


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None
