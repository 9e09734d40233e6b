"""Logprob-weighted scores (G-Eval style): the probability a judge put on each allowed score.

With the judge parameter ``scoring=logprobs`` an OpenAI-compatible request carries
``logprobs: true`` and ``top_logprobs: N`` (:func:`logprob_request`). The reply's
``choices[0].logprobs.content`` lists, per generated token, its ``logprob`` and the ``top_logprobs``
alternatives. :func:`logprob_score` finds the **answer position** — the last token whose text is an
allowed score (the parsed verdict's, when one is given) — and reads the probability mass there on
each allowed score:

    p(s) ∝ Σ_{t ∈ top_logprobs, norm(t) = s} exp(logprob_t)

where ``norm`` strips surrounding white space and quotes, so the tokenisations ``" 4"``, ``"4"`` and
``"\\"4"`` all count for score 4 (their masses add up). The distribution is renormalised over the
allowed scores; ``mass`` keeps the share of probability they held before (a low mass says the
model was also considering other tokens). The **expectation** ``Σ_s p(s)·value(s)`` is the
continuous score stored next to the argmax verdict.

Where no distribution can be read the result says why, per job (``note``) and the argmax verdict
stands: no ``logprobs`` in the reply (Anthropic, some servers — fall back to ``--repeats N``
sampling means); no allowed score among the generated tokens; or only the chosen token's logprob
at the answer position (no ``top_logprobs``: a partial distribution, all mass on that token).

Reference: Liu et al., "G-Eval: NLG Evaluation using GPT-4 with Better Human Alignment", EMNLP 2023.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_TOP_LOGPROBS = 20
NO_LOGPROBS = "no logprobs in the reply: the argmax verdict stands (use --repeats N for a sampled mean)"
NO_POSITION = "no allowed score among the generated tokens: the argmax verdict stands"
PARTIAL = "partial: no top_logprobs at the answer position, all mass on the generated token"


def logprob_request(params: Mapping[str, Any]) -> dict[str, Any]:
    """The request fields ``scoring=logprobs`` adds (nothing for any other scoring)."""
    if params.get("scoring") != "logprobs":
        return {}
    top = params.get("top_logprobs", DEFAULT_TOP_LOGPROBS)
    return {"logprobs": True, "top_logprobs": max(1, min(20, int(top)))}  # OpenAI allows 0–20


def normalise_token(token: str) -> str:
    return token.strip().strip("\"'").strip()


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


def answer_distribution(
    content: Sequence[Mapping[str, Any]] | None, allowed: Mapping[str, float], *, verdict: str | None = None
) -> LogprobScore:
    """The distribution over ``allowed`` (score label -> numeric value) at the answer position of
    ``content`` (OpenAI's ``logprobs.content`` list); see the module docstring."""
    if not content:
        return LogprobScore(None, None, None, None, None, NO_LOGPROBS)
    wanted = {verdict} if verdict is not None and verdict in allowed else set(allowed)
    position = None
    for i in range(len(content) - 1, -1, -1):
        tok = content[i].get("token") if isinstance(content[i], Mapping) else None
        if isinstance(tok, str) and normalise_token(tok) in wanted:
            position = i
            break
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
    expectation = sum(p * allowed[label] for label, p in dist.items())
    best = max(dist, key=lambda s: (dist[s], -list(allowed).index(s)))
    mass = total if total_all is None else total_all
    return LogprobScore(dist, expectation, best, min(1.0, mass), position, note)


def openai_logprob_content(raw_body: str) -> list[dict[str, Any]] | None:
    """``choices[0].logprobs.content`` of an OpenAI Chat Completions body, or None."""
    try:
        payload = json.loads(raw_body)
    except ValueError:
        return None
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    lp = choices[0].get("logprobs")
    content = lp.get("content") if isinstance(lp, dict) else None
    return content if isinstance(content, list) else None


def score_scale(low: int = 1, high: int = 5) -> dict[str, float]:
    """The allowed labels of an integer scale: {"1": 1.0, …}."""
    return {str(v): float(v) for v in range(low, high + 1)}


def logprob_score(raw_body: str, allowed: Mapping[str, float], *, verdict: str | None = None) -> LogprobScore:
    """:func:`answer_distribution` of the logprobs in a stored OpenAI-compatible reply body."""
    return answer_distribution(openai_logprob_content(raw_body), allowed, verdict=verdict)
