"""What a pairwise verdict, a pointwise score or a clause answer may be written as.

Boundary: pure functions from a value as a judge wrote it (in JSON or on a verdict line) to the
value judgepanel stores, or None / the reason it is not one. The readers (`read_json`,
`read_lines`) find where an answer stands; `parse` decides which answer is the judge's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from judgepanel.rubrics import LEVELS

_CHOICE_RE = re.compile(
    r"(?:(?:assistant|response|output|candidate|answer|summary|model|option|text|system|slot)\s*)?"
    r"\(?([ab])\)?(?:\s+is\s+(?:the\s+)?better(?:\s+\w+)?)?"
)
_TIE_WORDS = frozenset(
    {
        "tie",
        "a tie",
        "tied",
        "draw",
        "equal",
        "equally good",
        "both",
        "both equal",
        "both are equal",
        "both equally good",
        "neither",
        "same",
        "no preference",
    }
)
_STRIP = " \t\r\n*_`'\"“”‘’.,;:!()[]"
_CHOICE_PREFIX = re.compile(
    r"(?:\[\[)?\s*(?:(?:Assistant|Response|Output|Candidate|Summary|Answer)\s+)?\(?(A|B|[Tt]ie)\)?(?:\]\])?"
    r"(?=\s*(?:$|[.,;:(\-–—]|because\b|since\b|as\b))"
)
_RELATION = re.compile(r"([ab])\s*(>>?|<<?|=)\s*([ab])")  # Arena-Hard's [[A>B]], [[B>>A]], [[A=B]]
_SCORE_RE = re.compile(r"(\d+(?:\.\d+)?)(?:\s*(?:/|out\s+of)\s*(\d+(?:\.\d+)?))?")
_SCORE_PREFIX = re.compile(r"(\d+(?:\.\d+)?)(?:\s*(?:/|out\s+of)\s*(\d+(?:\.\d+)?))?(?=$|[\s,;(]|\.(?:\s|$))")
_MET = frozenset({"true", "yes", "y", "met", "1", "satisfied", "holds", "pass"})
_NOT_MET = frozenset({"false", "no", "n", "not met", "unmet", "not_met", "0", "not satisfied", "fail"})


def normalise_choice(raw: Any) -> str | None:
    """A pairwise verdict as written -> "A" | "B" | "tie", or None if it is not one."""
    if not isinstance(raw, str):
        return None
    t = raw.strip()
    bracketed = t.startswith("[[") and t.endswith("]]") and len(t) >= 4
    if bracketed:
        t = t[2:-2]
    t = " ".join(t.strip(_STRIP).lower().split())
    if t == "c" and bracketed:  # FastChat's pair-v2 prompt: "[[C]]" for a tie
        return "tie"
    if t in _TIE_WORDS:
        return "tie"
    rel = _RELATION.fullmatch(t)
    if rel is not None:
        left, op, right = rel.groups()
        if left == right:
            return None
        if op == "=":
            return "tie"
        return left.upper() if op.startswith(">") else right.upper()
    m = _CHOICE_RE.fullmatch(t)
    return m.group(1).upper() if m else None


def _choice_in_line(raw: str) -> str | None:
    """A verdict line's value: the whole value, or failing that a clear leading choice
    ("A (more concise)", "Assistant B, because …")."""
    whole = normalise_choice(raw)
    if whole is not None:
        return whole
    m = _CHOICE_PREFIX.match(raw.strip().strip("*_`'\""))
    if m is None:
        return None
    return "tie" if m.group(1).lower() == "tie" else m.group(1)


def normalise_score(
    raw: Any, *, prefix: bool = False, levels: Sequence[int] = LEVELS
) -> tuple[int | None, str | None]:
    """A score as written -> (a level, None) or (None, why not). `levels`: 1..5 unless the
    dimension has its own scale ("1/3" on a 1..3 scale; "4/5" there is refused)."""
    if isinstance(raw, bool) or raw is None:
        return None, f"score {raw!r} is not a number"
    if isinstance(raw, int | float):
        x = float(raw)
    elif isinstance(raw, str):
        t = raw.strip().strip(" *_`'\"[]")
        m = _SCORE_RE.fullmatch(t) or (_SCORE_PREFIX.match(t) if prefix else None)
        if m is None:
            return None, f"score {raw!r} is not a number"
        if m.group(2) is not None and float(m.group(2)) != levels[-1]:
            return None, f"score {raw!r} is not on the {levels[0]}..{levels[-1]} scale"
        x = float(m.group(1))
    else:
        return None, f"score {raw!r} is not a number"
    if not math.isfinite(x) or abs(x - round(x)) > 1e-9:
        return None, f"score {raw!r} is not an integer"
    n = round(x)
    if n not in levels:
        return None, f"score {n} is outside {levels[0]}..{levels[-1]}"
    return n, None


def normalise_met(raw: Any) -> bool | None:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, int) and raw in (0, 1):
        return bool(raw)
    if isinstance(raw, str):
        t = " ".join(raw.strip(_STRIP).lower().split())
        if t in _MET:
            return True
        if t in _NOT_MET:
            return False
    return None
