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

    `opts` (all optional): `max_connections` (HTTP pool size, default 256). Unknown options are
    refused so a typo cannot pass silently."""
    unknown = set(opts) - {"max_connections"}
    if unknown:
        raise TypeError(f"make_provider got unknown options: {', '.join(sorted(unknown))}")
    if spec.provider == "sim":
        from judgepanel.providers.sim import SimProvider

        return SimProvider(spec.name, spec.model, spec.params)
    raise BadInput(f"provider {spec.provider!r} is not available")
