"""Hostile replies of the fake server (issue 29): faults that rewrite a real answer into what a
hostile or broken server sends, each one an attack that once got through.

Fault names hold no `x` (the model-suffix reader takes `NAMExN` as "the first N attempts").

Boundary: `fake.injection` chooses the fault (by header, model suffix or rate), `fake.formats`
builds the real answer; this module only rewrites that answer (`rewrite`). It holds no state and
does no I/O.

* `gzipgzip` — the real answer padded to `huge` bytes (a JSON object with a `padding` member in
  front), then gzip-compressed twice and sent as `content-encoding: gzip, gzip`: about a kilobyte
  on the wire for tens of megabytes once a client decodes both layers (which httpx does).
  `gzipgzipjunk` is the same but the decoded body is not JSON (the "malformed body" path).
* `surrogate` — the reply text, `model` and every rationale carry a lone surrogate (`\\ud800`,
  as a JSON escape, which `json.loads` accepts) and a NUL character.
* `bigtokens` — every token count is 10**40. `negtokens` — they are negative (-3,000,000).
* `nousage` — `usage: null`. `strtokens` — the token counts are strings and fractions.
* `badcache` — a cached-token count larger than the prompt (OpenAI `cached_tokens`, Anthropic
  `cache_read_input_tokens`); `negcache` — a negative one.
* `brcoded` — the real answer, uncompressed, labelled `content-encoding: br` (a coding the client
  did not ask for). `longfields` — `model`, `system_fingerprint` and `finish_reason` of 10,000
  characters (the columns hold 200, 200 and 40).
* `echoencoded` — the caller's key echoed in the encodings a redactor must decode first:
  percent-encoded (`sk%2Dproj%2D…`), as `\\uXXXX` escapes in the raw body, as HTML entities
  (`&#115;&#107;…`), in fullwidth letters, with a zero-width space between characters; and split
  across two adjacent stored columns (its first half at the end of `model`, the rest at the start
  of `system_fingerprint` or the reply text).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from typing import Any

HOSTILE = (
    "gzipgzip",
    "gzipgzipjunk",
    "surrogate",
    "bigtokens",
    "negtokens",
    "nousage",
    "strtokens",
    "badcache",
    "negcache",
    "echoencoded",
    "brcoded",
    "longfields",
)

_BLOCK = 1 << 20


def double_gzip(body: bytes, size: int, *, junk: bool = False) -> bytes:
    """`body` (a JSON object) padded to `size` bytes and gzip-compressed twice; the padding is
    compressed block by block, so the decoded body is never held whole. With `junk` the decoded
    body is not JSON (it lacks its closing brace)."""
    inner = zlib.compressobj(9, zlib.DEFLATED, 31)
    outer = zlib.compressobj(9, zlib.DEFLATED, 31)
    head, rest = b'{"padding":"', b'",' + body[1:]
    if junk:
        rest = rest[:-1]
    out = [outer.compress(inner.compress(head))]
    n = max(0, size - len(head) - len(rest))
    block = b"x" * _BLOCK
    while n > 0:
        out.append(outer.compress(inner.compress(block[: min(n, _BLOCK)])))
        n -= min(n, _BLOCK)
    out.append(outer.compress(inner.compress(rest) + inner.flush()))
    out.append(outer.flush())
    return b"".join(out)


def encoded_forms(key: str) -> dict[str, str]:
    """`key` in the natural re-encodings a redactor must see through (see the module docstring)."""
    fullwidth = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in key)
    return {
        "percent": "".join(c if c.isalnum() else f"%{ord(c):02X}" for c in key),
        "entities": "".join(f"&#{ord(c)};" for c in key),
        "fullwidth": fullwidth,
        "zerowidth": "\u200b".join(key),
        "escapes": "".join(f"\\u{ord(c):04x}" for c in key),
    }


def _walk(value: Any, fn: Callable[[str, Any], Any]) -> Any:
    """`value` with `fn(key, v)` applied to each dict member (recursively)."""
    if isinstance(value, dict):
        return {k: fn(k, _walk(v, fn)) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, fn) for v in value]
    return value


def _texts(payload: dict[str, Any], change: Callable[[str], str]) -> None:
    """Apply `change` to the reply text (or the structured object's strings) on either wire."""

    def structured(obj: Any) -> Any:
        return _walk(obj, lambda k, v: change(v) if k == "rationale" and isinstance(v, str) else v)

    for choice in payload.get("choices") or []:
        message = choice.get("message") or {}
        content = message.get("content")
        if isinstance(content, str):
            try:
                obj = json.loads(content)
            except ValueError:
                obj = None
            message["content"] = (
                json.dumps(structured(obj), ensure_ascii=False) if isinstance(obj, dict) else change(content)
            )
    for block in payload.get("content") or []:
        if block.get("type") == "text":
            block["text"] = change(block["text"])
        elif block.get("type") == "tool_use":
            block["input"] = structured(block["input"])


def _usage(payload: dict[str, Any], change: Callable[[int], Any]) -> None:
    """Apply `change` to every token count of the reply's `usage` (nested ones included)."""
    usage = payload.get("usage")
    if isinstance(usage, dict):
        payload["usage"] = _walk(
            usage, lambda k, v: change(v) if k.endswith("_tokens") and isinstance(v, int) else v
        )


def rewrite(fault: str, wire: str, body: bytes, key: str, huge: int) -> tuple[bytes, list[tuple[str, str]]]:
    """The hostile body for `fault` from the real answer `body`, and the headers to add."""
    if fault in ("gzipgzip", "gzipgzipjunk"):
        packed = double_gzip(body, huge, junk=fault == "gzipgzipjunk")
        return packed, [("content-encoding", "gzip, gzip")]
    if fault == "brcoded":
        return body, [("content-encoding", "br")]
    payload = json.loads(body)
    if fault == "longfields":
        payload["model"] = "m" * 10_000
        payload["system_fingerprint"] = "f" * 10_000
        for choice in payload.get("choices") or []:
            choice["finish_reason"] = "s" * 10_000
        if "stop_reason" in payload:
            payload["stop_reason"] = "s" * 10_000
    elif fault == "surrogate":
        _texts(payload, lambda s: f"\ud800{s}\x00\udfff")
        payload["model"] = f"{payload.get('model')}\ud800\x00"
        return json.dumps(payload).encode(), []  # ASCII: the surrogates travel as `\\ud800` escapes
    elif fault == "bigtokens":
        _usage(payload, lambda n: 10**40)
    elif fault == "negtokens":
        _usage(payload, lambda n: -3_000_000)
    elif fault == "nousage":
        payload["usage"] = None
    elif fault == "strtokens":
        _usage(payload, lambda n: f"{n}.5")
    elif fault in ("badcache", "negcache"):
        usage = payload.get("usage") or {}
        prompt = int(usage.get("prompt_tokens") or usage.get("input_tokens") or 0)
        cached = prompt * 50 + 1_000_000 if fault == "badcache" else -1_000_000
        if wire == "openai":
            usage.setdefault("prompt_tokens_details", {})["cached_tokens"] = cached
        else:
            usage["cache_read_input_tokens"] = cached
        payload["usage"] = usage
    elif fault == "echoencoded":
        forms = encoded_forms(key)
        half = len(key) // 2
        planted = " | ".join(forms.values())
        _texts(payload, lambda s: f"{planted} {s}")
        payload["model"] = f"{payload.get('model')}-{key[:half]}"
        if wire == "openai":
            payload["system_fingerprint"] = f"{key[half:]}-fp"
        else:
            _texts(payload, lambda s: f"{key[half:]} {s}")
        # `\uXXXX` escapes of every character of the key in the raw body (json.loads reads them
        # back as the key itself): one more member, written by hand
        escaped = "".join(f"\\u{ord(c):04x}" for c in key)
        text = json.dumps(payload, ensure_ascii=False)
        return (text[:-1] + f', "x_trace": "{escaped}"}}').encode(), []
    return json.dumps(payload, ensure_ascii=False).encode(), []
