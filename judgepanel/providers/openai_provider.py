"""OpenAI Chat Completions through the official async SDK, and any OpenAI-compatible server.

vLLM, llama.cpp's server and Ollama speak the same wire format: give the spec a `base_url`
(`openai:qwen2.5:7b?base_url=http://127.0.0.1:11434/v1`). Without one, `OPENAI_BASE_URL` is used as
the SDK uses it, else api.openai.com. The key is `OPENAI_API_KEY`; a custom endpoint may run
without one (local servers ignore the key, so a placeholder is sent).

Structured output: with a `ChatRequest.schema` (and `structured` not turned off) the request
carries `response_format={"type": "json_schema", …}`, strict when the schema allows it, and the
reply's JSON object is returned as `ChatResult.structured`.

Prompt caching is automatic on OpenAI's side (by prefix, from 1,024 tokens on): judgepanel's
prompts put the stable part first, and `usage.prompt_tokens_details.cached_tokens` is recorded as
`ChatResult.cache_read_tokens` (included in `input_tokens`, as OpenAI counts it).

The SDK never retries (`max_retries=0`): the runner does. The body is read raw and decoded here,
so a malformed 200 (truncated JSON, an HTML page, missing fields) becomes `Transient` with the body
kept instead of an SDK parsing exception.

The call goes through the SDK's documented generic `post` (its README, "Undocumented endpoints")
with `cast_to` the SDK's own HTTP response class (`_WIRE_RESPONSE`: `httpx2.Response` in the
pinned SDK, found from the SDK's public `DefaultAsyncHttpxClient` so judgepanel does not name the
SDK's HTTP library), not `chat.completions.create`: the SDK still owns the wire (auth,
headers, connection pool, timeouts, status errors), but skips `create`'s per-request TypedDict
transform, which walked every message and the whole JSON schema and was the largest CPU cost per
call at zero latency (about a quarter of the runner's profiled time). The request body is plain
JSON (strings, numbers and the schema dict), which that transform passes through unchanged.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterable
from typing import Any

import openai

from judgepanel.errors import BadInput, ProviderError
from judgepanel.protocol.logprobs import logprob_request
from judgepanel.providers import errors, sdk
from judgepanel.providers.base import CURRENT_CLOCK, ChatRequest, ChatResult
from judgepanel.providers.capabilities import Capabilities, capabilities, refused_parameter
from judgepanel.providers.keys import api_key
from judgepanel.providers.replies import bad_count, token_count
from judgepanel.providers.spec import JudgeSpec, max_reply_bytes

_WIRE_RESPONSE = sdk.wire_response_class(openai.DefaultAsyncHttpxClient)
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
        base_url = spec.base_url or os.environ.get("OPENAI_BASE_URL") or None
        key = api_key(spec, "OPENAI_API_KEY")
        if key is None:
            if base_url is None:
                raise BadInput(
                    f"judge {spec.name}: OPENAI_API_KEY is not set (or name another variable with "
                    "key_env=NAME, or give a base_url for a local server)"
                )
            key = PLACEHOLDER_KEY
        self._setup(spec, key, capabilities("openai", base_url))
        self._custom_endpoint = base_url is not None
        self._client = openai.AsyncOpenAI(
            api_key=key, base_url=base_url, max_retries=0, http_client=_http_client(max_connections)
        )

    def _setup(self, spec: JudgeSpec, key: str, caps: Capabilities) -> None:
        self.name = spec.name
        self.spec = spec
        self.model = spec.model
        self._secrets = (key,)
        self._custom_endpoint = False
        self.caps = caps
        self.warnings: list[str] = []  # parameters the server refused, dropped for later calls
        self._dropped: set[str] = set()
        self._probe = asyncio.Lock()
        self._probed = not caps.probe
        self._max_reply = max_reply_bytes(spec)

    def __repr__(self) -> str:
        return f"OpenAIProvider({self.name!r})"

    @property
    def refused(self) -> frozenset[str]:
        """The parameters this judge's server refused and that are left out of its calls, named as
        in a request's `params` (`max_tokens`, `seed`, …; `response_format`: no schema is sent)."""
        wire = {self.caps.max_tokens_param: "max_tokens"}
        return frozenset(wire.get(n, n) for n in self._dropped)

    def assume_refused(self, names: Iterable[str]) -> None:
        """Leave out parameters the server refused in an earlier run (`refused`), without asking
        again; the first call still goes alone and may learn more."""
        for name in names:
            self._dropped.add(self.caps.max_tokens_param if name == "max_tokens" else name)

    def _arguments(self, request: ChatRequest) -> tuple[dict[str, Any], bool]:
        params = {**self.spec.request_params(), **request.params}
        kwargs: dict[str, Any] = {k: params[k] for k in _SENT if k in params}
        if "max_tokens" in params:
            # api.openai.com's newer models accept only max_completion_tokens; compatible servers
            # (vLLM, llama.cpp, Ollama) have always read max_tokens: the capability table says which
            kwargs[self.caps.max_tokens_param] = params["max_tokens"]
        structured = (
            request.schema is not None
            and bool(params.get("structured", True))
            and self.caps.structured
            and "response_format" not in self._dropped
        )
        for name in self._dropped:
            kwargs.pop(name, None)
        kwargs.update(logprob_request(params))  # scoring=logprobs (protocol.logprobs)
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
        if not self._probed:
            # an OpenAI-compatible server's first call goes alone: what it refuses is learnt once,
            # not as one 400 per job in flight. The others wait here, unsent: their deadlines wait too.
            clock = CURRENT_CLOCK.get()
            if clock is not None and self._probe.locked():
                clock.waiting()
            async with self._probe:
                if not self._probed:
                    try:
                        return await self._call(request, timeout)
                    finally:
                        self._probed = True
        return await self._call(request, timeout)

    async def _call(self, request: ChatRequest, timeout: float) -> ChatResult:
        while True:
            kwargs, structured = self._arguments(request)
            started = time.perf_counter()
            refused, result = await self._once(request, kwargs, structured, timeout, started)
            if result is not None:
                return result
            assert refused is not None
            self._dropped.add(refused)
            self.warnings.append(
                f"judge {self.name}: the server refused the parameter {refused!r} (400); "
                "it is left out of this judge's calls from now on"
            )

    async def _once(
        self, request: ChatRequest, kwargs: dict[str, Any], structured: bool, timeout: float, started: float
    ) -> tuple[str | None, ChatResult | None]:
        """One call: (None, result), or (a refused parameter, None) when a probing judge's server
        rejected one it was sent; other failures raise."""
        failure: ProviderError | None = None
        refused: str | None = None
        try:
            with sdk.reply_cap(self._max_reply):
                raw = await self._client.post(
                    "/chat/completions",
                    cast_to=_WIRE_RESPONSE,
                    body={"model": self.model, "messages": request.messages, **kwargs},
                    options={
                        "timeout": sdk.request_timeout(openai.DefaultAsyncHttpxClient, timeout),
                        "security": {"bearer_auth": True},
                    },
                )
            body = raw.text
            status = raw.status_code
        except sdk.ReplyTooLarge as exc:
            failure = sdk.oversize("openai", exc)
        except openai.OpenAIError as exc:
            if self.caps.probe and isinstance(exc, openai.BadRequestError):
                refused = refused_parameter(sdk.body_of(exc.response), kwargs)
            if refused is None or refused in self._dropped:
                failure = sdk.sdk_failure(
                    exc, _ERRORS, provider="openai", timeout=timeout, secrets=self._secrets
                )
        if failure is not None:
            raise failure  # outside the except block: no __context__ pointing at the SDK's request
        if refused is not None:
            return refused, None
        latency_ms = (time.perf_counter() - started) * 1000
        return None, self._result(body, status, latency_ms, structured)

    # ---- the Batch API (`runner.batch`): one request as a JSONL body, one reply body read back

    @property
    def client(self) -> openai.AsyncOpenAI:
        return self._client

    @property
    def secrets(self) -> tuple[str, ...]:
        return self._secrets

    def batch_body(self, request: ChatRequest) -> tuple[dict[str, Any], bool]:
        """The `/v1/chat/completions` body a batch line carries (what `complete` would send), and
        whether the reply is structured."""
        kwargs, structured = self._arguments(request)
        return {"model": self.model, "messages": request.messages, **kwargs}, structured

    def batch_result(self, body: str, status: int, structured: bool) -> ChatResult:
        """A batch output line's `response.body`, read exactly as a realtime reply is."""
        return self._result(body, status, 0.0, structured)

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
        details = usage.get("prompt_tokens_details")
        # OpenAI caches prompt prefixes by itself; `cached_tokens` is the part of `prompt_tokens`
        # read from the cache. It never reports cache writes (they cost nothing extra).
        sent_cached = details.get("cached_tokens") if isinstance(details, dict) else None
        prompt, cached = token_count(usage.get("prompt_tokens")), token_count(sent_cached)
        if bad_count(sent_cached) or (cached is not None and (prompt is None or cached > prompt)):
            prompt = cached = None  # counts that contradict each other: the cost is unknown
        return ChatResult(
            text=content,
            raw_body=errors.redact(body, self._secrets),
            model_returned=_str_or_none(payload.get("model")),
            system_fingerprint=_str_or_none(payload.get("system_fingerprint")),
            input_tokens=prompt,
            output_tokens=token_count(usage.get("completion_tokens")),
            latency_ms=latency_ms,
            http_status=status,
            structured=parsed,
            finish_reason=_str_or_none(finish),
            cache_read_tokens=cached,
            cache_write_tokens=0 if cached is not None else None,
        )

    async def served_model(self, *, timeout: float) -> str | None:
        """What a custom endpoint says it serves; None for api.openai.com or when it does not say."""
        if not self._custom_endpoint:
            return None
        return await sdk.served_model(
            self._client, self.model, openai.OpenAIError, timeout=timeout, secrets=self._secrets
        )

    async def aclose(self) -> None:
        await self._client.close()


def _http_client(max_connections: int | None) -> Any:
    return sdk.http_client(openai.DefaultAsyncHttpxClient, openai.DEFAULT_CONNECTION_LIMITS, max_connections)


class AzureOpenAIProvider(OpenAIProvider):
    """`Provider` for `azure:DEPLOYMENT?endpoint=https://NAME.openai.azure.com&api_version=…`, through
    the openai SDK's `AsyncAzureOpenAI`: the same wire format, the deployment in the URL path and
    the API version in the query. The key is `AZURE_OPENAI_API_KEY` (or the spec's `key_env`); the
    endpoint and version may also come from `AZURE_OPENAI_ENDPOINT` / `OPENAI_API_VERSION`."""

    def __init__(self, spec: JudgeSpec, *, max_connections: int | None = None) -> None:
        endpoint = str(spec.get("endpoint") or os.environ.get("AZURE_OPENAI_ENDPOINT") or "")
        version = str(spec.get("api_version") or os.environ.get("OPENAI_API_VERSION") or "")
        if not endpoint:
            raise BadInput(
                f"judge {spec.name}: give endpoint=https://NAME.openai.azure.com (or AZURE_OPENAI_ENDPOINT)"
            )
        if not version:
            raise BadInput(f"judge {spec.name}: give api_version=YYYY-MM-DD (or OPENAI_API_VERSION)")
        key = api_key(spec, "AZURE_OPENAI_API_KEY")
        if key is None:
            raise BadInput(
                f"judge {spec.name}: AZURE_OPENAI_API_KEY is not set (or name another variable with key_env=NAME)"
            )
        self._setup(spec, key, capabilities("azure"))
        self._client = openai.AsyncAzureOpenAI(
            api_key=key,
            azure_endpoint=endpoint,
            azure_deployment=spec.model,
            api_version=version,
            max_retries=0,
            http_client=_http_client(max_connections),
        )

    def __repr__(self) -> str:
        return f"AzureOpenAIProvider({self.name!r})"


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None
