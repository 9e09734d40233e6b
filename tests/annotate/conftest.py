"""Fixtures for the annotation queues: the bundled SummEval sample on a real SQLite file and a real
PostgreSQL database, with queues made through the library."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine

from judgepanel.annotate.queues import CreateOptions, create, invite
from judgepanel.store import annotation as store
from judgepanel.store.engine import make_engine
from tests.helpers import load_summeval_sample


@pytest.fixture
def sample(db_url: str) -> Iterator[tuple[str, Engine]]:
    """The SummEval sample as dataset `se` (128 items; experts and turkers), on each backend."""
    load_summeval_sample(db_url)
    eng = make_engine(db_url)
    yield db_url, eng
    eng.dispose()


def make_queue(engine: Engine, name: str = "q", **options: object) -> dict[str, object]:
    opts = {"dataset": "se", "dimension": "coherence", "items": 6, "per_item": 2, **options}
    return create(engine, CreateOptions(name=name, **opts))  # type: ignore[arg-type]


def member(engine: Engine, queue: str, name: str) -> tuple[store.Member, str]:
    token = invite(engine, queue, name, "http://127.0.0.1:1")["token"]
    return store.member_by_token(engine, queue, store.token_hash(token)), token


class Server:
    """`judgepanel annotate serve` in its own process; `url` is what it printed first."""

    def __init__(self, db: str, *args: str) -> None:
        import os
        import re
        import subprocess
        import sys

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "judgepanel", "--db", db, "annotate", "serve", "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        m = re.match(r"(http://\S+/)", line)
        if not m:
            self.stop()
            raise RuntimeError(
                f"annotate serve did not start: {line!r} {self.proc.stderr.read() if self.proc.stderr else ''}"
            )
        self.url = m.group(1).rstrip("/")

    def stop(self) -> None:
        import subprocess

        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
