"""Both wire formats through the real SDKs against the fake server, over real HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest

from judgepanel.errors import BadInput, Fatal
from judgepanel.fake.server import FakeServer
from judgepanel.providers import ChatRequest, make_provider, parse_spec
from judgepanel.providers.anthropic_provider import SAMPLING_API_VERSION
from judgepanel.simjudge import SIM_FINGERPRINT
from tests.providers.conftest import ANTHROPIC_KEY, OPENAI_KEY

SCHEMA = {
    "type": "object",
    "properties": {"rationale": {"type": "string"}, "verdict": {"type": "string", "enum": ["A", "B", "tie"]}},
    "required": ["rationale", "verdict"],
    "additionalProperties": False,
}
MESSAGES = [
    {"role": "system", "content": "You are a careful judge."},
    {
        "role": "user",
        "content": "<source>The council approved the budget on Monday.</source>\n"
        "<candidate_a>The council approved the budget.</candidate_a>\n"
        "<candidate_b>Cars were banned forever by the football club.</candidate_b>",
    },
]


def pairwise(**kw: Any) -> ChatRequest:
    return ChatRequest(messages=MESSAGES, schema_name="pairwise_verdict", **kw)


def sent(fake: FakeServer) -> dict[str, Any]:
    (record,) = fake.recent()
    body: dict[str, Any] = json.loads(record.body)
    return body


async def test_openai_plain_text_via_spec_base_url(fake: FakeServer) -> None:
    spec = parse_spec(f"openai:judge-1?base_url={fake.url}/v1&temperature=0&seed=3&max_tokens=300")
    provider = make_provider(spec)
    try:
        result = await provider.complete(pairwise(params=spec.request_params()), timeout=10)
    finally:
        await provider.aclose()
    assert result.http_status == 200 and result.structured is None
    assert result.model_returned == "sim/judge-1" and result.system_fingerprint == SIM_FINGERPRINT
    assert result.input_tokens and result.output_tokens and result.latency_ms is not None
    assert json.loads(result.raw_body)["choices"][0]["message"]["content"] == result.text
    assert "[simulated]" in result.text
    body = sent(fake)
    assert body["model"] == "judge-1" and body["messages"] == MESSAGES
    # a custom endpoint gets max_tokens (what vLLM / llama.cpp / Ollama read), and no response_format
    assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.0, 3, 300)
    assert "response_format" not in body
    assert fake.recent()[0].path == "/v1/chat/completions"


async def test_openai_structured_output(fake: FakeServer) -> None:
    provider = make_provider(parse_spec(f"openai:judge-1?base_url={fake.url}/v1"))
    try:
        result = await provider.complete(pairwise(schema=SCHEMA), timeout=10)
    finally:
        await provider.aclose()
    assert result.structured is not None and result.structured == json.loads(result.text)
    assert result.structured["verdict"] == "A"
    fmt = sent(fake)["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"] == {"name": "pairwise_verdict", "schema": SCHEMA, "strict": True}


async def test_openai_structured_can_be_turned_off(fake: FakeServer) -> None:
    provider = make_provider(parse_spec(f"openai:judge-1?base_url={fake.url}/v1&structured=off"))
    try:
        result = await provider.complete(pairwise(schema=SCHEMA), timeout=10)
    finally:
        await provider.aclose()
    assert "response_format" not in sent(fake) and result.structured is None


async def test_anthropic_text_with_system_prompt_separated(fake: FakeServer) -> None:
    provider = make_provider(parse_spec(f"anthropic:claude-judge?base_url={fake.url}&max_tokens=400"))
    try:
        result = await provider.complete(pairwise(), timeout=10)
    finally:
        await provider.aclose()
    body = sent(fake)
    # the system text is one block marked for prompt caching; a request without cut points keeps
    # its user message a plain string
    assert body["system"] == [
        {"type": "text", "text": "You are a careful judge.", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["messages"] == MESSAGES[1:] and body["max_tokens"] == 400
    assert "tools" not in body and "temperature" not in body
    record = fake.recent()[0]
    assert record.path == "/v1/messages" and record.headers["anthropic-version"] == "2026-10-21"
    assert result.model_returned == "sim/claude-judge" and result.system_fingerprint is None
    assert result.structured is None and "[simulated]" in result.text
    assert json.loads(result.raw_body)["content"][0]["text"] == result.text


async def test_anthropic_forced_tool_gives_structured_output(fake: FakeServer) -> None:
    provider = make_provider(parse_spec(f"anthropic:claude-judge?base_url={fake.url}"))
    try:
        result = await provider.complete(pairwise(schema=SCHEMA), timeout=10)
    finally:
        await provider.aclose()
    body = sent(fake)
    assert body["tools"][0]["input_schema"] == SCHEMA and body["tools"][0]["name"] == "pairwise_verdict"
    assert body["tool_choice"] == {"type": "tool", "name": "pairwise_verdict"}
    raw = json.loads(result.raw_body)
    assert raw["content"][0]["type"] == "tool_use" and raw["stop_reason"] == "tool_use"
    assert result.structured == raw["content"][0]["input"]
    assert result.structured is not None and result.structured["verdict"] == "A"
    assert json.loads(result.text) == result.structured


async def test_anthropic_sampling_parameters_use_the_api_version_that_takes_them(fake: FakeServer) -> None:
    provider = make_provider(parse_spec(f"anthropic:claude-judge?base_url={fake.url}&temperature=0&top_k=5"))
    try:
        await provider.complete(pairwise(), timeout=10)
    finally:
        await provider.aclose()
    body = sent(fake)
    assert (body["temperature"], body["top_k"]) == (0.0, 5)
    assert fake.recent()[0].headers["anthropic-version"] == SAMPLING_API_VERSION
    # pinned to the SDK's own version, the API (and the fake) refuse temperature outright
    fake.reset()
    pinned = make_provider(
        parse_spec(f"anthropic:claude-judge?base_url={fake.url}&temperature=0&anthropic_version=2026-10-21")
    )
    try:
        with pytest.raises(Fatal, match="temperature") as info:
            await pinned.complete(pairwise(), timeout=10)
    finally:
        await pinned.aclose()
    assert info.value.status == 400


async def test_base_url_from_the_environment(fake: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"{fake.url}/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
    for text in ("openai:env-judge", "anthropic:env-judge"):
        provider = make_provider(parse_spec(text))
        try:
            result = await provider.complete(pairwise(), timeout=10)
        finally:
            await provider.aclose()
        assert result.model_returned == "sim/env-judge"
    assert [r.path for r in fake.recent()] == ["/v1/chat/completions", "/v1/messages"]
    # api.openai.com itself gets max_completion_tokens, which its newer models require
    body = json.loads(fake.recent()[0].body)
    assert "max_tokens" not in body


async def test_keys_go_over_the_wire_and_nowhere_else(fake: FakeServer) -> None:
    seen: list[str] = []
    for text in (f"openai:j?base_url={fake.url}/v1", f"anthropic:j?base_url={fake.url}"):
        for model in ("j", "j!401", "j!500", "j!truncated", "j!reset"):
            provider = make_provider(parse_spec(text.replace(":j?", f":{model}?")))
            seen.append(repr(provider))
            try:
                result = await provider.complete(pairwise(schema=SCHEMA), timeout=10)
                seen += [repr(result), result.raw_body, result.text]
            except Exception as exc:
                assert exc.__context__ is None and exc.__cause__ is None
                seen += [str(exc), repr(exc), repr(vars(exc))]
            finally:
                await provider.aclose()
    auth = [r.headers.get("authorization", "") + r.headers.get("x-api-key", "") for r in fake.recent()]
    assert sum(OPENAI_KEY in a for a in auth) == 5 and sum(ANTHROPIC_KEY in a for a in auth) == 5
    everything = "\n".join(seen)
    assert OPENAI_KEY not in everything and ANTHROPIC_KEY not in everything
    assert "sk-test" not in everything and "sk-ant-test" not in everything


async def test_missing_key_is_a_clear_bad_input(monkeypatch: pytest.MonkeyPatch, fake: FakeServer) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(BadInput, match="OPENAI_API_KEY is not set"):
        make_provider(parse_spec("openai:gpt-4o-mini"))
    with pytest.raises(BadInput, match="ANTHROPIC_API_KEY is not set"):
        make_provider(parse_spec("anthropic:claude-haiku-4-5"))
    # a local OpenAI-compatible server needs no key
    provider = make_provider(parse_spec(f"openai:local?base_url={fake.url}/v1"))
    try:
        result = await provider.complete(pairwise(), timeout=10)
    finally:
        await provider.aclose()
    assert result.http_status == 200
    assert fake.recent()[0].headers["authorization"] == "Bearer no-key"


def test_registry() -> None:
    sim = make_provider(parse_spec("sim:x"))
    assert sim.name == "sim:x"
    with pytest.raises(TypeError, match="unknown options"):
        make_provider(parse_spec("sim:x"), pool=3)


async def test_anthropic_marks_the_stable_parts_for_prompt_caching(fake: FakeServer) -> None:
    user = "Instructions and rubric.\n\nThe source:\n<source>\nS\n</source>\n\nCandidate A: x"
    cuts = (user.index("The source"), user.index("Candidate A"))
    request = ChatRequest(
        messages=[{"role": "system", "content": "Be fair."}, {"role": "user", "content": user}],
        cache_breaks=cuts,
    )
    for spec, marked in (("", True), ("&prompt_cache=off", False)):
        fake.reset()
        provider = make_provider(parse_spec(f"anthropic:claude-judge?base_url={fake.url}{spec}"))
        try:
            await provider.complete(request, timeout=10)
        finally:
            await provider.aclose()
        body = sent(fake)
        if not marked:
            assert body["system"] == "Be fair." and body["messages"][-1]["content"] == user
            continue
        blocks = body["messages"][-1]["content"]
        assert [b["text"] for b in blocks] == [user[: cuts[0]], user[cuts[0] : cuts[1]], user[cuts[1] :]]
        assert [b.get("cache_control") for b in blocks] == [{"type": "ephemeral"}] * 2 + [None]
        assert body["system"][0]["cache_control"] == {"type": "ephemeral"}


async def test_cached_token_counts_are_read_from_both_wires(fake: FakeServer) -> None:
    """Long enough to pass the providers' 1,024-token minimum; the second identical prefix hits."""
    stable = "Rubric line that stays the same for every item. " * 120  # ~1,500 tokens
    results = {}
    for wire, spec in (
        ("openai", f"openai:judge-o?base_url={fake.url}/v1"),
        ("anthropic", f"anthropic:judge-a?base_url={fake.url}"),
    ):
        provider = make_provider(parse_spec(spec))
        try:
            got = []
            for item in ("first item", "second item"):
                text = stable + "\n\n" + item
                request = ChatRequest(
                    messages=[{"role": "user", "content": text}], cache_breaks=(len(stable) + 2,)
                )
                got.append(await provider.complete(request, timeout=10))
        finally:
            await provider.aclose()
        results[wire] = got
    first, second = results["openai"]
    assert first.cache_read_tokens == 0 and first.cache_write_tokens == 0
    assert second.cache_read_tokens is not None and 1024 <= second.cache_read_tokens <= second.input_tokens
    assert second.cache_read_tokens % 128 == 0
    assert json.loads(second.raw_body)["usage"]["prompt_tokens"] == second.input_tokens
    first, second = results["anthropic"]
    assert (first.cache_read_tokens, second.cache_write_tokens) == (0, 0)
    assert first.cache_write_tokens == second.cache_read_tokens and second.cache_read_tokens >= 1024
    usage = json.loads(second.raw_body)["usage"]
    # Anthropic's input_tokens leaves the cached part out; ChatResult counts the whole prompt
    assert second.input_tokens == usage["input_tokens"] + usage["cache_read_input_tokens"]


@pytest.mark.parametrize("structured", [True, False])
async def test_openai_fast_path_sends_what_create_sends(fake: FakeServer, structured: bool) -> None:
    """The provider skips `chat.completions.create` (its per-call transform was the top CPU cost)
    and sends through the SDK's generic `post`: the server must see the same path, body and auth
    as from `create` with the same arguments, and the same SDK headers."""
    import openai

    extra = "" if structured else "&structured=off"
    spec = parse_spec(f"openai:gpt-4o-mini?base_url={fake.url}/v1&temperature=0&seed=3&max_tokens=300{extra}")
    provider = make_provider(spec)
    try:
        await provider.complete(pairwise(params=spec.request_params(), schema=SCHEMA), timeout=10)
    finally:
        await provider.aclose()
    (ours,) = fake.recent()
    body = json.loads(ours.body)
    assert ("response_format" in body) is structured
    fake.reset()
    client = openai.AsyncOpenAI(api_key=OPENAI_KEY, base_url=f"{fake.url}/v1", max_retries=0)
    try:
        await client.chat.completions.create(**body)
    finally:
        await client.close()
    (theirs,) = fake.recent()
    assert (ours.method, ours.path) == (theirs.method, theirs.path) == ("POST", "/v1/chat/completions")
    assert json.loads(ours.body) == json.loads(theirs.body)
    assert ours.headers["authorization"] == theirs.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    varying = {"x-stainless-read-timeout", "x-stainless-retry-count", "content-length", "x-stainless-timeout"}
    assert set(ours.headers) - varying == set(theirs.headers) - varying
    assert ours.headers["content-type"] == theirs.headers["content-type"] == "application/json"


async def _sent_by_provider_and_create(fake: FakeServer, spec: Any, request: ChatRequest) -> tuple[Any, Any]:
    """What the fake server received from the Anthropic provider for `request`, and then from the
    SDK's own `messages.create` called with the arguments the provider built for it."""
    import anthropic

    provider = make_provider(spec)
    try:
        await provider.complete(request, timeout=10)
        kwargs, _tool = provider._arguments(request)  # type: ignore[attr-defined]
    finally:
        await provider.aclose()
    (ours,) = fake.recent()
    fake.reset()
    client = anthropic.AsyncAnthropic(api_key=ANTHROPIC_KEY, base_url=fake.url, max_retries=0)
    try:
        await client.messages.create(model="claude-judge", timeout=10, **kwargs)
    finally:
        await client.close()
    (theirs,) = fake.recent()
    return ours, theirs


@pytest.mark.parametrize("extra", ["", "&temperature=0&top_p=0.9", "&structured=off&prompt_cache=off"])
async def test_anthropic_fast_path_sends_what_create_sends(fake: FakeServer, extra: str) -> None:
    """The Anthropic provider sends through the SDK's generic `post`, not
    `messages.with_raw_response.create`: the server must see the same path, body, version
    header, key and SDK headers as from `messages.create` with the provider's own arguments."""

    spec = parse_spec(f"anthropic:claude-judge?base_url={fake.url}&max_tokens=300{extra}")
    ours, theirs = await _sent_by_provider_and_create(
        fake, spec, pairwise(params=spec.request_params(), schema=SCHEMA)
    )
    assert (ours.method, ours.path) == (theirs.method, theirs.path) == ("POST", "/v1/messages")
    assert json.loads(ours.body) == json.loads(theirs.body)
    for name in ("anthropic-version", "content-type"):
        assert ours.headers[name] == theirs.headers[name]
    auth = {k: v for k, v in ours.headers.items() if k in ("x-api-key", "authorization")}
    assert auth == {k: v for k, v in theirs.headers.items() if k in ("x-api-key", "authorization")}
    assert auth and all(ANTHROPIC_KEY in v for v in auth.values())
    if "temperature" in extra:
        assert ours.headers["anthropic-version"] == SAMPLING_API_VERSION
        assert json.loads(ours.body)["temperature"] == 0
    varying = {"x-stainless-read-timeout", "x-stainless-retry-count", "content-length", "x-stainless-timeout"}
    assert set(ours.headers) - varying == set(theirs.headers) - varying


@pytest.mark.parametrize("extra", ["", "&temperature=0.5&top_k=3", "&structured=off&prompt_cache=off"])
async def test_anthropic_body_bytes_are_those_create_sends(fake: FakeServer, extra: str) -> None:
    """The provider hands `post` the body already encoded (`wire_json`, issue 20 §5): the server
    must receive the JSON `messages.create` sends for the same arguments, encoded as the SDK
    encodes it (non-ASCII text, quotes and escapes included), with the same Content-Type."""

    messages = [
        {"role": "system", "content": 'Juge «précis» — "quotes", \\ back\\slash, tab\t, 😀'},
        {"role": "user", "content": "<source>Ünïcödé ☃ \u2028 line</source>\n\n<candidate_a>a</candidate_a>"},
    ]
    spec = parse_spec(f"anthropic:claude-judge?base_url={fake.url}&max_tokens=300{extra}")
    request = ChatRequest(
        messages=messages,
        params=spec.request_params(),
        schema=SCHEMA,
        schema_name="pairwise_verdict",
        cache_breaks=(9,),
    )
    ours, theirs = await _sent_by_provider_and_create(fake, spec, request)
    from anthropic._utils._json import openapi_dumps  # the encoder `create` sends with

    # the same JSON, encoded alike: equal once parsed, equal in length, and exactly what the SDK's
    # encoder makes of it (keys stay in the provider's order, which `create` does not share)
    assert json.loads(ours.body) == json.loads(theirs.body)
    assert ours.body.encode() == openapi_dumps(json.loads(ours.body))
    assert "«précis»" in ours.body and "😀" in ours.body  # sent as UTF-8, not \\u escapes
    assert ours.headers["content-type"] == theirs.headers["content-type"] == "application/json"
    assert ours.headers["content-length"] == theirs.headers["content-length"]


@pytest.mark.parametrize(
    "base_url",
    [
        "http://127.0.0.1:9",
        "http://127.0.0.1:9/",
        "http://proxy.local:8080/anthropic/v2",
        "https://api.anthropic.com",
    ],
)
def test_anthropic_messages_url_is_the_one_the_sdk_merges(
    base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider merges `/v1/messages` with the base URL once (issue 20 §5) instead of letting
    `post` parse and merge it per call: the result must be the URL the SDK's own merge gives,
    a base URL with a path prefix included."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    provider = make_provider(parse_spec(f"anthropic:claude-judge?base_url={base_url}"))
    client = provider.client  # type: ignore[attr-defined]
    assert str(provider._messages_url) == str(client._prepare_url("/v1/messages"))  # type: ignore[attr-defined]
    assert str(provider._messages_url).startswith(base_url.rstrip("/") + "/v1/messages")  # type: ignore[attr-defined]


def test_anthropic_wire_json_leaves_what_plain_json_cannot_encode_to_the_sdk() -> None:
    """A body plain JSON cannot encode (a date, NaN) is not encoded by the provider: it goes to
    the SDK as before, which encodes what it knows and raises its own error for the rest."""
    import datetime

    from judgepanel.providers.anthropic_provider import wire_json

    assert wire_json({"a": [1, "é"], "b": None}) == '{"a":[1,"é"],"b":null}'.encode()
    assert wire_json({"when": datetime.date(2026, 1, 2)}) is None
    assert wire_json({"temperature": float("nan")}) is None


def test_anthropic_deprecated_model_is_said_once_per_judge(fake: FakeServer) -> None:
    """`messages.create` warned about a deprecated model on every call; the fast path does not
    call it, so the provider says it once, in the warnings the run summary shows."""
    from judgepanel.providers.anthropic_provider import deprecated_models

    table = deprecated_models()
    assert table, "the pinned SDK lists deprecated models"
    model, when = next(iter(table.items()))
    old = make_provider(parse_spec(f"anthropic:{model}?base_url={fake.url}"))
    current = make_provider(parse_spec(f"anthropic:claude-judge?base_url={fake.url}"))
    assert old.warnings == [f"judge {old.name}: Anthropic lists {model!r} as deprecated, end of life {when}"]  # type: ignore[attr-defined]
    assert current.warnings == []  # type: ignore[attr-defined]
