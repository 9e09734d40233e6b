"""Logprob-weighted scores (G-Eval style): the probability a judge put on each allowed score.

With the judge parameter ``scoring=logprobs`` an OpenAI-compatible request carries
``logprobs: true`` and ``top_logprobs: N`` (:func:`logprob_request`). The reply's
``choices[0].logprobs.content`` lists, per generated token, its ``logprob`` and the ``top_logprobs``
alternatives. :func:`logprob_score` finds the **answer position** — the token that carries the
score the parser read: inside the answer the parser took (the ``Score: 4`` line, the
``{"score": 4}`` object), the last allowed score that a score key (``score``, ``rating``,
``grade``) *directly precedes* — only quotes, colons, emphasis and spaces between them — else the
last allowed score inside it; without a readable answer, the last token equal to the verdict. In
the common reason-then-score layout ``{"rationale": "a score of 3 is too low", "score": 3}`` the
rationale's "3" follows the word "score" too, but not directly (issue 30 §4: the first score
after any keyed token read the rationale's digit). It then reads the probability mass there on
each allowed score:

    p(s) ∝ Σ_{t ∈ top_logprobs, norm(t) = s} exp(logprob_t)

where ``norm`` strips surrounding white space, quotes, emphasis and trailing punctuation, so the
tokenisations ``" 4"``, ``"4"``, ``"\\"4"`` and ``"4."`` all count for score 4 (their masses add
up). The distribution is renormalised over the allowed scores; ``mass`` keeps the share of
probability they held before. Below `MASS_FLOOR` the model was mostly considering other tokens
there, the renormalised distribution says little, and the expectation is withheld (the argmax
verdict stands, with the note `LOW_MASS`). Otherwise the **expectation** ``Σ_s p(s)·value(s)`` is
the continuous score stored next to the argmax verdict.

Which metrics read which (``score_source`` in their JSON): categorical ones (exact agreement,
Cohen's / Fleiss' κ, QWK, Krippendorff's α, AC1, the condition study, the leave-one-out rule, the
alt-test with the accuracy scorer) read the **argmax** verdict; continuous ones (the alt-test's
RMSE scorer, prevalence thresholds) read the **expectation**.

Where no distribution can be read the result says why, per job (``note``) and the argmax verdict
stands: no ``logprobs`` in the reply (Anthropic, some servers — fall back to ``--repeats N``
sampling means); no allowed score among the generated tokens; or only the chosen token's logprob
at the answer position (no ``top_logprobs``: a partial distribution, all mass on that token).

Reference: Liu et al., "G-Eval: NLG Evaluation using GPT-4 with Better Human Alignment", EMNLP 2023.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_TOP_LOGPROBS = 20
NO_LOGPROBS = "no logprobs in the reply: the argmax verdict stands (use --repeats N for a sampled mean)"
NO_POSITION = "no allowed score among the generated tokens: the argmax verdict stands"
MASS_FLOOR = 0.5  # least probability on the scale at the answer position for an expectation
LOW_MASS = "less than half the probability at the answer position is on the scale: the argmax verdict stands"
PARTIAL = "partial: no top_logprobs at the answer position, all mass on the generated token"


def logprob_request(params: Mapping[str, Any]) -> dict[str, Any]:
    """The request fields ``scoring=logprobs`` adds (nothing for any other scoring)."""
    if params.get("scoring") != "logprobs":
        return {}
    top = params.get("top_logprobs", DEFAULT_TOP_LOGPROBS)
    return {"logprobs": True, "top_logprobs": max(1, min(20, int(top)))}  # OpenAI allows 0–20


_KEYS = ("score", "rating", "grade")
# a key ending the text before a value: the key, then at most a few quotes, colons, equals signs,
# emphasis marks and spaces (`"score": `, `Score: `, `**Rating:** `, `grade=`)
_KEYED = re.compile(r"\b(?:" + "|".join(_KEYS) + r")\b[\"'*_`:=\s]{0,8}$", re.I)


def _lead(token: str) -> int:
    """How many leading characters of a value token are not the value (`' 4'`, `'"4'`)."""
    return len(token) - len(token.lstrip(" \t\n\"'*_`:"))


def normalise_token(token: str) -> str:
    """A token as a score label: `" 4"`, `"4"`, `'"4'`, `"4."`, `"**4"` -> "4"."""
    return token.strip().strip("\"'*_`").rstrip(".,;:!)]").lstrip("([").strip()


@dataclass(frozen=True)
class LogprobScore:
    distribution: dict[str, float] | None  # allowed score label -> probability (sums to 1)
    expectation: float | None  # Σ p(s) · value(s)
    argmax: str | None
    mass: float | None  # probability on the allowed scores before renormalising
    position: int | None  # index of the answer token in logprobs.content
    note: str | None = None  # why there is no (or only a partial) distribution

    def as_dict(self) -> dict[str, Any]:
        return {
            "distribution": self.distribution,
            "expectation": self.expectation,
            "argmax": self.argmax,
            "mass": self.mass,
            "position": self.position,
            "note": self.note,
        }


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    v = float(value)
    return v if math.isfinite(v) and v <= 0.0 else None


def _offsets(content: Sequence[Mapping[str, Any]]) -> list[int]:
    """Character offset in the reply text where each token starts (tokens concatenate to it)."""
    out, at = [], 0
    for entry in content:
        out.append(at)
        tok = entry.get("token") if isinstance(entry, Mapping) else None
        at += len(tok) if isinstance(tok, str) else 0
    return out


def _token(content: Sequence[Mapping[str, Any]], i: int) -> str:
    tok = content[i].get("token") if isinstance(content[i], Mapping) else None
    return tok if isinstance(tok, str) else ""


def answer_position(
    content: Sequence[Mapping[str, Any]],
    allowed: Mapping[str, float],
    *,
    verdict: str | None = None,
    span: tuple[int, int] | None = None,
) -> int | None:
    """The index in `content` of the token carrying the answer (see the module docstring)."""
    wanted = {verdict} if verdict is not None and verdict in allowed else set(allowed)
    if span is not None:
        starts = _offsets(content)
        inside = [i for i, at in enumerate(starts) if span[0] <= at < span[1]]
        text = "".join(_token(content, i) for i in range(len(content)))
        hits = [i for i in inside if normalise_token(_token(content, i)) in wanted]
        for i in reversed(hits):
            # the key directly before the value: `"score": 4`, `Score: 4`, `**Rating:** 4`
            if _KEYED.search(text[: starts[i]] + _token(content, i)[: _lead(_token(content, i))]):
                return i
        if hits:
            return hits[-1]
    for i in range(len(content) - 1, -1, -1):
        if normalise_token(_token(content, i)) in wanted:
            return i
    return None


def answer_distribution(
    content: Sequence[Mapping[str, Any]] | None,
    allowed: Mapping[str, float],
    *,
    verdict: str | None = None,
    span: tuple[int, int] | None = None,
) -> LogprobScore:
    """The distribution over ``allowed`` (score label -> numeric value) at the answer position of
    ``content`` (OpenAI's ``logprobs.content`` list); ``span`` is where in the reply text the parser
    found the answer. See the module docstring."""
    if not content:
        return LogprobScore(None, None, None, None, None, NO_LOGPROBS)
    position = answer_position(content, allowed, verdict=verdict, span=span)
    if position is None:
        return LogprobScore(None, None, None, None, None, NO_POSITION)
    entry = content[position]
    chosen = normalise_token(str(entry.get("token")))
    tops = entry.get("top_logprobs")
    masses = dict.fromkeys(allowed, 0.0)
    note = None
    seen: set[str] = set()
    if isinstance(tops, list) and tops:
        for alt in tops:
            if not isinstance(alt, Mapping) or not isinstance(alt.get("token"), str):
                continue
            lp = _finite(alt.get("logprob"))
            raw = alt["token"]
            if lp is None or raw in seen:  # a repeated token would be counted twice
                continue
            seen.add(raw)
            label = normalise_token(raw)
            if label in masses:
                masses[label] += math.exp(lp)
        total_all = None
    else:
        lp = _finite(entry.get("logprob"))
        masses[chosen] = math.exp(lp) if lp is not None else 1.0
        note = PARTIAL
        total_all = masses[chosen]
    total = sum(masses.values())
    if total <= 0.0:  # top_logprobs present but none of them an allowed score
        lp = _finite(entry.get("logprob"))
        masses[chosen] = math.exp(lp) if lp is not None else 1.0
        note = PARTIAL
        total = total_all = masses[chosen]
    dist = {label: m / total for label, m in masses.items()}
    expectation: float | None = sum(p * allowed[label] for label, p in dist.items())
    best = max(dist, key=lambda s: (dist[s], -list(allowed).index(s)))
    mass = total if total_all is None else total_all
    if total_all is None and mass < MASS_FLOOR:
        expectation, note = None, LOW_MASS
    return LogprobScore(dist, expectation, best, min(1.0, mass), position, note)


def _first_choice(raw_body: str) -> dict[str, Any] | None:
    """``choices[0]`` of an OpenAI Chat Completions body, or None when the body has none."""
    try:
        payload = json.loads(raw_body)
    except ValueError:
        return None
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    return choices[0]


def openai_logprob_content(raw_body: str) -> list[dict[str, Any]] | None:
    """``choices[0].logprobs.content`` of an OpenAI Chat Completions body, or None."""
    choice = _first_choice(raw_body)
    lp = None if choice is None else choice.get("logprobs")
    content = lp.get("content") if isinstance(lp, dict) else None
    return content if isinstance(content, list) else None


def score_scale(low: int = 1, high: int = 5) -> dict[str, float]:
    """The allowed labels of an integer scale: {"1": 1.0, …}."""
    return {str(v): float(v) for v in range(low, high + 1)}


def openai_reply_text(raw_body: str) -> str | None:
    """``choices[0].message.content`` of an OpenAI Chat Completions body, or None."""
    choice = _first_choice(raw_body)
    message = None if choice is None else choice.get("message")
    text = message.get("content") if isinstance(message, dict) else None
    return text if isinstance(text, str) else None


def logprob_score(
    raw_body: str,
    allowed: Mapping[str, float],
    *,
    verdict: str | None = None,
    quoted: Sequence[str] = (),
    pattern: str | None = None,
) -> LogprobScore:
    """:func:`answer_distribution` of the logprobs in a stored OpenAI-compatible reply body, at
    the answer the parser reads in its text (`quoted` / `pattern` as for `parse_reply`)."""
    from judgepanel.protocol.parse import parse_reply

    content = openai_logprob_content(raw_body)
    span = None
    text = openai_reply_text(raw_body) if content else None
    if text is not None:
        levels = sorted(int(v) for v in allowed.values() if float(v).is_integer())
        if levels:
            parsed = parse_reply(
                "pointwise_verdict", text, None, levels=levels, quoted=quoted, pattern=pattern
            )
            span = parsed.span if parsed.ok else None
    return answer_distribution(content, allowed, verdict=verdict, span=span)
