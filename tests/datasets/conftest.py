"""Inspect AI logs written once per test run by the real Inspect (see `graded_logs`)."""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.helpers import shared_root


@pytest.fixture(scope="session")
def inspect_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The logs `tests.datasets.graded_logs.build` writes, by role (graded, graded_json, mocked,
    mocked_json, cancelled): built once per test run, whichever xdist worker asks first, in a
    subprocess (Inspect's eval installs logging handlers and an event loop of its own)."""
    pytest.importorskip("inspect_ai", reason="Inspect AI is not installed (the judgepanel[inspect] extra)")
    folder = shared_root(tmp_path_factory.getbasetemp()) / "built-inspect-logs"
    folder.mkdir(exist_ok=True)
    manifest = folder / "logs.json"
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not manifest.exists():
                done = subprocess.run(
                    [sys.executable, "-m", "tests.datasets.graded_logs", str(folder)],
                    cwd=REPO,
                    capture_output=True,
                    text=True,
                    timeout=600,
                )
                assert done.returncode == 0, done.stderr[-3000:]
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return {k: Path(v) for k, v in json.loads(manifest.read_text()).items()}
