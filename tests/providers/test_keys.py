"""key_env: a judge names the variable holding its key; never the key itself."""

from __future__ import annotations

import pytest

from judgepanel.errors import BadInput
from judgepanel.providers.errors import configured_secrets, redact
from judgepanel.providers.keys import PROVIDER_KEY_ENVS, api_key, key_source, user_key_envs
from judgepanel.providers.spec import parse_spec


def test_key_env_is_operational_and_never_part_of_the_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGEPANEL_KEY_ENVS", "HOST_KEY")  # a name of the user's own (issue 29 allow-list)
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
    monkeypatch.setenv("JUDGEPANEL_KEY_ENVS", "HOST_KEY")  # a name of the user's own (issue 29 allow-list)
    monkeypatch.setenv("OPENAI_API_KEY", "ambient")
    monkeypatch.setenv("HOST_KEY", "named")
    assert api_key(parse_spec("openai:m?key_env=HOST_KEY"), "OPENAI_API_KEY") == "named"
    assert api_key(parse_spec("openai:m"), "OPENAI_API_KEY") == "ambient"
    monkeypatch.setenv("HOST_KEY", "")
    with pytest.raises(BadInput, match="key_env HOST_KEY is not set"):
        api_key(parse_spec("openai:m?key_env=HOST_KEY"), "OPENAI_API_KEY")


@pytest.mark.parametrize(
    "name",
    [
        "AWS_SECRET_ACCESS_KEY",  # a cloud credential
        "JUDGEPANEL_DB",  # judgepanel's own settings
        "JUDGEPANEL_API_KEY",
        "DATABASE_URL",
        "PGPASSWORD",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "SSH_AUTH_KEY",
        "DJANGO_SECRET_KEY",  # an application signing key
        "SENTRY_DSN",
        "HOME",  # not named like a credential at all
        "PATH",
        "OPENAI_BASE_URL",
    ],
)
def test_key_env_refuses_variables_that_are_not_model_credentials(name: str) -> None:
    with pytest.raises(BadInput, match="key_env"):
        parse_spec(f"openai:m?base_url=http://127.0.0.1:9/v1&key_env={name}")


@pytest.mark.parametrize(
    "name", ["TOGETHER_API_KEY", "LOCAL_KEY", "HF_TOKEN", "AZURE_OPENAI_API_KEY", "GROQ_API_KEY"]
)
def test_key_env_takes_model_server_credentials(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGEPANEL_KEY_ENVS", "LOCAL_KEY")  # issue 29: LOCAL_KEY is the user's own name
    assert parse_spec(f"openai:m?key_env={name}").get("key_env") == name


@pytest.mark.parametrize(
    "value",
    [
        "postgresql://judge:hunter2hunter2@db.internal:5432/panel",  # a database URL with its password
        "https://user:pa55word@example.org/v1",
        "-----BEGIN PRIVATE KEY-----MIIEv",
        "two words",
    ],
)
def test_a_key_env_whose_value_is_not_an_api_key_is_refused_without_quoting_it(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGEPANEL_KEY_ENVS", "LOCAL_KEY")  # issue 29: the user's own name
    monkeypatch.setenv("LOCAL_KEY", value)
    with pytest.raises(BadInput) as at_parse:
        parse_spec("openai:m?key_env=LOCAL_KEY")
    assert value not in str(at_parse.value) and "LOCAL_KEY" in str(at_parse.value)
    # … and when the key is read before a call (the variable may change between create and run)
    monkeypatch.setenv("LOCAL_KEY", "fine-key-1234567890")
    spec = parse_spec("openai:m?key_env=LOCAL_KEY")
    monkeypatch.setenv("LOCAL_KEY", value)
    with pytest.raises(BadInput) as at_read:
        api_key(spec, "OPENAI_API_KEY")
    assert value not in str(at_read.value)


def test_key_source_names_the_variable_and_the_host_never_the_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-ambient-0123456789abcdef")
    monkeypatch.setenv("TOGETHER_API_KEY", "tg-0123456789abcdef")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    cases = {
        "openai:m": ("OPENAI_API_KEY", "api.openai.com"),
        "openai:m?base_url=http://10.0.0.7:8000/v1&key_env=TOGETHER_API_KEY": (
            "TOGETHER_API_KEY",
            "10.0.0.7:8000",
        ),
        "anthropic:c?base_url=http://127.0.0.1:18001": (None, "127.0.0.1:18001"),
        "sim:a": (None, "(simulated, no network)"),
    }
    for text, (env, host) in cases.items():
        src = key_source(parse_spec(text))
        assert (src.key_env, src.host) == (env, host), text
        assert "0123456789abcdef" not in repr(src.as_dict()) + src.describe()


# Issue 29 §4: real credential names of CI systems, registries, clouds and services that the old
# name-shape rule (`*_TOKEN`, `*_KEY` minus a deny-list) accepted.
CREDENTIALS_OF_OTHER_SYSTEMS = [
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "NODE_AUTH_TOKEN",
    "UV_PUBLISH_TOKEN",
    "CARGO_REGISTRY_TOKEN",
    "DOCKERHUB_TOKEN",
    "AZURE_STORAGE_KEY",
    "HEROKU_API_KEY",
    "CLOUDFLARE_API_TOKEN",
    "OP_SERVICE_ACCOUNT_TOKEN",
    "JWT_PRIVATE_KEY",
    "RAILS_MASTER_KEY",
    "HOMEBREW_GITHUB_API_TOKEN",
    "CODECOV_TOKEN",
    "SONAR_TOKEN",
    "NETLIFY_AUTH_TOKEN",
    "VERCEL_TOKEN",
    "DIGITALOCEAN_ACCESS_TOKEN",
    "SENTRY_AUTH_TOKEN",
    "TF_API_TOKEN",
    "ARM_CLIENT_KEY",
    "CIRCLE_TOKEN",
    "BUILDKITE_AGENT_TOKEN",
    "SNYK_TOKEN",
    "ENCRYPTION_KEY",
    "LOCAL_KEY",  # a fine name, but only once the user allows it
]


@pytest.mark.parametrize("name", CREDENTIALS_OF_OTHER_SYSTEMS)
def test_key_env_is_an_allow_list(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JUDGEPANEL_KEY_ENVS", raising=False)
    with pytest.raises(BadInput) as info:
        parse_spec(f"openai:m?base_url=http://127.0.0.1:9/v1&key_env={name}")
    message = str(info.value)
    assert name in message and "export JUDGEPANEL_KEY_ENVS=" in message and "\n" not in message


@pytest.mark.parametrize("name", sorted(PROVIDER_KEY_ENVS))
def test_the_model_providers_key_variables_need_no_setting(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JUDGEPANEL_KEY_ENVS", raising=False)
    assert parse_spec(f"openai:m?key_env={name}").get("key_env") == name


def test_the_user_allows_names_locally_but_never_judgepanels_own_or_a_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JUDGEPANEL_KEY_ENVS", "LOCAL_KEY, GITHUB_TOKEN,,JUDGEPANEL_DB DATABASE_URL lower")
    assert user_key_envs() == {"LOCAL_KEY", "GITHUB_TOKEN"}
    assert parse_spec("openai:m?key_env=LOCAL_KEY").get("key_env") == "LOCAL_KEY"
    assert parse_spec("openai:m?key_env=GITHUB_TOKEN").get("key_env") == "GITHUB_TOKEN"  # GitHub Models
    for name in ("JUDGEPANEL_DB", "DATABASE_URL"):
        with pytest.raises(BadInput, match="judgepanel's own setting or a URL"):
            parse_spec(f"openai:m?key_env={name}")


def test_a_name_the_user_allows_is_redacted_whatever_it_is_called(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGEPANEL_KEY_ENVS", "MYVLLM")
    monkeypatch.setenv("MYVLLM", "vllm-secret-0a1b2c3d4e5f6789")
    assert "vllm-secret-0a1b2c3d4e5f6789" in configured_secrets()
    assert "0a1b2c3d4e5f6789" not in redact("echo: vllm-secret-0a1b2c3d4e5f6789", configured_secrets())
