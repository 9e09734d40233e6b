"""The fake server's batch APIs, spoken to by the real SDKs: upload, create, retrieve, list,
results / output and error files, cancel, expiry and per-entry errors, in the providers' formats."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anthropic
import openai
import pytest

from judgepanel.fake.server import FakeServer

MESSAGES = [{"role": "user", "content": "Rate this summary from 1 to 5. Answer as JSON."}]


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(batch_seconds=3600) as fake:
        yield fake


def oa(server: FakeServer) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", base_url=f"{server.url}/v1", max_retries=0)


def an(server: FakeServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-test", base_url=server.url, max_retries=0)


def upload(client: openai.OpenAI, n: int, model: str = "judge") -> str:
    lines = [
        json.dumps(
            {
                "custom_id": f"c{i}",
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": {"model": model, "messages": MESSAGES},
            }
        )
        for i in range(n)
    ]
    f = client.files.create(
        file=("in.jsonl", "\n".join(lines).encode(), "application/jsonl"), purpose="batch"
    )
    assert f.purpose == "batch" and f.bytes > 0
    return f.id


def test_openai_batch_lifecycle_and_cancel(server: FakeServer) -> None:
    client = oa(server)
    fid = upload(client, 4)
    b = client.batches.create(
        input_file_id=fid, endpoint="/v1/chat/completions", completion_window="24h", metadata={"k": "v"}
    )
    assert b.status == "in_progress" and b.request_counts is not None and b.request_counts.total == 4
    assert [x.id for x in client.batches.list(limit=10)] == [b.id]
    c = client.batches.cancel(b.id)
    assert c.status == "cancelled" and c.output_file_id is None and c.error_file_id
    lines = [json.loads(x) for x in client.files.content(c.error_file_id).text.splitlines()]
    assert {x["error"]["code"] for x in lines} == {"batch_cancelled"} and len(lines) == 4
    assert all(x["response"] is None for x in lines)
    assert server.stats()["batches"]["created"] == {"openai": 1}


def test_openai_completed_output_and_per_entry_errors(server: FakeServer) -> None:
    client = oa(server)
    server.batch_seconds = 0
    fid = upload(client, 20, model="judge!500@0.5")
    b = client.batches.retrieve(
        client.batches.create(input_file_id=fid, endpoint="/v1/chat/completions", completion_window="24h").id
    )
    assert b.status == "completed" and b.request_counts is not None
    ok = [json.loads(x) for x in client.files.content(b.output_file_id or "").text.splitlines()]
    bad = [json.loads(x) for x in client.files.content(b.error_file_id or "").text.splitlines()]
    assert len(ok) + len(bad) == 20 and ok and bad
    assert b.request_counts.completed == len(ok) and b.request_counts.failed == len(bad)
    assert all(x["response"]["status_code"] == 200 and x["response"]["body"]["choices"] for x in ok)
    assert all(x["response"]["status_code"] == 500 and "error" in x["response"]["body"] for x in bad)


def test_openai_bad_input_file_is_refused(server: FakeServer) -> None:
    client = oa(server)
    f = client.files.create(file=("in.jsonl", b'{"custom_id": "a"}\n{"custom_id": "a"}\n'), purpose="batch")
    with pytest.raises(openai.BadRequestError):
        client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h")


def test_anthropic_batch_results_expiry_and_cancel(server: FakeServer) -> None:
    client = an(server)
    reqs = [
        {"custom_id": f"r{i}", "params": {"model": "judge", "max_tokens": 64, "messages": MESSAGES}}
        for i in range(6)
    ]
    b = client.messages.batches.create(requests=reqs)  # type: ignore[arg-type]
    assert b.processing_status == "in_progress" and b.request_counts.processing == 6
    with pytest.raises(anthropic.AnthropicError):
        list(client.messages.batches.results(b.id))  # no results before it ends
    c = client.messages.batches.cancel(b.id)
    assert c.processing_status == "ended" and c.request_counts.canceled == 6
    assert {r.result.type for r in client.messages.batches.results(b.id)} == {"canceled"}
    server.batch_seconds, server.batch_expire = 0, True
    e = client.messages.batches.retrieve(client.messages.batches.create(requests=reqs).id)  # type: ignore[arg-type]
    assert e.request_counts.succeeded == 3 and e.request_counts.expired == 3
    results = list(client.messages.batches.results(e.id))
    assert sorted(r.result.type for r in results) == ["expired"] * 3 + ["succeeded"] * 3
    first = next(r for r in results if r.result.type == "succeeded")
    assert first.result.message.usage.output_tokens > 0  # type: ignore[union-attr]
    assert [x.id for x in client.messages.batches.list(limit=5)] == [e.id, b.id]
