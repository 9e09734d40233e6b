"""Prompt-cache rules of the providers, and a forecast of what a sequence of calls would hit.

What the providers document (the figures are in `providers.wire`; `judgepanel.fake.cache` imitates them):

* OpenAI caches every prompt prefix of at least 1,024 tokens by itself, for a few minutes after
  last use; a later prompt with the same start reads the longest cached prefix, counted in steps of
  128 tokens (`usage.prompt_tokens_details.cached_tokens`). Writing costs nothing extra.
* Anthropic caches only prefixes that end at a block marked `cache_control`, and only from a
  model-dependent minimum length (`anthropic_min_tokens`); a write costs 1.25 × input, a read
  0.1 × input.

`CacheForecast` replays a campaign's calls in order and says, for each, how many prompt tokens
would be read from / written to the cache, given the cumulative stable prefixes of its prompt
(system text, then instructions, then the shared source). It ignores expiry and the misses of
calls sent at the same moment (a prefix is cached only once its first call has been answered), so
it is the most a run could save; `campaign status` reports what a run did save.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from judgepanel.providers.wire import OPENAI_MIN_TOKENS, OPENAI_STEP, anthropic_min_tokens


def prefix_digest(text: str) -> bytes:
    """What identifies a prompt prefix to the forecast (16 bytes of its sha256)."""
    return hashlib.sha256(text.encode()).digest()[:16]


@dataclass
class CacheForecast:
    """Prefixes seen so far for one judge (`provider`, `model`)."""

    provider: str
    model: str
    _seen: set[bytes] = field(default_factory=set)

    def floor(self) -> int | None:
        """The fewest prompt tokens a prefix needs to be cached; None: this provider caches nothing.
        A call none of whose prefixes reaches it reads and writes nothing and changes no state."""
        if self.provider == "openai":
            return OPENAI_MIN_TOKENS
        if self.provider == "anthropic":
            return anthropic_min_tokens(self.model)
        return None

    def call(self, prefixes: Sequence[tuple[str, int]]) -> tuple[int, int]:
        """(read, written) prompt tokens of a call whose stable prefixes are `prefixes`: each the
        prefix text (cumulative) and its token count, shortest first."""
        return self.call_digests([(prefix_digest(text), tokens) for text, tokens in prefixes])

    def call_digests(self, prefixes: Sequence[tuple[bytes, int]]) -> tuple[int, int]:
        """`call` with each prefix given by its `prefix_digest` (what `campaign create` stores)."""
        floor = self.floor()
        if floor is None:
            return 0, 0
        marks_only = self.provider == "anthropic"
        eligible = [(d, tokens) for d, tokens in prefixes if tokens >= floor]
        read = max((t for d, t in eligible if d in self._seen), default=0)
        self._seen.update(d for d, _ in eligible)
        if not marks_only:
            return read - read % OPENAI_STEP if read else 0, 0
        longest = max((t for _, t in eligible), default=0)
        return read, longest - read
