"""Alembic driven from code: `db upgrade`, `db downgrade`, `db current`, and the drift check."""

from __future__ import annotations

from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import Engine

from judgepanel.errors import BadInput
from judgepanel.resources import resource_dir
from judgepanel.store.models import Base


def alembic_config(engine: Engine) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(resource_dir("migrations")))
    cfg.set_main_option("path_separator", "os")
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    cfg = alembic_config(engine)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        try:
            command.upgrade(cfg, revision)
        except CommandError as exc:  # an unknown revision: the user's argument
            raise BadInput(f"cannot upgrade to {revision!r}: {exc}") from exc


def downgrade(engine: Engine, revision: str = "base") -> None:
    cfg = alembic_config(engine)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        try:
            command.downgrade(cfg, revision)
        except CommandError as exc:
            raise BadInput(f"cannot downgrade to {revision!r}: {exc}") from exc


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision(engine: Engine) -> str | None:
    return ScriptDirectory.from_config(alembic_config(engine)).get_current_head()


def require_current(engine: Engine) -> None:
    """Refuse, in one line, a database that `judgepanel db upgrade` has not brought to this
    judgepanel's schema: otherwise the first query fails with an SQL traceback."""
    current, head = current_revision(engine), head_revision(engine)
    if current == head:
        return
    where = engine.url.render_as_string(hide_password=True)
    if current is None:
        raise BadInput(f"{where} has no judgepanel tables: run `judgepanel db upgrade` first")
    known = {s.revision for s in ScriptDirectory.from_config(alembic_config(engine)).walk_revisions()}
    if current not in known:
        raise BadInput(
            f"{where} is at revision {current}, which this judgepanel does not know (newest: {head}); "
            "upgrade judgepanel"
        )
    raise BadInput(f"{where} is at revision {current}, not {head}: run `judgepanel db upgrade`")


def drift(engine: Engine) -> list[Any]:
    """Differences between the models and the migrated schema; empty when they agree."""
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        return list(compare_metadata(ctx, Base.metadata))
