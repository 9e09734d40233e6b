"""Issue 28 §4: `make test` as the README writes it used to skip the PostgreSQL and browser halves
without a word beyond pytest's count. Now `make test` runs through `.ci/with-services`, which
installs and starts what it can, and a run that still skipped tests for want of PostgreSQL, the
browser or the shared data says so in its last lines, with the one command that runs them."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

SELECTION = "tests/store/test_migrations.py::test_models_and_migrations_agree"


def _env_without_services() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGEPANEL_")}
    env["JUDGEPANEL_NO_SERVICES"] = "1"
    return env


def test_a_run_that_skipped_postgres_says_so_loudly_at_its_end() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", SELECTION, "-q", "-p", "no:cacheprovider", "-n", "0"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=_env_without_services(),
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    tail = out.stdout.strip().splitlines()[-3:]  # the last lines, after pytest's "1 passed, 1 skipped"
    text = "\n".join(tail)
    assert "1 TESTS WERE SKIPPED: this run did not test everything" in text
    assert "1 skipped for want of PostgreSQL (no JUDGEPANEL_TEST_PG_URL)" in text
    assert "`.ci/run`" in text


def test_with_services_starts_a_cluster_for_the_command_and_stops_it() -> None:
    if not list(Path("/usr/lib/postgresql").glob("*/bin")):
        pytest.skip("no PostgreSQL server binaries here (with-services would install them with root)")
    env = {k: v for k, v in os.environ.items() if k != "JUDGEPANEL_TEST_PG_URL"}
    with socket.socket() as s:  # a free port for the cluster
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env["JUDGEPANEL_PG_PORT"] = str(port)
    probe = "import os, psycopg; c = psycopg.connect(os.environ['JUDGEPANEL_TEST_PG_URL']); print(c.execute('select 1').fetchone()[0])"
    out = subprocess.run(
        [str(REPO / ".ci" / "with-services"), sys.executable, "-c", probe],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"
    assert f"PostgreSQL for the tests at postgresql://postgres@127.0.0.1:{port}/postgres" in out.stderr
    with socket.socket() as s:  # stopped again when the command ended
        assert s.connect_ex(("127.0.0.1", port)) != 0
    # the command's exit code is the script's
    failed = subprocess.run(
        [str(REPO / ".ci" / "with-services"), "sh", "-c", "exit 3"],
        cwd=REPO,
        capture_output=True,
        env={**env, "JUDGEPANEL_NO_SERVICES": "1"},
        timeout=60,
    )
    assert failed.returncode == 3
    assert shutil.which("make") is None or "with-services" in (REPO / "Makefile").read_text()
