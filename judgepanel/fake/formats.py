"""The fake server's wire formats: the OpenAI Chat Completions and Anthropic Messages bodies it
answers with (the sim brain's reply, scripted answers, usage, ids, billed tokens), `/v1/models`,
and each wire's error bodies.

Boundary: `WireFormats` is a part of `fake.server.FakeServer` (its base class); it turns one
parsed request into one `_Reply`. Routing, fault choice and the transport live in `fake.server`,
`fake.injection` and `fake.http`.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from judgepanel.fake.cache import PromptCache
from judgepanel.fake.graders import grader_reply
from judgepanel.fake.http import _Reply
from judgepanel.fake.logprobs import fake_logprobs
from judgepanel.simjudge import SIM_FINGERPRINT, simulate
from judgepanel.simjudge.reading import content_text, final_user_text
from judgepanel.simjudge.reply import SimReply, count_tokens

_SIM_KNOBS = ("position_bias", "noise", "prose_rate", "parse_error_rate", "editor_sprawl")
_SAMPLING = ("temperature", "top_p", "top_k", "seed", "max_tokens", "max_completion_tokens")
_OPENAI_ERRORS = {
    400: ("invalid_request_error", None, "Invalid request (injected by the fake server)."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("permission_error", None, "You are not allowed to use this model."),
    404: (
        "invalid_request_error",
        "model_not_found",
        "The model does not exist or you do not have access to it.",
    ),
    422: ("invalid_request_error", None, "Unprocessable request."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."),
    500: ("server_error", None, "The server had an error while processing your request."),
    502: ("server_error", None, "Bad gateway."),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
    504: ("server_error", None, "Gateway timeout."),
    529: ("server_error", None, "Overloaded."),
}
_ANTHROPIC_ERRORS = {
    400: ("invalid_request_error", "Invalid request (injected by the fake server)."),
    401: ("authentication_error", "invalid x-api-key"),
    402: ("billing_error", "Your credit balance is too low to access the Anthropic API."),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "The requested resource could not be found."),
    422: ("invalid_request_error", "Unprocessable request."),
    429: ("rate_limit_error", "Number of requests has exceeded your rate limit."),
    500: ("api_error", "Internal server error."),
    502: ("api_error", "Bad gateway."),
    503: ("api_error", "Service unavailable."),
    504: ("api_error", "Gateway timeout."),
    529: ("overloaded_error", "Overloaded"),
}


class WireFormats:
    """The replies of `/v1/chat/completions`, `/v1/messages` and `/v1/models` (`FakeServer`'s base)."""

    port: int
    served_model: str | None
    sim: dict[str, float]
    refuse: tuple[str, ...]
    prompt_cache: PromptCache | None
    answers: list[tuple[str, str]]
    billed: Counter[str]
    _counter: int

    def _bill(self, input_tokens: int, output_tokens: int, cached_tokens: int) -> None:
        self.billed["replies"] += 1
        self.billed["input_tokens"] += input_tokens
        self.billed["output_tokens"] += output_tokens
        self.billed["cached_tokens"] += cached_tokens

    def next_id(self) -> str:
        self._counter += 1
        return f"{self.port:x}{self._counter:08x}"

    def _error(self, wire: str, status: int, message: str | None, *, param: str | None = None) -> _Reply:
        if wire == "openai":
            kind, code, default = _OPENAI_ERRORS.get(status, ("server_error", None, "Error."))
            body: dict[str, Any] = {
                "error": {"message": message or default, "type": kind, "param": param, "code": code}
            }
            headers = [("x-request-id", f"req_{self.next_id()}")]
        else:
            kind, default = _ANTHROPIC_ERRORS.get(status, ("api_error", "Error."))
            body = {"type": "error", "error": {"type": kind, "message": message or default}}
            headers = [("request-id", f"req_{self.next_id()}")]
        return _Reply(status, json.dumps(body).encode(), headers)

    def _brain_params(self, payload: Mapping[str, Any], knobs: Mapping[str, float]) -> dict[str, Any]:
        params: dict[str, Any] = {k: payload[k] for k in _SAMPLING if k in payload}
        params.update(self.sim)
        params.update({k: v for k, v in knobs.items() if k in _SIM_KNOBS})
        return params

    def _openai(self, payload: dict[str, Any], model: str, knobs: Mapping[str, float]) -> _Reply:
        messages = payload.get("messages")
        if not payload.get("model") or not isinstance(messages, list) or not messages:
            return self._error("openai", 400, "'model' and a non-empty 'messages' list are required.")
        for name in self.refuse:
            if name in payload:
                return self._error(
                    "openai",
                    400,
                    f"Unsupported parameter: '{name}' is not supported by this server.",
                    param=name,
                )
        fmt = payload.get("response_format") or {}
        structured = isinstance(fmt, dict) and fmt.get("type") in ("json_schema", "json_object")
        schema_name = (fmt.get("json_schema") or {}).get("name") if isinstance(fmt, dict) else None
        normalized = [
            {"role": str(m.get("role")), "content": content_text(m.get("content"))}
            for m in messages
            if isinstance(m, dict)
        ]
        params = self._brain_params(payload, knobs)
        reply = simulate(model, normalized, schema_name=schema_name, params=params, structured=structured)
        reply = self._scripted(normalized, grader_reply(model, normalized, params, reply))
        ident = self.next_id()
        cached = self.prompt_cache.openai(payload, model).read if self.prompt_cache is not None else 0
        self._bill(reply.input_tokens, reply.output_tokens, min(cached, reply.input_tokens))
        body = {
            "id": f"chatcmpl-fake{ident}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.served_model or f"sim/{model}",
            "system_fingerprint": SIM_FINGERPRINT,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.text, "refusal": None},
                    "logprobs": (
                        fake_logprobs(reply.text, top_logprobs=int(payload.get("top_logprobs") or 0))
                        if payload.get("logprobs") is True
                        else None
                    ),
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": reply.input_tokens,
                "completion_tokens": reply.output_tokens,
                "total_tokens": reply.input_tokens + reply.output_tokens,
                "prompt_tokens_details": {
                    "cached_tokens": min(cached, reply.input_tokens),
                    "audio_tokens": 0,
                },
            },
        }
        return _Reply(200, json.dumps(body, ensure_ascii=False).encode(), [("x-request-id", f"req_{ident}")])

    def _anthropic(
        self, payload: dict[str, Any], model: str, knobs: Mapping[str, float], version: str
    ) -> _Reply:
        messages = payload.get("messages")
        if not payload.get("model") or not isinstance(messages, list) or not messages:
            return self._error("anthropic", 400, "messages: field required")
        if not isinstance(payload.get("max_tokens"), int):
            return self._error("anthropic", 400, "max_tokens: field required")
        if version >= "2026-10-21":
            for name in ("temperature", "top_p", "top_k"):
                if name in payload:
                    return self._error("anthropic", 400, f"{name}: Extra inputs are not permitted")
        normalized: list[dict[str, str]] = []
        system = payload.get("system")
        if system:
            normalized.append({"role": "system", "content": content_text(system)})
        normalized += [
            {"role": str(m.get("role")), "content": content_text(m.get("content"))}
            for m in messages
            if isinstance(m, dict)
        ]
        choice = payload.get("tool_choice") or {}
        tools = payload.get("tools") or []
        tool_name: str | None = None
        if isinstance(choice, dict) and tools:
            if choice.get("type") == "tool":
                tool_name = str(choice.get("name"))
            elif choice.get("type") == "any":
                tool_name = str(tools[0].get("name"))
        params = self._brain_params(payload, knobs)
        reply = simulate(
            model, normalized, schema_name=tool_name, params=params, structured=tool_name is not None
        )
        reply = self._scripted(normalized, grader_reply(model, normalized, params, reply))
        ident = self.next_id()
        usage = self.prompt_cache.anthropic(payload, model) if self.prompt_cache is not None else None
        read = min(usage.read, reply.input_tokens) if usage else 0
        written = min(usage.written, reply.input_tokens - read) if usage else 0
        self._bill(reply.input_tokens, reply.output_tokens, read)
        content: list[dict[str, Any]]
        if tool_name is not None and reply.structured is not None:
            content = [
                {"type": "tool_use", "id": f"toolu_fake{ident}", "name": tool_name, "input": reply.structured}
            ]
            stop = "tool_use"
        else:
            content = [{"type": "text", "text": reply.text}]
            stop = "end_turn" if reply.finish_reason == "stop" else "max_tokens"
        body = {
            "id": f"msg_fake{ident}",
            "type": "message",
            "role": "assistant",
            "model": self.served_model or f"sim/{model}",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": reply.input_tokens - read - written,
                "cache_creation_input_tokens": written,
                "cache_read_input_tokens": read,
                "output_tokens": reply.output_tokens,
            },
        }
        return _Reply(200, json.dumps(body, ensure_ascii=False).encode(), [("request-id", f"req_{ident}")])

    def _models(self, headers: Mapping[str, str]) -> _Reply:
        ids = [self.served_model or "sim"]
        if "anthropic-version" in headers:
            data = [
                {"type": "model", "id": i, "display_name": i, "created_at": "2026-01-01T00:00:00Z"}
                for i in ids
            ]
            body: dict[str, Any] = {"data": data, "has_more": False, "first_id": ids[0], "last_id": ids[-1]}
        else:
            body = {
                "object": "list",
                "data": [{"id": i, "object": "model", "created": 0, "owned_by": "fake"} for i in ids],
            }
        return _Reply(200, json.dumps(body).encode())

    def _scripted(self, messages: Sequence[Mapping[str, Any]], reply: SimReply) -> SimReply:
        """The reply a test scripted for this request (`/_fake/answers`), else the brain's."""
        if not self.answers:
            return reply
        text = final_user_text(messages)
        for when, scripted in self.answers:
            if when in text:
                return dataclasses.replace(
                    reply, text=scripted, structured=None, style="prose", output_tokens=count_tokens(scripted)
                )
        return reply
