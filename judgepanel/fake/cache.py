"""The fake server's prompt cache: what OpenAI and Anthropic bill as cached prompt tokens, imitated.

Both providers cache prompt *prefixes* per model (per organisation) for a few minutes after last
use; a later request that starts with a cached prefix pays less for that part. They differ in what
is cached:

* OpenAI (automatic): any prompt of at least `OPENAI_MIN_TOKENS` (1,024) tokens; a hit covers the
  longest previously seen prefix in steps of `OPENAI_STEP` (128) tokens from 1,024 on, and is
  reported as `usage.prompt_tokens_details.cached_tokens` (part of `prompt_tokens`). Nothing is
  reported for writes.
* Anthropic (explicit): only prefixes ending at a content block marked `cache_control` are
  written, and only when the prefix is at least the model's minimum (`providers.wire.anthropic_min_tokens`). A request reads the longest marked prefix already cached
  (`cache_read_input_tokens`) and writes the rest up to its last eligible mark
  (`cache_creation_input_tokens`); `input_tokens` counts only what is neither.

Tokens are the simulator's: a prefix of n characters of message text is ⌈n/4⌉ tokens (the brain
counts the whole prompt the same way, plus 4 a message, so a cached part never exceeds the total).
The prefix identity is everything before it as sent: model, tools / response format, roles and text.
Entries live `ttl` seconds (300, both providers' minimum) from their last use.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from judgepanel.providers.wire import OPENAI_MIN_TOKENS, OPENAI_STEP, anthropic_min_tokens

CHARS_PER_TOKEN = 4
DEFAULT_TTL = 300.0


def _tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class CacheUsage:
    read: int
    written: int


class PromptCache:
    """Prefix digests per model with an expiry; `min_tokens` overrides both wires' minimums."""

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_TTL,
        min_tokens: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self.min_tokens = min_tokens
        self._clock = clock
        self._entries: dict[bytes, float] = {}

    def clear(self) -> None:
        self._entries.clear()

    def _live(self, digest: bytes, now: float) -> bool:
        expires = self._entries.get(digest)
        return expires is not None and expires > now

    def _keep(self, digests: Iterable[bytes], now: float) -> None:
        for d in digests:
            self._entries[d] = now + self.ttl
        if len(self._entries) > 200_000:  # drop what has expired, now and then
            self._entries = {d: t for d, t in self._entries.items() if t > now}

    # ---- OpenAI ------------------------------------------------------------------------------

    def openai(self, payload: dict[str, Any], model: str) -> CacheUsage:
        """Cached tokens for a Chat Completions request, and remember its prefixes."""
        floor = self.min_tokens or OPENAI_MIN_TOKENS
        h = hashlib.sha256(json.dumps([model, payload.get("response_format"), payload.get("tools")]).encode())
        text = "".join(
            f"\x00{m.get('role')}\x00{_text(m.get('content'))}"
            for m in payload.get("messages") or []
            if isinstance(m, dict)
        )
        step = OPENAI_STEP * CHARS_PER_TOKEN
        start = max(floor * CHARS_PER_TOKEN, step)
        start -= start % step
        h.update(text[:start].encode())
        points: list[tuple[int, bytes]] = []
        end = start
        while end <= len(text):
            points.append((_tokens(end), h.copy().digest()))
            h.update(text[end : end + step].encode())
            end += step
        now = self._clock()
        read = max((t for t, d in points if self._live(d, now)), default=0)
        self._keep((d for _, d in points), now)
        return CacheUsage(read, 0)

    # ---- Anthropic ---------------------------------------------------------------------------

    def anthropic(self, payload: dict[str, Any], model: str) -> CacheUsage:
        """Cache read / write tokens for a Messages request, and remember its marked prefixes."""
        floor = self.min_tokens or anthropic_min_tokens(model)
        h = hashlib.sha256(json.dumps([model, payload.get("tools"), payload.get("tool_choice")]).encode())
        chars = 0
        marks: list[tuple[int, bytes]] = []
        blocks: list[tuple[str, Any]] = [("system", b) for b in _blocks(payload.get("system"))]
        for m in payload.get("messages") or []:
            if isinstance(m, dict):
                blocks += [(str(m.get("role")), b) for b in _blocks(m.get("content"))]
        for role, block in blocks:
            text = _text([block])
            h.update(f"\x00{role}\x00{text}".encode())
            chars += len(text)
            if isinstance(block, dict) and block.get("cache_control") and _tokens(chars) >= floor:
                marks.append((_tokens(chars), h.copy().digest()))
        now = self._clock()
        read = max((t for t, d in marks if self._live(d, now)), default=0)
        longest = max((t for t, _ in marks), default=0)
        self._keep((d for _, d in marks), now)
        return CacheUsage(read, longest - read)


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""
