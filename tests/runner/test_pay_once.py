"""Issue 28 §2: a request is paid for once, counted at the fake server.

- A custom pointwise template that shows no rubric makes `--condition none,rubric` render
  byte-identical prompts: `campaign create` refuses such a study unless told
  `--allow-identical-conditions`, and a run then asks each distinct request once (the twin waits
  for the answer and is answered from the store).
- Two concurrent runs of campaigns that ask the same requests (two alignments of one judge do)
  pay once between them, on SQLite and on PostgreSQL.
- A claimant killed with its requests in flight does not block its twins: they see it dead and
  ask themselves, long before its claims would expire.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select, text

from judgepanel.fake.server import FakeServerProcess
from judgepanel.store.models import Request, Response
from tests.helpers import cli
from tests.runner.conftest import FAKE_KEYS, create_argv, tiny_db
from tests.runner.test_kill import settled_chat_requests

BLIND = """{# judgepanel:
structured: off
#}
Rate the summary of the article from 1 to 5.

Article:
{{ source }}

Summary:
{{ candidate }}

End with a line "Score: N".
"""


@pytest.fixture(scope="module")
def slow() -> Iterator[FakeServerProcess]:
    """Slow enough that concurrent runs overlap: every answer takes about half a second."""
    with FakeServerProcess("--latency", "0.5", "--seed", "3") as server:
        yield server


def _judge(fake: FakeServerProcess) -> str:
    return f"openai:judge-o?base_url={fake.url}/v1&price_in=1&price_out=2"


def _migrated(url: str, n_groups: int = 2, per_group: int = 3) -> Engine:
    eng = tiny_db(url, n_groups=n_groups, per_group=per_group)
    return eng


def _paid(eng: Engine) -> tuple[int, int]:
    """(responses paid for, distinct request hashes asked)."""
    with eng.connect() as c:
        paid = c.scalar(select(func.count()).select_from(Response).where(Response.cached_from.is_(None)))
        distinct = c.scalar(select(func.count(func.distinct(Request.request_hash))))
    return int(paid or 0), int(distinct or 0)


def test_identical_conditions_are_refused_then_asked_once(
    sqlite_url: str, slow: FakeServerProcess, keys_env: dict[str, str], tmp_path: Path
) -> None:
    eng = _migrated(sqlite_url)
    assert cli("rubric", "add", "summeval", db=sqlite_url).code == 0
    template = tmp_path / "blind.j2"
    template.write_text(BLIND, encoding="utf-8")
    flags = ("--rubric", "summeval", "--dimension", "coherence", "--template", f"pointwise={template}")
    argv = create_argv("blind", _judge(slow), extra=(*flags, "--condition", "none,rubric"))
    refused = cli(*argv, db=sqlite_url)
    assert refused.code == 2 and refused.stderr.count("\n") == 1
    assert "conditions none and rubric render the same prompt for all 6 unit(s)" in refused.stderr
    assert "--allow-identical-conditions" in refused.stderr
    with eng.connect() as c:
        assert c.execute(text("SELECT count(*) FROM campaign")).scalar_one() == 0

    made = cli(*argv, "--allow-identical-conditions", db=sqlite_url)
    assert made.code == 0, made.stderr
    assert "warning: conditions none and rubric render the same prompt for all 6 unit(s)" in made.stderr
    slow.reset()
    run = cli("campaign", "run", "blind", "--json", db=sqlite_url).json()
    assert run["status"] == "done" and run["done"] == 12
    assert settled_chat_requests(slow) == 6  # 12 jobs, 6 distinct requests: each paid once
    assert run["calls"] == 6 and run["cached"] == 6
    assert _paid(eng) == (6, 6)
    with eng.connect() as c:
        assert c.execute(text("SELECT count(*) FROM request_claim")).scalar_one() == 0
    eng.dispose()


def test_conditions_that_differ_only_somewhere_are_a_warning(sqlite_url: str, tmp_path: Path) -> None:
    """A template that shows the rubric only under one condition: `none` and `criteria` coincide,
    `rubric` differs; with three conditions that is refused for the pair that coincides."""
    _migrated(sqlite_url).dispose()
    assert cli("rubric", "add", "summeval", db=sqlite_url).code == 0
    template = tmp_path / "half.j2"
    template.write_text(
        BLIND.replace("End with", "{% if condition == 'rubric' %}Use the rubric.{% endif %}\nEnd with"),
        encoding="utf-8",
    )
    flags = ("--rubric", "summeval", "--dimension", "coherence", "--template", f"pointwise={template}")
    out = cli(
        *create_argv("half", "sim:a", extra=(*flags, "--condition", "none,criteria,rubric")), db=sqlite_url
    )
    assert out.code == 2 and "conditions none and criteria render the same prompt" in out.stderr
    ok = cli(*create_argv("two", "sim:a", extra=(*flags, "--condition", "none,rubric")), db=sqlite_url)
    assert ok.code == 0 and "render the same prompt" not in ok.stderr
    # the bundled templates differ under every condition: nothing to say
    plain = cli(
        *create_argv(
            "bundled",
            "sim:a",
            extra=("--rubric", "summeval", "--dimension", "coherence", "--condition", "none,criteria,rubric"),
        ),
        db=sqlite_url,
    )
    assert plain.code == 0 and "warning" not in plain.stderr


def _run(url: str, name: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "judgepanel", "--db", url, "campaign", "run", name, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **FAKE_KEYS},
    )


def test_two_concurrent_runs_pay_once(db_url: str, slow: FakeServerProcess) -> None:
    eng = _migrated(db_url)
    for name in ("twin-a", "twin-b"):  # the same judge on the same items: the same requests
        assert cli(*create_argv(name, _judge(slow)), db=db_url).code == 0
    slow.reset()
    procs = [_run(db_url, "twin-a"), _run(db_url, "twin-b")]
    for p in procs:
        _out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    assert settled_chat_requests(slow) == 6  # 2 × 6 jobs, 6 distinct requests
    assert _paid(eng) == (6, 6)
    for name in ("twin-a", "twin-b"):
        st = cli("campaign", "status", name, "--json", db=db_url).json()
        assert st["done"] == 6
    with eng.connect() as c:
        assert c.execute(text("SELECT count(*) FROM request_claim")).scalar_one() == 0
    eng.dispose()


@pytest.fixture(scope="module")
def hanging() -> Iterator[FakeServerProcess]:
    """Answers take 3 s: a run killed a second after it asked dies with its requests in flight."""
    with FakeServerProcess("--latency", "3", "--seed", "3") as server:
        yield server


def _claims(eng: Engine) -> int:
    with eng.connect() as c:
        return int(c.execute(text("SELECT count(*) FROM request_claim")).scalar_one())


def test_a_killed_claimant_does_not_block_its_twins(db_url: str, hanging: FakeServerProcess) -> None:
    eng = _migrated(db_url, n_groups=1, per_group=2)
    judge = f"openai:judge-o?base_url={hanging.url}/v1&price_in=1&price_out=2"
    assert cli(*create_argv("first", judge), db=db_url).code == 0
    assert cli(*create_argv("second", judge), db=db_url).code == 0
    first = _run(db_url, "first")
    try:
        deadline = time.monotonic() + 60
        while _claims(eng) < 2:
            assert time.monotonic() < deadline and first.poll() is None, "the first run never asked"
            time.sleep(0.05)
        time.sleep(0.5)  # the requests are on their way (answers take 3 s)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        for pipe in (first.stdout, first.stderr):
            if pipe is not None:
                pipe.close()
    assert _claims(eng) == 2  # the dead run's claims are left behind (they would expire in 120 s) …
    with eng.connect() as c:
        assert c.execute(text("SELECT count(*) FROM response")).scalar_one() == 0
    # … and the twin run does not wait for that: it sees the claimant dead and asks itself. (Its
    # own calls need no latency: the 3 s only made the kill land while the first run's were in
    # flight. Without the latency a twin that waited for the claims still takes 120 s.)
    hanging.set_latency(0)
    try:
        started = time.monotonic()
        second = _run(db_url, "second")
        _out, err = second.communicate(timeout=110)
        took = time.monotonic() - started
    finally:
        hanging.set_latency(3)
    assert second.returncode == 0, err.decode()
    assert took < 40, took
    assert cli("campaign", "status", "second", "--json", db=db_url).json()["done"] == 2
    assert _paid(eng) == (2, 2)  # the killed run stored nothing; the twin asked and stored both
    assert _claims(eng) == 0
    eng.dispose()


def test_a_twin_answered_between_the_cache_lookup_and_the_claim_is_not_asked_again(
    db_url: str, slow: FakeServerProcess
) -> None:
    """The race a loaded machine showed (7 requests at the server for 6): run B looks in the cache
    (miss), run A commits its answer and drops its claim in that transaction, B's claim then meets
    no claim. B must find the answer after claiming, not ask again. Replayed here step by step:
    the stored answer exists, the caller's lookup (``hits``) predates it."""
    from types import SimpleNamespace

    from judgepanel.runner.inflight import InFlight
    from judgepanel.store.campaigns.results import cache_lookup

    eng = _migrated(db_url)
    assert cli(*create_argv("answered", _judge(slow)), db=db_url).code == 0
    done = subprocess.run(
        [sys.executable, "-m", "judgepanel", "--db", db_url, "campaign", "run", "answered"],
        capture_output=True, env={**os.environ, **FAKE_KEYS}, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    with eng.connect() as c:
        hashes = sorted(c.scalars(select(Request.request_hash).distinct()))
    assert hashes and set(cache_lookup(eng, hashes)) == set(hashes)
    jobs = [SimpleNamespace(request_hash=h) for h in hashes]
    late = InFlight(eng, "late-run", lease_seconds=60, enabled=True)
    assert late.claim(jobs, hits={}) == (set(), {})  # the feeder's path: every one is answered already
    hits, got, batched = late._look(hashes)  # the resolver's path
    assert got == set() and batched == {} and set(hits) == set(hashes)
    with eng.connect() as c:
        assert c.execute(text("SELECT count(*) FROM request_claim")).scalar_one() == 0
    eng.dispose()
