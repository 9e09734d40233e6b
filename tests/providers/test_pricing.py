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
    assert table.lookup("anything", "sim") == Price(0.0, 0.0, 0.0, 0.0, 0.0)


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
        ("p.yaml", "m: {input: [1, output: 1}\n", "price file .* is not valid: "),  # a YAML syntax error
        ("p.toml", "[models.m\n", "price file .* is not valid: "),
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


def test_cache_and_batch_cost_by_hand() -> None:
    p = Price(3.0, 15.0, cache_read=0.30, cache_write=3.75, batch_discount=0.5)
    # 10,000 prompt tokens of which 6,000 read and 2,000 written; 400 out:
    # 2,000 × 3 + 6,000 × 0.30 + 2,000 × 3.75 + 400 × 15 = 6,000 + 1,800 + 7,500 + 6,000 = 21,300 µ$
    assert p.cost(10_000, 400, 6_000, 2_000) == pytest.approx(0.0213)
    assert p.cost(10_000, 400) == pytest.approx((10_000 * 3 + 400 * 15) / 1e6)
    assert p.batch(p.cost(10_000, 400, 6_000, 2_000)) == pytest.approx(0.01065)
    # a rate nobody gave is unknown, and so is what used it; no tokens of that kind: still priced
    bare = Price(3.0, 15.0)
    assert bare.cost(10_000, 400, 6_000, 0) is None and bare.cost(10_000, 400, 0, 2_000) is None
    assert bare.cost(10_000, 400, 0, 0) == pytest.approx(0.036)
    assert bare.batch(0.036) is None


def test_builtin_cache_rates_follow_the_providers_rules() -> None:
    for name, p in BUILTIN.items():
        assert p.batch_discount == 0.5
        assert p.cache_read is not None and p.cache_write is not None
        if name.startswith("anthropic:"):
            assert (p.cache_read, p.cache_write) == pytest.approx((p.input * 0.1, p.input * 1.25))
        else:
            assert p.cache_write == p.input and p.cache_read < p.input  # OpenAI: writes are free


def test_price_file_and_spec_carry_cache_and_batch_rates(tmp_path: Path) -> None:
    f = tmp_path / "p.toml"
    f.write_text(
        "[models.m]\ninput = 1\noutput = 2\ncache_read = 0.1\ncache_write = 1.25\nbatch_discount = 0.5\n"
    )
    assert load_prices(f)["m"] == Price(1.0, 2.0, 0.1, 1.25, 0.5)
    f.write_text("[models.m]\ninput = 1\noutput = 2\nbatch_discount = 1.5\n")
    with pytest.raises(BadInput, match="batch_discount"):
        load_prices(f)
    f.write_text("[models.m]\ninput = 1\noutput = 2\ncache_read = -1\n")
    with pytest.raises(BadInput, match="negative"):
        load_prices(f)
    spec = parse_spec("openai:x?price_in=2&price_out=8&price_cache_read=0.5&batch_discount=0.5")
    assert PriceTable({}).for_spec(spec) == Price(2.0, 8.0, 0.5, None, 0.5)
    # overriding one rate of a table price keeps the others
    spec = parse_spec("openai:gpt-4o-mini?price_cache_read=0.01")
    assert PriceTable(BUILTIN).for_spec(spec) == Price(0.15, 0.60, 0.01, 0.15, 0.5)


def test_batch_discount_from_table_spec_and_runner_price() -> None:
    # 2,000 in × $2/M + 1,000 out × $8/M = 0.004 + 0.008 = 0.012 list; a 50 % discount halves it
    assert Price(2.0, 8.0, batch_discount=0.5).batch(Price(2.0, 8.0).cost(2000, 1000)) == pytest.approx(0.006)
    assert Price(2.0, 8.0, batch_discount=0.0).batch(0.012) == pytest.approx(0.012)
    assert Price(2.0, 8.0, batch_discount=0.5).batch(None) is None
    table = PriceTable(BUILTIN)
    price = table.for_spec(parse_spec("openai:gpt-4o-mini?batch_discount=0.25"))
    assert price is not None and price.batch_discount == 0.25
    # 1M input tokens at $0.15/M, 25 % off
    assert price.batch(price.cost(1_000_000, 0)) == pytest.approx(0.15 * 0.75)
    # the runner's price: the discount applies to the cached-token rates too; unknown stays unknown
    from judgepanel.runner.budget import price_for

    rp = price_for(parse_spec("anthropic:claude-sonnet-4-5"))
    assert rp is not None
    # 10,000 prompt tokens, 6,000 read at 0.30 and 2,000 written at 3.75; 400 out at 15
    assert rp.batch_cost(10_000, 400, 6_000, 2_000) == pytest.approx(0.0213 * 0.5)
    bare = price_for(parse_spec("openai:qwen?price_in=1&price_out=2"))
    assert bare is not None and bare.batch_cost(1000, 10, None, None) is None


def test_price_file_batch_discount(tmp_path: Path) -> None:
    f = tmp_path / "p.toml"
    f.write_text(
        '[models."m"]\ninput = 1\noutput = 2\nbatch_discount = 0.4\n[models."n"]\ninput = 1\noutput = 2\n'
    )
    prices = load_prices(f)
    assert prices["m"].batch_discount == 0.4 and prices["n"].batch_discount is None


def test_hand_prices_assume_the_providers_published_cache_ratios() -> None:
    """Issue 28 §5: a spec's `price_in`/`price_out` without cache rates gets its provider's
    published ratios (and says which), so a cached prompt token never makes a cost unknown."""
    table = PriceTable(BUILTIN)
    a = table.for_spec(parse_spec("anthropic:claude-x?price_in=2&price_out=10"))
    assert a is not None and (a.cache_read, a.cache_write) == pytest.approx((0.2, 2.5))
    assert a.assumed is not None and "Anthropic's published ratios" in a.assumed
    assert a.cost(1000, 100, 600, 200) == pytest.approx((200 * 2 + 600 * 0.2 + 200 * 2.5 + 100 * 10) / 1e6)
    # OpenAI's own API: the listed model's own read ratio (gpt-4o-mini: 0.075 / 0.15 = 0.5)
    o = table.for_spec(parse_spec("openai:gpt-4o-mini?price_in=0.3&price_out=1.2"))
    assert o is not None and (o.cache_read, o.cache_write) == pytest.approx((0.15, 0.3))
    assert o.assumed is not None and "gpt-4o-mini" in o.assumed
    # a server of its own (base_url) or an unlisted model: the input price, the most it can be
    for spec in (
        "openai:qwen?base_url=http://127.0.0.1:9/v1&price_in=1&price_out=2",
        "openai:new?price_in=1&price_out=2",
    ):
        p = table.for_spec(parse_spec(spec))
        assert p is not None and (p.cache_read, p.cache_write) == (1.0, 1.0)
        assert p.assumed is not None and "no published ratio" in p.assumed
    # given rates, a free prompt and listed prices assume nothing
    given = table.for_spec(parse_spec("anthropic:c?price_in=1&price_out=2&price_cache_read=0.5"))
    assert given is not None and given.assumed is None and given.cache_write is None
    free = table.for_spec(parse_spec("openai:q?price_in=0&price_out=0"))
    assert free is not None and free.assumed is None and free.cost(10, 10, 5, 5) == 0.0
    listed = table.for_spec(parse_spec("anthropic:claude-haiku-4-5"))
    assert listed is not None and listed.assumed is None
