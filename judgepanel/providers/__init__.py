"""Model providers behind one small async protocol (`base.Provider`).

`parse_spec("openai:gpt-4o-mini?temperature=0")` gives a `JudgeSpec`; `make_provider(spec)` a live
provider whose `complete(ChatRequest, timeout=…)` returns a `ChatResult` or raises `RateLimited`,
`Transient` or `Fatal` (never retrying itself). `sim` is the offline simulated judge.

The names below are imported on first use: a reading command that needs one submodule (the key
scrubber of `errors`, the judge names of `spec`) does not load the others (issue 20 §2).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judgepanel.providers.base import ChatRequest, ChatResult, Provider
    from judgepanel.providers.registry import make_provider
    from judgepanel.providers.spec import JudgeSpec, parse_spec

_HOME = {
    "ChatRequest": "base",
    "ChatResult": "base",
    "Provider": "base",
    "make_provider": "registry",
    "JudgeSpec": "spec",
    "parse_spec": "spec",
}


# A deliberate mirror (issue 31 §4): the lazy packages (`protocol`, `providers`, `store.campaigns`)
# each resolve a public name through their `_HOME` table here, so `--help` imports no submodule.
def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f"judgepanel.providers.{_HOME[name]}"), name)
    raise AttributeError(f"module 'judgepanel.providers' has no attribute {name!r}")


__all__ = ["ChatRequest", "ChatResult", "JudgeSpec", "Provider", "make_provider", "parse_spec"]
