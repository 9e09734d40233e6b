"""Following a judge prompt's instructions and examples (issue 22 §3): the emphasis phrases,
strictness and worked examples the simulated judge understands (`read_guidance` → `Guidance`),
the reweighted quality score, and the q̃ → score line fitted to the examples (`_calibration`).

Boundary: reads only the instructions before the item begins (the rules are in the
`judgepanel.simjudge` package docstring) and returns what to follow; `simjudge.verdicts` applies
it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from judgepanel.simjudge.reading import (
    _CANDIDATE_WORDS,
    _END,
    _HEAD,
    _LABEL,
    _SOURCE_WORDS,
    _label_words,
    content_text,
    last_tag,
    read_layout,
)
from judgepanel.simjudge.reply import PAIRWISE, POINTWISE, SimSettings
from judgepanel.simjudge.scoring import WEIGHTS, Quality, quality

# what an emphasis names: the earliest of these stems after the emphasis phrase picks the feature
_EMPHASIS_FEATURES: tuple[tuple[str, str], ...] = tuple(
    (stem, feature)
    for feature, stems in (
        ("support", ("support", "faithful", "factual", "fact", "consisten", "hallucinat", "accura",
                     "grounded", "contradict", "source")),
        ("coverage", ("cover", "main point", "key point", "main idea", "relevan", "essential",
                      "important point", "important information", "key information")),
        ("distinct", ("repeti", "repeat", "redundan", "duplicat", "coheren", "fluen", "readab")),
        ("length", ("length", "concise", "brief", "short", "long", "verbose", "wordy")),
    )
    for stem in stems
)  # fmt: skip
_EMPHASIS = re.compile(
    r"\bfocus(?:es|ed|ing)?\s+(?:\w+\s+){0,2}?on\b|\bpay(?:ing)?\s+(?:\w+\s+){0,2}?attention\s+to\b"
    r"|\bprioriti[sz]e\b|\bemphasi[sz]e\b|\bemphasis\s+on\b|\babove\s+all\b|\bmost\s+important(?:ly)?\b",
    re.I,
)
_SENTENCE_END = re.compile(r"[.!?;\n]")
_STRICT = re.compile(
    r"\bbe\s+(?:very\s+|more\s+|extra\s+|quite\s+)?(?:strict|harsh|severe|demanding|critical)\b"
    r"|\b(?:judge|score|grade|rate|mark)\s+(?:\w+\s+)?(?:strictly|harshly|severely|conservatively)\b"
    r"|\bstrict\s+(?:judge|grader|evaluator|marker|standard)s?\b"
    r"|\b(?:give|award|assign)\s+(?:a\s+|the\s+)?(?:score\s+(?:of\s+)?)?\d+(?:\s*(?:or|and|-|–)\s*\d+)?"
    r"\s+only\s+(?:when|if)\b"
    r"|\breserve\s+(?:a\s+|the\s+)?(?:scores?\s+(?:of\s+)?)?\d",
    re.I,
)
_LENIENT = re.compile(
    r"\bbe\s+(?:very\s+|more\s+|quite\s+)?(?:lenient|generous|forgiving)\b"
    r"|\b(?:judge|score|grade|rate|mark)\s+(?:\w+\s+)?(?:leniently|generously)\b"
    r"|\bbenefit\s+of\s+the\s+doubt\b|\blenient\s+(?:judge|grader|evaluator|marker|standard)s?\b",
    re.I,
)
# where the item begins: one of our item tags, or a tag or label naming a source or a candidate
_ITEM_OPEN = re.compile(r"<(?:source|candidate|candidate_a|candidate_b)>|<clause\s", re.I)
_ITEM_WORDS = frozenset((*_SOURCE_WORDS, *_CANDIDATE_WORDS))
_EXAMPLE_OPEN = re.compile(r"<example(?:\s[^<>]*)?>", re.I)
_EXAMPLE_CLOSE = re.compile(r"</example>", re.I)
# `Example 1:`, `### Example 2`, `**Example 3.**` on a line of its own
_EXAMPLE_HEAD = re.compile(
    r"^[ \t]*[#*_>-]*[ \t]*example[ \t]*#?[ \t]*\d*[ \t]*[:.)]?[ \t]*[*_]*[ \t]*$", re.I
)
# the line that ends a plain-text example: `Score: 4` (also Rating / Label / Verdict)
_EXAMPLE_LABEL = re.compile(
    r"^[ \t]*[*_]*(?:score|rating|label|verdict)[*_]*[ \t]*[:=][ \t]*[*_\[]*[ \t]*(?P<value>[^\s*_\]]+)[ \t*_\]]*$",
    re.I,
)


@dataclass(frozen=True)
class Example:
    """One worked example a prompt shows: a candidate (and its own source, if given) and its label."""

    candidate: str
    source: str | None
    label: str


@dataclass(frozen=True)
class Guidance:
    """What the simulator follows in a prompt's instructions and examples (the package docstring)."""

    emphasis: tuple[str, ...] = ()  # features named by an emphasis phrase, in order, each once
    strictness: int = 0  # +1 strict, -1 lenient, 0 neither (or both)
    examples: tuple[Example, ...] = ()

    @property
    def weights(self) -> dict[str, float]:
        """The quality weights with each emphasised feature's weight doubled, renormalised to sum 1."""
        raw = {f: w * (2.0 if f in self.emphasis else 1.0) for f, w in WEIGHTS.items()}
        total = sum(raw.values())
        return {f: w / total for f, w in raw.items()}

    def quality_score(self, q: Quality) -> float:
        if not self.emphasis:
            return q.score  # exactly as before (same float operations)
        w = self.weights
        return sum(w[f] * float(getattr(q, f)) for f in WEIGHTS)

    def followed(self, kind: str, calibrated: int) -> str:
        """`followed: …` for the rationale, or '' when nothing was followed."""
        parts = [f"emphasis={f}" for f in self.emphasis]
        if kind == POINTWISE and self.strictness:
            parts.append("strict" if self.strictness > 0 else "lenient")
        if calibrated:
            parts.append(f"calibrated on {calibrated} example{'s' if calibrated != 1 else ''}")
        elif self.examples:
            why = "pairwise" if kind == PAIRWISE else "no usable label"
            parts.append(f"{len(self.examples)} example(s) ignored ({why})")
        return f"followed: {'; '.join(parts)}. " if parts else ""


@lru_cache(maxsize=256)  # the same instructions come with every item of a dimension
def _read_instructions(text: str) -> tuple[tuple[str, ...], int]:
    emphasis: list[str] = []
    for m in _EMPHASIS.finditer(text):
        end = _SENTENCE_END.search(text, m.end())
        tail = text[m.end() : end.start() if end else len(text)].lower()
        hits = [(tail.find(stem), feature) for stem, feature in _EMPHASIS_FEATURES if stem in tail]
        if hits:
            feature = min(hits)[1]
            if feature not in emphasis:
                emphasis.append(feature)
    strictness = int(bool(_STRICT.search(text))) - int(bool(_LENIENT.search(text)))
    return tuple(emphasis), strictness


def _opens_item(line: str) -> bool:
    """Whether the item (its source or a candidate) begins on this line."""
    if _ITEM_OPEN.search(line):
        return True
    m = _LABEL.match(line)
    if m is not None and _ITEM_WORDS.intersection(_label_words(m)):
        return True
    h = _HEAD.match(line)
    if h is not None and not _END.match(line) and _ITEM_WORDS.intersection(h.group("noun").lower().split()):
        return True
    return any(_ITEM_WORDS.intersection(re.split(r"[_-]", name.lower())) for name in _ANY_OPEN.findall(line))


_ANY_OPEN = re.compile(r"<([A-Za-z][\w-]*)>")


def _example_from(body: str, tagged: bool) -> Example | None:
    if tagged:
        label = last_tag(body, "score") or last_tag(body, "label") or last_tag(body, "verdict")
        lines = body.split("\n")
        if label is None:
            for k in range(len(lines) - 1, -1, -1):
                if m := _EXAMPLE_LABEL.match(lines[k]):
                    label, body = m.group("value"), "\n".join(lines[:k])
                    break
        cand = last_tag(body, "candidate")
        source = last_tag(body, "source")
    else:
        lines = body.split("\n")
        m = _EXAMPLE_LABEL.match(lines[-1])
        label, body = (m.group("value") if m else None), "\n".join(lines[:-1])
        cand, source = None, None
    if label is None:
        return None
    if cand is None:
        found = read_layout(body, pairwise=False)
        cand, source = (found.candidates[0] if found.candidates else None), found.source
        has_label = any(_LABEL.match(line) for line in body.split("\n"))
        if cand is None and not has_label and body.strip():
            cand = body.strip()  # an example that is just the text and its score
    return Example(cand, source, label.strip()) if cand else None


def read_guidance(messages: Sequence[Mapping[str, Any]], text: str) -> tuple[Guidance, str]:
    """The instructions and examples of a judge prompt, and `text` (the final user message) with
    its example blocks cut out, which is what the item is then read from. Instructions are the
    system messages and the text of the user message BEFORE the item begins (the first item tag,
    or the first tag or label naming a source or a candidate); nothing at or after that point can
    steer the judge, so an item cannot instruct it. Examples are `<example>…</example>` blocks and
    `Example N:` sections ending in a `Score: N` line, found before the item begins."""
    instructions = [content_text(m.get("content")) for m in messages if m.get("role") == "system"]
    examples: list[Example] = []
    cuts: list[tuple[int, int]] = []
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    i = 0
    while i < len(lines):
        line = lines[i]
        if (opened := _EXAMPLE_OPEN.search(line)) is not None:
            close = _EXAMPLE_CLOSE.search(text, starts[i] + opened.end())
            if close is not None:
                instructions.append(line[: opened.start()])
                if ex := _example_from(text[starts[i] + opened.end() : close.start()], tagged=True):
                    examples.append(ex)
                j = next(k for k in range(i, len(lines)) if starts[k + 1] > close.end())
                cuts.append((starts[i] + opened.start(), close.end()))
                i = j + 1
                continue
        if _EXAMPLE_HEAD.match(line):
            j = i + 1
            while j < len(lines) and not (
                _EXAMPLE_LABEL.match(lines[j]) or _EXAMPLE_HEAD.match(lines[j]) or _ITEM_OPEN.search(lines[j])
            ):
                j += 1
            if j < len(lines) and _EXAMPLE_LABEL.match(lines[j]):
                if ex := _example_from("\n".join(lines[i + 1 : j + 1]), tagged=False):
                    examples.append(ex)
                cuts.append((starts[i], starts[j + 1] - 1))
                i = j + 1
                continue
        if _opens_item(line):
            break
        instructions.append(line)
        i += 1
    emphasis, strictness = _read_instructions("\n".join(instructions))
    if cuts:
        kept, pos = [], 0
        for a, b in cuts:
            kept.append(text[pos:a])
            pos = b
        text = "".join(kept) + text[pos:]
    return Guidance(emphasis, strictness, tuple(examples)), text


def _calibration(
    g: Guidance, source: str | None, lo: int, hi: int, s: SimSettings
) -> tuple[float, float, int] | None:
    """(intercept, slope, n) of the q̃ → score line fitted to the examples, or None without usable ones."""
    xs: list[float] = []
    ys: list[float] = []
    for ex in g.examples:
        try:
            y = float(ex.label)
        except ValueError:
            continue
        if not (lo <= y <= hi) or not math.isfinite(y):
            continue
        xs.append(g.quality_score(quality(ex.candidate, ex.source if ex.source is not None else source)))
        ys.append(y)
    if not xs:
        return None
    default = (hi - lo) / s.q_span
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    slope = default
    if len(set(ys)) >= 2 and var > 1e-12:
        fitted = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var
        if fitted > 0:
            slope = min(4 * default, max(default / 4, fitted))
    return my - slope * mx, slope, len(xs)
