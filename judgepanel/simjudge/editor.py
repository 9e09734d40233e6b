"""The simulated editor's answers (every reason starts with `[simulated editor]`): clause
rewrites, kept clauses, dimension splits, checker proposals, revised judge instructions, and an
editor that sprawls.

Boundary: one editor request's answer as a JSON-ready dict; it reads the properties the
simulated judges score (`simjudge.verdicts._CLAUSE_FEATURES`) and nothing else of the judge.
"""

from __future__ import annotations

import html
import re
from typing import Any

from judgepanel.simjudge.verdicts import _CLAUSE_FEATURES

# The simulated editor (labelled: every reason starts with "[simulated editor]"). It knows which
# properties the simulated judges read (`_CLAUSE_FEATURES`): a clause naming none of them is vague,
# and the rewrite appends the one property the dimension's name points to (source support for
# consistency/faithfulness, else coverage of the source's main points). A clause that already names
# a property is returned with that property stated once more, which changes nothing a sim judge reads.
_PROPERTY_TEXT = {
    "support": "every statement in it is supported by the source",
    "coverage": "it mentions the main points of the article",
    "distinct": "no phrase in it is repeated",
    "length": "its length is between 20 and 120 words",
}
_TAG_ATTR = re.compile(
    r"<clause_to_rewrite\s+id=\"([^\"]*)\"\s+dimension=\"([^\"]*)\">(.*?)</clause_to_rewrite>", re.DOTALL
)
_SPLIT_ATTR = re.compile(r"<dimension_to_split\s+name=\"([^\"]*)\">(.*?)</dimension_to_split>", re.DOTALL)


def _named_feature(text: str) -> str | None:
    lowered = text.lower()
    for stems, feature in _CLAUSE_FEATURES:
        if any(stem in lowered for stem in stems):
            return feature
    return None


def _dimension_feature(dimension: str) -> str:
    named = _named_feature(dimension)
    return named if named in ("support", "coverage") else "coverage"


def _rewrite(text: str) -> dict[str, Any]:
    found = _TAG_ATTR.findall(text)
    if not found:
        return {"reason": "[simulated editor] no clause found", "clause": "The text is acceptable."}
    _cid, dimension, clause = found[-1]
    clause = " ".join(clause.split()).rstrip(".")
    named = _named_feature(clause)
    if named is None:
        feature = _dimension_feature(dimension)
        reason = (
            f"[simulated editor] the clause names no checkable property, so judges read it differently; "
            f"it now names one ({feature})."
        )
    else:
        feature = named
        reason = (
            f"[simulated editor] the clause already names a checkable property ({feature}); stated once more."
        )
    return {"reason": reason, "clause": f"{clause}; concretely, {_PROPERTY_TEXT[feature]}."}


def _keep(text: str) -> dict[str, Any]:
    """An editor that finds nothing to fix: the clause comes back as it was."""
    found = _TAG_ATTR.findall(text)
    clause = html.unescape(" ".join(found[-1][2].split())) if found else "The text is acceptable."
    return {"reason": "[simulated editor] the clause is clear as it stands; kept.", "clause": clause}


# Checker proposals (`clause_checker`, labelled "[simulated editor]"), deterministic, good and bad on
# purpose so that the agreement threshold has something to refuse:
# - a clause giving a word range ("between 20 and 120 words", "at most 60 words") -> word_count with
#   those numbers (good);
# - a clause quoting phrases ("names the sections 'Background' and 'Outcome'") -> phrase, all (good);
# - a clause naming a language ("written in English") -> language (good);
# - a clause about repetition -> word_count max 40 (BAD: reads repetition as length);
# - anything else -> none.
_CHECK_TAG = re.compile(r"<clause_to_check\s+id=\"([^\"]*)\">(.*?)</clause_to_check>", re.DOTALL)
_RANGE = re.compile(r"between\s+(\d+)\s+and\s+(\d+)\s+words", re.IGNORECASE)
_AT_MOST = re.compile(r"(?:at most|no more than|up to)\s+(\d+)\s+words", re.IGNORECASE)
_AT_LEAST = re.compile(r"(?:at least|no fewer than)\s+(\d+)\s+words", re.IGNORECASE)
_QUOTED = re.compile(r"[\"'“‘]([^\"'”’]{2,60})[\"'”’]")
_LANGUAGES = {
    "english": "en",
    "german": "de",
    "french": "fr",
    "spanish": "es",
    "italian": "it",
    "dutch": "nl",
}
_NO_PARAMS: dict[str, Any] = {
    "min": None,
    "max": None,
    "phrases": None,
    "mode": None,
    "pattern": None,
    "expect": None,
    "language": None,
}


def _checker(text: str) -> dict[str, Any]:
    found = _CHECK_TAG.findall(text)
    clause = html.unescape(" ".join(found[-1][1].split())) if found else ""
    lowered = clause.lower()
    params = dict(_NO_PARAMS)
    tag = "[simulated editor]"
    if m := _RANGE.search(clause):
        params.update(min=int(m.group(1)), max=int(m.group(2)))
        return {"reason": f"{tag} the clause states a word range.", "checker": "word_count", "params": params}
    if (hi := _AT_MOST.search(clause)) or (lo := _AT_LEAST.search(clause)):
        if hi:
            params["max"] = int(hi.group(1))
        else:
            params["min"] = int(lo.group(1))  # type: ignore[union-attr]
        return {"reason": f"{tag} the clause states a word limit.", "checker": "word_count", "params": params}
    if quoted := _QUOTED.findall(clause):
        params.update(phrases=quoted, mode="all")
        return {"reason": f"{tag} the clause names required phrases.", "checker": "phrase", "params": params}
    for word, code in _LANGUAGES.items():
        if word in lowered:
            params["language"] = code
            return {"reason": f"{tag} the clause names a language.", "checker": "language", "params": params}
    if _named_feature(clause) == "distinct":
        params["max"] = 40
        return {
            "reason": f"{tag} repetition makes a text long, so a word cap stands for it (a bad mapping).",
            "checker": "word_count",
            "params": params,
        }
    return {
        "reason": f"{tag} no checker answers this clause; it needs a judge.",
        "checker": "none",
        "params": params,
    }


_ALIGN_INSTRUCTIONS = re.compile(r"<instructions_to_revise>\n?(.*?)\n?</instructions_to_revise>", re.DOTALL)
_ALIGN_SCORES = re.compile(
    r"<judge_score>([-\d.]+)</judge_score>.*?<human_score>([-\d.]+)</human_score>", re.DOTALL
)
STRICT = "Be strict: give a high score only when the text fully meets every point above."
LENIENT = "Be lenient: give a low score only when the text clearly fails the points above."


def _align(text: str) -> dict[str, Any]:
    """Revised judge instructions (labelled): stricter or more lenient, by the humans' scores."""
    found = _ALIGN_INSTRUCTIONS.search(text)
    current = html.unescape(found.group(1)).strip() if found else ""
    pairs = [(float(j), float(h)) for j, h in _ALIGN_SCORES.findall(text)]
    gap = sum(h - j for j, h in pairs) / len(pairs) if pairs else 0.0
    if gap == 0:
        return {"reason": "[simulated editor] the scores agree on average; kept.", "instructions": current}
    line, how = (STRICT, "lower") if gap < 0 else (LENIENT, "higher")
    base = "\n".join(x for x in current.splitlines() if x not in (STRICT, LENIENT)).strip()
    return {
        "reason": f"[simulated editor] the humans scored {how} than the judge on {len(pairs)} examples "
        f"(mean gap {gap:+.2f}).",
        "instructions": f"{base}\n\n{line}".strip(),
    }


def _split(text: str) -> dict[str, Any]:
    found = _SPLIT_ATTR.findall(text)
    dimension = found[-1][0] if found else "the dimension"
    main = _dimension_feature(dimension)
    clauses = [f"For {dimension}, {_PROPERTY_TEXT[main]}."] + [
        f"For {dimension}, {_PROPERTY_TEXT[f]}."
        for f in ("support", "coverage", "distinct", "length")
        if f != main
    ]
    return {
        "reason": "[simulated editor] one clause per property the simulated judges can read.",
        "clauses": clauses,
    }


def _sprawl(answer: dict[str, Any], n: int) -> dict[str, Any]:
    """An editor that does not stop: the rewrite padded to `n` characters, or `n` split clauses."""
    if "clause" in answer:
        filler = " Also, the text reads well in every respect."
        text = answer["clause"]
        return {**answer, "clause": (text + filler * (1 + n // len(filler)))[:n]}
    clauses = answer["clauses"]
    return {**answer, "clauses": [f"{clauses[i % len(clauses)]} (variant {i + 1})" for i in range(n)]}
