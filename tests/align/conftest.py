"""A database with the bundled SummEval sample split dev/eval by article, and the summeval rubric."""

from __future__ import annotations

from tests.helpers import cli
from tests.repair.conftest import prepare_db

__all__ = ["prepare_db", "run_args"]


def run_args(name: str, method: str, *extra: str, judge: str = "sim:judge-a") -> list[str]:
    return [
        "align",
        "run",
        name,
        "--dataset",
        "se",
        "--judge",
        judge,
        "--human-group",
        "expert",
        "--dev-split",
        "dev",
        "--eval-split",
        "eval",
        "--dimension",
        "coherence",
        "--rubric",
        "summeval",
        "--method",
        method,
        "--limit",
        "16",
        "--seed",
        "3",
        "--bootstrap",
        "200",
        *extra,
    ]


def ok(*args: str, db: str) -> dict[str, object]:
    r = cli(*args, "--json", db=db)
    assert r.code == 0, r.stderr
    out: dict[str, object] = r.json()
    return out
