from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgepanel.errors import BadInput
from judgepanel.providers.pricing import (
    BUILTIN,
    Price,
    PriceTable,
    cost,
    default_table,
    load_prices,
    spec_cost,
)
from judgepanel.providers.spec import parse_spec


def test_unknown_price_is_none_never_zero() -> None:
    table = PriceTable(BUILTIN)
    assert table.lookup("my-local-model", "openai") is None
    assert cost("my-local-model", 1000, 1000, provider="openai", table=table) is None
    assert cost("gpt-4o-mini", None, 10, table=table) is None  # unknown tokens: unknown cost too


def test_cost_formula_by_hand() -> None:
    table = PriceTable({"openai:m": Price(0.15, 0.60)})
    # 2,000 in × $0.15/M + 500 out × $0.60/M = 0.0003 + 0.0003
    assert cost("m", 2000, 500, provider="openai", table=table) == pytest.approx(0.0006)
    assert table.cost("m", 0, 0, provider="openai") == 0.0


def test_dated_snapshots_and_bare_names() -> None:
    table = PriceTable(BUILTIN)
    assert table.lookup("gpt-4o-mini-2024-07-18", "openai") == BUILTIN["openai:gpt-4o-mini"]
    assert table.lookup("claude-haiku-4-5-20251001", "anthropic") == BUILTIN["anthropic:claude-haiku-4-5"]
    assert table.lookup("gpt-4o-mini") == BUILTIN["openai:gpt-4o-mini"]
    # a longer name is not its prefix's model: gpt-4o-audio is not priced as gpt-4o
    assert table.lookup("gpt-4o-audio-preview", "openai") is None
    assert table.lookup("anything", "sim") == Price(0.0, 0.0)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("prices.toml", '[models."my-model"]\ninput = 1.5\noutput = 2\n'),
        ("prices.json", json.dumps({"my-model": {"input": 1.5, "output": 2}})),
        ("prices.yaml", "models:\n  my-model: {input: 1.5, output: 2}\n"),
    ],
)
def test_price_files_in_three_formats(
    tmp_path: Path, name: str, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert load_prices(path) == {"my-model": Price(1.5, 2.0)}
    monkeypatch.setenv("JUDGEPANEL_PRICES", str(path))
    assert default_table().lookup("my-model", "openai") == Price(1.5, 2.0)
    assert default_table().lookup("gpt-4o", "openai") == BUILTIN["openai:gpt-4o"]  # built-ins stay


@pytest.mark.parametrize(
    ("name", "text", "fragment"),
    [
        ("p.toml", "[models.m]\ninput = 1\n", "needs both"),
        ("p.json", '{"m": {"input": "x", "output": 1}}', "numbers"),
        ("p.json", "{not json", "not valid"),
        ("p.txt", "", "must end in"),
        ("p.yaml", "m: {input: -1, output: 1}\n", "negative"),
    ],
)
def test_bad_price_files(tmp_path: Path, name: str, text: str, fragment: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(BadInput, match=fragment):
        load_prices(path)
    with pytest.raises(BadInput, match="cannot read"):
        load_prices(tmp_path / "missing.toml")


def test_spec_prices_win() -> None:
    spec = parse_spec("openai:gpt-4o-mini?price_in=1&price_out=2")
    assert spec_cost(spec, 1_000_000, 1_000_000, table=PriceTable(BUILTIN)) == pytest.approx(3.0)
    assert spec_cost(parse_spec("openai:qwen?price_in=1"), 10, 10, table=PriceTable(BUILTIN)) is None


def test_batch_rate_default_file_and_spec() -> None:
    # 2,000 in × $2/M + 1,000 out × $8/M = 0.004 + 0.008 = 0.012 list; batch half of it
    assert Price(2.0, 8.0).batch_cost(2000, 1000) == pytest.approx(0.006)
    assert Price(2.0, 8.0, 1.0).batch_cost(2000, 1000) == pytest.approx(0.012)
    assert Price(2.0, 8.0).batch_cost(None, 1000) is None
    table = PriceTable(BUILTIN)
    spec = parse_spec("openai:gpt-4o-mini?batch_discount=0.25")
    price = table.for_spec(spec)
    assert price is not None and price.batch == 0.25
    assert price.batch_cost(1_000_000, 0) == pytest.approx(0.15 * 0.25)


def test_price_file_batch_rate(tmp_path: Path) -> None:
    f = tmp_path / "p.toml"
    f.write_text('[models."m"]\ninput = 1\noutput = 2\nbatch = 0.4\n[models."n"]\ninput = 1\noutput = 2\n')
    prices = load_prices(f)
    assert prices["m"].batch == 0.4 and prices["n"].batch == 0.5
    f.write_text('[models."m"]\ninput = 1\noutput = 2\nbatch = 1.5\n')
    with pytest.raises(BadInput, match="batch must be a fraction"):
        load_prices(f)
