"""A prompt over the server's context window (issue 34 §1): its own error class, `context`, with the
server's token figures, through the real SDKs against the fake server's llama.cpp imitation — and
the bodies the real servers send, read as such."""

from __future__ import annotations

import json

import pytest

from judgepanel.errors import ContextTooLong, Fatal
from judgepanel.fake.llamacpp import prompt_tokens
from judgepanel.fake.server import FakeServer
from judgepanel.providers import make_provider, parse_spec
from judgepanel.providers.context_limit import context_refusal
from judgepanel.providers.errors import classify_status
from tests.providers.test_errors import REQUEST, WIRES, call


@pytest.fixture(params=WIRES)
def wire(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


async def test_a_prompt_over_the_models_window_is_a_context_refusal(wire: str, fake: FakeServer) -> None:
    err = await call(wire, fake, "j!context=8")
    assert isinstance(err, ContextTooLong) and isinstance(err, Fatal)
    assert err.error_class == "context" and err.status == 400
    n = prompt_tokens({"messages": REQUEST.messages})
    assert n > 8
    assert (err.request_tokens, err.limit_tokens) == (n, 8)


async def test_the_servers_window_can_be_raised_while_it_runs(fake: FakeServer) -> None:
    fake.context_tokens = 8
    try:
        err = await call("openai", fake, "j")
        assert isinstance(err, ContextTooLong) and err.limit_tokens == 8
        fake.context_tokens = 4096  # "raise the server's context": the same request now passes

        provider = make_provider(parse_spec(f"openai:j?base_url={fake.url}/v1"))
        try:
            result = await provider.complete(REQUEST, timeout=10)
        finally:
            await provider.aclose()
        assert result.http_status == 200
    finally:
        fake.context_tokens = 0


# the bodies as the servers send them: llama-server b7e4c0a9 (measured against the local model of
# ../shared/tools/local-llm with -c 512), OpenAI, vLLM and Anthropic (their documented wording)
LLAMA = (
    '{"error":{"code":400,"message":"request (930 tokens) exceeds the available context size (512 tokens), '
    'try increasing it","type":"exceed_context_size_error","n_prompt_tokens":930,"n_ctx":512}}'
)
OPENAI = json.dumps(
    {
        "error": {
            "message": "This model's maximum context length is 8192 tokens. However, your messages resulted "
            "in 9021 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
)
VLLM = json.dumps(
    {
        "object": "error",
        "message": "This model's maximum context length is 4096 tokens. However, you requested 5316 tokens "
        "(5060 in the messages, 256 in the completion). Please reduce the length of the messages or completion.",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
)
ANTHROPIC = json.dumps(
    {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 215000 tokens > 200000 maximum",
        },
    }
)


@pytest.mark.parametrize(
    ("body", "figures"),
    [(LLAMA, (930, 512)), (OPENAI, (9021, 8192)), (VLLM, (5316, 4096)), (ANTHROPIC, (215000, 200000))],
)
def test_the_real_servers_wordings_are_read(body: str, figures: tuple[int, int]) -> None:
    err = classify_status(400, body, {}, provider="p")
    assert isinstance(err, ContextTooLong)
    assert (err.request_tokens, err.limit_tokens) == figures
    assert str(err).startswith("p HTTP 400: ")


def test_other_client_errors_stay_plain_fatal() -> None:
    for status, body in (
        (400, '{"error": {"message": "Unsupported parameter: logprobs", "type": "invalid_request_error"}}'),
        (400, '{"error": {"message": "the context of this conversation is unclear"}}'),
        (401, LLAMA),  # a context wording under another status is not a context refusal
        (422, OPENAI),
    ):
        err = classify_status(status, body, {}, provider="p")
        assert type(err) is Fatal and err.error_class == "fatal"
    assert context_refusal(400, "not json", "m") is None
    # the type alone (figures missing) is enough; the figures are then unknown
    only_type = context_refusal(400, '{"error": {"type": "exceed_context_size_error"}}', "m")
    assert only_type is not None and (only_type.request_tokens, only_type.limit_tokens) == (None, None)
