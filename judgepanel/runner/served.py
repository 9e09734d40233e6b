"""Which model a `base_url` judge's server actually runs, asked once per judge and run.

A local OpenAI-compatible server (llama.cpp, a one-model vLLM) answers with whatever weights it has
loaded, whatever `model` the request names, so a cache keyed on the judge spec would hand one
model's answers to another. `GET /v1/models` says what is loaded; that name enters the request
hash (`cache.request_hash(served_model=…)`). A server that does not answer keeps the spec's key,
and the caller says so: the spec's `revision=` is then the way to tell builds apart.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import cast

from judgepanel.providers.base import Provider, ReportsServedModel
from judgepanel.providers.spec import JudgeSpec

PROBE_SECONDS = 10.0


async def served_models(
    judges: Mapping[str, tuple[JudgeSpec, Provider]], *, timeout: float = PROBE_SECONDS
) -> tuple[dict[str, str], list[str]]:
    """(judge name → served model, warnings) for the judges with a `base_url`, asked concurrently.
    Each judge's server gets at most `timeout` seconds, and no longer than the judge's own
    `timeout=` allows a call: a server that cannot be reached held a run with `timeout=1` for the
    full 10 s before its first call."""

    async def ask(spec: JudgeSpec, provider: Provider) -> str | None:
        if spec.base_url is None or getattr(provider, "served_model", None) is None:
            return None
        limit = min(timeout, spec.timeout) if spec.timeout else timeout
        with contextlib.suppress(Exception):  # no answer is not an error: the key stays the spec's
            async with asyncio.timeout(limit):
                return await cast(ReportsServedModel, provider).served_model(timeout=limit)
        return None

    named = list(judges.items())
    answers = await asyncio.gather(*(ask(spec, provider) for _, (spec, provider) in named))
    served: dict[str, str] = {}
    warnings: list[str] = []
    for (name, (spec, _)), model in zip(named, answers, strict=True):
        if model is not None:
            served[name] = model
        elif spec.base_url is not None and spec.get("revision") is None:
            warnings.append(
                f"judge {name}: its server did not say which model it serves (GET /v1/models), so "
                "cached answers are keyed on the spec alone; add revision=… to the spec to tell builds apart"
            )
    return served, warnings


def served_models_now(specs: Mapping[str, JudgeSpec]) -> dict[str, str]:
    """The same from synchronous code (`campaign plan`): providers made for the probe and closed."""
    from judgepanel.errors import JudgepanelError
    from judgepanel.providers.registry import make_provider

    wanted = {n: s for n, s in specs.items() if s.base_url is not None and s.provider != "sim"}
    if not wanted:
        return {}

    async def main() -> dict[str, str]:
        made: dict[str, tuple[JudgeSpec, Provider]] = {}
        for name, spec in wanted.items():
            with contextlib.suppress(JudgepanelError):
                made[name] = (spec, make_provider(spec))
        try:
            return (await served_models(made))[0]
        finally:
            for _, provider in made.values():
                with contextlib.suppress(Exception):
                    await provider.aclose()

    return asyncio.run(main())
