"""Each failure the fake server can produce, through the real SDKs, lands in the right error class."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from judgepanel.errors import Fatal, ProviderError, RateLimited, Transient
from judgepanel.fake.server import FakeServer
from judgepanel.providers import ChatRequest, make_provider, parse_spec
from judgepanel.providers.base import Provider
from judgepanel.providers.errors import classify_status, parse_retry_after, redact

REQUEST = ChatRequest(
    messages=[{"role": "user", "content": "<candidate>The council approved the budget.</candidate>"}],
    schema_name="pointwise_verdict",
)
WIRES = ["openai", "anthropic"]


def spec_text(wire: str, fake: FakeServer, model: str) -> str:
    base = f"{fake.url}/v1" if wire == "openai" else fake.url
    return f"{wire}:{model}?base_url={base}"


async def call(wire: str, fake: FakeServer, model: str, timeout: float = 10) -> ProviderError:
    provider: Provider = make_provider(parse_spec(spec_text(wire, fake, model)))
    try:
        with pytest.raises(ProviderError) as info:
            await provider.complete(REQUEST, timeout=timeout)
    finally:
        await provider.aclose()
    return info.value


@pytest.fixture(params=WIRES)
def wire(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


async def test_429_with_retry_after_ms(wire: str, fake: FakeServer) -> None:
    err = await call(wire, fake, "j!429,retry_after=2.5")
    assert isinstance(err, RateLimited) and err.error_class == "rate_limit"
    assert err.status == 429 and err.retry_after == pytest.approx(2.5)  # ms header wins over "3"
    assert err.raw_body and "rate" in err.raw_body.lower()


async def test_429_with_retry_after_seconds_only(wire: str, fake: FakeServer) -> None:
    err = await call(wire, fake, "j!429s,retry_after=2.5")
    assert isinstance(err, RateLimited) and err.retry_after == 3.0


@pytest.mark.parametrize("status", ["500", "502", "503", "504", "529"])
async def test_server_errors_are_transient(wire: str, fake: FakeServer, status: str) -> None:
    err = await call(wire, fake, f"j!{status}")
    assert isinstance(err, Transient) and err.status == int(status)
    if status == "529" and wire == "anthropic":
        assert err.raw_body is not None and "overloaded_error" in err.raw_body


async def test_timeout_is_transient(wire: str, fake: FakeServer) -> None:
    err = await call(wire, fake, "j!hang", timeout=0.3)
    assert isinstance(err, Transient) and err.status is None and "0.3 s" in str(err)


async def test_connection_reset_is_transient(wire: str, fake: FakeServer) -> None:
    err = await call(wire, fake, "j!reset")
    assert isinstance(err, Transient) and err.status is None and "connection" in str(err)


@pytest.mark.parametrize(
    ("fault", "marker"), [("truncated", '{"id": '), ("html", "<html>"), ("missing", '{"id": ')]
)
async def test_malformed_200_is_transient_with_the_body_kept(
    wire: str, fake: FakeServer, fault: str, marker: str
) -> None:
    err = await call(wire, fake, f"j!{fault}")
    assert isinstance(err, Transient) and err.status == 200 and "malformed" in str(err)
    assert err.raw_body is not None and err.raw_body.startswith(marker)
    if fault == "missing":
        assert '"usage"' in err.raw_body


async def test_html_error_page_from_a_proxy_is_transient(wire: str, fake: FakeServer) -> None:
    err = await call(wire, fake, "j!html502")
    assert isinstance(err, Transient) and err.status == 502 and "502 Bad Gateway" in str(err)


@pytest.mark.parametrize("status", ["400", "401", "403", "404", "422"])
async def test_client_errors_are_fatal(wire: str, fake: FakeServer, status: str) -> None:
    err = await call(wire, fake, f"j!{status}")
    assert isinstance(err, Fatal) and err.status == int(status) and err.error_class == "fatal"


async def test_exhausted_quota_is_fatal(wire: str, fake: FakeServer) -> None:
    err = await call(wire, fake, "j!quota")
    assert isinstance(err, Fatal) and "not retried" in str(err)
    assert err.status == (429 if wire == "openai" else 402)


async def test_a_fault_that_clears_after_two_attempts(fake: FakeServer) -> None:
    provider = make_provider(parse_spec(spec_text("openai", fake, "j!503x2")))
    try:
        outcomes = []
        for _ in range(3):
            try:
                await provider.complete(REQUEST, timeout=10)
                outcomes.append("ok")
            except Transient:
                outcomes.append("transient")
    finally:
        await provider.aclose()
    assert outcomes == ["transient", "transient", "ok"]


def test_parse_retry_after_forms() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "1.5", "retry-after-ms": "250"}) == 0.25
    assert (
        parse_retry_after({"retry-after": format_datetime(now + timedelta(seconds=30), usegmt=True)}, now=now)
        == 30.0
    )
    assert (
        parse_retry_after({"retry-after": format_datetime(now - timedelta(seconds=30), usegmt=True)}, now=now)
        == 0.0
    )
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after-ms": "x", "retry-after": "2"}) == 2.0


def test_classification_table_and_redaction() -> None:
    key = "sk-proj-SECRETSECRETSECRET123"
    echoed = (
        f'{{"error": {{"message": "Incorrect API key provided: {key}", "type": "invalid_request_error"}}}}'
    )
    err = classify_status(401, echoed, {}, provider="openai", secrets=[key])
    assert (
        isinstance(err, Fatal)
        and key not in str(err)
        and err.raw_body is not None
        and key not in err.raw_body
    )
    # key-shaped strings are cut even when they are not the configured key
    assert redact(f"token {key} here") == "token sk-proj…[redacted] here"
    spend = '{"type": "error", "error": {"type": "rate_limit_error", "message": "x", "details": {"error_code": "enforced_spend_limit_reached"}}}'
    assert isinstance(classify_status(429, spend, {}, provider="anthropic"), Fatal)
    assert isinstance(classify_status(429, "{}", {"retry-after": "2"}, provider="openai"), RateLimited)
    assert isinstance(classify_status(408, "", {}, provider="openai"), Transient)
    assert isinstance(classify_status(503, "", {"retry-after": "4"}, provider="openai"), Transient)
    assert classify_status(503, "", {"retry-after": "4"}, provider="openai").retry_after == 4.0
    assert isinstance(classify_status(413, "", {}, provider="anthropic"), Fatal)


async def test_absurd_retry_after_values_reach_the_runner_as_said(wire: str, fake: FakeServer) -> None:
    """The classification keeps what the server announced (the runner caps it, see
    tests/runner/test_provider_hardening.py): a 2099 date is decades, `inf` is infinite."""
    far = await call(wire, fake, "j!429far")
    assert isinstance(far, RateLimited) and far.retry_after is not None and far.retry_after > 365 * 86400
    inf = await call(wire, fake, "j!429inf")
    assert isinstance(inf, RateLimited) and inf.retry_after == float("inf")


async def test_finish_reason_and_served_model_come_back_from_the_wire(wire: str, fake: FakeServer) -> None:
    provider = make_provider(parse_spec(spec_text(wire, fake, "j!length")))
    plain = make_provider(parse_spec(spec_text(wire, fake, "j")))
    try:
        cut = await provider.complete(REQUEST, timeout=10)
        whole = await plain.complete(REQUEST, timeout=10)
        fake.served_model = "qwen-local"
        served = await plain.served_model(timeout=5)  # type: ignore[attr-defined]
    finally:
        fake.served_model = None
        await provider.aclose()
        await plain.aclose()
    assert cut.finish_reason == ("length" if wire == "openai" else "max_tokens")
    assert whole.finish_reason == ("stop" if wire == "openai" else "end_turn")
    assert served == "qwen-local"


def test_redact_result_cleans_every_stored_field(monkeypatch: pytest.MonkeyPatch) -> None:
    from judgepanel.providers.base import ChatResult
    from judgepanel.providers.errors import redact_result

    key = "plain-local-server-secret"  # not key-shaped: only the configured value finds it
    monkeypatch.setenv("OPENAI_API_KEY", key)
    shaped = "sk-ant-api03-" + "Q" * 40
    result = ChatResult(
        text=f"I saw {key}. Verdict: A",
        raw_body=f'{{"model": "{key}", "x": "{shaped}"}}',
        model_returned=f"m+{key}",
        system_fingerprint=key,
        structured={
            "rationale": f"{key} {shaped}",
            "clauses": [{"id": "c1", "rationale": key}],
            "verdict": "A",
        },
    )
    clean = redact_result(result)
    fields = (
        clean.text,
        clean.raw_body,
        clean.model_returned,
        clean.system_fingerprint,
        repr(clean.structured),
    )
    assert all(key not in str(f) and "Q" * 20 not in str(f) for f in fields)
    assert clean.text == "I saw [redacted]. Verdict: A" and clean.system_fingerprint == "[redacted]"
    assert clean.structured is not None and clean.structured["verdict"] == "A"
    assert (clean.input_tokens, clean.http_status) == (result.input_tokens, result.http_status)
