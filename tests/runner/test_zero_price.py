"""A judge priced at zero (`price_in=0&price_out=0`, what the unknown-price message suggests for a
local server) costs 0, not "unknown", even when its server reports reused prompt tokens as cached
ones (llama-server does): the real OpenAI SDK against the fake server's prompt cache."""

from __future__ import annotations

from sqlalchemy import Engine, select

from judgepanel.fake.server import FakeServerProcess
from judgepanel.providers.pricing import Price
from judgepanel.store.models import Response
from tests.helpers import cli
from tests.runner.conftest import create_argv, tiny_db


def test_a_zero_priced_judge_with_cached_tokens_costs_zero(sqlite_url: str) -> None:
    eng: Engine = tiny_db(sqlite_url, n_groups=1, per_group=4)
    with FakeServerProcess("--cache-min-tokens", "16") as fake:
        judge = f"openai:local?base_url={fake.url}/v1&price_in=0&price_out=0&concurrency=1"
        assert cli(*create_argv("free", judge), db=sqlite_url).code == 0
        assert cli("campaign", "plan", "free", "--json", db=sqlite_url).json()["cost_usd"] == 0.0
        ran = cli("campaign", "run", "free", "--json", "--max-cost", "0.01", db=sqlite_url).json()
    assert ran["done"] == 4 and ran["cost_usd"] == 0.0
    with eng.connect() as conn:
        rows = conn.execute(select(Response.cache_read_tokens, Response.cost_usd)).all()
    assert any((read or 0) > 0 for read, _ in rows), rows  # the server did report cached tokens
    assert [cost for _, cost in rows] == [0.0] * 4
    status = cli("campaign", "status", "free", "--json", db=sqlite_url).json()
    assert status["cost_usd"] == 0.0 and status["cost_list_usd"] == 0.0
    eng.dispose()


def test_zero_prices_make_unknown_cache_and_batch_rates_free() -> None:
    free = Price(0.0, 0.0)
    assert free.cost(1000, 50, 512, 128) == 0.0 and free.batch(free.cost(1000, 50, 512)) == 0.0
    paid = Price(1.0, 2.0)  # a paid prompt with unknown cache rates stays unknown
    assert paid.cost(1000, 50, 512) is None and paid.batch(paid.cost(1000, 50)) is None


def test_the_unknown_price_message_says_what_zero_prices_do(sqlite_url: str) -> None:
    eng = tiny_db(sqlite_url, n_groups=1, per_group=2)
    assert cli(*create_argv("nop", "openai:mystery?base_url=http://127.0.0.1:9/v1"), db=sqlite_url).code == 0
    r = cli("campaign", "run", "nop", "--max-cost", "1", db=sqlite_url)
    assert r.code == 2 and "price_in=0&price_out=0" in r.stderr and "cached prompt tokens" in r.stderr
    eng.dispose()
