"""key_env: a judge names the variable holding its key; never the key itself."""

from __future__ import annotations

import pytest

from judgepanel.errors import BadInput
from judgepanel.providers.keys import api_key
from judgepanel.providers.spec import parse_spec


def test_key_env_is_operational_and_never_part_of_the_name() -> None:
    spec = parse_spec("openai:m?base_url=http://127.0.0.1:9/v1&key_env=HOST_KEY&temperature=0")
    assert spec.get("key_env") == "HOST_KEY"
    assert "key_env" not in spec.name and "key_env" not in spec.request_params()


@pytest.mark.parametrize(
    "value",
    ["sk-abcdefghijklmnopqrstuvwx", "a1b2c3d4e5f6g7h8i9j0", "host_key", "HOST-KEY", "X" * 65],
)
def test_key_env_refuses_anything_but_a_variable_name(value: str) -> None:
    with pytest.raises(BadInput) as info:
        parse_spec(f"openai:m?key_env={value}")
    assert value not in str(info.value)  # the message names the parameter, never its value


def test_the_simulator_has_no_key() -> None:
    with pytest.raises(BadInput, match="unknown parameter 'key_env'"):
        parse_spec("sim:a?key_env=HOST_KEY")


def test_the_named_variable_wins_and_a_missing_one_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "ambient")
    monkeypatch.setenv("HOST_KEY", "named")
    assert api_key(parse_spec("openai:m?key_env=HOST_KEY"), "OPENAI_API_KEY") == "named"
    assert api_key(parse_spec("openai:m"), "OPENAI_API_KEY") == "ambient"
    monkeypatch.setenv("HOST_KEY", "")
    with pytest.raises(BadInput, match="key_env HOST_KEY is not set"):
        api_key(parse_spec("openai:m?key_env=HOST_KEY"), "OPENAI_API_KEY")
