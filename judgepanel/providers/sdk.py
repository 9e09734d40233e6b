"""What the OpenAI and Anthropic providers share: both official SDKs come from one generator, so they
pool connections, raise errors and hand back raw bodies the same way.

- `connection_limits`: the httpx pool for as many calls as may be in flight.
- `wire_response_class`: the SDK's own HTTP response class, the `cast_to` of its generic `post`.
- `SdkErrors` + `sdk_failure`: an SDK exception → judgepanel's `ProviderError` (see `errors`).
- `reply_object`: reading a 2xx body that may be malformed (token counts: `providers.replies`).
- `served_model` + `pick_served`: what a custom endpoint says it serves (`/v1/models`).
- `http_client` + `reply_cap` + `ReplyTooLarge`: the SDK's HTTP client with two event hooks: a
  request hook that tells the runner's `CallClock` when the request leaves (so the per-attempt
  deadline starts then, not while the call waited inside the provider), and a response hook that
  reads the body through a counter (unless HTTP/1.1 already bounds it under the cap: a
  Content-Length within it, not chunked, not compressed): past the judge's `max_reply_bytes`
  (raw, and decoded when the server compressed it) reading stops with `ReplyTooLarge`, so a 500 MB or endless reply costs at
  most the cap in memory. The cap is per call (a context variable set around the chat call), so
  the batch API's result files, read through the same client, are not cut.
- `shared_ssl_context`: one TLS context per process (per HTTP library and value of `SSL_CERT_FILE`
  / `SSL_CERT_DIR`), built as the client would build it and handed to every client: each client
  used to build its own and load the CA bundle again (25–30 ms of CPU per provider here).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import json
import os
import zlib
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

from judgepanel.errors import Fatal, Oversize, ProviderError
from judgepanel.providers import errors
from judgepanel.providers.base import CURRENT_CLOCK

_Limits = TypeVar("_Limits")


def connection_limits(sdk_default: _Limits, max_connections: int) -> _Limits:
    """The SDK's own pool-limits type (the SDKs may bundle their own httpx), sized to keep as many
    connections alive as may be in flight (the SDKs keep 100)."""
    make = cast("Callable[..., _Limits]", type(sdk_default))
    return make(max_connections=max_connections, max_keepalive_connections=max_connections)


def _http_library(default_client: type[Any]) -> Any:
    for cls in default_client.__mro__:
        if cls.__name__ == "AsyncClient" and not cls.__module__.startswith(("openai", "anthropic")):
            return importlib.import_module(cls.__module__.split(".")[0])
    raise RuntimeError(f"{default_client!r}: no HTTP client class among its bases")  # pragma: no cover


def wire_response_class(default_client: type[Any]) -> type[Any]:
    """The Response class of the HTTP library an SDK sends with (httpx2, or httpx in older SDKs),
    found from the SDK's public `DefaultAsyncHttpxClient` so judgepanel never names that library."""
    return _http_library(default_client).Response  # type: ignore[no-any-return]


# ---- the reply cap and the moment a request leaves

DEFAULT_MAX_REPLY_BYTES = 8 * 1024 * 1024
_REPLY_CAP: ContextVar[int | None] = ContextVar("judgepanel_reply_cap", default=None)
_CHUNK = 1 << 16


class ReplyTooLarge(Exception):
    """A reply body that went over the cap; reading stopped there. `received` counts the bytes read
    off the wire, `sha256` hashes the first `cap + 1` of them (the same for the same reply however
    it was chunked), `announced` is the Content-Length the server sent (None without one)."""

    def __init__(
        self, cap: int, received: int, sha256: str, status: int, announced: int | None, decoded: int | None
    ) -> None:
        super().__init__(f"reply over {cap} bytes")
        self.cap, self.received, self.sha256, self.status = cap, received, sha256, status
        self.announced, self.decoded = announced, decoded


class ReplyRefused(ReplyTooLarge):
    """A reply not read at all: its content coding is one judgepanel did not ask for (and could
    not count as it decodes). Stored as a fatal failure with the reason, never its body."""

    def __init__(self, cap: int, status: int, why: str) -> None:
        super().__init__(cap, 0, hashlib.sha256().hexdigest(), status, None, None)
        self.why = why


@contextlib.contextmanager
def reply_cap(max_bytes: int | None) -> Iterator[None]:
    """Cap the reply bodies of the calls made inside (in this task) at `max_bytes`."""
    token = _REPLY_CAP.set(max_bytes)
    try:
        yield
    finally:
        _REPLY_CAP.reset(token)


def oversize(provider: str, exc: ReplyTooLarge) -> Fatal:
    """The stored failure for a reply over the cap: its size so far and hash, never its body."""
    if isinstance(exc, ReplyRefused):
        return Fatal(f"{provider} HTTP {exc.status}: reply not read: {exc.why}", status=exc.status)
    announced = f", {exc.announced:,} announced" if exc.announced is not None else ""
    decoded = f", over {exc.decoded:,} once decompressed" if exc.decoded is not None else ""
    return Oversize(
        f"{provider} HTTP {exc.status}: the reply went over max_reply_bytes={exc.cap:,} "
        f"({exc.received:,} bytes read{decoded}{announced}; sha256 of the first "
        f"{min(exc.received, exc.cap + 1):,} bytes {exc.sha256}); not retried: raise the judge's max_reply_bytes= or re-ask with "
        "`campaign run --retry-failed`",
        status=exc.status,
    )


# What judgepanel's clients ask for (`Accept-Encoding`) and count: the codings zlib decodes. httpx
# decodes `br` and `zstd` too when their packages are installed; a reply in them was not asked for
# and is refused unread (`ReplyRefused`) rather than decoded without a count.
ACCEPTED_CODINGS = ("gzip", "deflate")
_UNASKED_CODINGS = ("br", "zstd")
MAX_CODINGS = 5  # httpx refuses more layers than this itself


def content_codings(header: str) -> list[str]:
    """The codings of a `Content-Encoding` header in the order they were applied, as httpx reads it
    (comma separated, case-insensitive, `identity` dropped)."""
    codings = [c.strip().lower() for c in header.split(",")]
    return [c for c in codings if c and c != "identity"]


def refused_coding(header: str) -> str | None:
    """Why a reply with this `Content-Encoding` is not read (None when it is read)."""
    codings = content_codings(header)
    unasked = sorted({c for c in codings if c in _UNASKED_CODINGS})
    if unasked:
        return f"content-encoding {', '.join(unasked)} was not asked for (judgepanel accepts gzip, deflate)"
    if sum(c in ACCEPTED_CODINGS for c in codings) > MAX_CODINGS:
        return f"more than {MAX_CODINGS} content encodings"
    return None


class Inflation:
    """Counts the bytes a client decodes from a body compressed with `codings` (in the order they
    were applied; the ones httpx does not decode pass as they are), each layer decoding the one
    before it in bounded steps, so that no more than about the cap is ever held. `feed` returns
    the largest count of any layer so far: past the cap the caller stops reading."""

    def __init__(self, codings: list[str], cap: int) -> None:
        self._cap = cap
        self._kinds = [c for c in reversed(codings) if c in ACCEPTED_CODINGS]
        self._layers: list[Any] = [self._opener(kind) for kind in self._kinds]
        self._fresh = [True] * len(self._layers)
        self._counts = [0] * len(self._layers)
        self._dead = False

    @staticmethod
    def _opener(kind: str) -> Any:
        return zlib.decompressobj(zlib.MAX_WBITS | 16 if kind == "gzip" else zlib.MAX_WBITS)

    def feed(self, chunk: bytes) -> int:
        if self._layers and not self._dead:
            try:
                self._pass(0, chunk)
            except zlib.error:
                self._dead = True  # httpx reports the broken stream itself; nothing more decodes
        return max(self._counts, default=0)

    def _pass(self, level: int, data: bytes) -> None:
        if level == len(self._layers):
            return
        while data and self._counts[level] <= self._cap:
            layer = self._layers[level]
            try:
                out = layer.decompress(data, _CHUNK)
            except zlib.error:
                if not (self._kinds[level] == "deflate" and self._fresh[level]):
                    raise
                # a raw deflate stream without the zlib header, which httpx accepts too
                self._layers[level] = zlib.decompressobj(-zlib.MAX_WBITS)
                self._fresh[level] = False
                continue
            self._fresh[level] = False
            self._counts[level] += len(out)
            self._pass(level + 1, out)
            data = layer.unconsumed_tail


_CAPPED: dict[Any, type[Any]] = {}


def _capped_stream(lib: Any) -> type[Any]:
    """A response stream of the HTTP library `lib` that counts what passes and raises
    `ReplyTooLarge` past the cap (made once per library: it must subclass the library's own
    `AsyncByteStream`)."""
    if lib in _CAPPED:
        return _CAPPED[lib]

    class CappedStream(lib.AsyncByteStream):  # type: ignore[misc]
        def __init__(self, inner: Any, cap: int, status: int, encoding: str, announced: int | None) -> None:
            self._inner, self._cap, self._status, self._announced = inner, cap, status, announced
            self._hash = hashlib.sha256()
            self._received = 0
            # a compressed body is counted as the client will decode it, every layer of it: 8 MB of
            # gzip may be 8 GB of JSON, and `gzip, gzip` 1 KB → 400 MB
            self._inflation = Inflation(content_codings(encoding), cap)

        def _count(self, chunk: bytes) -> None:
            room = self._cap + 1 - self._received
            if room > 0:
                self._hash.update(chunk[:room])
            self._received += len(chunk)
            decoded = self._inflation.feed(chunk)
            if self._received > self._cap or decoded > self._cap:
                raise ReplyTooLarge(
                    self._cap,
                    self._received,
                    self._hash.hexdigest(),
                    self._status,
                    self._announced,
                    decoded if decoded > self._cap else None,
                )

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self._inner:
                self._count(chunk)
                yield chunk

        async def aclose(self) -> None:
            await self._inner.aclose()

    _CAPPED[lib] = CappedStream
    return CappedStream


CONNECT_TIMEOUT = 10.0


@functools.lru_cache(maxsize=64)  # one per judge timeout, not one per call (0.5 % of the runner's CPU)
def request_timeout(default_client: type[Any], timeout: float) -> Any:
    """The SDK call's timeout: `timeout` for the answer, but connecting (and waiting for a pooled
    connection) may take at most half of it, at most `CONNECT_TIMEOUT`: so a server that cannot be
    reached fails as a connection error, apart from one that was reached and did not answer in time
    (the runner's deadline on the whole call would otherwise fire first and call it a timeout)."""
    first = min(timeout / 2, CONNECT_TIMEOUT)
    return _http_library(default_client).Timeout(timeout, connect=first, pool=first)


def _framed_by_length(response: Any) -> bool:
    """Whether the body is as long as its Content-Length and no longer, once decoded too: HTTP/1.x
    (h11 reads exactly that many bytes; HTTP/2 does not enforce it), not chunked (chunking wins over
    a Content-Length) and not compressed. Such a reply announced under the cap cannot go over it,
    so it is read without the counting stream (a generator, a hash and a count per chunk)."""
    headers = response.headers
    return (
        response.http_version in ("HTTP/1.1", "HTTP/1.0")
        and "transfer-encoding" not in headers
        and headers.get("content-encoding", "identity").strip().lower() in ("", "identity")
    )


# the variables the HTTP library reads for its CA bundle when it trusts the environment (as the SDKs'
# clients do): a context is shared only between clients that would have built the same one
CA_VARIABLES = ("SSL_CERT_FILE", "SSL_CERT_DIR")


def shared_ssl_context(default_client: type[Any]) -> Any:
    """The `ssl.SSLContext` every client of this process made from `default_client` shares: built
    once per HTTP library and value of `SSL_CERT_FILE` / `SSL_CERT_DIR` by the library's own public
    `create_ssl_context` (verification on, its CA bundle, the variables honoured as its `trust_env`
    honours them), so a changed variable gives a new context. Sharing is safe: the library's
    connections only set the ALPN protocols on it, the same (HTTP/1.1) for every client made here."""
    lib = _http_library(default_client)
    return _ssl_context(lib, tuple(os.environ.get(name) for name in CA_VARIABLES))


@functools.lru_cache(maxsize=16)
def _ssl_context(lib: Any, ca_variables: tuple[str | None, ...]) -> Any:
    del ca_variables  # the cache key only: the library reads the same variables itself
    return lib.create_ssl_context(verify=True, trust_env=True)


def http_client(default_client: type[Any], sdk_limits: Any, max_connections: int | None) -> Any:
    """The SDK's default HTTP client (its timeouts, redirects and pool; the pool sized for
    `max_connections` when given; the process's `shared_ssl_context`) with judgepanel's two hooks:
    the clock and the reply cap."""
    lib = _http_library(default_client)
    capped = _capped_stream(lib)

    async def on_request(request: Any) -> None:
        clock = CURRENT_CLOCK.get()
        if clock is not None:
            clock.sent()

    async def on_response(response: Any) -> None:
        cap = _REPLY_CAP.get()
        if cap is None:
            return
        headers = response.headers
        refused = refused_coding(headers.get("content-encoding", ""))
        if refused is not None:
            raise ReplyRefused(cap, response.status_code, refused)
        length = headers.get("content-length")
        announced = int(length) if length is not None and length.strip().isdigit() else None
        if announced is not None and announced <= cap and _framed_by_length(response):
            return  # HTTP/1.1 reads exactly `announced` bytes, no more: nothing to count
        response.stream = capped(
            response.stream,
            cap,
            response.status_code,
            headers.get("content-encoding", ""),
            announced,
        )

    limits = connection_limits(sdk_limits, max_connections) if max_connections else sdk_limits
    return default_client(
        limits=limits,
        verify=shared_ssl_context(default_client),
        headers={"Accept-Encoding": ", ".join(ACCEPTED_CODINGS)},
        event_hooks={"request": [on_request], "response": [on_response]},
    )


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
    if isinstance(exc.__cause__, ReplyTooLarge):  # an SDK that wraps what the body reader raised
        return oversize(provider, exc.__cause__)
    if isinstance(exc, kinds.timeout):
        cause = type(exc.__cause__).__name__
        if cause in ("ConnectTimeout", "PoolTimeout"):
            # the request never reached the server: a connection failure, not a slow answer
            return errors.connection_error(provider, exc.__cause__)
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
        with reply_cap(DEFAULT_MAX_REPLY_BYTES):
            page = await client.models.list(timeout=timeout)
        ids = [getattr(m, "id", None) for m in page.data]
    except (sdk_error, ReplyTooLarge, ValueError, TypeError, AttributeError):
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
