"""Alembic environment for judgepanel.

Run through `judgepanel db upgrade` (judgepanel/store/migrate.py), which passes the engine's
connection in `config.attributes["connection"]`. SQLite uses batch mode so ALTERs work there too.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

from judgepanel.store.tables import metadata

config = context.config
target_metadata = metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = create_engine(config.get_main_option("sqlalchemy.url") or "sqlite:///judgepanel.db")
    with engine.connect() as conn:
        _run(conn)


if context.is_offline_mode():
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata)
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()
