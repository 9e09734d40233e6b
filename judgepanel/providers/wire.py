"""What the real OpenAI and Anthropic APIs document and both sides of the wire rely on: the
providers when they forecast and price cached tokens (`providers.caching`), and the fake server
when it imitates the APIs (`judgepanel.fake.cache`). Facts only, no behaviour: the fake server
may import this module and nothing else from `providers` (tests/test_layering.py).

Prompt caching:

* OpenAI caches every prompt prefix of at least `OPENAI_MIN_TOKENS` (1,024) tokens by itself; a
  later prompt with the same start reads the longest cached prefix, counted in steps of
  `OPENAI_STEP` (128) tokens (`usage.prompt_tokens_details.cached_tokens`).
* Anthropic caches only prefixes that end at a block marked `cache_control`, and only from a
  model-dependent minimum length (`anthropic_min_tokens`).
"""

from __future__ import annotations

OPENAI_MIN_TOKENS = 1024
OPENAI_STEP = 128


def anthropic_min_tokens(model: str) -> int:
    """The shortest prefix Anthropic caches for `model`: 4,096 tokens for Haiku 4.5 and Opus 4.5
    on, 2,048 for Sonnet 4.6 and the Haiku 3 models, 1,024 for the others (the provider's table)."""
    m = model.lower()
    if "haiku-4" in m or any(f"opus-4-{v}" in m for v in (5, 6, 7, 8, 9)):
        return 4096
    if "haiku" in m or "sonnet-4-6" in m:
        return 2048
    return 1024
