from __future__ import annotations

import pytest

from judgepanel.errors import BadInput
from judgepanel.providers.spec import JudgeSpec, parse_spec


def test_plain_specs() -> None:
    spec = parse_spec("openai:gpt-4o-mini")
    assert (spec.provider, spec.model, spec.params, spec.name) == (
        "openai",
        "gpt-4o-mini",
        {},
        "openai:gpt-4o-mini",
    )
    assert parse_spec("anthropic:claude-haiku-4-5").provider == "anthropic"


def test_model_may_contain_colons_and_params_are_typed() -> None:
    spec = parse_spec(
        "openai:qwen2.5:7b?base_url=http://127.0.0.1:11434/v1/&temperature=0&max_tokens=256&seed=7"
    )
    assert spec.model == "qwen2.5:7b"
    assert spec.params == {
        "base_url": "http://127.0.0.1:11434/v1",
        "max_tokens": 256,
        "seed": 7,
        "temperature": 0.0,
    }
    assert spec.base_url == "http://127.0.0.1:11434/v1"
    assert spec.request_params() == {"max_tokens": 256, "seed": 7, "temperature": 0.0}


def test_name_is_canonical_and_round_trips() -> None:
    a = parse_spec("sim:judge?position_bias=0.2&noise=0.10&timeout=5&price_in=1")
    b = parse_spec("SIM:judge?noise=0.1&position_bias=0.20")
    assert a.name == b.name == "sim:judge?noise=0.1&position_bias=0.2"
    assert parse_spec(a.name).name == a.name
    assert parse_spec(a.name).params == {"noise": 0.1, "position_bias": 0.2}
    assert hash(a) == hash(b)
    assert a.timeout == 5.0 and "timeout" not in a.request_params()
    same_temp = {parse_spec(f"openai:m?temperature={t}").name for t in ("0", "0.0", "0.00")}
    assert same_temp == {"openai:m?temperature=0"}
    weird = parse_spec("openai:m?base_url=http://h:1/v1&structured=off")
    assert parse_spec(weird.name).params == weird.params
    assert weird.structured is False


@pytest.mark.parametrize(
    "text",
    [
        "openai:m?api_key=sk-abcdef1234567890abcd",
        "openai:m?key=abc",
        "openai:m?token=abc",
        "anthropic:m?auth_token=abc",
        "openai:m?secret=abc",
        "openai:m?password=abc",
        "openai:m?API-KEY=abc",
        "openai:m?openai_api_key=abc",
        "openai:m?base_url=http://user:hunter2@127.0.0.1:8000/v1",
        "openai:m?base_url=http://127.0.0.1:8000/v1?api-key=abc",
        "openai:m?base_url=https://h/v1/sk-abcdefghijklmnopqrstuvwx",
    ],
)
def test_secrets_are_refused_without_echoing_them(text: str) -> None:
    with pytest.raises(BadInput) as info:
        parse_spec(text)
    message = str(info.value)
    assert "secret" in message or "key" in message or "credentials" in message
    for secret in ("hunter2", "sk-abcdef", "=abc"):
        assert secret not in message


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("gpt-4o", "PROVIDER:MODEL"),
        ("openai:", "PROVIDER:MODEL"),
        ("vertex:gemini-2.5-pro", "unknown provider"),
        ("openai:m?temprature=0", "unknown parameter 'temprature'"),
        ("openai:m?temperature=hot", "'temperature'"),
        ("openai:m?temperature=3", "<= 2"),
        ("openai:m?max_tokens=0", ">= 1"),
        ("openai:m?seed=1&seed=2", "twice"),
        ("openai:m?structured=maybe", "on or off"),
        ("openai:m?base_url=ftp://h", "http(s) URL"),
        ("sim:m?position_bias=1.5", "<= 1"),
        ("openai:m?position_bias=0.2", "unknown parameter"),
        ("anthropic:m?anthropic_version=latest", "date"),
    ],
)
def test_bad_specs_say_what_is_wrong(text: str, fragment: str) -> None:
    with pytest.raises(BadInput, match=None) as info:
        parse_spec(text)
    assert fragment in str(info.value)


def test_spec_is_frozen() -> None:
    spec = parse_spec("sim:a")
    assert isinstance(spec, JudgeSpec)
    with pytest.raises(AttributeError):
        spec.model = "b"  # type: ignore[misc]


@pytest.mark.parametrize(
    "text",
    [
        # a path parameter or name=value in the path reaches the server as the key
        "openai:m?base_url=http://127.0.0.1:8000/v1;api_key=hunter2hunter2",
        "openai:m?base_url=http://127.0.0.1:8000/v1/;token=hunter2hunter2",
        "openai:m?base_url=http://127.0.0.1:8000/v1/api_key=hunter2hunter2",
        "openai:m?base_url=http://127.0.0.1:8000/v1/api_key/hunter2hunter2",
        # double-encoded: parse_qsl decodes once, a server a second time
        "openai:m?base_url=http://127.0.0.1:8000/v1%253Fapi_key%253Dhunter2hunter2",
        "openai:m?base_url=http://127.0.0.1:8000/v1%253Bapi_key%253Dhunter2hunter2",
        "openai:m?base_url=http://127.0.0.1:8000/sk%252Dproj%252Dhunter2hunter2",
        "anthropic:m?base_url=http%3A%2F%2Fu%253Ahunter2hunter2%40127.0.0.1/v1",
        # key-shaped model names
        "openai:sk-hunter2",
        "openai:SK_hunter2hunter2",
        "anthropic:sk-ant-api03-hunter2hunter2",
        "openai:sk%2Dproj%2Dhunter2hunter2",
        "openai:org/hf_hunter2hunter2",
        "openai:Xq7hunter2Zk9hunter2Lp3hunter2Rt5w",
    ],
)
def test_smuggled_secrets_are_refused(text: str) -> None:
    with pytest.raises(BadInput) as info:
        parse_spec(text)
    message = str(info.value)
    assert "hunter2" not in message and "\n" not in message
    assert any(w in message for w in ("secret", "key", "credentials", "encoded"))


def test_a_configured_key_is_refused_in_any_part(monkeypatch: pytest.MonkeyPatch) -> None:
    # a local server's key need not look like one; the value itself is what must not be stored
    monkeypatch.setenv("OPENAI_API_KEY", "plainlocalsecret")
    for text in ("openai:plainlocalsecret", "openai:m?base_url=http://127.0.0.1:8000/plainlocalsecret/v1"):
        with pytest.raises(BadInput, match="key") as info:
            parse_spec(text)
        assert "plainlocalsecret" not in str(info.value)


@pytest.mark.parametrize(
    "text",
    [
        "openai:gpt-4o-2024-08-06",
        "openai:qwen2.5:7b?base_url=http://127.0.0.1:11434/v1",
        "openai:org/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf?base_url=https://gw.example/openai/v1",
        "openai:sha256-3f2a9c0d7e1b4a5c6d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c",
        "anthropic:claude-haiku-4-5",
        "sim:task-judge",
    ],
)
def test_ordinary_specs_still_pass(text: str) -> None:
    spec = parse_spec(text)
    assert parse_spec(spec.name).name == spec.name
