"""Fixtures for runner tests: a small dataset with pairs, a fake provider server in a subprocess,
and an in-process scripted provider for exact control of replies and errors."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from sqlalchemy import Engine

from judgepanel.datasets.records import ItemRecord, ParsedDataset
from judgepanel.errors import ProviderError
from judgepanel.fake.server import SAMPLE_WORDS, FakeServerProcess
from judgepanel.providers.base import ChatRequest, ChatResult
from judgepanel.store.imports import import_parsed
from judgepanel.store.queries import create_pair_set

DATASET = "tiny"
PAIRS = "tiny-pairs"
FAKE_KEYS = {
    "OPENAI_API_KEY": "sk-judgepanel-test-OPENAI-9f8e7d6c5b4a3210",
    "ANTHROPIC_API_KEY": "sk-ant-judgepanel-test-ANTHROPIC-0a1b2c3d4e5f",
}


def make_items(n_groups: int, per_group: int, *, seed: int = 7) -> list[ItemRecord]:
    rng = random.Random(seed)
    items = []
    for g in range(n_groups):
        article = " ".join(rng.choice(SAMPLE_WORDS) for _ in range(80))
        vocab = article.split()
        for k in range(per_group):
            faithful = k / max(per_group - 1, 1)
            words = [
                rng.choice(vocab) if rng.random() < faithful else f"w{rng.randrange(999)}" for _ in range(30)
            ]
            items.append(
                ItemRecord(
                    external_id=f"g{g}-s{k}",
                    position=len(items),
                    group_key=f"g{g}",
                    input=article,
                    output=" ".join(words),
                    split="train" if g % 2 == 0 else "test",
                )
            )
    return items


def create_argv(
    name: str, *judges: str, dataset: str = DATASET, protocol: str = "pointwise", extra: Sequence[str] = ()
) -> tuple[str, ...]:
    """`campaign create NAME --dataset … --protocol … --judge J …` then `extra`, for `tests.helpers.cli`."""
    judge_args = [a for j in judges for a in ("--judge", j)]
    return ("campaign", "create", name, "--dataset", dataset, "--protocol", protocol, *judge_args, *extra)


def tiny_db(url: str, *, n_groups: int = 3, per_group: int = 4, pairs: int | None = None) -> Engine:
    """An engine on `url` migrated and holding `load_tiny`'s dataset: a new SQLite file or an empty
    PostgreSQL test database becomes a copy of the one such database built in this test run for
    these sizes (`tests.helpers.from_built`), instead of running the migrations for each test."""
    from judgepanel.store.engine import make_engine
    from tests.helpers import from_built

    def build(built: str) -> None:
        from judgepanel.store.migrate import upgrade

        eng = make_engine(built)
        try:
            upgrade(eng)
            load_tiny(eng, n_groups=n_groups, per_group=per_group, pairs=pairs)
        finally:
            eng.dispose()

    from_built(url, f"tiny-{n_groups}x{per_group}-pairs-{pairs}", build)
    return make_engine(url)


def load_tiny(engine: Engine, *, n_groups: int = 3, per_group: int = 4, pairs: int | None = None) -> None:
    items = make_items(n_groups, per_group)
    parsed = ParsedDataset(
        kind="items", source_hash=f"tiny-{n_groups}-{per_group}", items=items, annotators=[], labels=[]
    )
    import_parsed(engine, DATASET, parsed)
    create_pair_set(engine, DATASET, PAIRS, seed=1, sample=pairs)


@pytest.fixture
def keys_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for k, v in FAKE_KEYS.items():
        monkeypatch.setenv(k, v)
    return FAKE_KEYS


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServerProcess]:
    """A fake OpenAI/Anthropic server in its own process, no latency."""
    with FakeServerProcess("--retry-after", "0.05", "--seed", "3") as server:
        yield server


# ---------------------------------------------------------------- a scripted in-process provider

Script = Callable[[ChatRequest, int], "ChatResult | ProviderError"]


class ScriptedProvider:
    """A provider whose n-th call for a request returns or raises what `script(request, n)` says.
    Counts calls per request text, so tests can assert what was (not) re-bought."""

    def __init__(self, name: str, script: Script, *, delay: float = 0.0) -> None:
        self.name = name
        self.script = script
        self.delay = delay
        self.calls: list[ChatRequest] = []
        self._seen: dict[str, int] = {}

    async def complete(self, request: ChatRequest, *, timeout: float) -> ChatResult:
        key = request.messages[-1]["content"]
        n = self._seen.get(key, 0)
        self._seen[key] = n + 1
        self.calls.append(request)
        if self.delay:
            await asyncio.sleep(self.delay)
        out = self.script(request, n)
        if isinstance(out, ProviderError):
            raise out
        return out

    async def aclose(self) -> None:
        return None


def reply(text: str, **kw: Any) -> ChatResult:
    return ChatResult(
        text=text,
        raw_body='{"fake": true}',
        model_returned="scripted",
        input_tokens=100,
        output_tokens=20,
        **kw,
    )
