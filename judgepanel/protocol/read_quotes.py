"""Which answer-shaped text in a reply is not the judge speaking: a near-copy of the item's own
text (the item may hold an answer of its own), and text the judge set inside quotation marks,
HTML, code, a link or after an ellipsis (issue 29 §5).

Boundary: pure functions over the reply and the item's texts; `parse` asks them about the spans
its readers found. Folding (`fold`) is what a light reformatting of a quote changes and the
comparison therefore ignores.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

QUOTE_MIN = 24  # non-blank characters of the item's own text around an answer that make it a quote
QUOTE_CHECKS = 64  # only the last this-many answer candidates are checked for being quotes


# What a light reformatting of a quote changes, and the parser therefore ignores when it compares a
# reply with the item: Unicode compatibility forms (NFKC) and case, every kind of white space and
# invisible format character, quote characters (straight or curly, single or double, backticks),
# markdown blockquote and emphasis markers (`>`, `*`, `_`, `~`, `#`), and dash variants.
_QUOTE_CHARS = frozenset(
    "'\"`\u00b4\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u201f\u2032\u2033\u00ab\u00bb\u2039\u203a"
)
_MARKUP = frozenset(">*_~#")
_DASHES = frozenset("\u2010\u2011\u2012\u2013\u2014\u2015\u2212")


@functools.lru_cache(maxsize=4096)
def _fold_char(ch: str) -> str:
    out = []
    for c in unicodedata.normalize("NFKC", ch).casefold():
        if c.isspace() or c in _QUOTE_CHARS or c in _MARKUP or unicodedata.category(c) == "Cf":
            continue
        out.append("-" if c in _DASHES else c)
    return "".join(out)


_ASCII_DROP = {ord(c): None for c in " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85'\"`>*_~#"}


_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def _fold(text: str) -> str:
    """ "".join(_fold_char(c) for c in text), with ASCII runs folded in C (NFKC is the identity
    there and case folding is lower-casing); only non-ASCII characters are folded one by one."""
    if text.isascii():
        return text.lower().translate(_ASCII_DROP)
    parts: list[str] = []
    pos = 0
    for m in _NON_ASCII.finditer(text):
        parts.append(text[pos : m.start()].lower().translate(_ASCII_DROP))
        parts.append("".join(_fold_char(c) for c in m.group()))
        pos = m.end()
    parts.append(text[pos:].lower().translate(_ASCII_DROP))
    return "".join(parts)


@functools.lru_cache(maxsize=256)  # an item's texts are compared with every judge's reply
def fold(text: str) -> str:
    """`text` as quote matching compares it (see `_fold_char`)."""
    return _fold(text)


_CHUNK = 1024  # the folded length is kept at every this-many reply characters (`_QuoteIndex.pos`)


def _grow(text: str, start: int, end: int, q: str) -> tuple[int, int] | None:
    """The widest span around text[start:end] that occurs verbatim in `q` (grown left, then
    right, each by binary search: a substring of a copy is a copy), or None if even the span does not."""
    if text[start:end] not in q:
        return None
    lo, hi = 0, start  # grow left: smallest a with text[a:end] in q
    while lo < hi:
        mid = (lo + hi) // 2
        if text[mid:end] in q:
            hi = mid
        else:
            lo = mid + 1
    a = lo
    lo, hi = end, len(text)  # grow right: largest b with text[a:b] in q
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if text[a:mid] in q:
            lo = mid
        else:
            hi = mid - 1
    return a, lo


@dataclass(frozen=True)
class _QuoteIndex:
    """The reply and the item's texts folded for quote matching, with the index map."""

    reply: str
    text: str  # the folded reply
    at_chunk: list[int]  # folded length of reply[: k * _CHUNK], per k
    quoted: tuple[str, ...]  # the folded item texts

    @classmethod
    def of(cls, text: str, quoted: Sequence[str]) -> _QuoteIndex:
        # folding is per character, so the reply folds chunk by chunk into the same text
        chunks = [_fold(text[k : k + _CHUNK]) for k in range(0, len(text), _CHUNK)]
        at = [0]
        for c in chunks:
            at.append(at[-1] + len(c))
        folded = tuple(f for f in (fold(q) for q in quoted) if len(f) >= QUOTE_MIN)
        return cls(text, "".join(chunks), at, folded)

    def pos(self, i: int) -> int:
        """Where reply[i:] starts in the folded reply."""
        k = i // _CHUNK
        return self.at_chunk[k] + len(_fold(self.reply[k * _CHUNK : i]))


def _in_quote(index: _QuoteIndex, start: int, end: int, answers: Sequence[tuple[int, int]]) -> bool:
    """Whether text[start:end] lies inside a near-copy of one of the item's texts — a copy once
    both are folded (`fold`) — that also copies at least QUOTE_MIN characters of the item that are
    not answers themselves. (A judge's own answer block may coincide with answer lines planted in
    the item; what makes a quote is the item's surrounding text copied with it.)"""
    fs, fe = index.pos(start), index.pos(end)
    if fs >= fe:
        return False
    for q in index.quoted:
        span = _grow(index.text, fs, fe, q)
        if span is None:
            continue
        a, b = span
        if b - a < QUOTE_MIN:
            continue
        own = bytearray(b - a)  # 1 where the copy is an answer span
        for s, e in answers:
            s, e = index.pos(s), index.pos(e)
            if e > a and s < b:
                own[max(s, a) - a : min(e, b) - a] = b"\x01" * (min(e, b) - max(s, a))
        if own.count(0) >= QUOTE_MIN:  # folded text holds no white space: every character counts
            return True
    return False


def _unquoted(
    index: _QuoteIndex, spans: list[tuple[int, int, Any]], answers: Sequence[tuple[int, int]]
) -> list[tuple[int, int, Any]]:
    """`spans` (sorted by start) without those inside a quote of the item's text; only the last
    QUOTE_CHECKS are checked, so a reply echoing thousands of markers stays cheap."""
    if not index.quoted or not spans:
        return spans
    cut = max(0, len(spans) - QUOTE_CHECKS)
    return spans[:cut] + [sp for sp in spans[cut:] if not _in_quote(index, sp[0], sp[1], answers)]


# ---------------------------------------------------------------- text the judge sets apart
#
# Issue 29 §5: a judge that answers A and then mentions the item's planted `[[B]]` — in quotation
# marks, an HTML quote, a code block, a link, after an ellipsis — was read as B in 9 of 14 formats.
# `setting` says how the text around an answer-shaped span sets it apart from the judge's own
# words; `parse` then prefers the judge's own earlier answer, or calls the reply ambiguous.

STRONG, WEAK = "strong", "weak"
_PAIRS = (
    ("\u201c", "\u201d"),
    ("\u2018", "\u2019"),
    ("\u00ab", "\u00bb"),
    ("\u2039", "\u203a"),
    ("\u201e", "\u201c"),
    ("\u201e", "\u201d"),
    ("\u300c", "\u300d"),
)
_FENCE = re.compile(r"^[ \t]*(?:```|~~~)", re.MULTILINE)
_LINK_REST = re.compile(r"[^\[\]\n]{0,200}\]\(")
_QUOTING_TAGS = ("q", "blockquote", "cite")
_CODE_TAGS = ("code", "pre", "tt", "samp")


def _inside_tag(lower: str, start: int, tags: Sequence[str]) -> str | None:
    """The tag among `tags` whose element is open at `start` (an opening tag before it that is not
    closed before it), in the lower-cased reply."""
    for tag in tags:
        opened = max(lower.rfind(f"<{tag}>", 0, start), lower.rfind(f"<{tag} ", 0, start))
        if opened != -1 and lower.rfind(f"</{tag}>", opened, start) == -1:
            return tag
    return None


def setting(text: str, start: int, end: int) -> tuple[str, str] | None:
    """How `text[start:end]` (an answer-shaped span) is set apart from the judge's own words, as
    (strength, what): STRONG when it stands inside quotation marks opened before it on its line
    (straight double, curly, guillemets), an HTML quote (`<q>`, `<blockquote>`, `<cite>`) or a
    markdown link's text; WEAK inside code (a ``` fence, inline backticks, `<code>`/`<pre>`), on a
    markdown blockquote line (`> …`) or right after an ellipsis; None when it is not."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    before = text[line_start:start]
    after = text[end : len(text) if line_end == -1 else line_end]
    if before.count('"') % 2 == 1 and '"' in after:
        return STRONG, "quotation marks"
    if not before.isascii():
        for open_, close in _PAIRS:
            if before.rfind(open_) > before.rfind(close) and close in after:
                return STRONG, "quotation marks"
    # most replies hold no markup at all: nothing to look for
    lower = text[:start].lower() if "<" in text[:start] else ""
    tag = _inside_tag(lower, start, _QUOTING_TAGS) if lower else None
    if tag is not None:
        return STRONG, f"an HTML <{tag}>"
    if "[" in before and _LINK_REST.match(after) is not None:
        return STRONG, "a link's text"
    if ("```" in text or "~~~" in text) and len(_FENCE.findall(text, 0, start)) % 2 == 1:
        return WEAK, "a code block"
    if before.count("`") % 2 == 1 and "`" in after:
        return WEAK, "inline code"
    tag = _inside_tag(lower, start, _CODE_TAGS) if lower else None
    if tag is not None:
        return WEAK, f"an HTML <{tag}>"
    if before.lstrip().startswith(">") or (not before and text[start:end].lstrip().startswith(">")):
        return WEAK, "a blockquote"
    if before.rstrip().endswith(("\u2026", "...")):
        return WEAK, "an ellipsis quote"
    return None


def mid_sentence(text: str, start: int, end: int) -> bool:
    """Whether the span has words on its line both before and after it (`… carries {"verdict":
    "B"} to sway …`): an object mentioned in a sentence, not an answer block."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    after = text[end : len(text) if line_end == -1 else line_end]
    return any(c.isalpha() for c in text[line_start:start]) and any(c.isalpha() for c in after)


def in_item(piece: str, items: Sequence[str]) -> bool:
    """Whether `piece` (an answer-shaped span of the reply), folded, occurs in one of the item's
    own texts (`items`, folded): the item's planted answer copied out on its own, too short to be
    a quote by `_in_quote`'s measure."""
    folded = _fold(piece)
    return bool(folded) and any(folded in q for q in items)
