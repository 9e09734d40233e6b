"""`--max-cost`: stop scheduling calls before the budget would be exceeded.

Before each call the runner reserves an estimate of its cost: the prompt's tokens (characters ÷
`CHARS_PER_TOKEN`, scaled up by the largest ratio of real to estimated input tokens seen so far,
and by `SAFETY`) plus an output allowance, at the judge's prices. The allowance is the judge's
`max_tokens` (or `DEFAULT_OUTPUT_ALLOWANCE` without one) until real usage is known. Once replies
of the same judge to the same template have been seen (in this run, or stored from earlier runs),
it is `FEW_MARGIN` (1.5) times the longest of them while there are fewer than `MIN_OBSERVED` (20),
then the `OUTPUT_QUANTILE` (p95) of their output tokens; never more than `max_tokens`. A call
starts only if

    spent + reserved_in_flight + estimate ≤ max_cost

and when it ends its reservation is released and its real cost counted. A call that does not fit
while others are in flight waits for them to settle (their real cost is usually far below their
reservation); the run stops on the budget only when a call does not fit with nothing in flight.
So a run spends close to the cap, and exceeds it only when the last calls' replies are longer
than the p95 of their judge's replies (by at most their `max_tokens` allowance); the summary
reports what was spent (`spent_usd`) against the cap (`max_cost_usd`). Calls answered from the
cache cost nothing.

Unknown prices are explicit: a budget cannot be enforced for a judge whose price is unknown, so
`check_prices` refuses to start rather than treating the unknown as free.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from judgepanel.errors import BadInput
from judgepanel.providers.spec import JudgeSpec

CHARS_PER_TOKEN = 4.0
SAFETY = 1.25
DEFAULT_OUTPUT_ALLOWANCE = 1024
MIN_OBSERVED = 20  # replies of a judge to a template before their p95 is trusted
FEW_MARGIN = 1.5  # with fewer: this many times the longest reply seen
OUTPUT_QUANTILE = 0.95
KEEP_OBSERVED = 1000  # most recent output-token counts kept per judge and template

ReplyKind = tuple[str, str]  # (judge name, template name): whose replies to which prompt


@dataclass(frozen=True)
class Price:
    """USD per million tokens (the cache rates and the batch discount None when unknown)."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    batch_discount: float | None = None

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """Without prompt caching: every input token at the input rate."""
        return (input_tokens * self.input + output_tokens * self.output) / 1e6

    def call_cost(
        self, input_tokens: int, output_tokens: int, cache_read: int | None, cache_write: int | None
    ) -> float | None:
        """What a call that read / wrote this many prompt tokens from / to the provider's cache
        costs (they are part of `input_tokens`); None when it used a cache rate nobody gave."""
        from judgepanel.providers.pricing import Price as Rates

        return Rates(self.input, self.output, self.cache_read, self.cache_write).cost(
            input_tokens, output_tokens, cache_read, cache_write
        )

    def batch_call_cost(
        self, input_tokens: int, output_tokens: int, cache_read: int | None, cache_write: int | None
    ) -> float | None:
        """The same call made through a provider's batch API (its discount applies to every rate);
        None when the discount or a cache rate the call used is unknown."""
        full = self.call_cost(input_tokens, output_tokens, cache_read, cache_write)
        if full == 0:
            return 0.0  # a free judge is free through a batch too, whatever its discount
        return None if full is None or self.batch_discount is None else full * (1.0 - self.batch_discount)


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
            "add price_in=…&price_out=… (USD per million tokens) to the judge spec "
            "(price_in=0&price_out=0 for a free local server: its calls, cached prompt tokens "
            "included, then cost 0)"
        )


def upper_quantile(values: Sequence[int], q: float) -> int:
    """The smallest observed value with at least a share `q` of the values at or below it
    (the "higher" empirical quantile: never below what a share q of replies needed)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


class Budget:
    """Money accounting for one run (all judges share one budget)."""

    def __init__(
        self,
        max_cost: float | None,
        spent: float = 0.0,
        observed: Mapping[ReplyKind, Sequence[int]] | None = None,
    ) -> None:
        self.max_cost = max_cost
        self.spent = spent
        self.reserved = 0.0
        self.holding = 0  # reservations not yet settled (a count: floats do not return to 0)
        self._ratio = 1.0  # largest real/estimated input-token ratio seen
        self._out: dict[ReplyKind, deque[int]] = {
            k: deque(v[:KEEP_OBSERVED], maxlen=KEEP_OBSERVED) for k, v in (observed or {}).items()
        }

    def output_allowance(self, max_output: int | None, key: ReplyKind | None = None) -> int:
        """Output tokens to reserve for a call: `max_output` while no reply of this judge to this
        template is known; then `FEW_MARGIN` × the longest seen until MIN_OBSERVED replies are
        known, and from then on their OUTPUT_QUANTILE (p95); never more than `max_output`."""
        cap = max_output or DEFAULT_OUTPUT_ALLOWANCE
        seen = self._out.get(key) if key is not None else None
        if not seen:
            return cap
        if len(seen) < MIN_OBSERVED:
            return max(1, min(cap, math.ceil(FEW_MARGIN * max(seen))))
        return max(1, min(cap, upper_quantile(seen, OUTPUT_QUANTILE)))

    def estimate(
        self, price: Price | None, prompt_chars: int, max_output: int | None, key: ReplyKind | None = None
    ) -> float:
        if price is None:
            return 0.0
        tokens_in = estimate_tokens(prompt_chars) * self._ratio * SAFETY
        return price.cost(math.ceil(tokens_in), self.output_allowance(max_output, key))

    def fits(self, amount: float) -> bool:
        return self.max_cost is None or self.spent + self.reserved + amount <= self.max_cost

    def try_reserve(self, amount: float) -> bool:
        """Reserve `amount` if it fits under the cap with what is spent and reserved."""
        if self.max_cost is None:
            return True
        if not self.fits(amount):
            return False
        self.reserved += amount
        self.holding += 1
        return True

    def settle(self, reserved: float, actual: float | None) -> None:
        if self.max_cost is not None:
            self.holding = max(0, self.holding - 1)
        self.reserved = max(0.0, self.reserved - reserved) if self.holding else 0.0
        if actual is not None:
            self.spent += actual

    def observe_input(self, prompt_chars: int, real_tokens: int | None) -> None:
        if real_tokens:
            self._ratio = max(self._ratio, real_tokens / estimate_tokens(prompt_chars))

    def observe_output(self, key: ReplyKind, tokens: int | None) -> None:
        if tokens is not None and tokens >= 0:
            self._out.setdefault(key, deque(maxlen=KEEP_OBSERVED)).append(tokens)


PriceLookup = Callable[[str, str], Price | None]


def price_for(spec: JudgeSpec) -> Price | None:
    """The judge's prices (`providers.pricing`: its spec's `price_in`/`price_out`, then the price
    file in $JUDGEPANEL_PRICES, then the built-in table; `sim` is free); None when unknown."""
    from judgepanel.providers.pricing import default_table

    p = default_table().for_spec(spec)
    return None if p is None else Price(p.input, p.output, p.cache_read, p.cache_write, p.batch_discount)
