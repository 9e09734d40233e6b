"""The reader of JSON objects in a reply's text (one reader per answer format; `read_lines` reads
verdict lines and markers).

Boundary: finds every outermost JSON object in a text (balanced braces, strings respected,
```json fences and trailing commas tolerated, near-JSON repaired only for the last few starts),
in one linear pass, so an echoed wall of braces cannot stall a worker. It knows nothing of what an
answer is: `parse` asks each schema which objects hold one.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class _Found:
    start: int
    end: int
    obj: dict[str, Any]


_TRAILING_COMMA = re.compile(r",\s*([}\]])")


_KEY_START = re.compile(r"\{\s*[\"'}]")  # how an object starts; "{ if (x)" does not
LENIENT_WINDOW = 20_000  # longest near-JSON object we try to repair
LENIENT_TRIES = 16  # repairs are tried only on the last few failed starts: answers come last


def _matching_brace(text: str, start: int) -> int | None:
    """Index just past the `}` that closes the `{` at `start` (double-quoted strings respected),
    looking at most LENIENT_WINDOW characters ahead; -1 if the text ends first, None if the
    window does."""
    depth, in_str, esc = 0, False, False
    stop = min(len(text), start + LENIENT_WINDOW)
    for j in range(start, stop):
        ch = text[j]
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return -1 if stop == len(text) else None


def _lenient(snippet: str) -> dict[str, Any] | None:
    """Near-JSON that models write: trailing commas, Python-style single quotes and True/False."""
    fixed = _TRAILING_COMMA.sub(r"\1", snippet)
    try:
        obj = json.loads(fixed)
    except (ValueError, RecursionError):
        try:
            obj = ast.literal_eval(fixed)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
    return obj if isinstance(obj, dict) else None


_BRACE = re.compile(r"[{}]")
MAX_DEPTH = 32  # an answer object nests a few levels; a deeper one is not read (and would recurse)


def _object_starts(text: str) -> list[tuple[int, int | None]]:
    """Each `{` that may open an object with keys (`{"`, `{'` or `{}`) and nests less than
    MAX_DEPTH deep, with the index past its brace-counting match (None if unmatched). Braces are
    counted without regard to strings: cheap, one pass, and right unless a string holds a brace."""
    info: dict[int, tuple[int, int | None]] = {}  # start -> (height, close)
    stack: list[list[int]] = []  # [start, height of the deepest nesting below it]

    def pop(close: int | None) -> None:
        start, height = stack.pop()
        info[start] = (height, close)
        if stack:
            stack[-1][1] = max(stack[-1][1], height + 1)

    for m in _BRACE.finditer(text):
        if m.group() == "{":
            stack.append([m.start(), 0])
        elif stack:
            pop(m.end())
    while stack:
        pop(None)
    return [
        (start, close)
        for start, (height, close) in sorted(info.items())
        if height < MAX_DEPTH and _KEY_START.match(text, start)
    ]


def _decode(text: str, start: int, stop: int) -> tuple[Any, int] | None:
    """`raw_decode` on text[start:stop] (a slice keeps a failure cheap: the error message counts
    lines from the start of the string it was given)."""
    try:
        obj, end = _DECODER.raw_decode(text[start:stop])
    except (ValueError, RecursionError):
        return None
    return obj, start + end


_DECODER = json.JSONDecoder()


def _json_objects(text: str) -> tuple[list[_Found], bool]:
    """Outermost JSON objects in reading order, and whether the text ends inside an unclosed one.

    One left-to-right pass tries each object-like `{` on the slice up to its brace-counting
    match (jumping over each object found). Only the last few starts that failed get the costly
    treatment (no slice, then near-JSON repair): answers come last, and an echoed wall of braces
    must not make parsing quadratic."""
    found: list[_Found] = []
    failed: list[int] = []
    end = 0
    for start, close in _object_starts(text):
        if start < end:
            continue  # inside the object just found
        hit = _decode(text, start, close if close is not None else start + LENIENT_WINDOW)
        if hit is None:
            failed.append(start)
            continue
        obj, end = hit
        found.append(_Found(start, end, obj))
    open_starts: list[int] = []  # object-like starts never closed before the text ends
    for start in failed[-LENIENT_TRIES:]:
        if any(f.start <= start < f.end for f in found):
            continue
        close = _matching_brace(text, start)
        if close == -1:
            open_starts.append(start)
            continue
        stop = close if close is not None else start + LENIENT_WINDOW
        hit = _decode(text, start, stop)
        if hit is not None:
            found.append(_Found(start, hit[1], hit[0]))
        elif close is not None and (repaired := _lenient(text[start:close])) is not None:
            found.append(_Found(start, close, repaired))
    found.sort(key=lambda f: (f.start, -f.end))
    outermost: list[_Found] = []
    for f in found:
        if not outermost or f.start >= outermost[-1].end:
            outermost.append(f)
    last_end = outermost[-1].end if outermost else 0
    return outermost, any(s >= last_end for s in open_starts)


def _lower_keys(obj: Mapping[Any, Any]) -> dict[str, Any]:
    return {k.strip().lower(): v for k, v in obj.items() if isinstance(k, str)}


def _is_whole(text: str, found: _Found) -> bool:
    """Whether the object is the entire reply, possibly inside one ``` fence."""
    body = text.strip()
    if body.startswith("```") and body.endswith("```") and len(body) >= 6:
        newline = body.find("\n")
        language = body[3:newline].strip() if newline != -1 else "?"
        if language and not language.isalpha():
            return False
        body = body[newline + 1 : -3].strip()
    return body == text[found.start : found.end].strip()
