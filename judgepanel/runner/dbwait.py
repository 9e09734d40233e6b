"""Riding out a database outage: retry what failed because PostgreSQL could not be reached.

A run or worker that loses its PostgreSQL server (a restart, a fail-over, a network cut) keeps the
answers it has paid for in memory and retries each database step with exponential back-off (0.25 s
doubling to 5 s) for up to `DB_PATIENCE_S` (default 600 s, `JUDGEPANEL_DB_PATIENCE` seconds), then
carries on where it was: the writer stores the buffered replies, leases are renewed, the feeders
lease again. Only errors that say the server is gone (SQLAlchemy marks the connection invalidated,
or an operational / interface error from the driver) are waited out; every other error is raised at
once. SQLite has no outage (its busy timeout already waits for a locked file), so nothing is
retried there.

Calls in flight during the outage finish and are kept; no new call is sent while a lease or a
budget reservation cannot be taken.

Start-up too (`wait_for_server`): a `campaign run` or `worker` started while PostgreSQL is down,
restarting or still starting waits for its first connection within the same patience, saying so
once on stderr, instead of exiting at once. A server that answers and refuses (the database does
not exist, the password is wrong) is not waited for.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

T = TypeVar("T")

FIRST_WAIT_S = 0.25
MAX_WAIT_S = 5.0


def patience_s() -> float:
    raw = os.environ.get("JUDGEPANEL_DB_PATIENCE", "")
    try:
        value = float(raw) if raw else 600.0
    except ValueError:
        value = 600.0
    return max(0.0, value)


def is_outage(engine: Engine, exc: BaseException) -> bool:
    """True when `exc` says the PostgreSQL server could not be reached (worth waiting for)."""
    if engine.dialect.name != "postgresql":
        return False
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, OperationalError | InterfaceError):
        return True
    mod = type(exc).__module__ or ""
    return mod.startswith("psycopg") and type(exc).__name__ in ("OperationalError", "InterfaceError")


class Outage:
    """Back-off state for one step: `wait(exc)` sleeps before the next try, or re-raises `exc`
    once the step has waited longer than the patience."""

    def __init__(self, engine: Engine, patience: float | None = None) -> None:
        self.engine = engine
        self.patience = patience_s() if patience is None else patience
        self.since: float | None = None
        self.delay = FIRST_WAIT_S

    def next_delay(self, exc: BaseException) -> float:
        if not is_outage(self.engine, exc):
            raise exc
        now = time.monotonic()
        if self.since is None:
            self.since = now
        if now - self.since >= self.patience:
            raise exc
        delay, self.delay = self.delay, min(MAX_WAIT_S, self.delay * 2)
        return delay


# what a server that is up says when it refuses a connection for good: not worth waiting for
_REFUSED_FOR_GOOD = re.compile(
    r"does not exist|authentication failed|no pg_hba\.conf entry|permission denied|password", re.I
)


def wait_for_server(engine: Engine, say: Callable[[str], None], patience: float | None = None) -> None:
    """Return once `engine` can connect; while PostgreSQL cannot be reached, wait with back-off up
    to the patience (`say` is told once that it waits), then raise the last error. Errors that
    are not an outage (SQLite, a missing database, a refused login) are raised at once."""
    outage = Outage(engine, patience)
    told = False
    while True:
        try:
            with engine.connect():
                return
        except Exception as exc:
            if _REFUSED_FOR_GOOD.search(str(exc)):
                raise
            delay = outage.next_delay(exc)  # raises when not an outage, or when patience is spent
            if not told:
                say(
                    f"waiting for the database to accept connections (up to {outage.patience:g} s, JUDGEPANEL_DB_PATIENCE)"
                )
                told = True
            time.sleep(delay)


async def patient(engine: Engine, fn: Callable[..., T], *args: object) -> T:
    """`fn(*args)` in a worker thread, retried while the database is unreachable."""
    outage = Outage(engine)
    while True:
        try:
            return await asyncio.to_thread(fn, *args)
        except Exception as exc:
            await asyncio.sleep(outage.next_delay(exc))


def patient_sync(engine: Engine, fn: Callable[..., T], *args: object) -> T:
    """The same, for code already running in a worker thread."""
    outage = Outage(engine)
    while True:
        try:
            return fn(*args)
        except Exception as exc:
            time.sleep(outage.next_delay(exc))
