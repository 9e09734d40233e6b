"""Map what the SDKs raise and what HTTP answers to judgepanel's error taxonomy.

    429 (rate limit, concurrency)                     → RateLimited, retry_after from the headers
    429 / 402 whose body says quota, billing, credit,
      spend limit                                     → Fatal (money, not time, fixes it)
    408, 409, 5xx incl. 500 502 503 504 529           → Transient (retry_after too, when announced)
    timeouts, connection errors and resets            → Transient (status None)
    a 200 whose body is not JSON or lacks its fields  → Transient (status 200, raw body kept)
    400 401 403 404 413 422 and every other 4xx       → Fatal
    anything else the SDK raises (bad configuration)  → Fatal

`Retry-After` is read as `retry-after-ms` (milliseconds, preferred when present), else
`retry-after` as seconds or as an HTTP-date (RFC 9110 §10.2.3).

The errors built here carry a short message, the status, the retry hint and the response body,
and nothing from the request: never headers, so never a key. They are raised outside the SDK's
`except` block so that not even `__context__` links back to the SDK exception (whose `request`
holds the Authorization header). Any configured key that a server echoes back is redacted.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from judgepanel.errors import Fatal, ProviderError, RateLimited, TimedOut, Transient
from judgepanel.providers.base import ChatResult

_QUOTA = re.compile(
    r"insufficient_quota|exceeded your current quota|billing|credit balance|quota exceeded|spend_limit", re.I
)
_KEYISH = re.compile(r"\b(sk-(?:ant-)?[A-Za-z0-9_\-]{4})[A-Za-z0-9_\-]{8,}")
_MAX_MESSAGE = 300


def parse_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds to wait as the server announced it, or None when it did not say."""
    lowered = {k.lower(): v for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms)
        except ValueError:
            value = -1.0
        if value >= 0:
            return value / 1000
    raw = lowered.get("retry-after")
    if raw is None or not raw.strip():
        return None
    try:
        value = float(raw)
    except ValueError:
        try:
            when = parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
    return value if value >= 0 else None


# Every environment variable a provider reads a key from (see openai_provider / anthropic_provider).
KEY_ENVS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


def configured_secrets() -> tuple[str, ...]:
    """The key values configured in the environment: what must never be stored or shown."""
    return tuple(v for v in (os.environ.get(name, "").strip() for name in KEY_ENVS) if v)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Remove configured secrets and key-shaped strings from text that may be shown or stored."""
    for secret in secrets:
        if secret and len(secret) >= 6 and secret in text:
            text = text.replace(secret, "[redacted]")
    return _KEYISH.sub(r"\1…[redacted]", text)


def redact_result(result: ChatResult, secrets: Iterable[str] | None = None) -> ChatResult:
    """`result` with every configured key (default: `configured_secrets()`) and every key-shaped
    string removed from every field that is stored: the text (so the rationale parsed from it),
    the structured answer, the raw body, `model` and `system_fingerprint`. A 200 reply can echo
    the key as well as an error can; the runner applies this to each reply before it reads or
    stores anything."""
    keys = tuple(configured_secrets() if secrets is None else secrets)

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return redact(value, keys)
        if isinstance(value, dict):
            return {clean(k): clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return replace(
        result,
        text=clean(result.text),
        raw_body=clean(result.raw_body),
        model_returned=clean(result.model_returned),
        system_fingerprint=clean(result.system_fingerprint),
        structured=clean(result.structured),
    )


def _api_message(body: str) -> str:
    """The provider's own error message from an error body, else the body's start."""
    try:
        payload = json.loads(body)
    except ValueError:
        payload = None
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if isinstance(payload.get("message"), str):
            return str(payload["message"])
    text = " ".join(body.split())
    return text or "(empty body)"


def classify_status(
    status: int,
    body: str,
    headers: Mapping[str, str],
    *,
    provider: str,
    secrets: Iterable[str] = (),
) -> ProviderError:
    """The error for a non-2xx HTTP answer."""
    body = redact(body, secrets)
    detail = _api_message(body)
    if len(detail) > _MAX_MESSAGE:
        detail = detail[:_MAX_MESSAGE] + "…"
    message = f"{provider} HTTP {status}: {detail}"
    retry_after = parse_retry_after(headers)
    if status in (402, 429) and _QUOTA.search(body):
        return Fatal(message + " (quota or billing exhausted: not retried)", status=status, raw_body=body)
    if status == 429:
        return RateLimited(message, status=status, retry_after=retry_after, raw_body=body)
    if status >= 500 or status in (408, 409):
        return Transient(message, status=status, retry_after=retry_after, raw_body=body)
    return Fatal(message, status=status, raw_body=body)


def malformed(
    provider: str, body: str, why: str, *, status: int = 200, secrets: Iterable[str] = ()
) -> Transient:
    """A 2xx answer we cannot read: retried, with the body kept for the record."""
    return Transient(
        f"{provider} returned a malformed body ({why})", status=status, raw_body=redact(body, secrets)
    )


def timeout_error(provider: str, timeout: float) -> TimedOut:
    return TimedOut(f"{provider}: no answer within {timeout:g} s")


def connection_error(provider: str, cause: BaseException | None) -> Transient:
    kind = type(cause).__name__ if cause is not None else "connection error"
    return Transient(f"{provider}: connection failed ({kind})")
