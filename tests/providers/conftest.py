"""A fake OpenAI/Anthropic server on 127.0.0.1 for the provider tests (real HTTP, real SDKs)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from judgepanel.fake.server import FakeServer

OPENAI_KEY = "sk-test-OPENAI0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-test-ANTHROPIC0123456789abcdef"


@pytest.fixture(scope="session")
def fake_server() -> Iterator[FakeServer]:
    """One server for the session, in a thread with its own event loop; torn down at the end."""
    with FakeServer(seed=7, hang=30.0) as server:
        yield server


@pytest.fixture
def fake(fake_server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> FakeServer:
    """The server with its records cleared, and test keys (only) in the environment."""
    fake_server.reset()
    only_test_keys(monkeypatch, "JUDGEPANEL_PRICES")
    return fake_server


def only_test_keys(monkeypatch: pytest.MonkeyPatch, *unset: str) -> None:
    """The test keys as the providers' keys, and nothing else of theirs in the environment: their
    base-URL and token variables cleared, and `unset` too."""
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", *unset):
        monkeypatch.delenv(name, raising=False)
