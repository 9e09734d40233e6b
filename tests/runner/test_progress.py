"""The progress line: what it shows, and that it stays silent for scripts."""

from __future__ import annotations

import io
import sys
import time
from collections import Counter

import pytest

from judgepanel.runner.options import RunStats
from judgepanel.runner.progress import enabled, render


def test_progress_line_shows_counts_rate_errors_spend_and_eta() -> None:
    stats = RunStats(
        total=200, done=90, failed=10, calls=120, cached=5, errors=Counter({"rate_limit": 3, "parse": 1})
    )
    stats.spent = 0.1234
    stats.started = time.monotonic() - 10.0
    stats.done_at_start = 50
    text = render(stats).plain
    assert "100/200 jobs" in text and "(90 done, 10 failed)" in text
    assert "12.0 calls/s" in text and "cached 5" in text
    assert "errors: parse 1, rate_limit 3" in text and "spent $0.1234" in text
    assert "ETA 0:20" in text  # 50 jobs in 10 s, 100 to go
    stats.spent_unknown = True
    assert "spent unknown" in render(stats).plain


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_silent_for_json_and_when_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert enabled(json_output=False) is False
    monkeypatch.setattr(sys, "stderr", _Tty())
    assert enabled(json_output=False) is True
    assert enabled(json_output=True) is False
