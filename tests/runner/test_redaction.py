"""A key that a provider echoes in a 200 reply (in the text, a rationale, `model`,
`system_fingerprint`) never reaches the store: the fake server's `echo` fault plants it, and the
whole database dump is searched for it on both backends."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.engine import make_url

from judgepanel.fake.server import FakeServerProcess
from judgepanel.store.engine import make_engine
from judgepanel.store.migrate import upgrade
from judgepanel.store.models import Response, Verdict
from tests.helpers import cli
from tests.runner.conftest import PAIRS, create_argv, load_tiny


@pytest.fixture
def db(db_url: str) -> Iterator[tuple[str, Engine]]:
    eng = make_engine(db_url)
    upgrade(eng)
    load_tiny(eng)
    yield db_url, eng
    eng.dispose()


def _dump(url: str, eng: Engine) -> bytes:
    """Every byte the database holds: the SQLite files, or `pg_dump` of the PostgreSQL database."""
    eng.dispose()
    if url.startswith("sqlite"):
        path = Path(make_url(url).database or "")
        return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))
    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    return subprocess.run(["pg_dump", "--no-owner", plain], check=True, capture_output=True).stdout


def test_keys_echoed_in_a_200_reply_are_not_stored(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    url, eng = db
    judges = [
        f"openai:echo-o!echo?base_url={fake.url}/v1",  # structured: the key inside the JSON rationale
        f"openai:echo-p!echo?base_url={fake.url}/v1&structured=off",  # prose: the key in the text
        f"anthropic:echo-a!echo?base_url={fake.url}",  # tool input; no system_fingerprint
    ]
    runs = [
        cli(
            *create_argv("echo", *judges, protocol="pairwise", extra=("--pairs", PAIRS, "--limit", "3")),
            db=url,
        ),
        cli("campaign", "run", "echo", "--json", db=url),
        cli("campaign", "status", "echo", "--json", db=url),
    ]
    assert runs[0].code == 0, runs[0].stderr
    ran = runs[1].json()
    assert (ran["done"], ran["failed"]) == (18, 0), ran
    echoed = [r for r in fake.requests(limit=200) if r.get("fault") == "echo"]
    assert len(echoed) >= 18  # the server did plant the keys
    with eng.connect() as conn:
        models = conn.execute(select(Response.model_returned, Response.system_fingerprint)).all()
        rationales = conn.execute(select(Verdict.rationale)).scalars().all()
    assert len(models) == 18 and all("[redacted]" in m for m, _ in models)
    assert {f for _, f in models} == {"[redacted]", None}  # OpenAI's fingerprint was the key itself
    assert len(rationales) == 18 and all(r and "[redacted]" in r for r in rationales)
    dump = _dump(url, eng)
    for key in keys_env.values():
        for part in (key, key[-12:], key[:20]):
            assert part.encode() not in dump, part
        for r in runs:
            assert key not in r.stdout and key not in r.stderr
