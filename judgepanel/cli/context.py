"""What every command gets from the global options."""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:  # SQLAlchemy is imported by the commands that open a database, not by `--help`
    from sqlalchemy import Engine


@dataclass
class AppState:
    db_url: str
    _engine: Engine | None = field(default=None, repr=False)

    def engine(self, *, migrated: bool = True, create: bool = False, wait: bool = False) -> Engine:
        """The database engine. By default the database must exist and be at this judgepanel's
        schema revision (one clear line otherwise, and no new file at a mistyped path).
        `db upgrade` and `demo`, which create and migrate the database themselves, pass
        `migrated=False, create=True`; `db current` / `db downgrade` pass `migrated=False`.
        `wait`: PostgreSQL that cannot be reached yet is waited for (`runner.dbwait`), as
        `campaign run` and `worker` ride out an outage once started."""
        if self._engine is None:
            from judgepanel.store import migrate
            from judgepanel.store.engine import ensure_reachable, make_engine

            engine = make_engine(self.db_url, create=create)
            try:
                if wait:
                    from judgepanel.runner.dbwait import wait_for_server

                    with contextlib.suppress(Exception):  # what it could not wait out, said below
                        wait_for_server(engine, lambda line: print(f"judgepanel: {line}", file=sys.stderr))
                ensure_reachable(engine)
                if migrated:
                    migrate.require_current(engine)
            except BaseException:
                engine.dispose()
                raise
            self._engine = engine
        return self._engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


def state(ctx: typer.Context) -> AppState:
    obj = ctx.find_root().obj
    assert isinstance(obj, AppState)
    return obj


class HeldSignals:
    """SIGINT and SIGTERM from the moment a run command starts until its event loop takes them
    (`interrupt_on_signals`): remembered, not fatal, so a signal at any moment of a run ends it with
    exit 130 and its summary. Without it, a signal between a worker taking its SQLite lock and its loop
    starting killed the process outright."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.received: list[int] = []
        self._previous: dict[int, object] = {}

    def _remember(self, signum: int, frame: object) -> None:
        self.received.append(signum)

    def install(self) -> None:
        for sig in self.SIGNALS:
            with contextlib.suppress(ValueError):  # not the main thread: nothing to hold
                previous = signal.signal(sig, self._remember)
                self._previous.setdefault(sig, previous)

    def restore(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)  # type: ignore[arg-type]
        self._previous.clear()


@contextlib.contextmanager
def held_signals() -> Iterator[HeldSignals]:
    """Hold SIGINT and SIGTERM (see `HeldSignals`) for the block; the earlier handlers after it."""
    held = HeldSignals()
    held.install()
    try:
        yield held
    finally:
        held.restore()


@contextlib.contextmanager
def interrupt_on_signals(interrupt: Callable[[], None], held: HeldSignals | None = None) -> Iterator[None]:
    """Inside a running event loop: SIGINT and SIGTERM call `interrupt` (a run stops cleanly and
    keeps what it finished) until the block ends. A signal `held` remembered before the loop took
    over interrupts at once; after the block, `held` remembers again. A no-op where the loop cannot
    take signal handlers (not the main thread)."""
    import asyncio  # not at import time: every command, `--help` too, imports this module

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, interrupt)
    if held is not None and held.received:
        interrupt()
    try:
        yield
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
        if held is not None:
            held.install()
