"""What a call costs: a price table in USD per million input / output tokens.

    cost = input_tokens · price_in / 10⁶ + output_tokens · price_out / 10⁶

A price nobody told us is unknown, and an unknown price gives `None`, never 0: a plan that shows
"$0.00" for a model we cannot price would be a lie. Lookup order for a judge:

1. the spec's own `price_in` and `price_out` parameters (both needed);
2. the file named by `$JUDGEPANEL_PRICES` (TOML, JSON or YAML), then the built-in table below;
   keys are `provider:model` or `model`, and a dated snapshot (`gpt-4o-mini-2024-07-18`,
   `claude-haiku-4-5-20251001`) falls back to its undated name;
3. `sim:*` costs 0 (it is simulated).

A price file maps names to `{input = …, output = …}`, optionally under a top-level `models` key::

    [models."gpt-4o-mini"]
    input = 0.15
    output = 0.60
    batch = 0.5     # optional: what a batch-API call costs as a fraction of the list price

Batch rate: calls made through the providers' batch APIs (`campaign run --batch`: OpenAI Batch,
Anthropic Message Batches) are billed at `batch` × the list prices, input and output alike. Both
providers publish a 50 % batch discount, so `batch` defaults to 0.5 (`BATCH_DISCOUNT`); a price
file may set it per model (1.0: no discount), and a spec may say `batch_discount=`.

The built-in prices are list prices per million tokens as published by OpenAI and Anthropic; they
change, so check them and override them with a file when money matters.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from judgepanel.errors import BadInput
from judgepanel.providers.spec import JudgeSpec

PRICES_ENV = "JUDGEPANEL_PRICES"
BATCH_DISCOUNT = 0.5  # batch-API calls cost this fraction of the list price (OpenAI and Anthropic)
_DATED = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8})$")


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    batch: float = BATCH_DISCOUNT  # batch-API calls cost this fraction of the prices above

    def cost(self, input_tokens: int | None, output_tokens: int | None) -> float | None:
        if input_tokens is None or output_tokens is None:
            return None
        return (input_tokens * self.input + output_tokens * self.output) / 1_000_000

    def batch_cost(self, input_tokens: int | None, output_tokens: int | None) -> float | None:
        """The same call made through a provider's batch API."""
        full = self.cost(input_tokens, output_tokens)
        return None if full is None else full * self.batch


BUILTIN: dict[str, Price] = {
    "openai:gpt-4o": Price(2.50, 10.00),
    "openai:gpt-4o-mini": Price(0.15, 0.60),
    "openai:gpt-4.1": Price(2.00, 8.00),
    "openai:gpt-4.1-mini": Price(0.40, 1.60),
    "openai:gpt-4.1-nano": Price(0.10, 0.40),
    "anthropic:claude-haiku-4-5": Price(1.00, 5.00),
    "anthropic:claude-sonnet-4-5": Price(3.00, 15.00),
    "anthropic:claude-sonnet-4-6": Price(3.00, 15.00),
    "anthropic:claude-opus-4-7": Price(5.00, 25.00),
}


class PriceTable:
    """Prices by `provider:model` or bare `model` name."""

    def __init__(self, prices: Mapping[str, Price] | None = None) -> None:
        self.prices = dict(prices or {})

    def lookup(self, model: str, provider: str | None = None) -> Price | None:
        if provider == "sim":
            return Price(0.0, 0.0)
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
        """The spec's own `price_in`/`price_out` when both are given, else the table's."""
        p_in, p_out = spec.params.get("price_in"), spec.params.get("price_out")
        price = (
            Price(float(p_in), float(p_out))
            if p_in is not None and p_out is not None
            else self.lookup(spec.model, spec.provider)
        )
        discount = spec.params.get("batch_discount")
        if price is not None and discount is not None:
            price = Price(price.input, price.output, float(discount))
        return price

    def merged(self, other: Mapping[str, Price]) -> PriceTable:
        return PriceTable({**self.prices, **other})


def load_prices(path: str | Path) -> dict[str, Price]:
    """Read a TOML, JSON or YAML price file; `BadInput` with one clear line if it is wrong."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"cannot read price file {file}: {exc.strerror or exc}") from None
    try:
        if file.suffix.lower() == ".toml":
            data: Any = tomllib.loads(text)
        elif file.suffix.lower() == ".json":
            data = json.loads(text)
        elif file.suffix.lower() in (".yaml", ".yml"):
            data = yaml.safe_load(text)
        else:
            raise BadInput(f"price file {file} must end in .toml, .json, .yaml or .yml")
    except (tomllib.TOMLDecodeError, ValueError, yaml.YAMLError) as exc:
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
            price = Price(
                float(entry["input"]), float(entry["output"]), float(entry.get("batch", BATCH_DISCOUNT))
            )
        except (TypeError, ValueError):
            raise BadInput(f"price file {file}: {name!r} prices must be numbers") from None
        if price.input < 0 or price.output < 0:
            raise BadInput(f"price file {file}: {name!r} prices must not be negative")
        if not 0 <= price.batch <= 1:
            raise BadInput(f"price file {file}: {name!r} batch must be a fraction between 0 and 1")
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
