"""A non-1..5 dimension over the real wire formats: the scale reaches the provider in the schema
(OpenAI `response_format`, Anthropic forced tool) and in the prompt, and the fake server's judge
answers on it."""

from __future__ import annotations

import json

import pytest

from judgepanel.fake.server import FakeServer
from judgepanel.protocol import UnitText, parse_reply, render_pointwise
from judgepanel.providers import ChatRequest, make_provider, parse_spec
from judgepanel.rubrics import bundled_rubric
from judgepanel.runner.prepare import score_levels

USR = bundled_rubric("usr")
ITEM = UnitText(
    "tc/x",
    "yes , jazz began in new orleans and i love it .",
    "Dialogue so far:\ndo you like jazz ?\n\nFact available to the responder:\njazz began in new orleans .",
)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize(("dimension", "levels"), [("understandability", [0, 1]), ("naturalness", [1, 2, 3])])
async def test_scaled_prompt_over_the_wire(
    fake: FakeServer, provider: str, dimension: str, levels: list[int]
) -> None:
    prompt = render_pointwise(ITEM, condition="rubric", dimension=dimension, rubric=USR)
    base = f"{fake.url}/v1" if provider == "openai" else fake.url
    p = make_provider(parse_spec(f"{provider}:judge-1?base_url={base}"))
    try:
        result = await p.complete(
            ChatRequest(
                messages=prompt.messages, params={}, schema=prompt.schema, schema_name=prompt.schema_name
            ),
            timeout=10,
        )
    finally:
        await p.aclose()
    body = json.loads(fake.recent()[0].body)
    sent = (
        body["response_format"]["json_schema"]["schema"]
        if provider == "openai"
        else body["tools"][0]["input_schema"]
    )
    assert sent["properties"]["score"]["enum"] == levels
    parsed = parse_reply(prompt.schema_name, result.text, result.structured, levels=score_levels(prompt))
    assert parsed.ok and parsed.score is not None and int(parsed.score) in levels
