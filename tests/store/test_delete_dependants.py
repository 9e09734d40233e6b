"""Issue 28 §3: `campaign delete` refuses a campaign an alignment uses, as it refuses one a repair
iteration uses (naming them, nothing deleted); `--force` deletes those records too in the same
transaction; on a terminal it asks first (`--yes` does not ask)."""

from __future__ import annotations

import os
import pty
import select as select_mod
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import create_engine, func, select

from judgepanel.store.models import Alignment, Base, Campaign, RepairIteration
from tests.align.conftest import prepare_db, run_args
from tests.helpers import cli
from tests.repair.conftest import run_args as repair_args
from tests.runner.conftest import create_argv, tiny_db

PANEL = ("sim:judge-a", "sim:judge-b")


def _counts(url: str) -> dict[str, int]:
    eng = create_engine(url)
    try:
        with eng.connect() as c:
            return {
                t.name: int(c.scalar(select(func.count()).select_from(t)) or 0)
                for t in Base.metadata.sorted_tables
            }
    finally:
        eng.dispose()


def _names(url: str, model: type[Base]) -> list[str]:
    eng = create_engine(url)
    try:
        with eng.connect() as c:
            return list(c.scalars(select(model.name).order_by(model.name)))  # type: ignore[attr-defined]
    finally:
        eng.dispose()


def test_an_alignment_keeps_its_campaigns_unless_forced(sqlite_url: str) -> None:
    prepare_db(sqlite_url)
    made = cli(*run_args("a1", "fewshot", "--limit", "8"), "--json", db=sqlite_url)
    assert made.code == 0, made.stderr
    campaigns = made.json()["campaigns"]
    target = campaigns["eval-aligned"]
    before = _counts(sqlite_url)

    refused = cli("campaign", "delete", target, db=sqlite_url)
    assert refused.code == 2 and refused.stderr.count("\n") == 1
    assert f"alignment(s) a1 use campaign {target!r}; it is kept" in refused.stderr
    assert "--force" in refused.stderr
    assert _counts(sqlite_url) == before
    assert cli("align", "status", "a1", "--json", db=sqlite_url).code == 0

    forced = cli("campaign", "delete", target, "--force", "--json", db=sqlite_url).json()
    assert forced["deleted"]["alignment"] == 1 and forced["deleted"]["campaign"] == 1
    assert _names(sqlite_url, Alignment) == []
    left = set(_names(sqlite_url, Campaign))
    assert target not in left and set(campaigns.values()) - {target} <= left  # the others stay
    gone = cli("align", "status", "a1", db=sqlite_url)
    assert gone.code == 2 and "a1" in gone.stderr  # no stale "done"
    assert cli("align", "compare", "a1", db=sqlite_url).code == 2


def test_a_repair_iteration_goes_with_force(sqlite_url: str) -> None:
    prepare_db(sqlite_url)
    made = cli(*repair_args("rp", PANEL, "sim:editor"), "--json", db=sqlite_url)
    assert made.code == 0, made.stderr
    target = made.json()["campaigns"]["original"]
    before = _counts(sqlite_url)
    refused = cli("campaign", "delete", target, db=sqlite_url)
    assert refused.code == 2 and "repair iteration(s) rp use campaign" in refused.stderr
    assert _counts(sqlite_url) == before
    forced = cli("campaign", "delete", target, "--force", "--json", db=sqlite_url).json()
    assert forced["deleted"]["repair_iteration"] == 1
    assert _names(sqlite_url, RepairIteration) == []


def _on_a_terminal(url: str, *args: str, answer: bytes | None) -> tuple[int, str]:
    """The real CLI with a pseudo-terminal as stdin/stdout; `answer` typed at the prompt."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "judgepanel", "--db", url, *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env={**os.environ, "COLUMNS": "200"},
    )
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 60
    answered = False
    while time.monotonic() < deadline:
        ready, _, _ = select_mod.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        if answer is not None and not answered and b"[y/N]" in seen:
            os.write(leader, answer + b"\n")
            answered = True
        if proc.poll() is not None and not ready:
            break
    code = proc.wait(timeout=30)
    os.close(leader)
    return code, seen.decode(errors="replace")


def test_a_terminal_is_asked_first(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ask.db'}"
    eng = tiny_db(url, n_groups=1, per_group=2)
    eng.dispose()
    assert cli(*create_argv("c1", "sim:a"), db=url).code == 0
    before = _counts(url)

    code, shown = _on_a_terminal(url, "campaign", "delete", "c1", answer=b"n")
    assert code == 1 and "delete campaign c1: 2 job(s)" in shown and "nothing deleted" in shown
    assert _counts(url) == before
    code, shown = _on_a_terminal(url, "campaign", "delete", "c1", answer=b"y")
    assert code == 0 and "deleted campaign c1" in shown
    assert _names(url, Campaign) == []
    # --yes does not ask, on a terminal too
    assert cli(*create_argv("c2", "sim:a"), db=url).code == 0
    code, shown = _on_a_terminal(url, "campaign", "delete", "c2", "--yes", answer=None)
    assert code == 0 and "[y/N]" not in shown and _names(url, Campaign) == []
