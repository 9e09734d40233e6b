"""Issue 29 §1: the reply cap counts a compressed body as the client decodes it, every layer of it,
and refuses codings it did not ask for (the end-to-end runs: tests/runner/test_hostile_replies.py)."""

from __future__ import annotations

import zlib

import pytest

from judgepanel.providers.sdk import Inflation, content_codings, refused_coding


def _layers(data: bytes, codings: list[str]) -> bytes:
    for coding in codings:
        if coding == "gzip":
            pack = zlib.compressobj(6, zlib.DEFLATED, 31)
        elif coding == "deflate":
            pack = zlib.compressobj(6, zlib.DEFLATED, 15)
        else:  # raw deflate, which httpx also accepts as `deflate`
            pack = zlib.compressobj(6, zlib.DEFLATED, -15)
        data = pack.compress(data) + pack.flush()
    return data


@pytest.mark.parametrize(
    "applied",
    [["gzip"], ["deflate"], ["rawdeflate"], ["gzip", "gzip"], ["deflate", "gzip", "gzip"], ["gzip"] * 5],
)
def test_inflation_counts_every_layer_as_the_client_decodes_it(applied: list[str]) -> None:
    """The counter against zlib decoding the whole body at once, fed in small uneven pieces."""
    body = b'{"padding": "' + b"ab" * 300_000 + b'"}'
    wire = _layers(body, applied)
    header = ", ".join("deflate" if c == "rawdeflate" else c for c in applied)
    big = Inflation(content_codings(header), cap=10**9)
    seen = 0
    for i in range(0, len(wire), 37):
        seen = big.feed(wire[i : i + 37])
    assert seen == len(body)
    small = Inflation(content_codings(header), cap=1000)
    assert small.feed(wire) > 1000  # stops soon after the cap, not at the end
    assert small.feed(b"") < 1000 + 2 * 65536 * len(applied)


def test_which_codings_are_refused() -> None:
    assert refused_coding("") is None and refused_coding("identity") is None
    assert refused_coding("gzip, GZIP , deflate") is None
    assert refused_coding("x-compress") is None  # httpx leaves unknown codings undecoded: counted raw
    assert "br was not asked for" in (refused_coding("gzip, br") or "")
    assert "zstd" in (refused_coding("zstd") or "")
    assert "more than 5" in (refused_coding(", ".join(["gzip"] * 6)) or "")
