"""The offline `sim` provider: the simulated judge (`judgepanel.simjudge`) behind the `Provider`
protocol, labelled as simulated in everything it returns (`model_returned` `sim/<model>`, the
`judgepanel-sim-v1` fingerprint, `"simulated": true` in the raw body)."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Mapping
from typing import Any

from judgepanel.errors import TimedOut, Transient
from judgepanel.providers.base import ChatRequest, ChatResult
from judgepanel.simjudge import SIM_FINGERPRINT, simulate
from judgepanel.simjudge.reply import SimSettings, request_seed

__all__ = ["SIM_FINGERPRINT", "SimProvider"]


class SimProvider:
    """The offline `sim` provider: the brain above behind the `Provider` protocol.

    Parameters come from the spec, overridden by `ChatRequest.params`. `error_rate` raises
    `Transient` on that share of attempts; the draw is seeded by the request and the attempt number
    (counted per provider instance), so retries can succeed while a fresh run repeats exactly.
    `latency` (seconds, ± uniform `jitter`) is slept before answering."""

    def __init__(self, name: str, model: str, params: Mapping[str, Any] | None = None) -> None:
        self.name = name
        self.model = model
        self._params = dict(params or {})
        self._attempts: dict[int, int] = {}

    async def complete(self, request: ChatRequest, *, timeout: float) -> ChatResult:
        started = time.perf_counter()
        params = {**self._params, **request.params}
        settings = SimSettings.from_params(params)
        answer_params = {
            k: v for k, v in params.items() if k not in ("error_rate", "latency", "jitter", "timeout")
        }
        seed = request_seed(self.model, answer_params, request.messages, request.schema_name)
        attempt = self._attempts.get(seed, 0)
        self._attempts[seed] = attempt + 1
        draw = random.Random(seed ^ (attempt + 1) * 0x9E3779B97F4A7C15)
        delay = max(0.0, settings.latency + draw.uniform(-settings.jitter, settings.jitter))
        if delay > timeout:
            await asyncio.sleep(timeout)
            raise TimedOut(f"sim {self.model}: timed out after {timeout:g} s", status=None)
        if delay:
            await asyncio.sleep(delay)
        if draw.random() < settings.error_rate:
            body = json.dumps({"error": {"type": "overloaded_error", "message": "simulated transient error"}})
            raise Transient(
                f"sim {self.model}: simulated transient error (HTTP 503)", status=503, raw_body=body
            )
        structured = request.schema is not None and bool(params.get("structured", True))
        reply = simulate(
            self.model,
            request.messages,
            schema_name=request.schema_name,
            params=answer_params,
            structured=structured,
        )
        model_returned = f"sim/{self.model}"
        raw = json.dumps(
            {
                "simulated": True,
                "model": model_returned,
                "system_fingerprint": SIM_FINGERPRINT,
                "content": reply.text,
                "finish_reason": reply.finish_reason,
                "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
            },
            ensure_ascii=False,
        )
        return ChatResult(
            text=reply.text,
            raw_body=raw,
            model_returned=model_returned,
            system_fingerprint=SIM_FINGERPRINT,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            latency_ms=(time.perf_counter() - started) * 1000,
            http_status=200,
            structured=reply.structured if structured else None,
            finish_reason=reply.finish_reason,
        )

    async def aclose(self) -> None:
        return None
