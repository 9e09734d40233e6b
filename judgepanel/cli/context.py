"""What every command gets from the global options."""

from __future__ import annotations

from dataclasses import dataclass, field

import typer
from sqlalchemy import Engine

from judgepanel.store.engine import make_engine


@dataclass
class AppState:
    db_url: str
    _engine: Engine | None = field(default=None, repr=False)

    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = make_engine(self.db_url)
        return self._engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


def state(ctx: typer.Context) -> AppState:
    obj = ctx.find_root().obj
    assert isinstance(obj, AppState)
    return obj
