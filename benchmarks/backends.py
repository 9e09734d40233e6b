"""Where a database benchmark runs: a SQLite file in a temporary directory and, when
JUDGEPANEL_TEST_PG_URL names a PostgreSQL server whose user may CREATE DATABASE, a throwaway
database there (made for the run, dropped after it). One home for what `bench_viewer`,
`bench_viewer_find` and `bench_million` each wrote out before."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url


def on_each_backend(env: str, filename: str, report: Callable[[str, str, Path], None]) -> None:
    """`report(label, url, tmp)` on SQLite (`tmp/filename`) and on PostgreSQL, as the comma-separated
    variable `env` chooses (default both; PostgreSQL only with JUDGEPANEL_TEST_PG_URL)."""
    backends = os.environ.get(env, "sqlite,postgresql").split(",")
    if "sqlite" in backends:
        with tempfile.TemporaryDirectory() as tmp:
            report("sqlite", f"sqlite:///{tmp}/{filename}", Path(tmp))
    if "postgresql" in backends:

        def in_tmp(url: str) -> None:
            with tempfile.TemporaryDirectory() as tmp:
                report("postgresql", url, Path(tmp))

        on_postgresql(in_tmp)


def on_postgresql(report: Callable[[str], None]) -> None:
    """`report(url)` on a throwaway database of the JUDGEPANEL_TEST_PG_URL server (made for the
    call, dropped after it); nothing without that variable."""
    pg = os.environ.get("JUDGEPANEL_TEST_PG_URL")
    if not pg:
        return
    name = f"jp_bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(make_url(pg).set(drivername="postgresql+psycopg"), isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        report(make_url(pg).set(database=name).render_as_string(hide_password=False))
    finally:
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    """The median wall time of `repeats` calls of `fn`."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def print_server_times(label: str, rows: dict[str, float], width: int) -> None:
    for name, s in rows.items():
        print(f"[{label}] {name:{width}s} {s * 1000:8.1f} ms server time")
