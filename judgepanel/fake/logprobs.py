"""Realistic ``logprobs`` for the fake server's OpenAI replies (``logprobs: true`` requests).

The reply text is cut into tokens the way BPE tokenisers tend to cut English: a word or a digit
carries its leading space (``" 4"``), punctuation and JSON quotes stand alone (``'"'``, ``":"``).
Ordinary tokens are near-certain (logprob between −0.3 and 0). A token that is a score digit 1–9
gets a spread distribution: most mass on the generated digit, the rest on its neighbours, and each
digit offered in both tokenisations, with and without the leading space (``" 4"`` and ``"4"``), as
real models do. The generated token's logprob is its own entry in ``top_logprobs``. Deterministic
for a given text and seed.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from typing import Any

_TOKEN = re.compile(r" ?[A-Za-z]+| ?\d|\s+|[^\sA-Za-z\d]")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _entry(token: str, logprob: float, top: list[tuple[str, float]]) -> dict[str, Any]:
    def item(t: str, lp: float) -> dict[str, Any]:
        return {"token": t, "logprob": lp, "bytes": list(t.encode())}

    return {**item(token, logprob), "top_logprobs": [item(t, lp) for t, lp in top]}


def _score_alternatives(token: str, rng: random.Random, n: int) -> list[tuple[str, float]]:
    digit = int(token.strip())
    spaced = token.startswith(" ")
    confidence = rng.uniform(0.55, 0.9)
    weights = {digit: confidence}
    rest = 1.0 - confidence
    near = [d for d in (digit - 1, digit + 1, digit - 2, digit + 2) if 1 <= d <= 9]
    shares = [0.6, 0.4, 0.15, 0.1][: len(near)]
    for d, w in zip(near, shares, strict=True):
        weights[d] = rest * w / sum(shares)
    out: list[tuple[str, float]] = []
    for d, w in weights.items():
        same = 0.85 if d == digit else 0.7  # the generated tokenisation holds most of a digit's mass
        here, other = (f" {d}", str(d)) if spaced else (str(d), f" {d}")
        out += [(here, math.log(w * same)), (other, math.log(w * (1 - same)))]
    out.sort(key=lambda x: -x[1])
    return out[:n]


def fake_logprobs(text: str, *, top_logprobs: int = 5, seed: int = 0) -> dict[str, Any]:
    """A ``choices[0].logprobs`` object for ``text``."""
    digest = hashlib.sha256(f"{seed}:{text}".encode()).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))
    n = max(0, min(20, top_logprobs))
    content = []
    for tok in tokens(text):
        if tok.strip().isdigit() and tok.strip() != "0":
            top = _score_alternatives(tok, rng, max(n, 1))
            own = next(lp for t, lp in top if t == tok)
            content.append(_entry(tok, own, top[:n]))
        else:
            lp = -rng.uniform(0.001, 0.3)
            alt = [(tok, lp), (tok.upper() if tok.upper() != tok else tok + ".", math.log1p(-math.exp(lp)))]
            content.append(_entry(tok, lp, alt[:n]))
    return {"content": content, "refusal": None}
