"""The real-model tier (`make test-real`, marker `real`, not part of `make test`): a llama.cpp
server with a small real model from `../shared/tools/local-llm`, started once for the session.

What the tests assert holds whatever a small model answers: every job ends with a verdict or a
classified failure, exit codes are right, nothing is paid twice, a resumed run asks only what is
missing, failures are loud. The model's answers themselves are not asserted.

Settings (environment): `JUDGEPANEL_LLM_SETUP` (the setup script, default
`../shared/tools/local-llm/setup.sh` beside this checkout), `JUDGEPANEL_LLM_CACHE` (where it
keeps the server; its `start.sh` / `stop.sh` are used), `JUDGEPANEL_REAL_LLM_PORT` (default a
free port), `JUDGEPANEL_LLM_CTX` (default 16384 here: two slots of 8,192, which hold the editor's
prompts), `JUDGEPANEL_LLM_PARALLEL` (2), `JUDGEPANEL_LLM_THREADS` (the cores).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import cli, load_summeval_sample

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-local-dummy-0000000000"  # llama-server checks no key; the SDK wants one
KNOWN_CLASSES = {"parse", "truncated", "transient", "rate_limit", "fatal", "context", "oversize"}


@dataclass(frozen=True)
class LocalModel:
    url: str  # the OpenAI base_url, …/v1
    model: str  # what /v1/models reports
    port: int
    parallel: int

    def spec(self, name: str | None = None, **params: object) -> str:
        """A judge spec for the local model: free, patient, at its parallel slots."""
        merged: dict[str, object] = {
            "base_url": self.url,
            "temperature": 0,
            "price_in": 0,
            "price_out": 0,
            "timeout": 900,
            "concurrency": self.parallel,
            **params,
        }
        query = "&".join(f"{k}={v}" for k, v in merged.items())
        spec = f"openai:{self.model}?{query}"
        return f"{name}={spec}" if name else spec


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def llm() -> Iterator[LocalModel]:
    setup = Path(os.environ.get("JUDGEPANEL_LLM_SETUP", ROOT.parent / "shared/tools/local-llm/setup.sh"))
    if not setup.exists():
        pytest.fail(f"the real tier needs {setup} (set JUDGEPANEL_LLM_SETUP)")
    subprocess.run(["bash", str(setup)], check=True, stdout=subprocess.DEVNULL)
    cache = Path(os.environ.get("JUDGEPANEL_LLM_CACHE", Path.home() / ".cache/judgepanel-llm"))
    port = int(os.environ.get("JUDGEPANEL_REAL_LLM_PORT") or _free_port())
    parallel = int(os.environ.get("JUDGEPANEL_LLM_PARALLEL", "2"))
    env = {
        **os.environ,
        "JUDGEPANEL_LLM_CTX": os.environ.get("JUDGEPANEL_LLM_CTX", "16384"),
        "JUDGEPANEL_LLM_PARALLEL": str(parallel),
    }
    subprocess.run([str(cache / "start.sh"), str(port)], check=True, env=env, stdout=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/v1"
        with urllib.request.urlopen(f"{url}/models", timeout=30) as resp:
            model = str(json.loads(resp.read())["data"][0]["id"])
        yield LocalModel(url, model, port, parallel)
    finally:
        subprocess.run([str(cache / "stop.sh"), str(port)], check=False, stdout=subprocess.DEVNULL)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for name in ("OPENAI_BASE_URL", "JUDGEPANEL_PRICES"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def summeval_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The bundled SummEval sample without its articles (short prompts: the tier exercises the
    protocols, not the judge), split dev/eval by article, with the summeval rubric."""
    url = f"sqlite:///{tmp_path_factory.mktemp('real') / 'real.db'}"
    load_summeval_sample(url, "se", articles=False)
    assert (
        cli(
            "data", "split", "se", "--fractions", "dev=0.5,eval=0.5", "--seed", "1", "--by", "group", db=url
        ).code
        == 0
    )
    assert cli("rubric", "add", "summeval", db=url).code == 0
    return url


def job_states(db: str, campaign: str) -> list[tuple[str, str | None]]:
    """(status, error class) of every job of the campaign."""
    rows = cli(
        "query",
        "SELECT j.status, j.error_class FROM job j JOIN campaign c ON c.id = j.campaign_id "
        f"WHERE c.name = '{campaign}'",
        "--format",
        "json",
        db=db,
    ).json()["rows"]
    return [(r["status"], r["error_class"]) for r in rows]


def assert_every_job_classified(db: str, campaign: str) -> list[tuple[str, str | None]]:
    """Every job has a verdict or failed with a known class; none is left pending or running."""
    states = job_states(db, campaign)
    assert states, f"campaign {campaign} has no jobs"
    for status, cls in states:
        assert status in ("done", "failed"), (campaign, states)
        assert (status == "done") == (cls is None), (campaign, states)
        assert status == "done" or cls in KNOWN_CLASSES, (campaign, states)
    return states


def responses(db: str) -> int:
    """Calls stored (not answered from the store's cache)."""
    rows = cli(
        "query", "SELECT count(*) AS n FROM response WHERE cached_from IS NULL", "--format", "json", db=db
    ).json()["rows"]
    return int(rows[0]["n"])


def exit_of_run(summary_code: int, states: list[tuple[str, str | None]]) -> None:
    """`campaign run`'s exit code matches what it left: 0 all done, 3 some failed."""
    failed = sum(1 for s, _c in states if s == "failed")
    assert summary_code == (3 if failed else 0), (summary_code, states)


def wait_for(predicate: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(predicate) and predicate():
            return True
        time.sleep(0.5)
    return False
