"""`max_cost`: a cap on a campaign's total spend, across runs, workers and batch submissions.

The cap is stored on the campaign (`campaign.max_cost_usd`): `max_cost:` in its campaign file, set
(or raised) by `campaign run --max-cost USD`, kept for every later run, worker and `--batch` run.

Before each call the runner reserves an estimate of its cost: the prompt's tokens (characters ÷
`CHARS_PER_TOKEN`, scaled up by the largest ratio of real to estimated input tokens seen so far,
and by `SAFETY`) plus an output allowance, at the judge's prices. The allowance is the judge's
`max_tokens` (or `DEFAULT_OUTPUT_ALLOWANCE` without one) until real usage is known. Once replies
of the same judge to the same template have been seen (in this run, or stored from earlier runs),
it is `FEW_MARGIN` (1.5) times the longest of them while there are fewer than `MIN_OBSERVED` (20),
then `TAIL_MARGIN` (1.25) times the longest of them (`OUTPUT_QUANTILE` = 1.0 of the last
`KEEP_OBSERVED`); never more than `max_tokens`. (It was their p95 while the cap was per run; a cap
users read as the campaign's total must not be overshot by the one reply in twenty longer than
that.) A call is
sent only once its estimate is reserved in the database (`store.budget`), where

    stored cost of the campaign's replies + every live owner's reservations + estimate ≤ max_cost

is checked under the campaign row's write lock, so concurrent runs and workers cannot reserve the
same money twice. A run reserves a few calls' worth at a time (`SLICE_CALLS`) to save round trips,
and a call's reservation goes back in the transaction that stores its reply (with its real cost).
A call that does not fit while this run has calls in flight or replies not yet stored waits for
them (their real cost is usually far below their reservation); the run stops on the budget only
when a call does not fit with nothing of its own outstanding. So the campaign spends close to the
cap — it stops once the next call's reservation no longer fits, so typically within one call's
reservation of it — and exceeds it only when a reply turns out longer than every reply of its
judge seen before (and than the slack left by the other calls in flight, which cost less than
they reserved): by at most the difference between `max_tokens` and the reserved output
allowance, at the output price, per call in flight. Calls
answered from the cache cost nothing.

Unknown prices are explicit: a budget cannot be enforced for a judge whose price is unknown, so
`check_prices` refuses to start rather than treating the unknown as free.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence

from judgepanel.errors import BadInput
from judgepanel.providers.pricing import Price, default_table
from judgepanel.providers.spec import JudgeSpec

CHARS_PER_TOKEN = 4.0
SAFETY = 1.25
DEFAULT_OUTPUT_ALLOWANCE = 1024
SLICE_CALLS = 4  # a run's reservation grows by about this many calls' estimates at a time
MIN_OBSERVED = 20  # replies of a judge to a template before their longest is trusted
FEW_MARGIN = 1.5  # with fewer: this many times the longest reply seen
OUTPUT_QUANTILE = 1.0  # the longest reply seen…
TAIL_MARGIN = 1.25  # …times this, once MIN_OBSERVED replies are known
KEEP_OBSERVED = 1000  # most recent output-token counts kept per judge and template
EXPECTED_OUTPUT = 150  # a reply's expected length before any is seen (as `campaign plan` assumes)

ReplyKind = tuple[str, str]  # (judge name, template name): whose replies to which prompt


def estimate_tokens(chars: int) -> int:
    return max(1, math.ceil(chars / CHARS_PER_TOKEN))


def _reserve(price: Price, input_tokens: int, output_tokens: int) -> float:
    """What a call of this many tokens is reserved at, without prompt caching (every input token
    at the input rate); a cost `Price.cost` cannot give (not finite) reserves without bound, so
    the call never fits a cap."""
    cost = price.cost(input_tokens, output_tokens)
    return math.inf if cost is None else cost


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
    """This run's side of its campaign's cap (all judges share one budget).

    The database grants this run a hold (`store.budget.reserve`) under the campaign's cap, shared
    with every other run and worker; calls reserve from the hold locally (`take`), and what a call
    reserved goes back to the database in the transaction that stores its reply (`released`), when
    its real cost is stored instead. `spent` is what this run's calls cost."""

    def __init__(
        self,
        max_cost: float | None,
        spent: float = 0.0,
        observed: Mapping[ReplyKind, Sequence[int]] | None = None,
    ) -> None:
        self.max_cost = max_cost
        self.spent = spent
        self.held = 0.0  # granted to this run by the database and not yet released
        self.reserved = 0.0  # of `held`: reserved by calls whose reservation is not yet released
        self.holding = 0  # calls in flight (reserved, not settled)
        self.unreleased = 0  # reservations not yet released by a commit (in flight or settled)
        self._ratio = 1.0  # largest real/estimated input-token ratio seen
        self._out: dict[ReplyKind, deque[int]] = {
            k: deque(v[:KEEP_OBSERVED], maxlen=KEEP_OBSERVED) for k, v in (observed or {}).items()
        }

    def output_allowance(self, max_output: int | None, key: ReplyKind | None = None) -> int:
        """Output tokens to reserve for a call: `max_output` while no reply of this judge to this
        template is known; then `FEW_MARGIN` × the longest seen until MIN_OBSERVED replies are
        known, and from then on TAIL_MARGIN × their OUTPUT_QUANTILE (the longest); never more than
        `max_output`."""
        cap = max_output or DEFAULT_OUTPUT_ALLOWANCE
        seen = self._out.get(key) if key is not None else None
        if not seen:
            return cap
        if len(seen) < MIN_OBSERVED:
            return max(1, min(cap, math.ceil(FEW_MARGIN * max(seen))))
        return max(1, min(cap, math.ceil(TAIL_MARGIN * upper_quantile(seen, OUTPUT_QUANTILE))))

    def estimate(
        self, price: Price | None, prompt_chars: int, max_output: int | None, key: ReplyKind | None = None
    ) -> float:
        if price is None:
            return 0.0
        tokens_in = estimate_tokens(prompt_chars) * self._ratio * SAFETY
        return _reserve(price, math.ceil(tokens_in), self.output_allowance(max_output, key))

    def planned(
        self, price: Price | None, prompt_chars: int, max_output: int | None, key: ReplyKind | None = None
    ) -> float:
        """What a call will reserve, for planning which calls to make (`runner.units`): as
        `estimate`, except that before any reply of the judge to the template is seen the output
        allowance is `FEW_MARGIN` × `EXPECTED_OUTPUT` tokens (at most `max_output`) rather than the
        whole `max_output`: the first reservations are deliberately pessimistic, a plan built on
        them would buy nothing."""
        if price is None:
            return 0.0
        seen = self._out.get(key) if key is not None else None
        if seen:
            return self.estimate(price, prompt_chars, max_output, key)
        out = math.ceil(FEW_MARGIN * EXPECTED_OUTPUT)
        if max_output:
            out = min(out, max_output)
        return _reserve(price, math.ceil(estimate_tokens(prompt_chars) * self._ratio * SAFETY), out)

    def take(self, amount: float) -> bool:
        """Reserve `amount` from this run's hold if it has that much left (always, without a cap)."""
        if self.max_cost is None:
            return True
        if self.reserved + amount > self.held + 1e-12:
            return False
        self.reserved += amount
        self.holding += 1
        self.unreleased += 1
        return True

    def shortfall(self, amount: float) -> float:
        """What the hold lacks for a call reserving `amount`."""
        return max(0.0, amount - (self.held - self.reserved))

    def granted(self, amount: float) -> None:
        self.held += amount

    def settle(self, actual: float | None) -> None:
        """A call ended; its reservation stays until its reply is stored (`released`)."""
        if self.max_cost is not None:
            self.holding = max(0, self.holding - 1)
        if actual is not None:
            self.spent += actual

    def released(self, amounts: Sequence[float]) -> None:
        """Reservations went back to the database with the replies they were made for."""
        total = sum(amounts)
        self.held -= total
        self.reserved -= total
        self.unreleased = max(0, self.unreleased - len(amounts))
        if not self.unreleased:
            self.held -= self.reserved  # floats: nothing is reserved now
            self.reserved = 0.0

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
    return default_table().for_spec(spec)


def unknown_price_advice(judges: Sequence[str]) -> str:
    """What to give so that an unknown cost becomes known (said wherever "unknown" is)."""
    return (
        f"no price known for {', '.join(judges)}: add price_in=…&price_out=… (USD per million "
        "tokens) to the judge spec, or list the model in a price file ($JUDGEPANEL_PRICES)"
    )


def assumed_rates_note(judge: str, price: Price | None) -> str | None:
    """The warning for a judge whose calls used cache rates nobody gave (None when none were assumed)."""
    if price is None or price.assumed is None:
        return None
    return (
        f"{judge}: prompt-cache tokens priced with {price.assumed}; give price_cache_read=… and "
        "price_cache_write=… (USD per million tokens) in its spec to set them"
    )
