"""The reader of verdict lines and markers in a reply's text (one reader per answer format;
`read_json` reads JSON objects).

Boundary: finds keyed lines (``Verdict: A``, ``**Final verdict:** A``, ``Score = 4``, a
``### Verdict`` heading whose value is on the next non-empty line), FastChat's ``[[A]]`` /
``Rating: [[4]]`` markers, clause lines (``coherence.2: met``) and a template's declared verdict
pattern, each as (start, end, value as written). Which of them is the judge's answer is decided in
`parse`, with `read_quotes`.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Sequence

_LEAD = r"^[ \t>*_#`~-]*(?:my\s+)?(?:final\s+|overall\s+)?"
# "Verdict: A", "**Final verdict:** A", "Score = 4"; or a heading ("### Verdict") whose value is
# on the next non-empty line. The regex finds the key; the rest of the line is read in Python
# (`_after_key`), because chained optional runs of spaces in one regex backtrack catastrophically.
_VERDICT_LINE = re.compile(
    _LEAD + r"(?:verdict|decision|winner|choice|preference)\b", re.IGNORECASE | re.MULTILINE
)
_VERDICT_BRACKETS = re.compile(r"\[\[(?P<v>[^\[\]\n]{1,24})\]\]")
_SCORE_LINE = re.compile(_LEAD + r"(?:score|rating|grade)\b", re.IGNORECASE | re.MULTILINE)
_NEXT_LINE = re.compile(r"(?:[ \t]*\n)+[ \t]*(?P<v>\S[^\n]*)")
_DECOR = " \t*_`"
_SCORE_BRACKETS = re.compile(r"\[\[\s*(?P<v>\d+(?:\.\d+)?(?:\s*/\s*\d+)?)\s*\]\]")
_CLAUSE_LINE = re.compile(
    r"^[ \t>*_#`~-]*\[?(?P<id>[a-z][a-z0-9_]*\.[A-Za-z0-9][A-Za-z0-9_-]*)\]?[ \t*_`\"]*[:=\-–—][ \t*_`]*"
    r"(?P<v>not[ \t]+met|unmet|met|yes|no|true|false)\b(?P<rest>[^\n]*)$",
    re.IGNORECASE | re.MULTILINE,
)


def _after_key(text: str, pos: int) -> tuple[str | None, int]:
    """What follows a verdict key up to the end of its line: (value, end of line) after a
    separator (":", "=", "-", "is:"), ("", end) for a bare heading, (None, end) for prose."""
    eol = text.find("\n", pos)
    eol = len(text) if eol == -1 else eol
    rest = text[pos:eol].lstrip(_DECOR)
    if rest[:2].lower() == "is" and not rest[2:3].isalnum():
        rest = rest[2:].lstrip(_DECOR)
    if rest[:1] and rest[0] in ":=-–—":
        return rest[1:].strip(_DECOR), eol
    return ("" if not rest.strip(_DECOR + ":#") else None), eol


def _keyed_lines(pattern: re.Pattern[str], text: str) -> list[tuple[int, int, str]]:
    """(start, end, value) of each keyed line; a heading's value is its next non-empty line."""
    out = []
    for m in pattern.finditer(text):
        value, end = _after_key(text, m.end())
        if value is None:
            continue
        if not value:
            nxt = _NEXT_LINE.match(text, end)
            if nxt is None:
                continue  # a bare "Verdict" with nothing after it
            value, end = nxt.group("v"), nxt.end()
        out.append((m.start(), end, value))
    return out


def _inside(pos: int, spans: Sequence[tuple[int, int]]) -> bool:
    """Whether `pos` falls in one of `spans`: (start, end) pairs sorted by start, not overlapping."""
    k = bisect.bisect_right(spans, (pos, math.inf)) - 1
    return k >= 0 and spans[k][0] <= pos < spans[k][1]


def _with_brackets(
    lines: list[tuple[int, int, str]], brackets: list[tuple[int, int, str]]
) -> list[tuple[int, int, str]]:
    """Verdict lines plus `[[X]]` markers that are not already part of a verdict line."""
    spans = [(s, e) for s, e, _ in lines]
    return sorted(lines + [b for b in brackets if not _inside(b[0], spans)])


def pattern_value(schema_name: str, raw: str) -> str:
    """A declared verdict pattern's capture as the line readers expect it: a bare `C` (captured from
    inside `[[C]]`) is FastChat's tie only in its brackets, so a lone C is put back in them."""
    if schema_name == "pairwise_verdict" and raw.strip().upper() == "C":
        return "[[C]]"
    return raw


def _pattern_lines(schema_name: str, pattern: re.Pattern[str], text: str) -> list[tuple[int, int, str]]:
    return [
        (m.start(), m.end(), pattern_value(schema_name, m.group(1) or "")) for m in pattern.finditer(text)
    ]
