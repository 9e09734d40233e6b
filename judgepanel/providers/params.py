"""What a judge spec's parameter values may be, and the operational parameters: those that never
change an answer, so are never sent and never part of a judge's name.

This module is the one definition of the operational parameters (issue 31 §3: `providers.names`
kept a literal copy of them that `providers.spec` compared at import). `providers.spec` parses
with the tables below, `providers.names` leaves `OPERATIONAL_KEYS` out of the names it derives. It
imports nothing but the standard library at import time, so naming judges (`campaign list`) still
loads no key rules, capability table or key scrubber (issue 20 §2); the key rules are imported by
`env_name` when a `key_env` value is parsed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

ParamValue = str | int | float | bool
Parser = Callable[[str], ParamValue]


def number(
    lo: float | None = None, hi: float | None = None, *, open_lo: bool = False
) -> Callable[[str], float]:
    def conv(raw: str) -> float:
        value = float(raw)
        if not math.isfinite(value):
            raise ValueError("not a finite number")
        if lo is not None and (value < lo or (open_lo and value == lo)):
            raise ValueError(f"must be {'>' if open_lo else '>='} {lo:g}")
        if hi is not None and value > hi:
            raise ValueError(f"must be <= {hi:g}")
        return value

    return conv


def integer(lo: int | None = None) -> Callable[[str], int]:
    def conv(raw: str) -> int:
        value = int(raw)
        if lo is not None and value < lo:
            raise ValueError(f"must be >= {lo}")
        return value

    return conv


def switch(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in ("on", "true", "1", "yes"):
        return True
    if lowered in ("off", "false", "0", "no"):
        return False
    raise ValueError("must be on or off")


def env_name(raw: str) -> str:
    # upper-case letters, digits and _ only: a name such as OPENAI_API_KEY, never a key itself; and
    # a model-server credential, never judgepanel's own settings, a database URL, a cloud key …
    # (the rule is in `providers.keys`)
    import os

    from judgepanel.providers.keys import key_env_refusal, key_value_refusal

    if not re.fullmatch(r"[A-Z_][A-Z0-9_]{0,63}", raw):
        raise ValueError("must name an environment variable (A-Z, 0-9 and _), e.g. TOGETHER_API_KEY")
    why = key_env_refusal(raw)
    if why is None:
        value = os.environ.get(raw)
        why = key_value_refusal(raw, value) if value else None
    if why is not None:
        raise ValueError(why)
    return raw


def byte_size(raw: str) -> int:
    # 8388608, 8MB, 8M, 512k, 512KB (binary units: 1 MB = 1,048,576 bytes)
    m = re.fullmatch(r"(\d+)\s*([kKmM]?)[bB]?", raw.strip())
    if m is None:
        raise ValueError("must be a number of bytes, optionally with k or M, e.g. 8M")
    value = int(m.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2).lower()]
    if value < 1024:
        raise ValueError("must be at least 1k")
    return value


# Operational parameters every provider takes: how a call is made, not what it answers.
OPERATIONAL: dict[str, Parser] = {
    "timeout": number(0.0, open_lo=True),
    "rpm": number(0.0, open_lo=True),
    "tpm": number(0.0, open_lo=True),
    "concurrency": integer(1),
    "price_in": number(0.0),
    "price_out": number(0.0),
    "price_cache_read": number(0.0),  # USD per million prompt tokens read from the prompt cache
    "price_cache_write": number(0.0),  # … written to it
    "batch_discount": number(0.0, 1.0),  # share of the price a batch API call saves (0.5 = half price)
    "prompt_cache": switch,  # off: no cache_control marks (Anthropic)
    "max_reply_bytes": byte_size,  # the largest reply body read (default 8 MB); more is `oversize`
}
# where a judge's key is read from: never sent, never part of the name (which key does not change
# what a model answers), stored as the variable's name only; every provider but `sim`
KEY_ENV: dict[str, Parser] = {"key_env": env_name}
# the simulator's operational parameters: failures and timing, not its answers
SIM_OPERATIONAL: dict[str, Parser] = {
    "error_rate": number(0.0, 1.0),
    "latency": number(0.0),
    "jitter": number(0.0),
}

OPERATIONAL_KEYS = frozenset({*OPERATIONAL, *KEY_ENV, *SIM_OPERATIONAL})
