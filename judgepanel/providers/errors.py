"""Map what the SDKs raise and what HTTP answers to judgepanel's error taxonomy.

    429 (rate limit, concurrency)                     → RateLimited, retry_after from the headers
    429 / 402 whose body says quota, billing, credit,
      spend limit                                     → Fatal (money, not time, fixes it)
    408, 409, 5xx incl. 500 502 503 504 529           → Transient (retry_after too, when announced)
    timeouts, connection errors and resets            → Transient (status None)
    a server certificate TLS refuses                  → CertificateRefused (a Fatal: a CA bundle
                                                        fixes it, not time; `--retry-failed`)
    a 200 whose body is not JSON or lacks its fields  → Transient (status 200, raw body kept)
    400 / 413 refusing a prompt over the context window → ContextTooLong (a Fatal; `context_limit`)
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

import base64
import functools
import json
import os
import re
import ssl
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from judgepanel.errors import CertificateRefused, Fatal, ProviderError, RateLimited, TimedOut, Transient
from judgepanel.providers import unmask
from judgepanel.providers.base import ChatResult
from judgepanel.providers.context_limit import context_refusal
from judgepanel.providers.key_names import PROVIDER_KEY_ENVS, user_key_envs

_QUOTA = re.compile(
    r"insufficient_quota|exceeded your current quota|billing|credit balance|quota exceeded|spend_limit", re.I
)
# API keys, and the annotators' tokens of `judgepanel annotate` (`jpa-…`), which are redacted alike
_KEYISH = re.compile(r"\b((?:sk-(?:ant-)?|jpa-)[A-Za-z0-9_\-]{4})[A-Za-z0-9_\-]{8,}")
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
KEY_ENVS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "AZURE_OPENAI_API_KEY")
# … and every variable named like a credential, as a judge's `key_env` may name any of them
_SECRET_ENV = re.compile(r"[A-Z_][A-Z0-9_]*(?:_API_KEY|_KEY|_TOKEN|_SECRET|_PASSWORD)")
_MIN_SECRET = 8  # shorter values (placeholders such as "no-key") are not treated as secrets
_MIN_FUZZY = 12  # letters and digits a key needs before its reformatted forms are looked for


def configured_secrets() -> tuple[str, ...]:
    """The key values configured in the environment: what must never be stored or shown. The
    provider variables, every variable named like a credential (`*_API_KEY`, `*_KEY`, `*_TOKEN`,
    `*_SECRET`, `*_PASSWORD`), and every name a judge's `key_env` may take (`providers.keys`)."""
    named = {n for n in os.environ if _SECRET_ENV.fullmatch(n)} | PROVIDER_KEY_ENVS | user_key_envs()
    names = [*KEY_ENVS, *sorted(named - set(KEY_ENVS))]
    values = (os.environ.get(n, "").strip() for n in names)
    return tuple(dict.fromkeys(v for v in values if len(v) >= _MIN_SECRET))


# Between two characters of a reformatted key: punctuation or whitespace, or a JSON escape (a key
# split by a newline reads `\n` in a raw JSON body), a few of them at most.
_GAP = r"(?:[^A-Za-z0-9\\]|\\[nrtbf/\\\"]|\\u[0-9a-fA-F]{4}){0,6}"
_B64_GAP = r"(?:\s|\\[nr]){0,2}"  # base64 wrapped into lines


def _spaced(chars: str, gap: str) -> str:
    return gap.join(re.escape(c) for c in chars)


def _base64_cores(raw: bytes) -> set[str]:
    """The base64 (standard and URL-safe) characters that encode `raw` whatever the 0–2 bytes
    before it in a longer encoded blob: the characters that only `raw`'s bits decide."""
    cores: set[str] = set()
    for shift in range(3):
        encoded = base64.b64encode(bytes(shift) + raw).decode()
        start, end = -(-8 * shift // 6), (8 * (shift + len(raw))) // 6
        core = encoded[start:end]
        cores |= {core, core.replace("+", "-").replace("/", "_")}
    return cores


@dataclass(frozen=True)
class _Redactor:
    pattern: re.Pattern[str]
    folded: re.Pattern[bytes]  # letters and digits of each fuzzy form, lower-cased
    exact: re.Pattern[bytes] | None  # letters and digits of each base64 core, as they are
    shortest: int  # no text with fewer letters and digits than this can hold a key
    reach: int  # characters a match can span at most (the longest form with its widest gaps)
    forms: tuple[str, ...]  # the folded forms (letters and digits, lower-cased), for `unmask.across`


# what is left of a text for the quick test: its ASCII letters and digits, JSON escapes dropped whole
_JSON_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|.)")
_DROP = bytes(c for c in range(128) if not chr(c).isalnum())


@functools.lru_cache(maxsize=64)
def _redactor(secrets: tuple[str, ...]) -> _Redactor | None:
    """One pattern matching every configured key in every reversible form a server may echo it
    in: as is, upper- or lower-cased, reversed, as hex, as base64 or base64url (also inside a
    longer encoded blob), and with whitespace or punctuation put in or changed between its
    characters (split at a space or a newline, `-` → `_`, `...` inserted, `/` every 8 characters);
    and, for speed, what each form leaves once punctuation and whitespace are dropped. Secrets
    shorter than `_MIN_SECRET` are ignored."""
    branches: list[str] = []
    folded: list[bytes] = []
    exact: list[bytes] = []
    for secret in sorted({s.strip() for s in secrets if s and len(s.strip()) >= _MIN_SECRET}):
        alnum = "".join(c for c in secret if c.isascii() and c.isalnum())
        if len(alnum) < _MIN_FUZZY:
            branches.append(re.escape(secret))
            exact.append(alnum.encode())
            continue
        raw = secret.encode()
        for form in (alnum, alnum[::-1], raw.hex()):
            branches.append("(?i:" + _spaced(form, _GAP) + ")")
            folded.append(form.lower().encode())
        for core in sorted(_base64_cores(raw)):
            if len(core) >= _MIN_FUZZY:
                branches.append(_spaced(core, _B64_GAP))
                exact.append("".join(c for c in core if c.isalnum()).encode())
    if not branches:
        return None

    def either(needles: list[bytes]) -> re.Pattern[bytes] | None:
        return re.compile(b"|".join(re.escape(n) for n in needles)) if needles else None

    return _Redactor(
        re.compile("|".join(branches)),
        either(folded) or re.compile(b"(?!)"),
        either(exact),
        min(len(n) for n in (*folded, *exact)),
        max(len(n) for n in (*folded, *exact)) * 7,
        tuple(f.decode() for f in folded),
    )


def _holds(r: _Redactor, text: str) -> bool:
    if len(text) < r.shortest:
        return False
    if "\\" in text:
        text = _JSON_ESCAPE.sub("", text)
    bare = text.encode("ascii", "ignore").translate(None, _DROP)
    if len(bare) < r.shortest:
        return False
    if r.exact is not None and r.exact.search(bare):
        return True
    return r.folded.search(bare.lower()) is not None


_WITHHELD = "[redacted: held a configured key in a form that could not be cut out]"


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Remove configured secrets (in every form `_redactor` knows) and key-shaped strings from
    text that may be shown or stored. A text that still holds a key's letters and digits in
    order after the cut (spread wider than the pattern allows) is withheld whole."""
    r = _redactor(secrets if isinstance(secrets, tuple) else tuple(secrets))
    if r is not None:
        if _holds(r, text):
            text = r.pattern.sub("[redacted]", text)
            if _holds(r, text):
                text = _WITHHELD
        # percent-encoded, entities, \u escapes, fullwidth, zero-width spaces (`unmask`): the text
        # is kept as decoded then, with the key cut out
        view = unmask.decoded(text)
        if view is not text and _holds(r, view):
            view = r.pattern.sub("[redacted]", view)
            text = _WITHHELD if _holds(r, view) else view
    if "sk-" not in text and "jpa-" not in text:  # what `_KEYISH` needs, found far faster
        return text
    return _KEYISH.sub(r"\1…[redacted]", text)


def scrubber(secrets: Iterable[str] | None = None) -> Callable[[str], str]:
    """`redact` with the secrets (default: `configured_secrets()`) read once, for the writers of
    everything judgepanel shows or writes out (JSON output, exports, reports)."""
    keys = tuple(configured_secrets() if secrets is None else secrets)
    return lambda text: redact(text, keys)


def redact_value(value: Any, secrets: Iterable[str] | None = None) -> Any:
    """`value` (a string, or JSON-shaped lists and dicts of them) with `redact` applied to every
    string in it, keys of dicts included; default secrets: `configured_secrets()`."""
    keys = tuple(configured_secrets() if secrets is None else secrets)

    def clean(v: Any) -> Any:
        if isinstance(v, str):
            return redact(v, keys)
        if isinstance(v, dict):
            return {clean(k): clean(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [clean(x) for x in v]
        return v

    return clean(value)


def redact_result(result: ChatResult, secrets: Iterable[str] | None = None) -> ChatResult:
    """`result` with every configured key (default: `configured_secrets()`) and every key-shaped
    string removed from every field that is stored: the text (so the rationale parsed from it),
    the structured answer, the raw body, `model` and `system_fingerprint`. A 200 reply can echo
    the key as well as an error can; the runner applies this to each reply before it reads or
    stores anything."""
    keys = tuple(configured_secrets() if secrets is None else secrets)

    def clean(value: Any) -> Any:
        return redact_value(value, keys)

    text, body, model, fingerprint, finish = (
        result.text,
        result.raw_body,
        result.model_returned,
        result.system_fingerprint,
        result.finish_reason,
    )
    r = _redactor(keys)
    if r is not None:  # before each field is redacted alone, which would cut one half only
        text, body, model, fingerprint, finish = _split_keys(r, text, body, model, fingerprint, finish)
    text, body, model, fingerprint, finish = (clean(v) for v in (text, body, model, fingerprint, finish))
    return replace(
        result,
        text=text or "",
        raw_body=body or "",
        model_returned=model,
        system_fingerprint=fingerprint,
        finish_reason=finish,
        structured=clean(result.structured),
    )


def _json_replaced(value: Any, swap: Mapping[str, str]) -> Any:
    """A JSON value with every string that is a key of `swap` replaced by its value."""
    if isinstance(value, str):
        return swap.get(value, value)
    if isinstance(value, dict):
        return {k: _json_replaced(v, swap) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_replaced(v, swap) for v in value]
    return value


def _split_keys(
    r: _Redactor, text: str, body: str, model: str | None, fingerprint: str | None, finish: str | None
) -> tuple[str, str, str | None, str | None, str | None]:
    """The reply's stored text fields scanned as one row for a key cut in two across them
    (`unmask.across`: the end of `model` and the start of `system_fingerprint`, say); a field cut
    there is cut in the raw body too, which holds the same strings."""
    fields = [text, model or "", fingerprint or "", finish or ""]
    cut = unmask.across(fields, r.forms)
    if cut is fields:
        return text, body, model, fingerprint, finish
    swap = {old: new for old, new in zip(fields, cut, strict=True) if old and old != new}
    try:
        body = json.dumps(_json_replaced(json.loads(body), swap), ensure_ascii=False)
    except ValueError:
        for old, new in swap.items():
            body = body.replace(old, new)
    model, fingerprint, finish = (
        None if was is None else now for was, now in zip((model, fingerprint, finish), cut[1:], strict=True)
    )
    return cut[0], body, model, fingerprint, finish


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
    return context_refusal(status, body, message) or Fatal(message, status=status, raw_body=body)


def malformed(
    provider: str, body: str, why: str, *, status: int = 200, secrets: Iterable[str] = ()
) -> Transient:
    """A 2xx answer we cannot read: retried, with the body kept for the record."""
    return Transient(
        f"{provider} returned a malformed body ({why})", status=status, raw_body=redact(body, secrets)
    )


def timeout_error(provider: str, timeout: float) -> TimedOut:
    return TimedOut(f"{provider}: no answer within {timeout:g} s")


def connection_error(provider: str, cause: BaseException | None) -> Transient | CertificateRefused:
    """A connection that failed: retried, unless TLS refused the server's certificate, which no
    retry changes (a CA bundle, `SSL_CERT_FILE`/`SSL_CERT_DIR`, or the server's certificate does):
    `CertificateRefused`, saying why, so a run does not spend its back-off on every job."""
    kind = type(cause).__name__ if cause is not None else "connection error"
    refused = _certificate_refusal(cause)
    if refused:
        return CertificateRefused(
            f"{provider}: connection failed ({kind}: certificate verify failed: {refused}); not retried: "
            "trust the server's CA with SSL_CERT_FILE or SSL_CERT_DIR, or fix its certificate"
        )
    return Transient(f"{provider}: connection failed ({kind})")


def _certificate_refusal(cause: BaseException | None) -> str | None:
    """OpenSSL's reason (e.g. `self-signed certificate`) when the HTTP library's error was caused by
    a failed certificate check; None otherwise. The reason names the certificate, never the request."""
    seen: set[int] = set()
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ssl.SSLCertVerificationError):
            return str(cause.verify_message or cause.reason or "unknown reason")
        cause = cause.__cause__ or cause.__context__
    return None
