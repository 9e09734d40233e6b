"""A parameter an OpenAI-compatible server refuses (learnt by the probe and dropped) is not part of
the stored request nor of its hash: both describe the body the server received. What was learnt is
remembered, so later runs send without it from the start, and the cache and exactly-once still
hold: nothing done is asked again, and an identical request in another campaign is not re-bought."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from judgepanel.fake.server import FakeServer
from judgepanel.providers.base import ChatRequest
from judgepanel.providers.spec import parse_spec
from judgepanel.runner.cache import request_hash
from judgepanel.runner.served import served_models_now
from judgepanel.store.models import Campaign, Job, Request, Response
from tests.helpers import cli
from tests.runner.conftest import DATASET, tiny_db


@pytest.fixture
def eng(db_url: str) -> Iterator[Engine]:
    engine = tiny_db(db_url, n_groups=2, per_group=4)
    yield engine
    engine.dispose()


@pytest.fixture
def refusing(keys_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    """A server that lacks `seed` and JSON-schema output, as some local servers do."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeServer(seed=5, refuse=("seed", "response_format")) as server:
        yield server


def chat(server: FakeServer) -> list[Any]:
    return [r for r in server.recent() if r.path == "/v1/chat/completions"]


def rows(eng: Engine, campaign: str) -> list[Any]:
    with Session(eng) as c:
        return list(
            c.execute(
                select(Request, Response.cached_from)
                .join(Response, Response.request_id == Request.id)
                .join(Job, Job.id == Request.job_id)
                .join(Campaign, Campaign.id == Job.campaign_id)
                .where(Campaign.name == campaign)
            ).all()
        )


def test_the_stored_request_and_its_hash_are_what_the_server_received(
    db_url: str, eng: Engine, refusing: FakeServer
) -> None:
    spec = f"openai:local?base_url={refusing.url}/v1&seed=3&temperature=0"

    def create(name: str, limit: int) -> None:
        argv = ("campaign", "create", name, "--dataset", DATASET, "--protocol", "pointwise", "--judge", spec)
        assert cli(*argv, "--limit", str(limit), db=db_url).code == 0

    create("c", 4)
    run = cli("campaign", "run", "c", "--json", db=db_url).json()
    assert run["done"] == 4
    calls = chat(refusing)
    # the probe met the two refusals, then every call went without them
    assert [c.status for c in calls].count(400) == 2 and [c.status for c in calls].count(200) == 4
    received = {
        json.dumps(json.loads(c.body)["messages"]): json.loads(c.body) for c in calls if c.status == 200
    }
    served = served_models_now({parse_spec(spec).name: parse_spec(spec)}).get(parse_spec(spec).name)
    stored = rows(eng, "c")
    assert len(stored) == 4
    for req, _ in stored:
        body = received[json.dumps(req.messages)]
        # what was stored is what was sent: no seed, no schema, the same parameters
        assert "seed" not in req.params and "seed" not in body and "response_format" not in body
        assert req.output_schema is None
        assert {k: body[k] for k in ("temperature", "max_tokens")} == {
            k: req.params[k] for k in ("temperature", "max_tokens")
        }
        sent = ChatRequest(
            messages=req.messages, params=req.params, schema=None, schema_name="pointwise_verdict"
        )
        assert req.request_hash == request_hash(
            provider="openai",
            model="local",
            base_url=f"{refusing.url}/v1",
            request=sent,
            repeat=0,
            served_model=served,
        )
    with eng.connect() as c:
        learnt = c.scalar(select(Campaign.spec).where(Campaign.name == "c"))["refused_params"]
    assert learnt == {parse_spec(spec).name: ["response_format", "seed"]}

    # a resumed run asks nothing; the same campaign again is the same campaign (the learnt
    # refusals are not part of what it is)
    n = len(chat(refusing))
    assert cli("campaign", "run", "c", "--json", db=db_url).json()["calls"] == 0
    create("c", 4)
    # another campaign with the same judge and items is answered from the cache: its requests are
    # built without the refused parameters from the start, so they hash as the stored ones
    create("c2", 6)
    run2 = cli("campaign", "run", "c2", "--json", db=db_url).json()
    assert run2["done"] == 6 and run2["calls"] == 2
    assert any("refused by its server in an earlier run" in w for w in run2["warnings"])
    later = chat(refusing)[n:]
    assert [c.status for c in later] == [200, 200]  # no probe 400s: the refusals were remembered
    c2 = rows(eng, "c2")
    assert sum(1 for _, cached in c2 if cached is not None) == 4
    assert {r.request_hash for r, _ in c2} >= {r.request_hash for r, _ in stored}
