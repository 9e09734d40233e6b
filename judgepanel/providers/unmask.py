"""Seeing a key through the natural re-encodings a server may echo it in, and across the fields of
one stored row (issue 29 §4). `providers.errors.redact` looks for each configured key in the text as
it is and then in `decoded(text)`; `redact_result` then looks `across` the reply's fields.

Boundary: pure string functions, no I/O and no knowledge of which keys exist (the caller passes a
predicate or a pattern).

Threat model and its limit. A server that is sent a key can echo it back in any form. What this
module undoes is what text systems do to a string by themselves: percent-encoding
(`sk%2Dproj%2D…`), HTML character references (`&#115;&#107;…`, `&amp;`), JSON / C `\\uXXXX`
escapes (also escaped once more inside a raw JSON body), Unicode compatibility forms (NFKC:
fullwidth `ｓｋ－…`, mathematical letters, ligatures), invisible format characters between the
characters (zero-width spaces and joiners, soft hyphens, bidirectional marks), and a key cut in
two at the boundary of two stored fields (the end of `model` and the start of
`system_fingerprint`). `errors._redactor` already covers case changes, reversal, hex, base64 and
whitespace or punctuation put in. What it cannot undo is an encoding chosen to hide the key —
ROT13, base32, base64 of a compressed copy, a key spelt out in words, or one character per reply —
since every reversible transformation would have to be tried. The defence against a hostile
judge host is therefore not to send it a key: `key_env` takes only the names of an allow-list
(`providers.keys`), and a local server that needs no key should be given none.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from urllib.parse import unquote

# something there is to undo: a percent escape, a character reference, a \u escape (each looked
# for only where its first character occurs: `in` is far faster than a pattern with alternatives)
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_ENTITY = re.compile(r"&(?:#|[A-Za-z][A-Za-z0-9]{1,31};)")
_ESCAPE = re.compile(r"\\+u([0-9a-fA-F]{4})")
# format characters that show as nothing: between a key's characters they hide it from a match
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]"
)


def _char(hex4: str) -> str:
    code = int(hex4, 16)
    return "\ufffd" if 0xD800 <= code <= 0xDFFF else chr(code)


def decoded(text: str) -> str:
    """`text` with the encodings of the module docstring undone (each up to twice, as one may be
    wrapped in another); `text` itself (the same object) when there is nothing to undo."""
    if (
        text.isascii()
        and "\\u" not in text
        and ("%" not in text or _PERCENT.search(text) is None)
        and ("&" not in text or _ENTITY.search(text) is None)
    ):
        return text
    view = text
    for _ in range(2):
        before = view
        if "&" in view:
            view = html.unescape(view)
        if "\\" in view:
            view = _ESCAPE.sub(lambda m: _char(m.group(1)), view)
        if "%" in view:
            view = unquote(view, errors="replace")
        if not view.isascii():
            view = _INVISIBLE.sub("", unicodedata.normalize("NFKC", view))
        if view == before:
            break
    return view if view != text else text


_DROP = bytes(c for c in range(128) if not chr(c).isalnum())
GRAM = 4  # the shortest piece of a split key that is looked for on either side


def _bare(text: str) -> str:
    """`text`'s ASCII letters and digits, lower-cased."""
    return text.encode("ascii", "ignore").translate(None, _DROP).decode().lower()


@functools.lru_cache(maxsize=64)
def _grams(
    forms: tuple[str, ...],
) -> tuple[dict[str, list[tuple[str, int]]], dict[str, list[tuple[str, int]]]]:
    """For each form: where each of its 4-character pieces ends (a field may end there) and
    starts (a field may start there), leaving at least `GRAM` characters on the other side."""
    ends: dict[str, list[tuple[str, int]]] = {}
    starts: dict[str, list[tuple[str, int]]] = {}
    for form in forms:
        for p in range(GRAM, len(form) - GRAM + 1):
            ends.setdefault(form[p - GRAM : p], []).append((form, p))
            starts.setdefault(form[p : p + GRAM], []).append((form, p))
    return ends, starts


def _cut_end(text: str, letters: int, mark: str) -> str:
    """`text` with its last `letters` ASCII letters and digits (and what follows them) replaced."""
    seen = 0
    for i in range(len(text) - 1, -1, -1):
        if text[i].isascii() and text[i].isalnum():
            seen += 1
            if seen == letters:
                return text[:i] + mark
    return mark


def _cut_start(text: str, letters: int, mark: str) -> str:
    seen = 0
    for i, c in enumerate(text):
        if c.isascii() and c.isalnum():
            seen += 1
            if seen == letters:
                return mark + text[i + 1 :]
    return mark


def across(strings: list[str], forms: tuple[str, ...], mark: str = "[redacted]") -> list[str]:
    """`strings` (the text fields of one stored row, in any order) with every key that runs from
    the end of one into the start of another (or of the same one: a rotation) cut out of both.
    `forms` are the keys' folded forms (lower-case letters and digits: the key, reversed, hex);
    a split is found when each side holds at least `GRAM` of the form's characters, contiguous
    up to punctuation. Returns `strings` itself when no key is split. Two dictionary lookups per
    string (the 4-character pieces at its ends) reject an ordinary row."""
    if not forms:
        return strings
    ends, starts = _grams(forms)
    width = max(len(f) for f in forms) + 16
    at_end: dict[tuple[str, int], list[int]] = {}
    bare_tails: dict[int, str] = {}
    for i, s in enumerate(strings):
        hits = ends.get(_bare(s[-3 * GRAM :])[-GRAM:])  # the quick test: its last 4 letters
        if not hits:
            continue
        tail = _bare(s[-width:])
        for form, p in hits:
            if tail.endswith(form[:p]):
                at_end.setdefault((form, p), []).append(i)
                bare_tails[i] = tail
    if not at_end:
        return strings
    cut_end: dict[int, int] = {}
    cut_start: dict[int, int] = {}
    for j, s in enumerate(strings):
        head = _bare(s[:width])
        for form, p in starts.get(head[:GRAM], ()):
            if (form, p) in at_end and head.startswith(form[p:]):
                for i in at_end[(form, p)]:
                    cut_end[i] = max(cut_end.get(i, 0), p)
                    cut_start[j] = max(cut_start.get(j, 0), len(form) - p)
    if not cut_end:
        return strings
    out = list(strings)
    for j, n in cut_start.items():
        out[j] = _cut_start(out[j], n, mark)
    for i, n in cut_end.items():
        out[i] = _cut_end(out[i], n, mark)
    return out
