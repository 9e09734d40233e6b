"""What a reply may bring into the store: clean strings, bounded counts, bodies within the cap.

Boundary: pure functions over strings, token counts and `ChatResult`s, no I/O. The providers read
token counts through `token_count`; the runner passes every reply (`clean_result`) and every
failure's body (`clean_body`) through here before it reads or stores anything. What a hostile or
broken server sends (issue 29) then cannot make a writer batch impossible to commit:

* a lone surrogate (`"\\ud800"` is valid JSON) cannot be encoded as UTF-8 and PostgreSQL refuses
  NUL in text: both become U+FFFD, in every string of the reply;
* a token count is an integer in [0, `MAX_COUNT`] (the columns are 32-bit on PostgreSQL), else it
  is unknown (None) — and so is the reply's cost, which the runner then charges at the call's
  reservation (`runner.calling`);
* the short columns (`model_returned`, `system_fingerprint`, `finish_reason`) are cut to their
  width, and no body over the judge's `max_reply_bytes` is stored: such a body is replaced by its
  size and sha256, as an `oversize` failure is (batch result files are not read through the
  HTTP cap, so this is the only bound they have).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from typing import Any

from judgepanel.providers.base import ChatResult

MAX_COUNT = 2**31 - 1
# the widths of the response table's short text columns (`store.tables.response`)
WIDTHS = {"model_returned": 200, "system_fingerprint": 200, "finish_reason": 40}
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def token_count(value: Any) -> int | None:
    """A token count as the store keeps it: an int (not a bool) in [0, `MAX_COUNT`], else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT:
        return value
    return None


def bad_count(value: Any) -> bool:
    """Whether a count the server did send (not null, not absent) is not a usable count: the
    reply's usage cannot be trusted, so its cost is unknown."""
    return value is not None and token_count(value) is None


def clean_text(text: str) -> str:
    """`text` with lone surrogates and NUL characters replaced by U+FFFD (a surrogate pair that
    Python holds as two code points is joined into the character it stands for)."""
    if text.isascii():
        return text.replace("\x00", "\ufffd") if "\x00" in text else text
    if _UNSTORABLE.search(text) is None:
        return text
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text.replace("\x00", "\ufffd")


def clean_value(value: Any) -> Any:
    """`clean_text` applied to every string (dict keys too) of a JSON-shaped value."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_value(k): clean_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_value(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**53:
        return float(value)  # JSON columns and the verdict readers get a number they can hold
    return value


def clean_body(body: str | None, cap: int | None) -> str | None:
    """A body as it may be stored: cleaned, and when longer than `cap` bytes (in UTF-8) replaced
    by a line that gives its size and sha256 (of the cleaned text) instead."""
    if body is None:
        return None
    body = clean_text(body)
    if cap is None or len(body) * 4 <= cap:
        return body
    raw = body.encode("utf-8")
    if len(raw) <= cap:
        return body
    return f"[not stored: {len(raw):,} bytes, over max_reply_bytes={cap:,}; sha256 {hashlib.sha256(raw).hexdigest()}]"


def _short(value: str | None, field: str) -> str | None:
    if value is None:
        return None
    value = clean_text(value)
    width = WIDTHS[field]
    return value if len(value) <= width else value[: width - 1] + "…"


def clean_result(result: ChatResult, cap: int | None) -> ChatResult:
    """`result` as it may be read and stored (see the module docstring). A reply whose strings are
    already clean and whose counts are in range comes back as it is (the same object)."""
    counts = (
        result.input_tokens,
        result.output_tokens,
        result.cache_read_tokens,
        result.cache_write_tokens,
    )
    bounded = tuple(None if c is None else token_count(c) for c in counts)
    text = clean_text(result.text)
    body = clean_body(result.raw_body, cap)
    model = _short(result.model_returned, "model_returned")
    fingerprint = _short(result.system_fingerprint, "system_fingerprint")
    finish = _short(result.finish_reason, "finish_reason")
    structured = clean_value(result.structured) if result.structured is not None else None
    if (
        bounded == counts
        and text is result.text
        and body is result.raw_body
        and model is result.model_returned
        and fingerprint is result.system_fingerprint
        and finish is result.finish_reason
        and structured == result.structured
    ):
        return result
    unknown = bounded != counts  # one count out of range: none of them can be trusted
    return replace(
        result,
        text=text,
        raw_body=body if body is not None else "",
        model_returned=model,
        system_fingerprint=fingerprint,
        finish_reason=finish,
        structured=structured,
        input_tokens=None if unknown else bounded[0],
        output_tokens=None if unknown else bounded[1],
        cache_read_tokens=None if unknown else bounded[2],
        cache_write_tokens=None if unknown else bounded[3],
    )
