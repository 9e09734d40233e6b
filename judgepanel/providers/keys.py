"""Which API key a judge uses: the variable its spec names with `key_env=NAME`, else the SDK's own.

A panel can mix endpoints that each need their own key (OpenAI, Azure OpenAI, Together, Groq, a
vLLM behind a gateway): `openai:m?base_url=…&key_env=TOGETHER_API_KEY`. Only the variable's name is
in the spec (and so in the database); the value is read when the provider is made, before any
call, and joins the secrets every error message and stored body is redacted against.
"""

from __future__ import annotations

import os

from judgepanel.errors import BadInput
from judgepanel.providers.spec import JudgeSpec


def api_key(spec: JudgeSpec, default_env: str) -> str | None:
    """The judge's key: from `key_env` when the spec names one (a missing or empty variable is a
    `BadInput`), else from `default_env` (None when unset)."""
    named = spec.get("key_env")
    if named is not None:
        value = os.environ.get(str(named))
        if not value:
            raise BadInput(f"judge {spec.name}: key_env {named} is not set in the environment")
        return value
    return os.environ.get(default_env) or None
