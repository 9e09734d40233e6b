"""The fake server's prompt cache, on its own: the providers' documented rules, with a hand clock."""

from __future__ import annotations

from typing import Any

from judgepanel.fake.cache import PromptCache
from judgepanel.providers.caching import CacheForecast
from judgepanel.providers.wire import anthropic_min_tokens


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _openai(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _anthropic(stable: str, item: str, *, marked: bool = True) -> dict[str, Any]:
    first: dict[str, Any] = {"type": "text", "text": stable}
    if marked:
        first["cache_control"] = {"type": "ephemeral"}
    return {"messages": [{"role": "user", "content": [first, {"type": "text", "text": item}]}]}


def test_openai_reads_the_longest_seen_prefix_in_128_token_steps_from_1024() -> None:
    cache = PromptCache(clock=Clock())
    stable = "x" * 6000  # 1,500 tokens
    assert cache.openai(_openai(stable + "one"), "m").read == 0
    hit = cache.openai(_openai(stable + "two"), "m").read
    # the common prefix is 6,000 characters plus the role marker: 1,500 tokens, 1,408 in 128-steps
    assert hit == 1408 and hit % 128 == 0
    assert cache.openai(_openai(stable + "two"), "other-model").read == 0  # caches are per model
    short = "y" * 3000  # 750 tokens: under the minimum, never cached
    cache.openai(_openai(short + "a"), "m")
    assert cache.openai(_openai(short + "b"), "m").read == 0


def test_anthropic_caches_only_marked_prefixes_above_the_model_minimum() -> None:
    clock = Clock()
    cache = PromptCache(clock=clock)
    stable = "z" * 8000  # 2,000 tokens
    first = cache.anthropic(_anthropic(stable, "a"), "claude-sonnet-4-5")
    assert (first.read, first.written) == (0, 2000)
    second = cache.anthropic(_anthropic(stable, "b"), "claude-sonnet-4-5")
    assert (second.read, second.written) == (2000, 0)
    # unmarked: nothing written or read, however often it is sent
    for item in ("a", "b"):
        usage = cache.anthropic(_anthropic(stable + "!", item, marked=False), "claude-sonnet-4-5")
        assert (usage.read, usage.written) == (0, 0)
    # Haiku 4.5 needs 4,096 tokens: the same 2,000-token prefix is not cached for it
    for item in ("a", "b"):
        usage = cache.anthropic(_anthropic(stable, item), "claude-haiku-4-5")
        assert (usage.read, usage.written) == (0, 0)
    # entries expire `ttl` seconds after their last use
    clock.now += 299
    assert cache.anthropic(_anthropic(stable, "c"), "claude-sonnet-4-5").read == 2000
    clock.now += 301
    assert cache.anthropic(_anthropic(stable, "d"), "claude-sonnet-4-5").written == 2000


def test_minimums_and_forecast() -> None:
    assert [
        anthropic_min_tokens(m) for m in ("claude-haiku-4-5", "claude-sonnet-4-6", "claude-sonnet-4-5")
    ] == [
        4096,
        2048,
        1024,
    ]
    a = CacheForecast("anthropic", "claude-sonnet-4-5")
    prefixes = [("s" * 10, 500), ("s" * 20, 1500)]
    assert a.call(prefixes) == (0, 1500)  # the 500-token prefix is under the minimum
    assert a.call(prefixes) == (1500, 0)
    o = CacheForecast("openai", "gpt-4o-mini")
    assert o.call(prefixes) == (0, 0) and o.call(prefixes) == (1408, 0)
    assert CacheForecast("sim", "x").call(prefixes) == (0, 0)
