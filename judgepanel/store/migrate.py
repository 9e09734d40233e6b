"""Alembic driven from code: `db upgrade`, `db downgrade`, `db current`, and the drift check.

Alembic is imported only by the functions that migrate. The check every command makes
(`require_current`) reads the stored revision with one query and the newest revision from the
migration files' `revision` / `down_revision` lines, which saves a noticeable share of start-up.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, inspect, text

from judgepanel.errors import BadInput
from judgepanel.resources import resource_dir

if TYPE_CHECKING:
    from alembic.config import Config

_REVISION_LINE = re.compile(r"^(down_)?revision\b[^=\n]*=\s*(?:None|[\"']([^\"']+)[\"'])", re.M)


def alembic_config(engine: Engine) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(resource_dir("migrations")))
    cfg.set_main_option("path_separator", "os")
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    from alembic import command
    from alembic.util import CommandError

    cfg = alembic_config(engine)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        try:
            command.upgrade(cfg, revision)
        except CommandError as exc:  # an unknown revision: the user's argument
            raise BadInput(f"cannot upgrade to {revision!r}: {exc}") from exc


def downgrade(engine: Engine, revision: str = "base") -> None:
    from alembic import command
    from alembic.util import CommandError

    cfg = alembic_config(engine)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        try:
            command.downgrade(cfg, revision)
        except CommandError as exc:
            raise BadInput(f"cannot downgrade to {revision!r}: {exc}") from exc


def current_revision(engine: Engine) -> str | None:
    from alembic.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision(engine: Engine) -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config(engine)).get_current_head()


def script_revisions() -> dict[str, str | None]:
    """revision -> down_revision of every migration file, read as text (no Alembic import)."""
    graph: dict[str, str | None] = {}
    for path in sorted((resource_dir("migrations") / "versions").glob("*.py")):
        found = {m.group(1) or "": m.group(2) for m in _REVISION_LINE.finditer(path.read_text("utf-8"))}
        if found.get(""):
            graph[str(found[""])] = found.get("down_")
    return graph


def _quick_head() -> str | None:
    """The single head of the migration files, or None when that is not plain to see."""
    graph = script_revisions()
    heads = set(graph) - set(graph.values())
    return heads.pop() if len(heads) == 1 else None


def _stored_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        rows = conn.execute(text("select version_num from alembic_version")).scalars().all()
    return rows[0] if len(rows) == 1 else None


def require_current(engine: Engine) -> None:
    """Refuse, in one line, a database that `judgepanel db upgrade` has not brought to this
    judgepanel's schema: otherwise the first query fails with an SQL traceback."""
    current, quick = _stored_revision(engine), _quick_head()
    if current is not None and current == quick:
        return  # the common case, without importing Alembic
    current, head = current_revision(engine), head_revision(engine)
    if current == head:
        return
    where = engine.url.render_as_string(hide_password=True)
    if current is None:
        raise BadInput(f"{where} has no judgepanel tables: run `judgepanel db upgrade` first")
    from alembic.script import ScriptDirectory

    known = {s.revision for s in ScriptDirectory.from_config(alembic_config(engine)).walk_revisions()}
    if current not in known:
        raise BadInput(
            f"{where} is at revision {current}, which this judgepanel does not know (newest: {head}); "
            "upgrade judgepanel"
        )
    raise BadInput(f"{where} is at revision {current}, not {head}: run `judgepanel db upgrade`")


def drift(engine: Engine) -> list[Any]:
    """Differences between the models and the migrated schema; empty when they agree."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from judgepanel.store.models import Base

    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        return list(compare_metadata(ctx, Base.metadata))
