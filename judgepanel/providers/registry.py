"""`make_provider`: the one place a `JudgeSpec` becomes a live `Provider`."""

from __future__ import annotations

from typing import Any

from judgepanel.errors import BadInput
from judgepanel.providers.base import Provider
from judgepanel.providers.spec import JudgeSpec


def make_provider(spec: JudgeSpec, **opts: Any) -> Provider:
    """A provider for `spec`. Keys and default endpoints come from the environment, as the SDKs
    read them (`OPENAI_API_KEY` / `OPENAI_BASE_URL`, `ANTHROPIC_API_KEY` / `ANTHROPIC_BASE_URL`);
    a `base_url` in the spec wins over the environment.

    Raises `BadInput` when a real provider has no key (and no custom `base_url`).

    `opts` (all optional): `max_connections`, the HTTP pool size to keep alive (set it to the
    judge's concurrency when that exceeds 100, the SDKs' default). Unknown options are refused so
    a typo cannot pass silently."""
    unknown = set(opts) - {"max_connections"}
    if unknown:
        raise TypeError(f"make_provider got unknown options: {', '.join(sorted(unknown))}")
    max_connections = opts.get("max_connections")
    # The SDKs are imported only when a judge needs them: `sim` runs without their start-up cost.
    if spec.provider == "openai":
        from judgepanel.providers.openai_provider import OpenAIProvider

        return OpenAIProvider(spec, max_connections=max_connections)
    if spec.provider == "azure":
        from judgepanel.providers.openai_provider import AzureOpenAIProvider

        return AzureOpenAIProvider(spec, max_connections=max_connections)
    if spec.provider == "anthropic":
        from judgepanel.providers.anthropic_provider import AnthropicProvider

        return AnthropicProvider(spec, max_connections=max_connections)
    if spec.provider == "sim":
        from judgepanel.providers.sim_provider import SimProvider

        return SimProvider(spec.name, spec.model, spec.params)
    raise BadInput(f"unknown provider {spec.provider!r}")
