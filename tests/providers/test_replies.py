"""Issue 29 §1: what a reply may bring into the store (`providers.replies`)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from judgepanel.providers.base import ChatResult
from judgepanel.providers.replies import (
    MAX_COUNT,
    bad_count,
    clean_body,
    clean_result,
    clean_text,
    token_count,
)


@given(st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF)))
def test_clean_text_is_always_storable(text: str) -> None:
    cleaned = clean_text(text)
    cleaned.encode("utf-8")  # never raises: no lone surrogate is left
    assert "\x00" not in cleaned
    if text.isascii() and "\x00" not in text:
        assert cleaned is text


def test_clean_text_replaces_lone_surrogates_and_nul_and_keeps_the_rest() -> None:
    assert clean_text(json.loads('"a\\ud800b\\u0000c\\udfff"')) == "a\ufffdb\ufffdc\ufffd"
    assert clean_text("caf\u00e9 \U0001f600") == "caf\u00e9 \U0001f600"
    assert clean_text("\ud83d\ude00") == "\U0001f600"  # a pair held as two code points is joined


def test_token_counts_are_bounded() -> None:
    assert [token_count(v) for v in (0, 12, MAX_COUNT)] == [0, 12, MAX_COUNT]
    for bad in (-1, MAX_COUNT + 1, 10**40, 1.5, "12", True, None, [3]):
        assert token_count(bad) is None
    assert not bad_count(None) and bad_count(-1) and bad_count("3") and not bad_count(7)


def test_a_body_over_the_cap_is_replaced_by_its_size_and_hash() -> None:
    assert clean_body("x" * 100, 100) == "x" * 100
    over = clean_body("é" * 60, 100)  # 120 bytes in UTF-8
    assert over is not None and over.startswith("[not stored: 120 bytes, over max_reply_bytes=100; sha256 ")
    assert clean_body(None, 10) is None and clean_body("y" * 10**6, None) == "y" * 10**6


def test_clean_result_bounds_counts_cuts_short_columns_and_returns_a_clean_reply_unchanged() -> None:
    fine = ChatResult(text="ok", raw_body="{}", model_returned="m", input_tokens=5, output_tokens=2)
    assert clean_result(fine, 1000) is fine
    bad = ChatResult(
        text="a\x00",
        raw_body="b" * 2000,
        model_returned="m" * 500,
        finish_reason="s" * 100,
        input_tokens=5,
        output_tokens=10**40,
        structured={"score": 10**40, "rationale": "\ud800"},
    )
    got = clean_result(bad, 1000)
    assert (got.text, got.input_tokens, got.output_tokens) == ("a\ufffd", None, None)
    assert got.raw_body.startswith("[not stored: 2,000 bytes")
    assert len(got.model_returned or "") == 200 and len(got.finish_reason or "") == 40
    assert got.structured == {"score": 1e40, "rationale": "\ufffd"}
