"""`datasets.graded.clean_json`, the scrub of every promptfoo grade's stored raw record, walks a
record for secret-named keys only when its JSON text names one (issue 35 §4: the walk was a fifth
of building a sample). It must return what the walk of every record returns: checked here against
that definition written out plainly, on records whose keys hide in escapes, in lists, after
string values that look like keys, and under names that only a full scan finds."""

from __future__ import annotations

import json
from typing import Any

import pytest

from judgepanel.datasets.graded import REDACTED, clean_json
from judgepanel.providers.errors import redact
from judgepanel.providers.names import is_secret_name

KEY = "sk-test-clean-json-not-a-key-0123456789"


def _walked(value: Any) -> Any:
    """The definition: every non-empty string under a key named like a secret (the key read as
    JSON writes it) replaced, at any depth."""
    if isinstance(value, dict):
        return {
            k: REDACTED
            if x
            and isinstance(x, str)
            and isinstance(k, str)
            and is_secret_name(json.dumps(k, ensure_ascii=False)[1:-1])
            else _walked(x)
            for k, x in value.items()
        }
    if isinstance(value, list | tuple):
        return [_walked(x) for x in value]
    return value


def _reference(value: Any, secrets: tuple[str, ...]) -> str:
    return redact(json.dumps(_walked(value), ensure_ascii=False, default=str, allow_nan=True), secrets)


RECORDS: dict[str, Any] = {
    "no secret key": {"pass": True, "score": 1, "reason": "fine", "tokensUsed": {"total": 3}},
    "nested apiKey": {"assertion": {"provider": {"config": {"apiKey": "abc-123-secret-value"}}}},
    "in a list": {"headers": [{"Authorization": "Bearer abc"}, {"x-api-key": "zzz"}]},
    "a key that only an overlapping scan finds": {"a": "b", ": api_key": "hidden-value-1"},
    "a value that looks like a key": {"reason": 'the grader said {"apiKey": "v"} and', "ok": 1},
    "escapes in the key": {'x"client_secret': "v1", "client-secret": "v2", "ünïcode_token": "v3"},
    "empty and non-string values kept": {"api_key": "", "password": 12345, "token": None, "secret": ["a"]},
    "tuples and odd keys": {"t": ("a", {"AUTH": "v"}), 7: {"refresh_token": "v"}},
    "a key-shaped string anywhere": {"note": f"copied {KEY} here"},
    "a configured key under an innocent name": {"value": "prefix CONFIGURED-secret-0123456789 suffix"},
}


@pytest.mark.parametrize("name", list(RECORDS))
def test_clean_json_is_the_walk_of_every_record(name: str) -> None:
    secrets = ("CONFIGURED-secret-0123456789",)
    value = RECORDS[name]
    got = clean_json(value, secrets)
    assert got == _reference(value, secrets)
    assert "hidden-value-1" not in got and "abc-123-secret-value" not in got and KEY not in got
    assert "CONFIGURED-secret" not in got


def test_a_record_without_secret_keys_is_its_json() -> None:
    value = RECORDS["no secret key"]
    assert clean_json(value, ()) == json.dumps(value, ensure_ascii=False)
