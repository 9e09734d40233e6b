"""`make test-real`'s tests (marker `real`, tests/real/) are deselected from the default run, so
`make test` never starts the local model server; `make test-real` selects them with `-m real` (issue 34 §2)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def _collected(*args: str) -> str:
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            *args,
            "tests/real",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    return ran.stdout


def test_the_real_tier_is_deselected_by_default() -> None:
    default = _collected()
    assert "no tests collected" in default and "deselected" in default  # (`make test-real`: -m real)
