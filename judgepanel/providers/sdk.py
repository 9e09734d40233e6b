"""What the OpenAI and Anthropic providers share: both official SDKs come from one generator, so they
pool connections, raise errors and hand back raw bodies the same way.

- `connection_limits`: the httpx pool for as many calls as may be in flight.
- `wire_response_class`: the SDK's own HTTP response class, the `cast_to` of its generic `post`.
- `SdkErrors` + `sdk_failure`: an SDK exception → judgepanel's `ProviderError` (see `errors`).
- `reply_object`, `int_or_none`: reading a 2xx body that may be malformed.
- `served_model` + `pick_served`: what a custom endpoint says it serves (`/v1/models`).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

from judgepanel.errors import Fatal, ProviderError
from judgepanel.providers import errors

_Limits = TypeVar("_Limits")


def connection_limits(sdk_default: _Limits, max_connections: int) -> _Limits:
    """The SDK's own pool-limits type (the SDKs may bundle their own httpx), sized to keep as many
    connections alive as may be in flight (the SDKs keep 100)."""
    make = cast("Callable[..., _Limits]", type(sdk_default))
    return make(max_connections=max_connections, max_keepalive_connections=max_connections)


def wire_response_class(default_client: type[Any]) -> type[Any]:
    """The Response class of the HTTP library an SDK sends with (httpx2, or httpx in older SDKs),
    found from the SDK's public `DefaultAsyncHttpxClient` so judgepanel never names that library."""
    for cls in default_client.__mro__:
        if cls.__name__ == "AsyncClient" and not cls.__module__.startswith(("openai", "anthropic")):
            return importlib.import_module(cls.__module__.split(".")[0]).Response  # type: ignore[no-any-return]
    raise RuntimeError(f"{default_client!r}: no HTTP client class among its bases")  # pragma: no cover


@dataclass(frozen=True)
class SdkErrors:
    """One SDK's exception classes; `timeout` subclasses `connection`, so it is tested first."""

    timeout: type[Exception]
    connection: type[Exception]
    status: type[Exception]


class _StatusError(Protocol):
    status_code: int
    response: Any


def sdk_failure(
    exc: Exception, kinds: SdkErrors, *, provider: str, timeout: float, secrets: Iterable[str]
) -> ProviderError:
    """The `ProviderError` for what the SDK raised. Raise it outside the SDK's `except` block, so that
    not even `__context__` points at the SDK's request (which holds the key)."""
    if isinstance(exc, kinds.timeout):
        return errors.timeout_error(provider, timeout)
    if isinstance(exc, kinds.connection):
        return errors.connection_error(provider, exc.__cause__)
    if isinstance(exc, kinds.status):
        status = cast("_StatusError", exc)
        return errors.classify_status(
            status.status_code,
            _body_of(status.response),
            status.response.headers,
            provider=provider,
            secrets=secrets,
        )
    return Fatal(f"{provider}: {errors.redact(str(exc), secrets)}")


def body_of(response: Any) -> str:
    """An error response's body as text ("" when it cannot be read)."""
    return _body_of(response)


def _body_of(response: Any) -> str:
    try:
        return str(response.text)
    except Exception:  # the SDK reads error bodies first; if it could not, there is no body to keep
        return ""


def reply_object(provider: str, body: str, *, status: int, secrets: Iterable[str]) -> dict[str, Any]:
    """A 2xx body as a JSON object, else `errors.malformed` (retried, body kept)."""
    try:
        payload = json.loads(body)
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        raise errors.malformed(provider, body, "not a JSON object", status=status, secrets=secrets)
    return payload


async def served_model(
    client: Any, requested: str, sdk_error: type[Exception], *, timeout: float, secrets: Iterable[str] = ()
) -> str | None:
    """What a custom endpoint says it serves, from the SDK client's `models.list`; None when the
    listing fails or says nothing usable."""
    try:
        page = await client.models.list(timeout=timeout)
        ids = [getattr(m, "id", None) for m in page.data]
    except (sdk_error, ValueError, TypeError, AttributeError):
        return None
    return pick_served(requested, ids, secrets=secrets)


def pick_served(requested: str, ids: Iterable[Any], *, secrets: Iterable[str] = ()) -> str | None:
    """The served model from a `/v1/models` listing: the only model of a one-model server (llama.cpp,
    vLLM), else the requested one when listed (a server that routes by name), else all of them."""
    listed = sorted({errors.redact(i, secrets) for i in ids if isinstance(i, str) and i})
    if not listed:
        return None
    if len(listed) == 1:
        return listed[0]
    if requested in listed:
        return requested
    return ",".join(listed)[:500]


def int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
