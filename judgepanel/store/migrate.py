"""Alembic driven from code: `db upgrade`, `db downgrade`, `db current`, and the drift check.

Alembic is imported only by the functions that migrate. The check every command makes
(`require_current`) reads the stored revision with one query and the newest revision from the
migration files' `revision` / `down_revision` lines, which saves a noticeable share of start-up.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, inspect, text

from judgepanel.errors import BadInput
from judgepanel.resources import resource_dir
from judgepanel.store.engine import typed_url

if TYPE_CHECKING:
    from alembic.config import Config

_REVISION_LINE = re.compile(r"^(down_)?revision\b[^=\n]*=\s*(?:None|[\"']([^\"']+)[\"'])", re.M)


def alembic_config(engine: Engine) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(resource_dir("migrations")))
    cfg.set_main_option("path_separator", "os")
    return cfg


READER_ROLE = "judgepanel_reader"  # the role `judgepanel query` runs as on PostgreSQL
SET_CONFIG = "pg_catalog.set_config(text, text, boolean)"


@contextmanager
def _migrating(engine: Engine) -> Iterator[Connection]:
    """One connection in a transaction for Alembic. On SQLite with foreign keys off meanwhile
    (the pragma only takes effect outside a transaction): a migration that rebuilds a table drops
    the old one, and with foreign keys on that DROP would delete every child row through ON
    DELETE CASCADE. `PRAGMA foreign_key_check` must come back empty before the commit."""
    with engine.connect() as conn:
        sqlite = conn.dialect.name == "sqlite"
        if sqlite:
            conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
            conn.commit()
        try:
            with conn.begin():
                yield conn
                if sqlite:
                    broken = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                    if broken:
                        raise RuntimeError(f"migration left rows without their parent: {broken[:5]}")
        finally:
            if sqlite:
                conn.exec_driver_sql("PRAGMA foreign_keys=ON")
                conn.commit()


def upgrade(engine: Engine, revision: str = "head", *, reader_role: str = READER_ROLE) -> None:
    from alembic import command
    from alembic.util import CommandError

    cfg = alembic_config(engine)
    with _migrating(engine) as conn:
        cfg.attributes["connection"] = conn
        try:
            command.upgrade(cfg, revision)
        except CommandError as exc:  # an unknown revision: the user's argument
            raise BadInput(f"cannot upgrade to {revision!r}: {exc}") from exc
        if conn.dialect.name == "postgresql":
            grant_reader(conn, reader_role)
            grant_annotator(conn)


def grant_reader(conn: Connection, role: str = READER_ROLE) -> None:
    """Create (once per server; roles are cluster-wide) the NOLOGIN role `query` runs as and grant
    it SELECT on the judgepanel tables and nothing else.

    Run by a superuser, this also revokes EXECUTE on `set_config` from PUBLIC in this database:
    while the reader may call it, `set_config('role', 'postgres', true)` switches a query that a
    superuser session handed to the reader straight back to the superuser. (A non-superuser who
    needs set_config here, e.g. for pg_dump, needs `GRANT EXECUTE ON FUNCTION set_config(text,
    text, boolean) TO that_role`; the database owner gets it back here.) A role that may not
    create roles or grant skips what it may not do; `query` then refuses privileged sessions."""
    quoted = conn.dialect.identifier_preparer.quote(role)
    literal = role.replace("'", "''")
    if not _create_role(conn, role):
        return
    _grant_select(conn, quoted)
    _grant_schema_and_role(conn, quoted)
    superuser = conn.execute(text("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")).scalar()
    if superuser:
        conn.exec_driver_sql(f"REVOKE EXECUTE ON FUNCTION {SET_CONFIG} FROM PUBLIC")
        conn.exec_driver_sql(
            "DO $$ DECLARE owner name; BEGIN "
            "SELECT pg_get_userbyid(datdba) INTO owner FROM pg_database WHERE datname = current_database(); "
            f"IF owner <> '{literal}' THEN "
            f"EXECUTE format('GRANT EXECUTE ON FUNCTION {SET_CONFIG} TO %%I', owner); END IF; END $$"
        )


def _create_role(conn: Connection, role: str) -> bool:
    """Create the NOLOGIN role once per server (roles are cluster-wide); whether it exists now.
    CREATE ROLE has no IF NOT EXISTS; two upgrades at once (or a role without CREATEROLE) must not
    fail the migration, so the errors are caught inside the server."""
    quoted = conn.dialect.identifier_preparer.quote(role)
    literal = role.replace("'", "''")
    conn.exec_driver_sql(
        "DO $$ BEGIN "
        f"IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{literal}') THEN "
        f"CREATE ROLE {quoted} NOLOGIN NOINHERIT; END IF; "
        f"EXCEPTION WHEN duplicate_object OR unique_violation OR insufficient_privilege THEN NULL; END $$"
    )
    return conn.execute(text("SELECT 1 FROM pg_roles WHERE rolname = :r"), {"r": role}).first() is not None


def _grant_schema_and_role(conn: Connection, quoted: str) -> None:
    """The role may use the current schema, and the user running `db upgrade` may SET ROLE to it
    (so a non-superuser who may grant the role can use it); each grant is skipped, not failed,
    where this user may not give it."""
    for grant in (
        f"EXECUTE format('GRANT USAGE ON SCHEMA %%I TO {quoted}', current_schema())",
        f"GRANT {quoted} TO CURRENT_USER",
    ):
        conn.exec_driver_sql(
            f"DO $$ BEGIN {grant}; EXCEPTION WHEN insufficient_privilege OR invalid_grant_operation "
            "OR unique_violation THEN NULL; END $$"
        )


def _grant_select(conn: Connection, quoted_role: str) -> None:
    """SELECT on every judgepanel table present (the models' and the annotation queues')."""
    present = set(inspect(conn).get_table_names())
    for table in [t for m in all_metadata() for t in m.sorted_tables]:
        if table.name in present:
            conn.exec_driver_sql(
                f"GRANT SELECT ON TABLE {conn.dialect.identifier_preparer.quote(table.name)} TO {quoted_role}"
            )


def grant_annotator(conn: Connection, role: str | None = None) -> None:
    """Create (once per server) the NOLOGIN role `annotate serve` works as on PostgreSQL and grant
    it SELECT on the judgepanel tables plus exactly the writes of
    `store.annotation_tables.WRITABLE` (INSERT where listed, UPDATE of the listed columns, USAGE of
    the sequences those INSERTs draw ids from): nothing else, and DELETE nowhere. Like the reader
    role, the current user is made a member so the server can `SET ROLE` to it; a user who may not
    create roles or grant skips what it may not do, and the server then refuses to start as a
    privileged user (`store.annotation_engine`)."""
    from judgepanel.store.annotation_tables import ANNOTATOR_ROLE, WRITABLE

    role = role or ANNOTATOR_ROLE
    if not _create_role(conn, role):
        return
    prep = conn.dialect.identifier_preparer
    quoted = prep.quote(role)
    _grant_select(conn, quoted)
    present = set(inspect(conn).get_table_names())
    for name, (insert, columns) in WRITABLE.items():
        if name not in present:
            continue
        table = prep.quote(name)
        if insert:
            conn.exec_driver_sql(f"GRANT INSERT ON TABLE {table} TO {quoted}")
            seq = conn.execute(text("SELECT pg_get_serial_sequence(:t, 'id')"), {"t": name}).scalar()
            if seq:
                conn.exec_driver_sql(f"GRANT USAGE ON SEQUENCE {seq} TO {quoted}")
        if columns:
            cols = ", ".join(prep.quote(c) for c in columns)
            conn.exec_driver_sql(f"GRANT UPDATE ({cols}) ON TABLE {table} TO {quoted}")
    _grant_schema_and_role(conn, quoted)


def all_metadata() -> list[Any]:
    """Every `MetaData` the migrations create tables for: `store.tables`' (the ORM maps onto it)
    and the annotation queues' (`store.annotation_tables`, Core only, on their own)."""
    from judgepanel.store.annotation_tables import metadata as annotation
    from judgepanel.store.tables import metadata

    return [metadata, annotation]


def downgrade(engine: Engine, revision: str = "base") -> None:
    from alembic import command
    from alembic.util import CommandError

    cfg = alembic_config(engine)
    with _migrating(engine) as conn:
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
    where = typed_url(engine)
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


# The names (prefixes) of the full-text search objects migration 0010_search creates: SQLite's FTS5
# tables and their shadow tables, PostgreSQL's GIN indexes. They are not models.
SEARCH_INDEXES = ("verdict_fts", "item_fts", "ix_verdict_rationale_search", "ix_item_text_search")


def drift(engine: Engine) -> list[Any]:
    """Differences between the tables (`store.tables`) and the migrated schema; empty when they agree."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    def modelled(name: str | None, kind: str, _parents: Any) -> bool:
        # the full-text indexes of migration 0010_search are no model (store.find reads them)
        return not (name and name.startswith(SEARCH_INDEXES))

    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True, "include_name": modelled})
        # store.tables' metadata and the annotation queues' (Core only, `all_metadata`)
        return list(compare_metadata(ctx, all_metadata()))  # type: ignore[arg-type]
