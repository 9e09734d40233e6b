"""Reading a judge prompt: the last of each of our tags, the clauses, the candidates and the
source of a custom layout (`read_layout`), the message text, the reply kind a prompt asks for
(`infer_kind`) and the score scale it states (`prompt_scale`).

Boundary: prompt text in, what it holds out; no scoring and no reply. The layouts it reads are
described in the `judgepanel.simjudge` package docstring.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judgepanel.simjudge.reply import (
    ALIGN,
    CHECKER,
    CLAUSES,
    PAIRWISE,
    POINTWISE,
    REPLY_KINDS,
    REWRITE,
    SPLIT,
)

_SCALE = re.compile(r"on a scale from (\d+) \(worst\) to (\d+) \(best\)")
_CLAUSE = re.compile(r"<clause\s+id\s*=\s*[\"']([^\"']+)[\"']\s*>(.*?)</clause>", re.DOTALL)


def last_tag(text: str, tag: str) -> str | None:
    """The content of the LAST `<tag>…</tag>` in `text` (the template's own, after any quoted ones)."""
    close = f"</{tag}>"
    end = text.rfind(close)
    if end < 0:
        return None
    start = text.rfind(f"<{tag}>", 0, end)
    if start < 0:
        return None
    return text[start + len(tag) + 2 : end].strip()


def clauses_in(text: str) -> list[tuple[str, str]]:
    """Every `<clause id="…">…</clause>`, in order; a repeated id keeps its last text."""
    found: dict[str, str] = {}
    for cid, body in _CLAUSE.findall(text):
        found.pop(cid, None)
        found[cid] = body.strip()
    return list(found.items())


# ---- reading custom layouts (see the package docstring) -----------------------------------------

_SLOT = {"a": "A", "b": "B", "1": "A", "2": "B"}
# `<summary_a>`, `<response-2>`, `<answer1>`: a tag whose name ends in a slot
_SLOT_NAME = re.compile(r"(?P<stem>[a-z][\w-]*?)[_-]?(?P<slot>[ab12])")
# a label line: up to four words, the slot, a short tail (`'s Answer`), then a colon, a closing
# bracket or the end of the line; `rest` is any text after the colon on the same line
_HEAD = re.compile(
    r"^[ \t]*[#>*_\[(-]*[ \t]*(?P<noun>(?:[A-Za-z][\w'-]*[ \t]+){1,4}?)\(?(?P<slot>[AB12]|(?<=\()[ab])\)?"
    r"(?P<tail>(?:'s)?(?:[ \t]+[A-Za-z][\w-]*){0,2})[ \t]*[\])*_]*[ \t]*(?:[:：][ \t]*(?P<rest>.*))?$",
    re.M,
)
_END = re.compile(r"^[ \t]*[#>*_\[(-]*[ \t]*(?:the[ \t]+)?end[ \t]+of\b", re.I)
_CANDIDATE_WORDS = (
    "candidate", "summary", "response", "answer", "reply", "output", "completion", "text", "translation",
    "assistant", "model", "option", "essay", "story", "generation",
)  # fmt: skip
_SOURCE_WORDS = (
    "source", "article", "document", "context", "question", "input", "passage", "prompt", "instruction",
    "conversation", "dialogue", "dialog", "request", "task", "query", "original", "news",
)  # fmt: skip
# a single label line: `Article:` (text may follow the colon), `[Article]` or `### Article`
_LABEL = re.compile(
    r"^[ \t]*(?:[#>*_(-]*[ \t]*(?P<noun>[A-Za-z][\w'-]*(?:[ \t]+[A-Za-z][\w'-]*){0,4}?)[ \t]*[)*_]*[ \t]*"
    r"[:：][ \t]*(?P<rest>.*)|\[[ \t]*(?P<bracketed>[A-Za-z][\w' -]{0,40}?)[ \t]*\]"
    r"|#{1,6}[ \t]+(?P<heading>[A-Za-z][\w' -]{0,40}?)[ \t]*)$",
    re.M,
)


def _label_words(m: re.Match[str]) -> list[str]:
    return (m.group("noun") or m.group("bracketed") or m.group("heading") or "").lower().split()


# the template's own instructions: a paragraph that asks for an answer format
_ASKS = re.compile(
    r"\bverdict\b|\[\[|\bwinner\b|\"rationale\"|\bscore\b|\brating\b|\brate\b|\banswer with\b|\brespond with\b"
    r"|\bwhich (?:one|summary|response|answer|text|candidate)\b|\bbetter\b.*\?|\bjudge\b|\bevaluate\b",
    re.I,
)
_PAIRWISE_ASK = re.compile(r"\[\[\s*A\s*\]\]|verdict\W{0,3}A\b|\"A\"\s*(?:,|or)\s*\"B\"|\bA or B\b", re.I)


@dataclass(frozen=True)
class Layout:
    """What the simulator found in a prompt: the candidates (two for a pair) and the source."""

    candidates: tuple[str, ...]
    source: str | None


def _until_instructions(lines: list[str]) -> str:
    """The text of one section, `lines[0]` being what follows its label on the label's line. It
    runs to an `[The End of …]` line, or to a blank line after which the template's instructions
    or another label begin; a section that starts on its label's line (`Response 1: …`) ends at
    the next label line too."""
    inline = bool(lines and lines[0].strip())
    out: list[str] = []
    blank = False
    for line in lines:
        if _END.match(line):
            break
        labelled = bool(_LABEL.match(line) or _HEAD.match(line))
        if out and (blank or inline) and line.strip() and (labelled or (blank and _ASKS.search(line))):
            break
        if line.strip() or out:
            blank = not line.strip()
            out.append(line)
    return "\n".join(out).strip()


def _slot_heads(text: str) -> list[tuple[str, str, int, int, str]]:
    """(key, slot, start, end, rest) of every label line naming a slot; `key` is the label without
    the slot, so `Summary A:` and `Summary B:` share it."""
    heads = []
    for m in _HEAD.finditer(text):
        if _END.match(m.group(0)):
            continue  # `[The End of Assistant A's Answer]` closes a section, it opens none
        noun = " ".join(m.group("noun").lower().split())
        if not any(w in noun.split() for w in (*_CANDIDATE_WORDS, "the", "of")):
            continue
        key = f"{noun}|{' '.join(m.group('tail').lower().split())}"
        heads.append((key, _SLOT[m.group("slot").lower()], m.start(), m.end(), m.group("rest") or ""))
    return heads


def _pair_from_heads(text: str) -> tuple[str, str] | None:
    heads = _slot_heads(text)
    for j in range(len(heads) - 1, -1, -1):
        key_b, slot_b, start_b, end_b, rest_b = heads[j]
        if slot_b != "B":
            continue
        front = [h for h in heads[:j] if h[0] == key_b and h[1] == "A"]
        if not front:
            continue
        _, _, _, end_a, rest_a = front[-1]
        a_lines = [rest_a, *text[end_a:start_b].split("\n")[1:]]
        b_lines = [rest_b, *text[end_b:].split("\n")[1:]]
        a, b = _until_instructions(a_lines), _until_instructions(b_lines)
        if a and b:
            return a, b
    return None


_ANY_TAG = re.compile(r"<(/?)([A-Za-z][\w-]*)>")


def _own_tags(text: str) -> list[tuple[str, str]]:
    """(lower-cased name, body) of every `<name>…</name>`, in the order they close: an opening tag
    pairs with the first closing tag of its name after it. One pass over the tags, so an item full
    of unclosed `<br>`s costs no more than its length."""
    opened: dict[str, int] = {}
    found: list[tuple[str, str]] = []
    for m in _ANY_TAG.finditer(text):
        name = m.group(2).lower()
        if not m.group(1):
            opened.setdefault(name, m.end())
        elif name in opened:
            found.append((name, text[opened.pop(name) : m.start()].strip()))
    return found


def _own_tag(text: str, words: Sequence[str]) -> str | None:
    """The body of the LAST `<name>…</name>` whose name (split at `_` and `-`) has one of `words`."""
    found = [body for name, body in _own_tags(text) if any(w in re.split(r"[_-]", name) for w in words)]
    return found[-1] if found and found[-1] else None


def _labelled(text: str, words: Sequence[str]) -> str | None:
    """The section under the LAST label line whose words include one of `words`."""
    found = None
    for m in _LABEL.finditer(text):
        if any(w in _label_words(m) for w in words):
            found = m
    if found is None:
        return None
    section = _until_instructions([found.group("rest") or "", *text[found.end() :].split("\n")[1:]])
    return section or None


def read_layout(text: str, pairwise: bool) -> Layout:
    """The candidates and the source of a judge prompt, tagged or not (package docstring). A prompt
    with our candidate tags is read by the tags alone, as it always was."""
    tagged_source = last_tag(text, "source")
    if pairwise:
        a, b = last_tag(text, "candidate_a"), last_tag(text, "candidate_b")
        if a is not None and b is not None:
            return Layout((a, b), tagged_source)
    else:
        cand = last_tag(text, "candidate")
        if cand is not None:
            return Layout((cand,), tagged_source)
    source = tagged_source or _own_tag(text, _SOURCE_WORDS) or _labelled(text, _SOURCE_WORDS)
    if not pairwise:
        cand = _own_tag(text, _CANDIDATE_WORDS) or _labelled(text, _CANDIDATE_WORDS)
        return Layout((cand,) if cand else (), source)
    slots: dict[str, dict[str, str]] = {}
    for name, body in _own_tags(text):
        m = _SLOT_NAME.fullmatch(name)
        if m is not None:
            slots.setdefault(m.group("stem"), {})[_SLOT[m.group("slot")]] = body
    pair = next(((t["A"], t["B"]) for t in reversed(slots.values()) if "A" in t and "B" in t), None)
    pair = pair or _pair_from_heads(text)
    return Layout(pair if pair is not None else (), source)


def final_user_text(messages: Sequence[Mapping[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return content_text(message.get("content"))
    return ""


def content_text(content: Any) -> str:
    """Message content as plain text: a string, or the text parts of a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict) and "text" in part
        )
    return ""


def infer_kind(schema_name: str | None, user_text: str) -> str:
    if schema_name in REPLY_KINDS:
        return schema_name
    if "</clause_to_rewrite>" in user_text:
        return REWRITE
    if "</instructions_to_revise>" in user_text:
        return ALIGN
    if "</clause_to_check>" in user_text:
        return CHECKER
    if "</dimension_to_split>" in user_text:
        return SPLIT
    if "<clause" in user_text:
        return CLAUSES
    if "</candidate_b>" in user_text:
        return PAIRWISE
    if "</candidate>" in user_text:
        return POINTWISE
    if _PAIRWISE_ASK.search(user_text) or read_layout(user_text, pairwise=True).candidates:
        return PAIRWISE
    return POINTWISE


def prompt_scale(text: str) -> tuple[int, int]:
    """The score range the pointwise prompt asks for. The template states it in its first line,
    before any item text, so the FIRST match is the template's own."""
    m = _SCALE.search(text)
    if m is None:
        return 1, 5
    lo, hi = int(m.group(1)), int(m.group(2))
    return (lo, hi) if lo < hi else (1, 5)
