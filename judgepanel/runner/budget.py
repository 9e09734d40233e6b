"""`--max-cost`: stop scheduling calls before the budget would be exceeded.

Before each call the runner reserves a pessimistic estimate of its cost: the prompt's tokens
(characters ÷ `CHARS_PER_TOKEN`, scaled up by the largest ratio of real to estimated input tokens
seen so far, and by `SAFETY`) plus the whole output allowance (`max_tokens`, or
`DEFAULT_OUTPUT_ALLOWANCE`) at the judge's prices. A call starts only if

    spent + reserved_in_flight + estimate ≤ max_cost

and when it ends its reservation is replaced by its real cost. So the budget is exceeded only if
a reply is longer than its allowance or the prompt has four times more tokens per character than
estimated. Calls answered from the cache cost nothing.

Unknown prices are explicit: a budget cannot be enforced for a judge whose price is unknown, so
`check_prices` refuses to start rather than treating the unknown as free.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from judgepanel.errors import BadInput
from judgepanel.providers.spec import JudgeSpec

CHARS_PER_TOKEN = 4.0
SAFETY = 1.25
DEFAULT_OUTPUT_ALLOWANCE = 1024


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input + output_tokens * self.output) / 1e6


def estimate_tokens(chars: int) -> int:
    return max(1, math.ceil(chars / CHARS_PER_TOKEN))


def check_prices(max_cost: float | None, prices: Mapping[str, Price | None]) -> None:
    if max_cost is None:
        return
    if max_cost < 0 or not math.isfinite(max_cost):
        raise BadInput(f"--max-cost must be a non-negative number of USD, got {max_cost}")
    unknown = sorted(name for name, p in prices.items() if p is None)
    if unknown:
        raise BadInput(
            f"--max-cost cannot be enforced: no price known for {', '.join(unknown)}; "
            "add price_in=…&price_out=… (USD per million tokens) to the judge spec"
        )


class Budget:
    """Money accounting for one run (all judges share one budget)."""

    def __init__(self, max_cost: float | None, spent: float = 0.0) -> None:
        self.max_cost = max_cost
        self.spent = spent
        self.reserved = 0.0
        self.exhausted = False
        self._ratio = 1.0  # largest real/estimated input-token ratio seen

    def estimate(self, price: Price | None, prompt_chars: int, max_output: int | None) -> float:
        if price is None:
            return 0.0
        tokens_in = estimate_tokens(prompt_chars) * self._ratio * SAFETY
        return price.cost(math.ceil(tokens_in), max_output or DEFAULT_OUTPUT_ALLOWANCE)

    def try_reserve(self, amount: float) -> bool:
        """Reserve `amount`; False (and from then on exhausted) when it does not fit."""
        if self.max_cost is None:
            return True
        if self.exhausted or self.spent + self.reserved + amount > self.max_cost:
            self.exhausted = True
            return False
        self.reserved += amount
        return True

    def settle(self, reserved: float, actual: float | None) -> None:
        self.reserved = max(0.0, self.reserved - reserved)
        if actual is not None:
            self.spent += actual

    def observe_input(self, prompt_chars: int, real_tokens: int | None) -> None:
        if real_tokens:
            self._ratio = max(self._ratio, real_tokens / estimate_tokens(prompt_chars))


PriceLookup = Callable[[str, str], Price | None]


def price_for(spec: JudgeSpec) -> Price | None:
    """The judge's prices (`providers.pricing`: its spec's `price_in`/`price_out`, then the price
    file in $JUDGEPANEL_PRICES, then the built-in table; `sim` is free); None when unknown."""
    from judgepanel.providers.pricing import default_table

    p = default_table().for_spec(spec)
    return None if p is None else Price(p.input, p.output)
