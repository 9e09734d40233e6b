"""Model providers behind one small async protocol (`base.Provider`).

`parse_spec("openai:gpt-4o-mini?temperature=0")` gives a `JudgeSpec`; `make_provider(spec)` a live
provider whose `complete(ChatRequest, timeout=…)` returns a `ChatResult` or raises `RateLimited`,
`Transient` or `Fatal` (never retrying itself). `sim` is the offline simulated judge.
"""

from __future__ import annotations

from judgepanel.providers.base import ChatRequest, ChatResult, Provider
from judgepanel.providers.registry import make_provider
from judgepanel.providers.spec import JudgeSpec, parse_spec

__all__ = ["ChatRequest", "ChatResult", "JudgeSpec", "Provider", "make_provider", "parse_spec"]
