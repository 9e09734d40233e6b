"""The request hash: everything that can change the answer is in it; the exclusion list is not."""

from __future__ import annotations

from judgepanel.providers.base import ChatRequest
from judgepanel.providers.spec import parse_spec
from judgepanel.runner.cache import EXCLUDED_PARAMS, request_hash


def _hash(
    spec: str, *, messages: list[dict[str, str]] | None = None, repeat: int = 0, schema: bool = True
) -> str:
    js = parse_spec(spec)
    req = ChatRequest(
        messages=messages or [{"role": "user", "content": "Rate this."}],
        params={**js.params},
        schema={"type": "object"} if schema else None,
        schema_name="pointwise_verdict",
    )
    return request_hash(
        provider=js.provider, model=js.model, base_url=js.base_url, request=req, repeat=repeat
    )


def test_operational_parameters_do_not_change_the_hash() -> None:
    base = _hash("openai:gpt-4o-mini?temperature=0")
    assert {"timeout", "rpm", "tpm", "concurrency", "price_in", "price_out"} <= EXCLUDED_PARAMS
    assert _hash("openai:gpt-4o-mini?temperature=0&timeout=5&rpm=100&tpm=9000&concurrency=3") == base
    assert _hash("openai:gpt-4o-mini?temperature=0&price_in=1&price_out=2") == base
    assert _hash("sim:x?latency=0.5&error_rate=0.2&jitter=0.1") == _hash("sim:x")


def test_everything_that_changes_the_answer_changes_the_hash() -> None:
    base = _hash("openai:gpt-4o-mini?temperature=0")
    variants = [
        _hash("openai:gpt-4o-mini?temperature=0.7"),
        _hash("openai:gpt-4o-mini?temperature=0&seed=1"),
        _hash("openai:gpt-4o-mini?temperature=0&max_tokens=10"),
        _hash("openai:gpt-4o?temperature=0"),
        _hash("anthropic:gpt-4o-mini?temperature=0"),
        _hash("openai:gpt-4o-mini?temperature=0&base_url=http://127.0.0.1:8000/v1"),
        _hash("openai:gpt-4o-mini?temperature=0&structured=off"),
        _hash("openai:gpt-4o-mini?temperature=0", messages=[{"role": "user", "content": "Rate this!"}]),
        _hash("openai:gpt-4o-mini?temperature=0", repeat=1),
        _hash("openai:gpt-4o-mini?temperature=0", schema=False),
        _hash("sim:x?position_bias=0.2"),
    ]
    assert base not in variants and len(set(variants)) == len(variants)
