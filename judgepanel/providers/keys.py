"""Which API key a judge uses, and where it goes: the variable its spec names with `key_env=NAME`,
else the SDK's own, sent to the judge's host.

A panel can mix endpoints that each need their own key (OpenAI, Azure OpenAI, Together, Groq, a
vLLM behind a gateway): `openai:m?base_url=…&key_env=TOGETHER_API_KEY`. Only the variable's name is
in the spec (and so in the database); the value is read when the provider is made, before any
call, and joins the secrets every error message and stored body is redacted against.

What `key_env` may name. The variable's value is sent as a bearer token to whatever host the
judge names, and a judge spec may come from a campaign file that someone else wrote (a pull
request run in CI), so a spec must not be able to turn judgepanel into a way of mailing any secret
of the environment to any server. A name-shape rule (`*_TOKEN` minus a deny-list) let through 30 of
70 real credential names of CI systems, package registries and clouds (issue 29), so `key_env`
takes an **allow-list**:

* the key variables of the model providers judgepanel knows (`PROVIDER_KEY_ENVS`: the SDKs' own,
  Azure OpenAI, Hugging Face's `HF_TOKEN` and the OpenAI-compatible hosts the docs name);
* names the user adds in `$JUDGEPANEL_KEY_ENVS` (comma separated), a setting of the environment
  judgepanel runs in, which no campaign file or judge spec can set; judgepanel's own settings
  (`JUDGEPANEL_*`) and URLs (`*_URL`, `*_URI`, `*_DSN`) are refused even there;
* its value, when set, is one line without spaces that does not parse as a URL with a password
  (`scheme://user:password@host`) nor hold a PEM block (`-----BEGIN …`).

The name rule is checked when the spec is parsed (`campaign create` refuses it, exit 2); the value
rule also when the key is read, before any call. `key_source` tells `campaign create` and
`campaign plan` which variable (never its value) each judge sends to which host.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from judgepanel.errors import BadInput
from judgepanel.providers.key_names import ALLOW_ENV, NEVER_KEYS, PROVIDER_KEY_ENVS, user_key_envs


class JudgeSpec(Protocol):
    """What the key rules read of a `providers.spec.JudgeSpec` (spec.py imports this module to
    check `key_env`, so the type is described here rather than imported back)."""

    @property
    def provider(self) -> str: ...

    @property
    def name(self) -> str: ...

    def get(self, key: str, default: Any = None) -> Any: ...


_DEFAULT_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "azure": "AZURE_OPENAI_API_KEY"}
_DEFAULT_HOST = {"openai": "api.openai.com", "anthropic": "api.anthropic.com"}
_BASE_ENV = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL", "azure": "AZURE_OPENAI_ENDPOINT"}


def key_env_refusal(name: str) -> str | None:
    """Why `name` may not be a judge's `key_env` (None when it may): see the module docstring."""
    if name in PROVIDER_KEY_ENVS or name in user_key_envs():
        return None
    if NEVER_KEYS.fullmatch(name):
        return f"{name} is judgepanel's own setting or a URL, never an API key"
    return (
        f"{name} is not a model provider's key variable judgepanel knows; if it holds a model "
        f"server's key, allow it where you run judgepanel: export {ALLOW_ENV}={name} "
        "(a campaign file cannot)"
    )


def key_value_refusal(name: str, value: str) -> str | None:
    """Why the value of `name` may not be sent as a judge's key (None when it may). Never quotes
    the value."""
    text = value.strip()
    if any(c.isspace() for c in text):
        return f"the value of {name} spans spaces or lines, which no API key does"
    if "-----BEGIN" in text:
        return f"the value of {name} holds a PEM block, not an API key"
    if "://" in text:
        try:
            parts = urlsplit(text)
            password = parts.password
        except ValueError:
            password = None
        if password:
            return f"the value of {name} is a URL with a password (a database or service URL), not an API key"
    return None


def api_key(spec: JudgeSpec, default_env: str) -> str | None:
    """The judge's key: from `key_env` when the spec names one (a missing or empty variable, or a
    value that is not an API key, is a `BadInput`), else from `default_env` (None when unset)."""
    named = spec.get("key_env")
    if named is not None:
        value = os.environ.get(str(named))
        if not value:
            raise BadInput(f"judge {spec.name}: key_env {named} is not set in the environment")
        why = key_value_refusal(str(named), value)
        if why is not None:
            raise BadInput(f"judge {spec.name}: key_env refused: {why}")
        return value
    return os.environ.get(default_env) or None


@dataclass(frozen=True)
class KeySource:
    """Which variable a judge's key comes from (None: no key is sent) and the host it goes to."""

    judge: str
    key_env: str | None
    host: str

    def as_dict(self) -> dict[str, str | None]:
        return {"judge": self.judge, "key_env": self.key_env, "host": self.host}

    def describe(self) -> str:
        key = f"key from ${self.key_env}" if self.key_env else "no key"
        return f"{self.judge}: {key} → {self.host}"


def key_source(spec: JudgeSpec, shown: str | None = None) -> KeySource:
    """Where `spec`'s key comes from and goes to, as the provider would resolve it now (from the
    spec and the environment; never a value)."""
    name = shown or spec.name
    if spec.provider == "sim":
        return KeySource(name, None, "(simulated, no network)")
    url = str(
        spec.get("base_url") or spec.get("endpoint") or os.environ.get(_BASE_ENV.get(spec.provider, "")) or ""
    )
    host = _host(url) if url else _DEFAULT_HOST.get(spec.provider, "?")
    named = spec.get("key_env")
    if named is not None:
        return KeySource(name, str(named), host)
    default = _DEFAULT_ENV[spec.provider]
    if os.environ.get(default):
        return KeySource(name, default, host)
    if spec.provider == "anthropic" and os.environ.get("ANTHROPIC_AUTH_TOKEN"):
        return KeySource(name, "ANTHROPIC_AUTH_TOKEN", host)
    return KeySource(name, None, host)


def _host(url: str) -> str:
    try:
        parts = urlsplit(url)
        host = parts.hostname or url
        return f"{host}:{parts.port}" if parts.port else host
    except ValueError:
        return url
