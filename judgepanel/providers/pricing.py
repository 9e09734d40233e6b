"""What a call costs: a price table in USD per million input / output / cache tokens.

    cost = (input_tokens − cache_read − cache_write) · price_in / 10⁶
         + cache_read · price_cache_read / 10⁶ + cache_write · price_cache_write / 10⁶
         + output_tokens · price_out / 10⁶

`input_tokens` is the whole prompt (both providers' counts are normalised to that, see
`providers.base.ChatResult`); the cache counts are parts of it. A batch API call costs
`cost · (1 − batch_discount)`: both providers' batch APIs halve every rate, cache rates included
(Anthropic states that the discounts stack; OpenAI's batch price list carries cached-input rates
at half the realtime ones as well).

A price nobody told us is unknown, and an unknown price gives `None`, never 0: a plan that shows
"$0.00" for a model we cannot price would be a lie. A price of zero is a price: a judge given
`price_in=0&price_out=0` (a local server) costs 0, cached prompt tokens and batch calls included. Lookup order for a judge:

1. the spec's own `price_in` and `price_out` parameters (both needed);
2. the file named by `$JUDGEPANEL_PRICES` (TOML, JSON or YAML), then the built-in table below;
   keys are `provider:model` or `model`, and a dated snapshot (`gpt-4o-mini-2024-07-18`,
   `claude-haiku-4-5-20251001`) falls back to its undated name;
3. `sim:*` costs 0 (it is simulated).

A price file maps names to `{input = …, output = …}` with optional `cache_read`, `cache_write`
(USD per million tokens) and `batch_discount` (a share, 0.5 = half price), optionally under a
top-level `models` key::

    [models."gpt-4o-mini"]
    input = 0.15
    output = 0.60
    cache_read = 0.075
    batch_discount = 0.5

A spec's `price_cache_read`, `price_cache_write` and `batch_discount` parameters do the same.
A spec that gives `price_in`/`price_out` but neither cache rate gets them assumed from its
provider's published ratios (`assumed_cache_rates`, issue 28 §5), said in `Price.assumed`:
Anthropic reads at 0.1 × and writes at 1.25 × `price_in`; OpenAI's own API a built-in model's
own ratio; any other (an OpenAI-compatible server) both at `price_in`, the most a cached token can
cost there. Otherwise a rate nobody gave stays unknown: a call that read or wrote cached tokens
without a known rate for them has an unknown cost, and a plan without a batch discount has an
unknown batch cost.

The built-in prices are list prices per million tokens as published by OpenAI
(platform.openai.com/docs/pricing: cached input at 50 % of input for gpt-4o / gpt-4o-mini, 25 %
for the gpt-4.1 family; no charge for writing the cache, so `cache_write` = `input`) and Anthropic
(docs.claude.com, "Pricing": 5-minute cache writes at 1.25 × input, cache reads at 0.1 × input);
both batch APIs at 50 % off. They change, so check them and override them with a file when money
matters.
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from judgepanel.errors import BadInput
from judgepanel.inputs import check_yaml_depth, read_text
from judgepanel.providers.spec import JudgeSpec

PRICES_ENV = "JUDGEPANEL_PRICES"
_DATED = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8})$")


@dataclass(frozen=True)
class Price:
    """USD per million tokens; the cache rates and the batch discount are None when unknown."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    batch_discount: float | None = None  # share of the cost a batch API call saves
    # which rates were assumed rather than given, in words (None: every rate was given or listed)
    assumed: str | None = field(default=None, compare=False)

    def cost(
        self,
        input_tokens: int | None,
        output_tokens: int | None,
        cache_read_tokens: int | None = None,
        cache_write_tokens: int | None = None,
    ) -> float | None:
        """USD for one call; None when a count it needs, or the rate of tokens it has, is unknown."""
        if input_tokens is None or output_tokens is None:
            return None
        read, write = cache_read_tokens or 0, cache_write_tokens or 0
        read_rate, write_rate = self.cache_rates()
        if (read and read_rate is None) or (write and write_rate is None):
            return None
        if min(input_tokens, output_tokens, read, write) < 0:
            return None  # a negative count would make a negative cost, and the budget grow
        uncached = max(0, input_tokens - read - write)
        total = (
            uncached * self.input
            + read * (read_rate or 0.0)
            + write * (write_rate or 0.0)
            + output_tokens * self.output
        ) / 1_000_000
        return total if math.isfinite(total) else None

    def cache_rates(self) -> tuple[float | None, float | None]:
        """The cache read and write rates; a free prompt (`input` 0, e.g. `price_in=0&price_out=0`
        for a local server, whose reused-prompt counts arrive as cached tokens) makes unknown
        cache rates free too: a cached copy of a free token costs nothing."""
        if self.input == 0:
            return (self.cache_read or 0.0, self.cache_write or 0.0)
        return (self.cache_read, self.cache_write)

    def batch_cost(self, *tokens: int | None) -> float | None:
        """`cost(*tokens)` for the same call made through the provider's batch API (its discount
        applies to every rate); None when the discount or a rate the call used is unknown, 0 for a
        free call."""
        return self.batch(self.cost(*tokens))

    def batch(self, cost: float | None) -> float | None:
        """What `cost` comes to through the provider's batch API; None when the discount is unknown
        (0 when the call costs nothing)."""
        if cost is None:
            return None
        if cost == 0:
            return 0.0
        if self.batch_discount is None:
            return None
        return cost * (1.0 - self.batch_discount)


def _openai(input: float, output: float, cached: float) -> Price:
    return Price(input, output, cache_read=cached, cache_write=input, batch_discount=0.5)


def _anthropic(input: float, output: float) -> Price:
    return Price(input, output, cache_read=input * 0.1, cache_write=input * 1.25, batch_discount=0.5)


BUILTIN: dict[str, Price] = {
    "openai:gpt-4o": _openai(2.50, 10.00, 1.25),
    "openai:gpt-4o-mini": _openai(0.15, 0.60, 0.075),
    "openai:gpt-4.1": _openai(2.00, 8.00, 0.50),
    "openai:gpt-4.1-mini": _openai(0.40, 1.60, 0.10),
    "openai:gpt-4.1-nano": _openai(0.10, 0.40, 0.025),
    "anthropic:claude-haiku-4-5": _anthropic(1.00, 5.00),
    "anthropic:claude-sonnet-4-5": _anthropic(3.00, 15.00),
    "anthropic:claude-sonnet-4-6": _anthropic(3.00, 15.00),
    "anthropic:claude-opus-4-7": _anthropic(5.00, 25.00),
}


_SPEC_RATES = {
    "price_cache_read": "cache_read",
    "price_cache_write": "cache_write",
    "batch_discount": "batch_discount",
}


class PriceTable:
    """Prices by `provider:model` or bare `model` name."""

    def __init__(self, prices: Mapping[str, Price] | None = None) -> None:
        self.prices = dict(prices or {})

    def lookup(self, model: str, provider: str | None = None) -> Price | None:
        if provider == "sim":
            return Price(0.0, 0.0, 0.0, 0.0, 0.0)
        names = [model]
        undated = _DATED.sub("", model)
        if undated != model:
            names.append(undated)
        providers = [provider] if provider is not None else ["openai", "anthropic"]
        for name in names:
            for prov in providers:
                if f"{prov}:{name}" in self.prices:
                    return self.prices[f"{prov}:{name}"]
            if name in self.prices:
                return self.prices[name]
        return None

    def cost(
        self, model: str, input_tokens: int | None, output_tokens: int | None, *, provider: str | None = None
    ) -> float | None:
        price = self.lookup(model, provider)
        return price.cost(input_tokens, output_tokens) if price is not None else None

    def for_spec(self, spec: JudgeSpec) -> Price | None:
        """The spec's own `price_in`/`price_out` when both are given, else the table's; the spec's
        `price_cache_read`, `price_cache_write` and `batch_discount` override the rates found."""
        p_in, p_out = spec.params.get("price_in"), spec.params.get("price_out")
        price: Price | None
        if p_in is not None and p_out is not None:
            price = Price(float(p_in), float(p_out))
            if not any(k in spec.params for k in ("price_cache_read", "price_cache_write")):
                price = assumed_cache_rates(price, spec, self)
        else:
            price = self.lookup(spec.model, spec.provider)
        if price is None:
            return None
        extra: dict[str, Any] = {
            field: float(value)
            for key, field in _SPEC_RATES.items()
            if isinstance(value := spec.params.get(key), int | float) and not isinstance(value, bool)
        }
        return replace(price, **extra) if extra else price

    def merged(self, other: Mapping[str, Price]) -> PriceTable:
        return PriceTable({**self.prices, **other})


def assumed_cache_rates(price: Price, spec: JudgeSpec, table: PriceTable | None = None) -> Price:
    """`price` (a spec's own `price_in`/`price_out`) with cache rates from its provider's
    published ratios, and `assumed` saying which: a judge priced by hand must not turn "spent
    unknown" the first time its provider reports a cached prompt token."""
    if price.input == 0:
        return price  # a free prompt's cache rates are free already (`cache_rates`)
    if spec.provider == "anthropic":
        return replace(
            price,
            cache_read=price.input * 0.1,
            cache_write=price.input * 1.25,
            assumed="cache reads at 0.1 × price_in, writes at 1.25 × (Anthropic's published ratios)",
        )
    listed = (table or PriceTable(BUILTIN)).lookup(spec.model, spec.provider)
    if (
        spec.provider == "openai"
        and spec.get("base_url") is None
        and listed is not None
        and listed.input > 0
        and listed.cache_read is not None
    ):
        share = listed.cache_read / listed.input
        return replace(
            price,
            cache_read=price.input * share,
            cache_write=price.input,
            assumed=f"cache reads at {share:g} × price_in, writes at price_in "
            f"(OpenAI's published ratio for {spec.model})",
        )
    return replace(
        price,
        cache_read=price.input,
        cache_write=price.input,
        assumed="cache reads and writes at price_in (no published ratio for this server)",
    )


def load_prices(path: str | Path) -> dict[str, Price]:
    """Read a TOML, JSON or YAML price file; `BadInput` with one clear line if it is wrong."""
    file = Path(path)
    if not file.exists():
        raise BadInput(f"cannot read price file {file}: it does not exist")
    text = read_text(file, "price file")  # a regular file of at most 1 MB (`judgepanel.inputs`)
    # PyYAML is imported for YAML price files only; its error class joins the caught ones then
    caught: tuple[type[Exception], ...] = (tomllib.TOMLDecodeError, ValueError)
    try:
        if file.suffix.lower() == ".toml":
            data: Any = tomllib.loads(text)
        elif file.suffix.lower() == ".json":
            data = json.loads(text)
        elif file.suffix.lower() in (".yaml", ".yml"):
            import yaml

            caught = (*caught, yaml.YAMLError, RecursionError)
            check_yaml_depth(text, f"price file {file}")
            data = yaml.safe_load(text)
        else:
            raise BadInput(f"price file {file} must end in .toml, .json, .yaml or .yml")
    except caught as exc:
        raise BadInput(f"price file {file} is not valid: {str(exc).splitlines()[0]}") from None
    if isinstance(data, dict) and isinstance(data.get("models"), dict):
        data = data["models"]
    if not isinstance(data, dict):
        raise BadInput(f"price file {file} must map model names to {{input, output}}")
    prices: dict[str, Price] = {}
    for name, entry in data.items():
        if not isinstance(entry, dict) or not {"input", "output"} <= set(entry):
            raise BadInput(
                f"price file {file}: {name!r} needs both 'input' and 'output' (USD per million tokens)"
            )
        try:
            optional: dict[str, Any] = {
                k: float(entry[k]) for k in ("cache_read", "cache_write", "batch_discount") if k in entry
            }
            price = Price(float(entry["input"]), float(entry["output"]), **optional)
        except (TypeError, ValueError):
            raise BadInput(f"price file {file}: {name!r} prices must be numbers") from None
        rates = (price.input, price.output, *optional.values())
        if not all(math.isfinite(r) for r in rates):
            # NaN compares false with everything: a NaN price would pass every cap check below
            raise BadInput(f"price file {file}: {name!r} prices must be finite numbers")
        if min(rates) < 0:
            raise BadInput(f"price file {file}: {name!r} prices must not be negative")
        if price.batch_discount is not None and price.batch_discount > 1:
            raise BadInput(f"price file {file}: {name!r} batch_discount is a share between 0 and 1")
        prices[str(name)] = price
    return prices


def default_table(environ: Mapping[str, str] | None = None) -> PriceTable:
    """The built-in prices, overridden by the file in `$JUDGEPANEL_PRICES` if set."""
    env = os.environ if environ is None else environ
    table = PriceTable(BUILTIN)
    path = env.get(PRICES_ENV)
    return table.merged(load_prices(path)) if path else table


def cost(
    model: str,
    input_tokens: int | None,
    output_tokens: int | None,
    *,
    provider: str | None = None,
    table: PriceTable | None = None,
) -> float | None:
    """USD for one call, or None when the price (or a token count) is unknown."""
    return (table or default_table()).cost(model, input_tokens, output_tokens, provider=provider)


def spec_cost(
    spec: JudgeSpec, input_tokens: int | None, output_tokens: int | None, *, table: PriceTable | None = None
) -> float | None:
    """USD for one call of this judge (its own price parameters first)."""
    price = (table or default_table()).for_spec(spec)
    return price.cost(input_tokens, output_tokens) if price is not None else None
