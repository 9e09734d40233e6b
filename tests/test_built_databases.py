"""The copies the fixtures start from (`tests.helpers.migrate_db`, `tests.runner.conftest.tiny_db`)
are the databases the real steps make: the same tables, columns, revision and rows, on SQLite
(a file copy) and PostgreSQL (a template copy). Issue 31 §5 moved about fifty fixtures from
running the migrations to these copies; this pins that nothing they read changed."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, text

from judgepanel.store.engine import make_engine
from judgepanel.store.migrate import upgrade
from tests.conftest import fresh_pg_database
from tests.helpers import bulk_db, migrate_db
from tests.runner.conftest import load_tiny, tiny_db


def _contents(url: str) -> dict[str, Any]:
    eng = make_engine(url)
    try:
        with eng.connect() as c:
            insp = inspect(c)
            tables = sorted(insp.get_table_names())
            return {
                t: (
                    sorted(
                        (col["name"], str(col["type"]), bool(col["nullable"])) for col in insp.get_columns(t)
                    ),
                    sorted(_untimed(row) for row in c.execute(text(f'select * from "{t}"')).all()),
                )
                for t in tables
            }
    finally:
        eng.dispose()


TIMES = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:?\d\d)?")


def _untimed(row: Any) -> str:
    """A row with its timestamps blanked: the copy was made earlier in the run than the database
    made by hand, and `created_at` (and an import's record of when it ran) says so; every other
    value must match."""
    values = [v.isoformat() if isinstance(v, datetime) else v for v in row]
    return TIMES.sub("<a time>", repr(values))


def _by_the_real_steps(url: str, *, tiny: dict[str, Any] | None) -> None:
    eng = make_engine(url)
    try:
        upgrade(eng)
        if tiny is not None:
            load_tiny(eng, **tiny)
    finally:
        eng.dispose()


def _other(db_url: str, tmp_path: Any) -> Any:
    """A second, fresh database on the same backend as `db_url`."""
    if db_url.startswith("sqlite"):
        from contextlib import nullcontext

        return nullcontext(f"sqlite:///{tmp_path / 'by-hand.db'}")
    return fresh_pg_database()


def test_migrate_db_is_what_the_migrations_make(db_url: str, tmp_path: Any) -> None:
    migrate_db(db_url)
    with _other(db_url, tmp_path) as by_hand:
        _by_the_real_steps(by_hand, tiny=None)
        assert _contents(db_url) == _contents(by_hand)
    assert "alembic_version" in _contents(db_url)


def test_tiny_db_is_what_the_migrations_and_load_tiny_make(db_url: str, tmp_path: Any) -> None:
    sizes = {"n_groups": 2, "per_group": 3, "pairs": 4}
    tiny_db(db_url, **sizes).dispose()
    with _other(db_url, tmp_path) as by_hand:
        _by_the_real_steps(by_hand, tiny=sizes)
        got, want = _contents(db_url), _contents(by_hand)
    assert got == want
    assert len(got["item"][1]) == 6 and len(got["pair"][1]) == 4


def test_the_shared_build_folder_is_this_runs_even_in_a_pytest_a_worker_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pytest run in a subprocess of an xdist worker inherits PYTEST_XDIST_WORKER; its base temp is
    no worker folder, so its builds must stay under its own base temp, never in the folder above
    (which is every earlier run's too)."""
    from tests.helpers import shared_root

    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    lone = tmp_path / "pytest-9"
    assert shared_root(lone) == lone
    worker = tmp_path / "pytest-9" / "popen-gw1"
    assert shared_root(worker) == tmp_path / "pytest-9"
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert shared_root(worker) == tmp_path / "pytest-9" and shared_root(lone) == lone


@pytest.mark.parametrize(
    "sizes",
    [{"n": 160, "judges": 2, "humans": 3}, {"n": 40, "judges": 2, "pairwise": True}],
    ids=["pointwise", "pairwise"],
)
def test_bulk_db_is_what_benchmarks_bulk_build_makes(
    db_url: str, tmp_path: Any, sizes: dict[str, Any]
) -> None:
    """`tests.helpers.bulk_db` (the report, find and judge-column tests' set-up) copies what
    `benchmarks.bulk.build` makes on a fresh database, and counts what it stored."""
    from benchmarks.bulk import build

    n, kw = sizes["n"], {k: v for k, v in sizes.items() if k != "n"}
    stored = bulk_db(db_url, n, **kw)
    with _other(db_url, tmp_path) as by_hand:
        assert build(by_hand, n, **kw) == stored
        got, want = _contents(db_url), _contents(by_hand)
    assert got == want
    assert len(got["verdict"][1]) == stored > 0
