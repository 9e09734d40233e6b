"""One capability table per provider; OpenAI-compatible servers probed once and what they refuse
dropped (one warning, not one 400 per job); Azure OpenAI through the SDK's Azure client."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from judgepanel.errors import BadInput, Fatal
from judgepanel.fake.server import FakeServer
from judgepanel.providers import ChatRequest, make_provider, parse_spec
from judgepanel.providers.capabilities import TABLE, capabilities, refused_parameter
from tests.providers.test_wire import SCHEMA, pairwise


@pytest.fixture
def refusing(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    """A server that lacks `seed` and structured output (as some local servers do)."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeServer(seed=5, refuse=("seed", "response_format")) as server:
        yield server


def test_the_table_decides_the_output_cap_parameter_and_temperature_range() -> None:
    assert capabilities("openai").max_tokens_param == "max_completion_tokens"
    assert capabilities("openai", "http://127.0.0.1:1/v1").max_tokens_param == "max_tokens"
    assert capabilities("openai", "http://127.0.0.1:1/v1").probe and not capabilities("openai").probe
    assert set(TABLE) == {"openai", "azure", "openai-compatible", "anthropic", "sim"}
    parse_spec("openai:m?temperature=1.5")
    with pytest.raises(BadInput, match="anthropic takes 0 to 1"):
        parse_spec("anthropic:m?temperature=1.5")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('{"error": {"message": "bad", "param": "seed", "code": "unsupported_parameter"}}', "seed"),
        (
            '{"error": {"message": "\'temperature\' must be <= 1", "param": "temperature", "code": "invalid_value"}}',
            None,
        ),
        (
            '{"error": {"message": "Unsupported parameter: \'max_completion_tokens\'"}}',
            "max_completion_tokens",
        ),
        ('{"detail": "response_format is not supported by this model"}', "response_format"),
        ('{"error": {"message": "messages must alternate roles"}}', None),
        ('{"error": {"message": "bad", "param": "stop"}}', None),  # not something we sent
    ],
)
def test_reading_which_parameter_a_400_refuses(body: str, expected: str | None) -> None:
    sent = ["seed", "temperature", "response_format", "max_tokens", "max_completion_tokens"]
    assert refused_parameter(body, sent) == expected


async def test_refused_parameters_are_learnt_once_and_dropped(refusing: FakeServer) -> None:
    spec = parse_spec(f"openai:local?base_url={refusing.url}/v1&seed=3&temperature=0")
    provider = make_provider(spec)
    request = pairwise(params=spec.request_params(), schema=SCHEMA)
    try:
        results = await asyncio.gather(*(provider.complete(request, timeout=10) for _ in range(8)))
    finally:
        await provider.aclose()
    assert all(r.http_status == 200 for r in results)
    statuses = [r.status for r in refusing.recent() if r.path == "/v1/chat/completions"]
    # the probe met two refusals, then every call went through: 2 × 400, 8 × 200 (not 8 × 400)
    assert statuses.count(400) == 2 and statuses.count(200) == 8
    last: dict[str, Any] = json.loads(refusing.recent()[-1].body)
    assert "seed" not in last and "response_format" not in last and last["temperature"] == 0.0
    warnings = provider.warnings
    assert len(warnings) == 2 and "'seed'" in "".join(warnings) and "'response_format'" in "".join(warnings)


async def test_api_openai_com_is_not_probed(refusing: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a base_url the family is `openai`: a 400 is the judge's own mistake, never dropped."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-notprobed-0123456789")
    spec = parse_spec("openai:gpt-x?seed=3")
    provider = make_provider(spec)
    provider._client = provider._client.with_options(base_url=f"{refusing.url}/v1")  # type: ignore[attr-defined]
    try:
        with pytest.raises(Fatal):
            await provider.complete(pairwise(params=spec.request_params()), timeout=10)
    finally:
        await provider.aclose()


async def test_azure_goes_through_the_deployment_path_with_its_own_key(
    refusing: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGEPANEL_KEY_ENVS", "JP_AZURE_KEY")  # issue 29: allowed locally
    monkeypatch.setenv("JP_AZURE_KEY", "azure-secret-5566778899aabbccddeeff")
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    spec = parse_spec(
        f"azure:my-deployment?endpoint={refusing.url}&api_version=2024-10-21&key_env=JP_AZURE_KEY&temperature=0"
    )
    assert spec.request_params() == {"temperature": 0.0}  # endpoint and version are not sent in the body
    provider = make_provider(spec)
    try:
        result = await provider.complete(
            ChatRequest(messages=pairwise().messages, params={"max_tokens": 50}), timeout=10
        )
    finally:
        await provider.aclose()
    assert result.http_status == 200
    (record,) = [r for r in refusing.recent() if r.status == 200]
    assert record.path == "/openai/deployments/my-deployment/chat/completions"
    assert record.headers["api-key"] == "azure-secret-5566778899aabbccddeeff"
    assert json.loads(record.body)["max_completion_tokens"] == 50


def test_azure_needs_its_endpoint_version_and_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in ("AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION", "AZURE_OPENAI_API_KEY"):
        monkeypatch.delenv(k, raising=False)
    with pytest.raises(BadInput, match="give endpoint="):
        make_provider(parse_spec("azure:d?api_version=2024-10-21"))
    with pytest.raises(BadInput, match="give api_version="):
        make_provider(parse_spec("azure:d?endpoint=https://x.openai.azure.com"))
    with pytest.raises(BadInput, match="AZURE_OPENAI_API_KEY is not set"):
        make_provider(parse_spec("azure:d?endpoint=https://x.openai.azure.com&api_version=2024-10-21"))
