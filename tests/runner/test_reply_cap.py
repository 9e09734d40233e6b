"""A reply larger than the judge's `max_reply_bytes` (a 200 MB body, an endless chunked stream) is
read only up to the cap: a stored `oversize` failure with its size so far and hash, never retried
by itself, re-asked by `--retry-failed` only. The real SDKs against the fake server's `huge` and
`endless` faults, through the CLI and the runner."""

from __future__ import annotations

import re
import time
import tracemalloc

import pytest
from sqlalchemy import Engine, select

from judgepanel.fake.server import FakeServerProcess
from judgepanel.store.models import Job, Response
from tests.helpers import cli
from tests.runner.conftest import create_argv, tiny_db

CAP = 256 * 1024


@pytest.fixture
def db(sqlite_url: str) -> tuple[str, Engine]:
    eng = tiny_db(sqlite_url, n_groups=1, per_group=2)
    return sqlite_url, eng


def _chat_calls(fake: FakeServerProcess) -> int:
    by_path = fake.stats()["by_path"]
    return int(by_path.get("/v1/chat/completions", 0) + by_path.get("/v1/messages", 0))


def test_huge_and_endless_replies_stop_at_the_cap_and_are_not_bought_again(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    url, eng = db
    judges = [
        f"openai:big!huge,huge=200000000?base_url={fake.url}/v1&max_reply_bytes=256k",
        f"anthropic:big!huge,huge=200000000?base_url={fake.url}&max_reply_bytes=256k",
        f"openai:forever!endless?base_url={fake.url}/v1&max_reply_bytes=256k",
        f"anthropic:forever!endless?base_url={fake.url}&max_reply_bytes=256k",
    ]
    assert cli(*create_argv("cap", *judges, extra=("--limit", "2")), db=url).code == 0
    # a normal run first, so that what the SDKs and the runner import is not counted below
    warm = [f"openai:warm?base_url={fake.url}/v1", f"anthropic:warm?base_url={fake.url}"]
    assert cli(*create_argv("warm", *warm, extra=("--limit", "2")), db=url).code == 0
    assert cli("campaign", "run", "warm", "--json", db=url).json()["done"] == 4
    before = _chat_calls(fake)
    tracemalloc.start()
    t0 = time.monotonic()
    try:
        ran = cli("campaign", "run", "cap", "--json", "--timeout", "60", db=url)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    elapsed = time.monotonic() - t0
    summary = ran.json(code=3)
    assert (summary["done"], summary["failed"]) == (0, 8), summary
    assert summary["errors"] == {"oversize": 8}
    # one call per job: an oversize reply is not retried by itself
    assert _chat_calls(fake) - before == 8
    # the endless streams stopped at the cap, not at the 60 s deadline; nothing near 200 MB was held
    assert elapsed < 30, elapsed
    assert peak < 24 * 1024 * 1024, peak
    with eng.connect() as conn:
        rows = conn.execute(
            select(
                Response.error_class, Response.error_message, Response.raw_body, Response.http_status
            ).where(Response.ok.is_(False))
        ).all()
        jobs = conn.execute(select(Job.status, Job.error_class)).all()
    assert len(rows) == 8 and {r.error_class for r in rows} == {"oversize"}
    for r in rows:
        assert r.raw_body is None and r.http_status == 200
        m = re.search(
            r"max_reply_bytes=262,144 \(([\d,]+) bytes read.*sha256 of the first 262,145 bytes ([0-9a-f]{64})",
            r.error_message,
        )
        assert m is not None, r.error_message
        assert int(m.group(1).replace(",", "")) > CAP
    huge = [r.error_message for r in rows if "announced" in r.error_message]
    assert len(huge) == 4 and all("200,000,000 announced" in h for h in huge)  # the Content-Length
    assert sorted(set(jobs), key=str) == [("done", None), ("failed", "oversize")]

    again = cli("campaign", "run", "cap", "--json", db=url).json(code=3)
    assert again["calls"] == 0 and _chat_calls(fake) - before == 8  # a plain re-run buys nothing
    retried = cli("campaign", "run", "cap", "--json", "--retry-failed", db=url).json(code=3)
    assert retried["calls"] == 8 and _chat_calls(fake) - before == 16  # --retry-failed re-asks


def test_a_reply_under_the_cap_is_read_whole(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    """The cap is a judge parameter: the same padded 2 MB reply passes under the 8 MB default."""
    url, _ = db
    judge = f"openai:padded!huge,huge=2000000?base_url={fake.url}/v1"
    assert cli(*create_argv("fits", judge, extra=("--limit", "2")), db=url).code == 0
    summary = cli("campaign", "run", "fits", "--json", db=url).json()
    assert (summary["done"], summary["errors"]) == (2, {})
    tight = judge + "&max_reply_bytes=1M"
    assert cli(*create_argv("tight", tight, extra=("--limit", "2")), db=url).code == 0
    assert cli("campaign", "run", "tight", "--json", "--no-cache", db=url).json(code=3)["errors"] == {
        "oversize": 2
    }


def test_max_reply_bytes_must_be_a_size(db: tuple[str, Engine]) -> None:
    r = cli(*create_argv("x", "openai:m?max_reply_bytes=lots"), db=db[0])
    assert r.code == 2 and "max_reply_bytes" in r.stderr and r.stderr.count("\n") == 1


def test_a_compressed_reply_is_capped_by_its_decoded_size(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    """A few KB of gzip on the wire that would decode to 200 MB: counted as it is decoded."""
    url, eng = db
    judges = [
        f"openai:bomb!gzipbomb,huge=200000000?base_url={fake.url}/v1&max_reply_bytes=256k",
        f"anthropic:bomb!gzipbomb,huge=200000000?base_url={fake.url}&max_reply_bytes=256k",
    ]
    assert cli(*create_argv("bomb", *judges, extra=("--limit", "2")), db=url).code == 0
    summary = cli("campaign", "run", "bomb", "--json", db=url).json(code=3)
    assert summary["errors"] == {"oversize": 4} and summary["calls"] == 4
    with eng.connect() as conn:
        messages = conn.execute(select(Response.error_message)).scalars().all()
    assert len(messages) == 4
    for m in messages:
        got = re.search(r"\(([\d,]+) bytes read, over ([\d,]+) once decompressed", m)
        assert got is not None, m
        wire, decoded = (int(g.replace(",", "")) for g in got.groups())
        assert wire < CAP < decoded


@pytest.mark.parametrize(
    ("headers", "version", "counted"),
    [
        ({"content-length": "100"}, b"HTTP/1.1", False),  # framed at 100 ≤ cap: nothing to count
        ({"content-length": str(CAP)}, b"HTTP/1.1", False),
        ({"content-length": str(CAP + 1)}, b"HTTP/1.1", True),  # announced over the cap
        ({}, b"HTTP/1.1", True),  # no length: read until the server stops
        ({"content-length": "100", "transfer-encoding": "chunked"}, b"HTTP/1.1", True),  # chunks win
        ({"content-length": "100", "content-encoding": "gzip"}, b"HTTP/1.1", True),  # may inflate
        ({"content-length": "100"}, b"HTTP/2", True),  # HTTP/2 does not hold a body to its length
        ({"content-length": "abc"}, b"HTTP/1.1", True),
    ],
)
async def test_only_a_reply_whose_framing_bounds_it_under_the_cap_skips_the_counting_stream(
    headers: dict[str, str], version: bytes, counted: bool
) -> None:
    """The response hook leaves uncounted only a reply HTTP/1.1 cuts at its Content-Length ≤ the
    cap, uncompressed and not chunked (issue 20 §5: counting every small reply cost CPU); every
    other reply still goes through the counting stream that stops at the cap."""
    import anthropic

    from judgepanel.providers import sdk

    client = sdk.http_client(anthropic.DefaultAsyncHttpxClient, anthropic.DEFAULT_CONNECTION_LIMITS, 4)
    lib = sdk._http_library(anthropic.DefaultAsyncHttpxClient)
    (hook,) = client.event_hooks["response"]
    try:
        response = lib.Response(
            200,
            headers=headers,
            stream=lib.ByteStream(b"x" * 100),
            extensions={"http_version": version},
        )
        inner = response.stream
        with sdk.reply_cap(CAP):
            await hook(response)
        assert (response.stream is not inner) is counted
        if counted:
            assert isinstance(response.stream, sdk._capped_stream(lib))
    finally:
        await client.aclose()
