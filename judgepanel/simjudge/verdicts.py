"""The simulated judge's answers: a pairwise verdict, a pointwise score and clause verdicts,
each with its rationale text (`[simulated] …`, the features it saw), from the candidate's
quality, the model's taste, the request's noise and the guidance followed.

Boundary: one judge request's answer as a JSON-ready dict; the reply's shape (JSON, prose,
garbled) is chosen by `simjudge.simulate`, the editor's answers are `simjudge.editor`.
"""

from __future__ import annotations

import random
from typing import Any

from judgepanel.simjudge.following import Guidance, _calibration
from judgepanel.simjudge.reading import clauses_in, prompt_scale, read_layout
from judgepanel.simjudge.reply import PAIRWISE, POINTWISE, SimSettings
from judgepanel.simjudge.scoring import Quality, _model_noise, quality

# a clause that names no property the simulated judges can read is vague: each model reads it
# through this many times its usual noise, so judges split on it (see `_clauses`)
VAGUE_NOISE = 4.0


def _describe(label: str, q: Quality) -> str:
    return (
        f"{label}: {q.support:.0%} of its word pairs appear in the source, it mentions "
        f"{q.coverage:.0%} of the source's key words, {q.distinct:.0%} distinct trigrams, {q.words} words"
    )


def _pairwise(
    model: str, text: str, source: str | None, rng: random.Random, s: SimSettings, g: Guidance
) -> dict[str, Any]:
    found = read_layout(text, pairwise=True)
    if len(found.candidates) != 2:
        return {"rationale": "[simulated] I could not find both candidates.", "verdict": "tie"}
    a, b = found.candidates
    source = source if source is not None else found.source
    qa, qb = quality(a, source), quality(b, source)
    seen_a = g.quality_score(qa) + _model_noise(model, a, s.noise) + rng.gauss(0.0, s.noise / 4)
    seen_b = g.quality_score(qb) + _model_noise(model, b, s.noise) + rng.gauss(0.0, s.noise / 4)
    diff = seen_a - seen_b
    verdict = "A" if diff > 0.01 else ("B" if diff < -0.01 else "tie")
    if rng.random() < s.position_bias:
        verdict = "B"
    why = {
        "A": "A reads as the better of the two",
        "B": "B reads as the better of the two",
        "tie": "they are about as good",
    }
    followed = g.followed(PAIRWISE, 0)
    rationale = (
        f"[simulated] {followed}{_describe('A', qa)}; {_describe('B', qb)}. On balance {why[verdict]}."
    )
    return {"rationale": rationale, "verdict": verdict}


def _pointwise(
    model: str, text: str, source: str | None, rng: random.Random, s: SimSettings, g: Guidance
) -> dict[str, Any]:
    lo, hi = prompt_scale(text)
    found = read_layout(text, pairwise=False)
    if not found.candidates:
        return {"rationale": "[simulated] I could not find the candidate.", "score": lo}
    cand = found.candidates[0]
    source = source if source is not None else found.source
    q = quality(cand, source)
    seen = g.quality_score(q) + _model_noise(model, cand, s.noise) + rng.gauss(0.0, s.noise / 4)
    fit = _calibration(g, source, lo, hi, s) if g.examples else None
    raw = lo + (hi - lo) * (seen - s.q_low) / s.q_span if fit is None else fit[0] + fit[1] * seen
    if g.strictness:
        raw -= g.strictness  # one level: the window's q_low moved by q_span / (hi - lo)
    score = min(hi, max(lo, round(raw)))
    followed = g.followed(POINTWISE, fit[2] if fit else 0)
    return {
        "rationale": f"[simulated] {followed}{_describe('The candidate', q)}; overall {score}/{hi}.",
        "score": score,
    }


_CLAUSE_FEATURES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("repeat", "repetit", "redundan", "duplicate"), "distinct"),
    (("source", "fact", "support", "halluc", "consisten", "faithful", "accura", "contradict"), "support"),
    (("main", "key", "cover", "relevan", "important", "essential"), "coverage"),
    (("length", "concise", "brief", "short", "long", "verbose"), "length"),
)
_THRESHOLD = {"distinct": 0.95, "support": 0.85, "coverage": 0.6, "length": 0.9, "overall quality": 0.85}


def _clause_feature(clause: str, q: Quality) -> tuple[str, float]:
    lowered = clause.lower()
    for stems, feature in _CLAUSE_FEATURES:
        if any(stem in lowered for stem in stems):
            return feature, float(getattr(q, feature))
    return "overall quality", q.score


def _clauses(model: str, text: str, source: str | None, rng: random.Random, s: SimSettings) -> dict[str, Any]:
    found = read_layout(text, pairwise=False)
    cand = found.candidates[0] if found.candidates else ""
    q = quality(cand, source if source is not None else found.source)
    verdicts: list[dict[str, Any]] = []
    for cid, clause in clauses_in(text):
        feature, value = _clause_feature(clause, q)
        sd = s.noise * (VAGUE_NOISE if feature == "overall quality" else 1.0)
        seen = value + _model_noise(model, f"{cid}\x00{cand}", sd) + rng.gauss(0.0, s.noise / 4)
        met = seen > _THRESHOLD[feature]
        why = f"[simulated] {feature} {value:.2f} -> {'met' if met else 'not met'}"
        verdicts.append({"id": cid, "rationale": why, "met": met})
    met_count = sum(v["met"] for v in verdicts)
    return {"rationale": f"[simulated] {met_count} of {len(verdicts)} clauses met.", "clauses": verdicts}
