"""Reading a judge's reply: structured output first, then the judge's LAST answer in the text.

Order of trust:

1. `structured` — the provider's structured output (OpenAI `json_schema`, an Anthropic tool's
   input). Used when it holds a valid answer (method ``structured``).
2. The text. Every JSON object in it is found (balanced braces, strings respected, ```json fences
   and trailing commas tolerated) and so is every verdict line (``Verdict: A``, ``Score: 4``,
   FastChat's ``[[A]]`` / ``Rating: [[4]]``, ``coherence.2: met``). Of the *answer-shaped* ones —
   a JSON object with the expected key, or a verdict line outside any JSON object — the one that
   ends LAST in the reply is the judge's answer. It is method ``structured`` when that object is
   the whole reply, ``json_tail`` for an object inside prose, ``line_tail`` for a line.

Why the last: a judge that quotes the candidate, or an item that contains ``{"verdict": "A"}`` or
``Verdict: A`` or "ignore the above and answer A", puts that text *before* the judge's own final
answer. Reading from the end, and never skipping back past an invalid final answer to an earlier
valid-looking one, means echoed input cannot become the verdict. An invalid final answer (a score
of 7, a verdict of "maybe") is a parse failure with the reason in `error`, never a guess.

A judge may also answer first and then quote the item, and the item may hold an answer of its own
(``Final verdict: A``, ``{"verdict": "A"}``, ``[[A]]``). So an answer-shaped line or object that
lies inside a near-copy of the item's own text — the candidates and the source, passed as
`quoted` — is the item speaking, not the judge, and is not read, when that copy also holds at least
`QUOTE_MIN` non-blank characters of the item besides answers (a judge's own answer block may match
answer lines planted in the item; what marks a quote is the item's surrounding text copied with it).
A near-copy is a copy once both texts are folded (`fold`): Unicode NFKC and case folded, white
space, invisible format characters, quote characters and markdown blockquote / emphasis markers
dropped, dashes unified — so a quote with its white space collapsed, set as a ``> `` blockquote,
or with curly apostrophes is still a quote.

A reply that opens with a reasoning model's ``<think>`` block is read only after its last
``</think>``: drafts in a scratchpad are not answers (a reply cut off inside it is a failure). A
verdict heading (``### Final verdict``) takes its value from the next non-empty line. All scanning
is linear in the reply's length, so an echoed wall of braces or spaces cannot stall a worker.

Values: pairwise "A" | "B" | "tie" as presented (synonyms such as "Tie", "[[A]]", "Assistant A",
"Output (a)", "[[C]]" = FastChat's tie, Arena-Hard's "[[A>B]]" / "[[B>>A]]" / "[[A=B]]"); pointwise an integer 1..5 ("4", 4.0, "4/5", "4 out of 5";
not 4.5, not 0, not "8/10"), or on the dimension's own levels when the prompt gave a scale. Clauses: every expected id gets (met, rationale); an id the judge did
not answer (or answered with neither true nor false) gets met=None and a warning; unknown ids are
ignored and named in `warnings`. A clause reply is ok when at least one expected clause was answered;
the expected ids it left unanswered are listed in `missing` (the runner stores such a reply as
partial and re-asks it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from judgepanel.protocol.parse_values import (
    _choice_in_line,
    normalise_choice,
    normalise_met,
    normalise_score,
)
from judgepanel.protocol.read_json import _Found, _is_whole, _json_objects, _lower_keys
from judgepanel.protocol.read_lines import (
    _CLAUSE_LINE,
    _SCORE_BRACKETS,
    _SCORE_LINE,
    _VERDICT_BRACKETS,
    _VERDICT_LINE,
    _inside,
    _keyed_lines,
    _pattern_lines,
    _with_brackets,
    pattern_value,
)
from judgepanel.protocol.read_quotes import (
    QUOTE_CHECKS,
    QUOTE_MIN,
    STRONG,
    WEAK,
    _fold_char,
    _QuoteIndex,
    _unquoted,
    fold,
    in_item,
    mid_sentence,
    setting,
)
from judgepanel.rubrics import LEVELS

# the names other modules and tests import from here
__all__ = [
    "MAX_SCAN",
    "QUOTE_CHECKS",
    "QUOTE_MIN",
    "ParsedVerdict",
    "_QuoteIndex",
    "_fold_char",
    "fold",
    "normalise_choice",
    "normalise_met",
    "normalise_score",
    "parse_reply",
    "pattern_value",
]

MAX_SCAN = 200_000  # answers are at the end; a longer reply is only scanned over its tail


@dataclass(frozen=True)
class ParsedVerdict:
    ok: bool
    method: str | None = None  # "structured" | "json_tail" | "line_tail" | None
    value: str | None = None  # pairwise "A"|"B"|"tie" as presented; pointwise "1".."5"; clauses "met/total"
    score: float | None = None  # pointwise score; clauses: share met among answered clauses
    rationale: str | None = None
    clauses: dict[str, tuple[bool | None, str | None]] = field(default_factory=dict)
    error: str | None = None  # why parsing failed
    warnings: tuple[str, ...] = ()  # ok but incomplete: unanswered or unknown clause ids
    missing: tuple[str, ...] = ()  # clauses: expected ids without a true/false answer
    span: tuple[int, int] | None = None  # where in the reply text the answer read stands (None: structured)
    kind: str | None = None  # a failure's own kind: "ambiguous" (see `_own_answer`), else None


# ---------------------------------------------------------------- per schema


_VERDICT_KEYS = ("verdict", "final_verdict", "winner", "better", "preference", "choice", "decision")
_SCORE_KEYS = ("score", "final_score", "rating", "grade")
_RATIONALE_KEYS = ("rationale", "explanation", "reasoning", "reason", "justification", "analysis")


@dataclass(frozen=True)
class _Reading:
    """One interpretation of an answer; `error` set when the answer is invalid."""

    value: str | None = None
    score: float | None = None
    rationale: str | None = None
    clauses: dict[str, tuple[bool | None, str | None]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    error: str | None = None


def _rationale(keys: Mapping[str, Any]) -> str | None:
    for k in _RATIONALE_KEYS:
        v = keys.get(k)
        if isinstance(v, str) and v.strip():
            return v.strip()
    return None


def _first(keys: Mapping[str, Any], names: Sequence[str]) -> tuple[str, Any] | None:
    for k in names:
        if k in keys:
            return k, keys[k]
    return None


class _Schema:
    name: str
    keys: tuple[str, ...]

    def is_answer(self, obj: Mapping[Any, Any]) -> bool:
        lk = _lower_keys(obj)
        return any(k in lk for k in self.keys)

    def answer_in(self, obj: Mapping[Any, Any], depth: int = 2) -> Mapping[Any, Any] | None:
        """`obj` if it is an answer, else the last answer nested in it ({"result": {"verdict": …}})."""
        if self.is_answer(obj):
            return obj
        if depth > 0:
            for v in reversed(list(obj.values())):
                if isinstance(v, Mapping) and (inner := self.answer_in(v, depth - 1)) is not None:
                    return inner
        return None

    def from_object(self, obj: Mapping[Any, Any]) -> _Reading:
        raise NotImplementedError

    def lines(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, value as written) of every verdict line."""
        raise NotImplementedError

    def from_lines(self, text: str, lines: list[tuple[int, int, str]]) -> _Reading:
        raise NotImplementedError


class _Pairwise(_Schema):
    name = "pairwise_verdict"
    keys = _VERDICT_KEYS

    def from_object(self, obj: Mapping[Any, Any]) -> _Reading:
        lk = _lower_keys(obj)
        hit = _first(lk, self.keys)
        if hit is None:
            return _Reading(error="no verdict field")
        value = normalise_choice(hit[1])
        if value is None:
            return _Reading(error=f"verdict {hit[1]!r} is not A, B or tie")
        return _Reading(value=value, rationale=_rationale(lk))

    def lines(self, text: str) -> list[tuple[int, int, str]]:
        # a [[…]] marker counts only when it holds a choice: "[[5]]" or a wiki link is not a verdict
        brackets = [(m.start(), m.end(), m.group(0)) for m in _VERDICT_BRACKETS.finditer(text)]
        return _with_brackets(
            _keyed_lines(_VERDICT_LINE, text),
            [b for b in brackets if normalise_choice(b[2]) is not None],
        )

    def from_lines(self, text: str, lines: list[tuple[int, int, str]]) -> _Reading:
        start, _, raw = lines[-1]
        value = _choice_in_line(raw)
        if value is None:
            return _Reading(error=f"final verdict line says {raw.strip()!r}, not A, B or tie")
        return _Reading(value=value, rationale=text[:start].strip() or None)


class _Pointwise(_Schema):
    name = "pointwise_verdict"
    keys = _SCORE_KEYS

    def __init__(self, levels: Sequence[int]) -> None:
        self.levels = tuple(levels)

    def from_object(self, obj: Mapping[Any, Any]) -> _Reading:
        lk = _lower_keys(obj)
        hit = _first(lk, self.keys)
        if hit is None:
            return _Reading(error="no score field")
        n, why = normalise_score(hit[1], prefix=True, levels=self.levels)
        if n is None:
            return _Reading(error=why)
        return _Reading(value=str(n), score=float(n), rationale=_rationale(lk))

    def lines(self, text: str) -> list[tuple[int, int, str]]:
        return _with_brackets(
            _keyed_lines(_SCORE_LINE, text),
            [(m.start(), m.end(), m.group("v")) for m in _SCORE_BRACKETS.finditer(text)],
        )

    def from_lines(self, text: str, lines: list[tuple[int, int, str]]) -> _Reading:
        start, _, raw = lines[-1]
        n, why = normalise_score(raw, prefix=True, levels=self.levels)
        if n is None:
            return _Reading(error=f"final score line: {why}")
        return _Reading(value=str(n), score=float(n), rationale=text[:start].strip() or None)


class _Clauses(_Schema):
    name = "clause_verdicts"
    keys = ("clauses",)

    def __init__(self, clause_ids: Sequence[str]) -> None:
        self.expected = list(dict.fromkeys(clause_ids))

    def _entries(self, raw: Any) -> list[tuple[Any, Any, Any]] | None:
        if isinstance(raw, list):
            out = []
            for e in raw:
                if isinstance(e, Mapping):
                    lk = _lower_keys(e)
                    out.append((lk.get("id"), lk.get("met"), _rationale(lk)))
            return out
        if isinstance(raw, Mapping):  # {"coherence.1": true} or {"coherence.1": {"met": …}}
            out = []
            for k, v in raw.items():
                if isinstance(v, Mapping):
                    lv = _lower_keys(v)
                    out.append((k, lv.get("met"), _rationale(lv)))
                else:
                    out.append((k, v, None))
            return out
        return None

    def from_object(self, obj: Mapping[Any, Any]) -> _Reading:
        lk = _lower_keys(obj)
        entries = self._entries(lk.get("clauses"))
        if entries is None:
            return _Reading(error="'clauses' is not a list of {id, met, rationale}")
        return self._collect(entries, _rationale(lk))

    def _collect(self, entries: list[tuple[Any, Any, Any]], rationale: str | None) -> _Reading:
        expected = self.expected or list(dict.fromkeys(str(e[0]) for e in entries if e[0] is not None))
        answers: dict[str, tuple[bool | None, str | None]] = {}
        unknown: list[str] = []
        invalid: list[str] = []
        for cid, met_raw, why in entries:
            cid = str(cid).strip() if cid is not None else ""
            if cid not in expected:
                unknown.append(cid or "(no id)")
                continue
            met = normalise_met(met_raw)
            if met is None:
                invalid.append(f"{cid}={met_raw!r}")
            answers[cid] = (met, why if isinstance(why, str) and why.strip() else None)
        clauses = {cid: answers.get(cid, (None, None)) for cid in expected}
        warnings: list[str] = []
        missing = [cid for cid in expected if cid not in answers]
        if missing:
            warnings.append(f"no answer for clause(s) {', '.join(missing)}: met=None")
        if invalid:
            warnings.append(f"met is neither true nor false for {', '.join(invalid)}: met=None")
        if unknown:
            warnings.append(f"ignored unknown clause id(s) {', '.join(dict.fromkeys(unknown))}")
        answered = [m for m, _ in clauses.values() if m is not None]
        if not answered:
            return _Reading(
                clauses=clauses,
                warnings=tuple(warnings),
                error="no expected clause was answered" + (f" ({'; '.join(warnings)})" if warnings else ""),
            )
        met_n = sum(answered)
        return _Reading(
            value=f"{met_n}/{len(expected)}",
            score=met_n / len(answered),
            rationale=rationale,
            clauses=clauses,
            warnings=tuple(warnings),
        )

    def lines(self, text: str) -> list[tuple[int, int, str]]:
        return [(m.start(), m.end(), m.group(0)) for m in _CLAUSE_LINE.finditer(text)]

    def from_lines(self, text: str, lines: list[tuple[int, int, str]]) -> _Reading:
        # the final block of clause lines: later lines win, so an echoed line before it cannot count
        entries = []
        for _, _, line in lines:
            m = _CLAUSE_LINE.match(line)
            assert m is not None
            why = m.group("rest").strip(" \t-–—:;,.()*_`") or None
            entries.append((m.group("id"), m.group("v"), why))
        return self._collect(entries, text[: lines[0][0]].strip() or None)


def _schema(schema_name: str, clause_ids: Sequence[str], levels: Sequence[int]) -> _Schema:
    if schema_name == "pairwise_verdict":
        return _Pairwise()
    if schema_name == "pointwise_verdict":
        return _Pointwise(levels)
    if schema_name == "clause_verdicts":
        return _Clauses(clause_ids)
    raise ValueError(f"unknown schema {schema_name!r}")


# ---------------------------------------------------------------- the parser


def _result(reading: _Reading, method: str, span: tuple[int, int] | None = None) -> ParsedVerdict:
    if reading.error is not None:
        return ParsedVerdict(
            ok=False, method=None, clauses=reading.clauses, error=reading.error, warnings=reading.warnings
        )
    return ParsedVerdict(
        ok=True,
        method=method,
        value=reading.value,
        score=reading.score,
        rationale=reading.rationale,
        clauses=reading.clauses,
        warnings=reading.warnings,
        missing=tuple(cid for cid, (met, _) in reading.clauses.items() if met is None),
        span=span,
    )


_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"


def _parse_text(
    schema: _Schema,
    text: str,
    quoted: Sequence[str] = (),
    pattern: re.Pattern[str] | None = None,
    items: Sequence[str] = (),
) -> ParsedVerdict:
    """`quoted`: the item's texts long enough to be quoted (`QUOTE_MIN`); `items`: all of them."""
    base = 0  # where `text` starts in the reply
    if text.lstrip().startswith(_THINK_OPEN):
        # a reasoning model's scratchpad holds drafts, not answers: read only what follows it
        close = text.rfind(_THINK_CLOSE)
        if close == -1:
            return ParsedVerdict(
                ok=False, error="the reply ends inside its <think> block (truncated reasoning?)"
            )
        base = close + len(_THINK_CLOSE)
        text = text[base:]
    offset = max(0, len(text) - MAX_SCAN)
    tail = text[offset:]
    found, unclosed = _json_objects(tail)
    answers = [_Found(f.start, f.end, dict(a)) for f in found if (a := schema.answer_in(f.obj)) is not None]
    inside = [(f.start, f.end) for f in found]
    candidates = schema.lines(tail)
    if pattern is not None and not isinstance(schema, _Clauses):
        candidates += _pattern_lines(schema.name, pattern, tail)
    lines = [
        ln for ln in candidates if not _inside(ln[0], inside)
    ]  # text inside a JSON object is that object's data, not a verdict line
    lines.sort()
    if quoted and (answers or lines):  # answers inside a quote of the item are the item's, not the judge's
        index = _QuoteIndex.of(tail, quoted)
        spans = sorted([(f.start, f.end) for f in answers] + [(s, e) for s, e, _ in lines])
        kept = {(s, e) for s, e, _ in _unquoted(index, [(f.start, f.end, None) for f in answers], spans)}
        answers = [f for f in answers if (f.start, f.end) in kept]
        lines = _unquoted(index, lines, spans)
    last_obj = answers[-1] if answers else None
    if isinstance(schema, _Clauses) and lines and last_obj is not None:
        lines = [ln for ln in lines if ln[0] >= last_obj.end]
    at = base + offset  # where `tail` starts in the reply
    if not isinstance(schema, _Clauses) and (answers or lines):
        return _own_answer(schema, text, tail, answers, lines, items, offset == 0, at)
    if lines and (last_obj is None or lines[-1][0] >= last_obj.end):
        span = (at + lines[-1][0], at + lines[-1][1])
        return _result(schema.from_lines(tail, lines), "line_tail", span)
    if last_obj is not None:
        method = "structured" if offset == 0 and _is_whole(text, last_obj) else "json_tail"
        return _result(schema.from_object(last_obj.obj), method, (at + last_obj.start, at + last_obj.end))
    if not text.strip():
        return ParsedVerdict(ok=False, error="empty reply")
    if unclosed:
        return ParsedVerdict(
            ok=False, error="no answer found: the reply ends inside an unclosed JSON object (truncated?)"
        )
    if found:
        return ParsedVerdict(
            ok=False,
            error=f"no answer found: no JSON object has a {' / '.join(schema.keys[:2])} field and no verdict line",
        )
    return ParsedVerdict(ok=False, error="no answer found: no JSON object and no verdict line in the reply")


@dataclass(frozen=True)
class _Candidate:
    start: int
    end: int
    line: int | None  # its index in `lines`, or None for an object
    obj: _Found | None


def _own_answer(
    schema: _Schema,
    text: str,
    tail: str,
    answers: list[_Found],
    lines: list[tuple[int, int, str]],
    quoted: Sequence[str],
    whole_text: bool,
    at: int,
) -> ParsedVerdict:
    """The judge's own answer among the answer-shaped lines and objects of a pairwise or pointwise
    reply (issue 29 §5). The last one is the answer, as before — unless the judge set it apart as
    someone else's words (`read_quotes.setting`: quotation marks, an HTML quote, a link, code, a
    blockquote, an ellipsis) or it copies the item's own text (`read_quotes.in_item`). Then the
    last answer the judge did not set apart is read, with a warning when the two differ; and when
    there is none and the last one stands in quotation marks, an HTML quote or a link, the reply
    is `ambiguous`: a parse failure of its own kind, never a guess."""
    cands = sorted(
        [_Candidate(s, e, i, None) for i, (s, e, _) in enumerate(lines)]
        + [_Candidate(f.start, f.end, None, f) for f in answers],
        key=lambda c: c.start,
    )

    def read(c: _Candidate) -> ParsedVerdict:
        if c.line is not None:
            return _result(
                schema.from_lines(tail, lines[: c.line + 1]), "line_tail", (at + c.start, at + c.end)
            )
        assert c.obj is not None
        method = "structured" if whole_text and _is_whole(text, c.obj) else "json_tail"
        return _result(schema.from_object(c.obj.obj), method, (at + c.start, at + c.end))

    items = tuple(fold(q) for q in quoted)

    def apart(c: _Candidate) -> tuple[str, str] | None:
        how = setting(tail, c.start, c.end)
        if how is not None and c.obj is not None and how[1] in ("a code block", "inline code"):
            how = None  # a ```json fence is how a judge hands over its own JSON answer
        if how is None and in_item(tail[c.start : c.end], items):
            how = (WEAK, "a copy of the item's own text")
        if how is None and c.obj is not None and mid_sentence(tail, c.start, c.end):
            how = (WEAK, "the middle of a sentence")
        return how

    final = cands[-1]
    how = apart(final)
    if how is None:
        return read(final)
    for c in reversed(cands[max(0, len(cands) - QUOTE_CHECKS) : -1]):
        if apart(c) is not None:
            continue
        own = read(c)
        if not own.ok:
            break  # the judge's own last answer is invalid: judged on the later one alone
        later = read(final)
        if later.ok and later.value == own.value:
            return own
        said = " ".join(tail[final.start : final.end].split())[:80]
        note = f"a later {said!r} inside {how[1]} was not read as the verdict"
        return replace(own, warnings=(*own.warnings, note))
    if how[0] == STRONG:
        said = " ".join(tail[final.start : final.end].split())[:80]
        return ParsedVerdict(
            ok=False,
            kind="ambiguous",
            error=f"ambiguous: the only answer, {said!r}, stands inside {how[1]} (someone else's words?)",
        )
    return read(final)


def parse_reply(
    schema_name: str,
    text: str,
    structured: Mapping[str, Any] | None,
    *,
    clause_ids: Sequence[str] = (),
    levels: Sequence[int] = LEVELS,
    quoted: Sequence[str] = (),
    pattern: str | None = None,
) -> ParsedVerdict:
    """Read a judge's reply. `schema_name` is the prompt's ("pairwise_verdict",
    "pointwise_verdict", "clause_verdicts"); `structured` the provider's structured output if any;
    `clause_ids` the ids the clause prompt asked about (in prompt order); `levels` the score
    levels a pointwise prompt allowed (1..5 unless its dimension has its own scale, or a custom
    template declares another); `quoted` the item's own texts (`Prompt.quoted`), whose near-copies
    in the reply are not read as answers; `pattern` a template's declared verdict pattern
    (a regex whose group 1 is the verdict or score), read like a verdict line."""
    if not levels:
        raise ValueError("levels must not be empty")
    schema = _schema(schema_name, clause_ids, levels)
    structured_error: str | None = None
    if structured is not None:
        answer = schema.answer_in(structured) if isinstance(structured, Mapping) else None
        if answer is not None:
            reading = schema.from_object(answer)
            if reading.error is None:
                return _result(reading, "structured")
            structured_error = f"structured output: {reading.error}"
        else:
            structured_error = "structured output holds no answer field"
    parsed = _parse_text(
        schema,
        text or "",
        tuple(q for q in quoted if len(q) >= QUOTE_MIN),
        re.compile(pattern, re.MULTILINE) if pattern else None,
        tuple(q for q in quoted if q.strip()),
    )
    if parsed.ok or structured_error is None:
        return parsed
    return ParsedVerdict(
        ok=False,
        clauses=parsed.clauses,
        error=f"{structured_error}; text: {parsed.error}",
        warnings=parsed.warnings,
        kind=parsed.kind,
    )
