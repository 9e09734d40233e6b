"""Deterministic clause checkers (issue 18 §2: clause → checker transfer, seed 002's last step).

Four pure functions of a candidate text, each answering one clause met / not met without a model:

- `word_count` {"min": int|null, "max": int|null}: the number of words (runs of letters, digits,
  apostrophes and hyphens, the same count whatever the punctuation) lies in [min, max].
- `phrase` {"phrases": [str, ...], "mode": "all"|"any"}: each (or any) phrase occurs in the text,
  case-insensitively, with runs of whitespace treated as one space (a required section heading,
  a required disclaimer).
- `regex` {"pattern": str, "expect": "match"|"no_match"}: a Python regular expression searched
  case-insensitively. It cannot hang a run (issue 29 §3: `.*.*.*.*.*.*=` is polynomial of degree
  6, and an editor proposed such patterns): every search runs in the `regex` engine under a hard
  time limit, `SEARCH_SECONDS`, and a search that runs out answers nothing (`CheckerTimeout`: the
  clause is left to the judge, the checker is not kept). A pattern is also refused outright when
  it is longer than `MAX_PATTERN_CHARS`; when it holds an inline flag or any other `(?…)` group
  but `(?:…)` (`(?s)`, `(?x)`, whose verbose mode hid `( a + ) + b`'s nested quantifier from the
  rule below); a backreference or a lookaround; a `{` that is not a repeat count (the two engines
  read such braces differently); a quantified group that itself contains a quantifier or an
  alternation (`(a+)+`, `(\\w*)*`, `(a|aa)+`, the nested quantifiers behind catastrophic
  backtracking); or when it runs out of time on one of the long `PROBES` texts (runs of one
  character, the cases where polynomial backtracking shows). The text searched is cut at
  `MAX_TEXT_CHARS`.
- `language` {"language": "en"|"de"|"fr"|"es"|"it"|"nl"|"pt"}: a dependency-free stop-word profile.
  Each language has 30–40 of its most frequent function words; the text's language is the one whose
  list covers most of its words, when that share is at least `MIN_STOPWORD_SHARE` (else
  "unknown", and the clause is not met). Documented, not clever: good on prose of 20+ words,
  unreliable on a few words or on text mixing languages.

`CATALOGUE` is what the editor is shown; `validate` turns an editor's proposal into a `Checker`
or says in one line why it cannot be used.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KINDS = ("word_count", "phrase", "regex", "language")
MAX_PATTERN_CHARS = 200
MAX_TEXT_CHARS = 20_000
MAX_PHRASES = 10
MIN_STOPWORD_SHARE = 0.15
# the hard limit on one search: a harmless pattern takes well under a millisecond on the longest
# text searched, so this only ever stops a pattern that backtracks
SEARCH_SECONDS = 0.25

_WORD = re.compile(r"[\w'’-]+", re.UNICODE)


def _words_of(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS: dict[str, frozenset[str]] = {
    "en": _words_of(
        "the of and to a in is that it was for on are as with his they be at one have this from or "
        "had by not but what all were we when your can said there an which she he"
    ),
    "de": _words_of(
        "der die und in den von zu das mit sich des auf für ist im dem nicht ein eine als auch es "
        "an werden aus er hat dass sie nach wird bei"
    ),
    "fr": _words_of(
        "le de un une être et à il avoir ne je son que se qui ce dans en du elle au pour pas que "
        "vous par sur faire plus dire me on mon lui nous les des est"
    ),
    "es": _words_of(
        "el la de que y a en un ser se no haber por con su para como estar tener le lo todo pero "
        "más hacer o poder decir este ir otro ese los las del es"
    ),
    "it": _words_of(
        "il di che e la a per un in è non una sono mi si ho lo ma ti ha le cosa con se io come da "
        "del della gli questo anche"
    ),
    "nl": _words_of(
        "de en van ik te dat die in een hij het niet zijn is was op aan met als voor had er maar om "
        "hem dan zou of wat mijn men dit zo"
    ),
    "pt": _words_of(
        "de a o que e do da em um para é com não uma os no se na por mais as dos como mas foi ao "
        "ele das tem à seu sua ou"
    ),
}

CATALOGUE: tuple[dict[str, Any], ...] = (
    {
        "checker": "word_count",
        "params": {"min": "integer or null", "max": "integer or null"},
        "meaning": "met when the number of words of the text is between min and max (inclusive)",
    },
    {
        "checker": "phrase",
        "params": {"phrases": "list of strings", "mode": "all | any"},
        "meaning": "met when all (or any) of the phrases occur in the text, ignoring case",
    },
    {
        "checker": "regex",
        "params": {"pattern": "Python regular expression", "expect": "match | no_match"},
        "meaning": (
            "met when the pattern is found (match) or not found (no_match), ignoring case; no "
            "inline flags or other (?...) groups but (?:...), no backreferences, lookarounds or "
            "nested quantifiers, at most 200 characters"
        ),
    },
    {
        "checker": "language",
        "params": {"language": "en | de | fr | es | it | nl | pt"},
        "meaning": "met when the text is written in that language",
    },
)


class CheckerError(ValueError):
    """A proposal that cannot be used as a checker (one line, said to the user)."""


class CheckerTimeout(CheckerError):
    """A regex checker's search ran out of its time limit: it answers nothing for this text."""


@dataclass(frozen=True)
class Checker:
    kind: str
    params: dict[str, Any]

    def check(self, text: str) -> bool:
        return check(self, text)

    def describe(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in sorted(self.params.items()))
        return f"{self.kind}({inner})"

    def as_dict(self) -> dict[str, Any]:
        return {"checker": self.kind, "params": dict(self.params)}


def word_count(text: str) -> int:
    return len(_WORD.findall(text))


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def detect_language(text: str) -> str:
    """The language whose stop words cover most words of `text`, or "unknown"."""
    words = [w.casefold() for w in _WORD.findall(text[:MAX_TEXT_CHARS])]
    if not words:
        return "unknown"
    shares = {lang: sum(w in sw for w in words) / len(words) for lang, sw in STOPWORDS.items()}
    best = max(sorted(shares), key=lambda k: shares[k])
    return best if shares[best] >= MIN_STOPWORD_SHARE else "unknown"


# a quantified group (possibly non-capturing) whose body holds a quantifier or an alternation; the
# innermost group is matched first, so `((a)b+)*` is found through its outer group after the inner
# one is replaced by a plain character (`_nested`)
_QUANT = r"(?:[*+?]|\{\d*,?\d*\})"
_INNER = re.compile(r"\(([^()]*)\)")
_QUANTIFIED_INNER = re.compile(r"\(([^()]*)\)" + _QUANT)


def _nested(bare: str) -> bool:
    """Whether a quantified group contains a quantifier or an alternation (escapes already removed)."""
    while True:
        for m in _QUANTIFIED_INNER.finditer(bare):
            body = m.group(1).removeprefix("?:")
            if "|" in body or re.search(_QUANT, body.lstrip("?")):
                return True
        reduced = _INNER.sub(
            lambda m: "x+" if re.search(_QUANT + "|\\|", m.group(1).removeprefix("?:")) else "x", bare
        )
        if reduced == bare:
            return False
        bare = reduced


_BACKREF = re.compile(r"\\[1-9]|\(\?P=|\(\?<?[=!]")
_SPECIAL_GROUP = re.compile(r"\(\?(?!:)")
_REPEAT_COUNT = re.compile(r"\{(?:\d+,?\d*|,\d+)\}")
_FILLERS = ("a", "0", " ", ".", "\n")


def probes(bare: str) -> list[str]:
    """Texts on which polynomial backtracking shows, as long as the longest text searched: long
    runs of one character (a letter, a digit, a space, punctuation, a newline), alone and with one
    of the pattern's own literal characters at the start and in the middle (a required character
    that is absent ends a search at once; one that is present lets it backtrack)."""
    n = MAX_TEXT_CHARS
    literals = sorted({c for c in bare if c.isprintable() and c not in "\\^$.|?*+()[]{}"})[:8]
    out = [f * n for f in _FILLERS]
    for f in _FILLERS:
        for c in literals:
            out += [c + f * (n - 1), f * (n // 2) + c + f * (n - n // 2 - 1)]
    return out


# patterns that ran out of time on a text in this process: not searched again (each costs the
# whole limit), so a kept checker that backtracks on some texts costs one limit, not one per reply
_SLOW: set[str] = set()


def compile_pattern(pattern: str) -> Any:
    """A checked pattern compiled for `search` (cached: a kept checker runs on every reply)."""
    return _compiled(pattern)


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    if not pattern:
        raise CheckerError("regex checker: empty pattern")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise CheckerError(f"regex checker: pattern longer than {MAX_PATTERN_CHARS} characters")
    if _BACKREF.search(pattern):
        raise CheckerError("regex checker: backreferences and lookarounds are not allowed")
    # strip escaped characters and character classes before looking for nested quantifiers
    bare = re.sub(r"\\.", "x", pattern)
    bare = re.sub(r"\[(?:[^\]\\]|\\.)*\]", "x", bare)
    if _SPECIAL_GROUP.search(bare):
        raise CheckerError(
            "regex checker: inline flags such as (?s) or (?x) and other (?...) groups are not "
            "allowed; use (?:...) to group"
        )
    if "{" in _REPEAT_COUNT.sub("", bare) or "}" in _REPEAT_COUNT.sub("", bare):
        raise CheckerError("regex checker: a literal { or } must be escaped (\\{ \\})")
    if _nested(bare):
        raise CheckerError(
            "regex checker: a repeated group may not contain a quantifier or an alternation (e.g. (a+)+, (a|aa)+)"
        )
    import regex  # 18 ms: only where a regex checker is used

    try:
        re.compile(pattern)  # a Python regular expression, as the editor is told
        compiled = regex.compile(pattern, regex.IGNORECASE | regex.VERSION0)
    except (re.error, regex.error) as exc:
        raise CheckerError(f"regex checker: invalid pattern: {exc}") from exc
    literal_only = re.sub(r"\\.", "", pattern)  # escapes (\d, \w) are not literal characters
    for probe in probes(re.sub(r"\[(?:[^\]\\]|\\.)*\]", "", literal_only)):
        try:
            compiled.search(probe, timeout=SEARCH_SECONDS)
        except TimeoutError:
            raise CheckerError(
                f"regex checker: too slow: a search of {len(probe):,} characters ran past "
                f"{SEARCH_SECONDS:g} s (a pattern that backtracks, e.g. .*.*.*=)"
            ) from None
    return compiled


def search(pattern: str, text: str) -> bool:
    """Whether `pattern` (a checked one) is found in `text` (cut at `MAX_TEXT_CHARS`), within the
    time limit; `CheckerTimeout` when it runs out."""
    if pattern in _SLOW:
        raise CheckerTimeout(f"regex checker: the pattern ran past {SEARCH_SECONDS:g} s on an earlier text")
    try:
        return compile_pattern(pattern).search(text[:MAX_TEXT_CHARS], timeout=SEARCH_SECONDS) is not None
    except TimeoutError:
        _SLOW.add(pattern)
        raise CheckerTimeout(f"regex checker: the search ran past {SEARCH_SECONDS:g} s") from None


def _int_or_none(v: Any, name: str) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or int(v) != v or v < 0:
        raise CheckerError(f"word_count checker: {name} must be a non-negative integer or null")
    return int(v)


def validate(kind: str, params: Mapping[str, Any]) -> Checker:
    """A usable checker from an editor's proposal, or `CheckerError`."""
    if kind == "word_count":
        lo, hi = _int_or_none(params.get("min"), "min"), _int_or_none(params.get("max"), "max")
        if lo is None and hi is None:
            raise CheckerError("word_count checker: needs min or max")
        if lo is not None and hi is not None and lo > hi:
            raise CheckerError(f"word_count checker: min {lo} is above max {hi}")
        return Checker(kind, {"min": lo, "max": hi})
    if kind == "phrase":
        phrases = params.get("phrases")
        if isinstance(phrases, str):
            phrases = [phrases]
        if not isinstance(phrases, list) or not phrases or len(phrases) > MAX_PHRASES:
            raise CheckerError(f"phrase checker: phrases must be a list of 1 to {MAX_PHRASES} strings")
        clean = [_norm(p) for p in phrases if isinstance(p, str) and p.strip()]
        if len(clean) != len(phrases):
            raise CheckerError("phrase checker: every phrase must be a non-empty string")
        mode = params.get("mode", "all") or "all"
        if mode not in ("all", "any"):
            raise CheckerError(f"phrase checker: mode must be all or any, got {mode!r}")
        return Checker(kind, {"phrases": clean, "mode": mode})
    if kind == "regex":
        pattern = params.get("pattern")
        if not isinstance(pattern, str):
            raise CheckerError("regex checker: pattern must be a string")
        compile_pattern(pattern)
        expect = params.get("expect", "match") or "match"
        if expect not in ("match", "no_match"):
            raise CheckerError(f"regex checker: expect must be match or no_match, got {expect!r}")
        return Checker(kind, {"pattern": pattern, "expect": expect})
    if kind == "language":
        lang = params.get("language")
        if not isinstance(lang, str) or lang.lower() not in STOPWORDS:
            raise CheckerError(f"language checker: language must be one of {', '.join(STOPWORDS)}")
        return Checker(kind, {"language": lang.lower()})
    raise CheckerError(f"unknown checker {kind!r} (one of {', '.join(KINDS)})")


def check(checker: Checker, text: str) -> bool:
    """Whether the clause is met by `text`, by the checker alone."""
    p = checker.params
    if checker.kind == "word_count":
        n = word_count(text)
        return bool((p["min"] is None or n >= p["min"]) and (p["max"] is None or n <= p["max"]))
    if checker.kind == "phrase":
        body = _norm(text)
        found = [ph in body for ph in p["phrases"]]
        return all(found) if p["mode"] == "all" else any(found)
    if checker.kind == "regex":
        hit = search(p["pattern"], text)
        return hit if p["expect"] == "match" else not hit
    if checker.kind == "language":
        return bool(detect_language(text) == p["language"])
    raise CheckerError(f"unknown checker {checker.kind!r}")


def from_dict(d: Mapping[str, Any]) -> Checker:
    return validate(str(d.get("checker")), d.get("params") or {})
