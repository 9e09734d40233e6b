"""Injected faults of the fake server: the fault names, which fault a request gets (header,
model-name suffix, server-wide rates; `_choose_fault`), the server-side RPM limit, the replies
that take the place of an answer (errors, 429s, hang, reset, HTML) and the rewrites of a real
answer (cut at the length cap, malformed, the caller's key echoed).

Boundary: `FaultInjection` is a part of `fake.server.FakeServer` (its base class); the server
calls it while dispatching a request. The hostile rewrites of an answer's bytes are
`fake.faults`; the wire formats of the replies are `fake.formats`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import math
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any

from judgepanel.fake.faults import HOSTILE
from judgepanel.fake.formats import _ANTHROPIC_ERRORS, WireFormats
from judgepanel.fake.http import _NoReply, _Reply

FAULTS = (
    "429",
    "429s",
    "quota",
    "500",
    "502",
    "503",
    "504",
    "529",
    "400",
    "401",
    "403",
    "404",
    "422",
    "hang",
    "reset",
    "truncated",
    "html",
    "html502",
    "missing",
    "429far",
    "429inf",
    "drip",
    "length",
    "echo",
    "huge",
    "endless",
    "echoforms",
    "echo401",
    "gzipbomb",
    *HOSTILE,
)
_HTML = (
    b"<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center>"
    b"<hr><center>nginx</center></body></html>"
)


class FaultInjection(WireFormats):
    """Which fault a request gets, the RPM limit, and the replies that replace an answer."""

    faults: dict[str, float]
    rpm: float | None
    burst: float | None
    retry_after: float
    hang: float
    _tokens: float
    _refilled: float

    def _choose_fault(
        self, headers: Mapping[str, str], model_faults: Sequence[str], digest: bytes, attempt: int
    ) -> str | None:
        forced = headers.get("x-fake-fault")
        if forced:
            return forced if forced in FAULTS else None
        draw = random.Random(int.from_bytes(digest, "big") ^ (attempt * 0x9E3779B97F4A7C15)).random
        for token in model_faults:
            name, at, prob = token.partition("@")
            name, x, times = name.partition("x")
            if name not in FAULTS:
                continue
            if at:
                try:
                    if draw() < float(prob):
                        return name
                except ValueError:
                    continue
            elif x:
                if times.isdigit() and attempt < int(times):
                    return name
            else:
                return name
        if self.faults:
            u = draw()
            acc = 0.0
            for name, rate in self.faults.items():
                acc += rate
                if u < acc:
                    return name
        return None

    def _take_token(self) -> float | None:
        """None if the request may pass the RPM limit, else seconds until the next token."""
        if not self.rpm or self.burst is None:
            return None
        now = time.monotonic()
        rate = self.rpm / 60.0
        self._tokens = min(self.burst, self._tokens + (now - self._refilled) * rate)
        self._refilled = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return None
        return (1.0 - self._tokens) / rate

    def _rate_limited(self, wire: str, wait: float) -> _Reply:
        reply = self._error(wire, 429, "Rate limit reached for requests per minute (fake server RPM limit).")
        reply.headers += [
            ("retry-after", str(max(1, math.ceil(wait)))),
            ("retry-after-ms", str(max(1, math.ceil(wait * 1000)))),
            ("x-ratelimit-limit-requests", str(int(self.rpm or 0))),
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", f"{wait:.3f}s"),
        ]
        return reply

    async def _fault_reply(
        self,
        wire: str,
        fault: str,
        headers: Mapping[str, str],
        reader: asyncio.StreamReader,
        knobs: Mapping[str, float],
    ) -> _Reply:
        if fault == "hang":
            # Answer nothing until the client gives up (closes the connection) or `hang` passes.
            with contextlib.suppress(asyncio.TimeoutError, ConnectionError):
                await asyncio.wait_for(reader.read(1), self.hang)
            raise _NoReply("hang")
        if fault == "reset":
            raise _NoReply("reset")
        if fault == "echo401":
            forms = key_forms(_caller_key(headers))
            return self._error(wire, 401, f"bad key {forms[0]} / {forms[-1]} ({' '.join(forms[1:-1])})")
        if fault == "html502":
            return _Reply(502, _HTML, content_type="text/html")
        if fault in ("429far", "429inf"):
            reply = self._error(wire, 429, None)
            if fault == "429far":
                reply.headers.append(("retry-after", "Fri, 31 Dec 2099 23:59:59 GMT"))
            else:
                reply.headers += [("retry-after-ms", "inf"), ("retry-after", "86400")]
            return reply
        if fault == "quota":
            if wire == "openai":
                body = {
                    "error": {
                        "message": "You exceeded your current quota, please check your plan and billing details.",
                        "type": "insufficient_quota",
                        "param": None,
                        "code": "insufficient_quota",
                    }
                }
                return _Reply(429, json.dumps(body).encode())
            return self._error(wire, 402, _ANTHROPIC_ERRORS[402][1])
        status = int(fault.rstrip("s"))
        reply = self._error(wire, status, None)
        if status == 429:
            wait = knobs.get("retry_after", self.retry_after)
            if "x-fake-retry-after" in headers:
                with contextlib.suppress(ValueError):
                    wait = float(headers["x-fake-retry-after"])
            reply.headers.append(("retry-after", str(max(0, math.ceil(wait)))))
            if fault == "429":
                reply.headers.append(("retry-after-ms", str(round(wait * 1000))))
        return reply


_AFTER_ANSWER = (
    "truncated",
    "missing",
    "html",
    "drip",
    "length",
    "echo",
    "echoforms",
    "huge",
    "endless",
    "gzipbomb",
    *HOSTILE,
)  # faults applied to a real answer


def _cut_at_length(wire: str, reply: _Reply) -> _Reply:
    """The answer as a model stopped by its output cap sends it: a third of the text, marked."""
    payload = json.loads(reply.body)
    if wire == "openai":
        choice = payload["choices"][0]
        text = choice["message"]["content"]
        choice["message"]["content"] = text[: max(1, len(text) // 3)]
        choice["finish_reason"] = "length"
    else:
        text = (
            json.dumps(payload["content"][0].get("input"))
            if payload["content"][0]["type"] == "tool_use"
            else payload["content"][0]["text"]
        )
        payload["content"] = [{"type": "text", "text": text[: max(1, len(text) // 3)]}]
        payload["stop_reason"] = "max_tokens"
    return _Reply(200, json.dumps(payload, ensure_ascii=False).encode(), reply.headers)


def _malformed(fault: str, reply: _Reply) -> _Reply:
    if fault == "truncated":
        return _Reply(200, reply.body[: len(reply.body) // 2], reply.headers)
    if fault == "html":
        return _Reply(200, _HTML, reply.headers, content_type="text/html")
    payload = json.loads(reply.body)
    payload.pop("choices", None)
    payload.pop("content", None)
    return _Reply(200, json.dumps(payload).encode(), reply.headers)


def _caller_key(headers: Mapping[str, str]) -> str:
    auth = headers.get("authorization", "")
    return (
        auth.split(" ", 1)[1].strip() if auth.lower().startswith("bearer ") else headers.get("x-api-key", "")
    )


def key_forms(key: str) -> list[str]:
    """`key` in the reversible forms a hostile or buggy server may send it back in."""
    raw = key.encode()
    half = len(key) // 2
    return [
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        raw.hex(),
        raw.hex().upper(),
        key[::-1],
        key.upper(),
        key.lower(),
        key.replace("-", "_"),
        f"{key[:half]} {key[half:]}",
        f"{key[:half]}\n{key[half:]}",
        f"{key[:half]}.{key[half:]}",
        "/".join(key[i : i + 8] for i in range(0, len(key), 8)),
        f"{key[:half]}...{key[half:]}",
    ]


def _echo(reply: _Reply, key: str, *, forms: bool = False) -> _Reply:
    """The reply with `key` planted in every free-text field a client stores (with `forms`: in
    every form of `key_forms`, and `model` carrying the base64 one)."""
    planted = " | ".join(key_forms(key)) if forms else key
    in_model = key_forms(key)[0] if forms else key

    def plant(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: (f"{planted} {v}" if k == "rationale" and isinstance(v, str) else plant(v))
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [plant(v) for v in value]
        return value

    def text(content: str) -> str:
        try:
            obj = json.loads(content)
        except ValueError:
            obj = None
        return json.dumps(plant(obj)) if isinstance(obj, dict) else f"{planted}\n{content}"

    payload = json.loads(reply.body)
    payload["model"] = f"{payload.get('model')}+{in_model}"
    if "system_fingerprint" in payload:
        payload["system_fingerprint"] = in_model
    for choice in payload.get("choices") or []:
        message = choice.get("message") or {}
        if isinstance(message.get("content"), str):
            message["content"] = text(message["content"])
    for block in payload.get("content") or []:
        if block.get("type") == "text":
            block["text"] = text(block["text"])
        elif block.get("type") == "tool_use":
            block["input"] = plant(block["input"])
    return _Reply(200, json.dumps(payload, ensure_ascii=False).encode(), reply.headers)
