"""`campaign run` against a server whose context window the prompts overflow (issue 34 §1): the
jobs fail as `context`, the advice gives the figures and says that only a larger window helps, a
plain re-run asks nothing, and `--retry-failed` after the window is raised finishes the campaign.
The real SDK against the fake server's llama.cpp imitation."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine

from judgepanel.fake.server import FakeServerProcess
from judgepanel.store.engine import make_engine
from judgepanel.store.migrate import upgrade
from tests.helpers import cli
from tests.runner.conftest import create_argv, load_tiny


@pytest.fixture(scope="module")
def small_window() -> Iterator[FakeServerProcess]:
    with FakeServerProcess("--context", "20") as server:
        yield server


def _calls(fake: FakeServerProcess) -> int:
    return int(fake.stats()["by_path"].get("/v1/chat/completions", 0))


def test_context_refusals_are_advised_and_retried_after_the_window_grows(
    sqlite_url: str, small_window: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    eng: Engine = make_engine(sqlite_url)
    upgrade(eng)
    load_tiny(eng, n_groups=1, per_group=3)
    judge = f"openai:local?base_url={small_window.url}/v1"
    assert cli(*create_argv("win", judge), db=sqlite_url).code == 0
    first = cli("campaign", "run", "win", "--json", db=sqlite_url).json(code=3)
    assert first["failed"] == 3 and first["errors"] == {"context": 3}
    advice = next(w for w in first["warnings"] if "context window" in w)
    assert re.search(r"the longest request was [\d,]+ tokens, the server accepts 20\b", advice)
    assert "Asking again unchanged cannot help" in advice
    assert "then `campaign run win --retry-failed` asks again" in advice
    status = cli("campaign", "status", "win", "--json", db=sqlite_url).json()
    assert status["failed_by_class"] == {"context": 3}
    small_window.set_context(0)
    before = _calls(small_window)
    plain = cli("campaign", "run", "win", "--json", db=sqlite_url).json(code=3)
    assert plain["calls"] == 0 and _calls(small_window) == before  # a refusal is not re-asked by itself
    retried = cli("campaign", "run", "win", "--retry-failed", "--json", db=sqlite_url).json()
    assert retried["done"] == 3 and retried["calls"] == 3 == _calls(small_window) - before
    eng.dispose()
