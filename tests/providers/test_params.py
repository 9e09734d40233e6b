"""The operational judge-spec parameters (never sent, never part of a judge's name) are declared
once, in `providers.params`, with their parsers (issue 31 §3): `providers.names` kept a literal
copy that `providers.spec` compared at import time."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import judgepanel.providers
from judgepanel.providers import names, params
from judgepanel.providers.spec import parse_spec

PROVIDERS = Path(judgepanel.providers.__file__).parent

# a valid value for each operational parameter, and a provider that takes it
VALUES = {
    "timeout": "5",
    "rpm": "60",
    "tpm": "1000",
    "concurrency": "2",
    "price_in": "0.15",
    "price_out": "0.6",
    "price_cache_read": "0.075",
    "price_cache_write": "0.3",
    "batch_discount": "0.5",
    "prompt_cache": "off",
    "max_reply_bytes": "8M",
    "key_env": "TOGETHER_API_KEY",  # issue 29: key_env takes an allow-list (a provider key name)
    "error_rate": "0.1",
    "latency": "0",
    "jitter": "0",
}


def _listings(path: Path) -> int:
    """Collection displays in `path` that list three or more operational keys (a copy of the list)."""
    count = 0
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Dict):
            items: list[ast.expr | None] = list(node.keys)
        elif isinstance(node, ast.Set | ast.List | ast.Tuple):
            items = list(node.elts)
        else:
            continue
        keys = {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}
        count += len(keys & params.OPERATIONAL_KEYS) >= 3
    return count


def test_the_operational_keys_are_listed_in_one_module() -> None:
    listed = {p.name: n for p in sorted(PROVIDERS.glob("*.py")) if (n := _listings(p))}
    # the parsers' tables; neither the naming module nor the spec parser lists them again (the
    # simulator's own list of what does not seed its answers, and the price table, are other lists)
    assert listed.get("params.py") == 2 and "names.py" not in listed and "spec.py" not in listed, listed
    assert names.OPERATIONAL_KEYS is params.OPERATIONAL_KEYS


def test_the_keys_are_what_the_parsers_take() -> None:
    assert set(VALUES) == params.OPERATIONAL_KEYS
    for key, value in VALUES.items():
        table = {**params.OPERATIONAL, **params.KEY_ENV, **params.SIM_OPERATIONAL}
        table[key](value)  # a valid value parses


@pytest.mark.parametrize("key", sorted(VALUES))
def test_an_operational_parameter_is_parsed_and_left_out_of_every_name(key: str) -> None:
    provider = "sim" if key in params.SIM_OPERATIONAL else "openai"
    bare = parse_spec(f"{provider}:m")
    spec = parse_spec(f"{provider}:m?{key}={VALUES[key]}")
    assert key in spec.params  # parsed, kept for the run
    assert spec.name == bare.name  # but not part of the judge's identity
    other = f"{provider}:m?{key}={VALUES[key]}&temperature=1"
    derived = names.derive_judge_names([spec.name, other])
    assert key not in derived[other], derived


def test_an_identity_parameter_stays_in_the_name() -> None:
    assert "temperature" not in params.OPERATIONAL_KEYS
    assert "temperature=0" in parse_spec("openai:m?temperature=0&rpm=60").name
