"""Issue 29 §4: a key is redacted through the natural re-encodings a server may echo it in, and
when it is cut in two across the fields of one stored row (`providers.unmask`)."""

from __future__ import annotations

import json

import pytest

from judgepanel.fake.faults import encoded_forms
from judgepanel.providers.base import ChatResult
from judgepanel.providers.errors import redact, redact_result
from judgepanel.providers.unmask import across, decoded

KEY = "sk-proj-judgepanel-Test-9f8e7d6c5b4a3210"
FORMS = sorted(encoded_forms(KEY).items())


@pytest.mark.parametrize(("name", "form"), FORMS, ids=[n for n, _ in FORMS])
def test_each_natural_re_encoding_is_cut(name: str, form: str) -> None:
    out = redact(f"the key was {form}, as you asked", (KEY,))
    assert out == "the key was [redacted], as you asked", name


def test_an_escape_inside_a_raw_json_body_is_cut_and_the_body_stays_json() -> None:
    escaped = "".join(f"\\u{ord(c):04x}" for c in KEY)
    body = '{"model": "m", "trace": "' + escaped + '", "note": "caf\\u00e9"}'
    out = redact(body, (KEY,))
    assert json.loads(out) == {"model": "m", "trace": "[redacted]", "note": "café"}


def test_text_without_a_key_is_left_exactly_as_it_was() -> None:
    for text in ("50% of &amp; the caf\u00e9", "%41%42 &#65; \\u0041", "ｆｕｌｌ\u200bwidth"):
        assert redact(text, (KEY,)) is text or redact(text, (KEY,)) == text
    assert decoded("plain ascii, nothing to undo") == "plain ascii, nothing to undo"
    assert decoded("%73%6B &#45; \\u0070 ｆ\u200b") == "sk - p f"


def test_a_key_split_across_two_fields_is_cut_from_both_and_from_the_raw_body() -> None:
    half = len(KEY) // 2
    body = json.dumps({"model": "gpt-" + KEY[:half], "system_fingerprint": KEY[half:] + "-fp", "x": "ok"})
    r = ChatResult(
        text="a fine answer",
        raw_body=body,
        model_returned="gpt-" + KEY[:half],
        system_fingerprint=KEY[half:] + "-fp",
    )
    got = redact_result(r, (KEY,))
    assert (got.model_returned, got.system_fingerprint, got.text) == (
        "gpt-[redacted]",
        "[redacted]-fp",
        "a fine answer",
    )
    assert json.loads(got.raw_body) == {
        "model": "gpt-[redacted]",
        "system_fingerprint": "[redacted]-fp",
        "x": "ok",
    }


@pytest.mark.parametrize("cut", [5, 9, 20, len(KEY) - 4])  # at least 4 letters or digits each side
def test_a_rotation_is_found_wherever_the_key_is_cut(cut: int) -> None:
    rows = across([f"answer {KEY[cut:]}", f"{KEY[:cut]} tail", "unrelated"], ("x" * 8,))
    assert rows == [f"answer {KEY[cut:]}", f"{KEY[:cut]} tail", "unrelated"]  # another key: untouched
    bare = "".join(c for c in KEY.lower() if c.isalnum())
    # the second field ends where the first begins: a rotation across fields, in either order
    got = across([f"{KEY[cut:]} is the rest", f"here is {KEY[:cut]}"], (bare,))
    assert got == ["[redacted] is the rest", "here is [redacted]"]
    assert across([f"{KEY[cut:]} middle {KEY[:cut]}"], (bare,)) == ["[redacted] middle [redacted]"]
