"""Scoring a candidate: the lexical features the simulated judge reads (`Quality`: support by
the source, coverage of its key words, distinct trigrams, length), their default weights, and a
model's fixed "taste" for a text (`_model_noise`).

Boundary: text in, numbers out; no prompt reading, no reply. How the features become a verdict,
a score or a clause verdict is `simjudge.verdicts`; how instructions reweight them is
`simjudge.following`.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "but",
        "not",
        "you",
        "all",
        "any",
        "can",
        "had",
        "her",
        "was",
        "one",
        "our",
        "out",
        "has",
        "him",
        "his",
        "how",
        "its",
        "may",
        "new",
        "now",
        "old",
        "see",
        "two",
        "who",
        "did",
        "get",
        "let",
        "put",
        "say",
        "she",
        "too",
        "use",
        "that",
        "with",
        "have",
        "this",
        "will",
        "your",
        "from",
        "they",
        "been",
        "were",
        "said",
        "each",
        "which",
        "their",
        "there",
        "what",
        "about",
        "would",
        "make",
        "like",
        "into",
        "than",
        "them",
        "then",
        "these",
        "some",
        "could",
        "other",
        "more",
        "very",
        "after",
        "also",
        "just",
        "over",
        "such",
        "only",
        "most",
        "when",
        "where",
        "while",
    ]
)


@dataclass(frozen=True)
class Quality:
    """The lexical features one candidate is judged on, and their weighted sum `score`."""

    support: float
    coverage: float
    distinct: float
    length: float
    words: int

    @property
    def score(self) -> float:
        return 0.45 * self.support + 0.25 * self.coverage + 0.20 * self.distinct + 0.10 * self.length


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


@lru_cache(maxsize=8192)
def quality(candidate: str, source: str | None) -> Quality:
    """The transparent heuristic in the `judgepanel.simjudge` docstring."""
    words = _words(candidate)
    bigrams = list(pairwise(words))
    trigrams = list(zip(words, words[1:], words[2:], strict=False))
    if source is None:
        support, coverage = 0.75, 0.6
    else:
        src = _source_profile(source)
        support = sum(b in src.bigrams for b in bigrams) / len(bigrams) if bigrams else 0.0
        present = set(words)
        coverage = sum(w in present for w in src.key_words) / len(src.key_words) if src.key_words else 0.0
    distinct = len(set(trigrams)) / len(trigrams) if trigrams else 1.0
    n = len(words)
    length = n / 20 if n < 20 else (1.0 if n <= 120 else 120 / n)
    return Quality(support, coverage, distinct, length, n)


@dataclass(frozen=True)
class _Source:
    bigrams: frozenset[tuple[str, str]]
    key_words: tuple[str, ...]


@lru_cache(maxsize=1024)
def _source_profile(source: str) -> _Source:
    words = _words(source)
    counts = Counter(w for w in words if len(w) >= 3 and w not in _STOP)
    return _Source(frozenset(pairwise(words)), tuple(w for w, _ in counts.most_common(10)))


def _model_noise(model: str, key: str, sd: float) -> float:
    """A fixed N(0, sd²) offset for this model looking at this text: its stable 'taste'."""
    digest = hashlib.blake2b(f"{model}\x00{key}".encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big")).gauss(0.0, sd)


WEIGHTS: Mapping[str, float] = {"support": 0.45, "coverage": 0.25, "distinct": 0.20, "length": 0.10}
