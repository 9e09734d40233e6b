"""trust: ids that are never reused, and in-flight claims on request hashes (issue 28)

Revision ID: 0013_trust
Revises: 0012_annotation
Create Date: 2026-12-03 10:00:00.000000

- SQLite: every table with an integer `id` key becomes `id INTEGER PRIMARY KEY AUTOINCREMENT`
  (§3). Without it SQLite gives a new row max(id) + 1, so deleting the newest campaign and creating
  another hands the new one the deleted one's id, and anything that remembered the id (a running
  viewer's spend, a script) reads the old campaign's figures as the new one's. PostgreSQL's
  sequences never reuse an id, so nothing changes there. The tables are rebuilt by SQLite's own
  recipe (new table from the stored DDL with only the key's clause changed, copy, drop, rename,
  indexes again) with foreign keys off (`store.migrate` turns them off around every migration on
  SQLite, so dropping a parent does not cascade into its children).
- `request_claim` (§2): a request hash claimed by the run that is asking it now, so that an
  identical request in another job of the same run, or in a concurrent run (two alignments of one
  judge), waits for that answer instead of paying for it again. A claim lives as long as its
  owner: renewed with the owner's leases, dropped with the answer, taken over once it expires or
  its owner is dead (`store.liveness`).
- `job.prompt_prefixes` (§5): the digests and token counts of the prompt's stable prefixes, stored
  at create, so `campaign plan` forecasts the providers' prompt cache without rendering the
  prompts whose prefixes are long enough to be cached (it rendered 3,968 of 12,800 jobs of a
  rubric-conditioned campaign for that).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013_trust"
down_revision: str | None = "0012_annotation"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_KEYED = re.compile(r"\bid INTEGER NOT NULL,")
_PK = re.compile(r',\s*CONSTRAINT "?pk_\w+"? PRIMARY KEY \(id\)')
_AUTO = "id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,"


def _tables(conn: sa.Connection) -> list[tuple[str, str]]:
    rows = conn.exec_driver_sql(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "AND name != 'alembic_version' ORDER BY name"
    ).all()
    return [(str(n), str(s)) for n, s in rows]


def _rebuild(conn: sa.Connection, table: str, ddl: str) -> None:
    """SQLite's 12-step table change: the same table under `ddl`, its rows and indexes kept."""
    indexes = [
        str(s)
        for (s,) in conn.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL",
            (table,),
        )
    ]
    # a table's triggers go with it (DROP TABLE): those of 0010_search keep its text indexes in step
    triggers = [
        str(s)
        for (s,) in conn.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ? AND sql IS NOT NULL",
            (table,),
        )
    ]
    tmp = f"_trust_new_{table}"
    head = re.match(r'\s*CREATE TABLE\s+("?)' + re.escape(table) + r"\1", ddl)
    assert head is not None, ddl[:80]
    conn.exec_driver_sql(f'CREATE TABLE "{tmp}"' + ddl[head.end() :])
    conn.exec_driver_sql(f'INSERT INTO "{tmp}" SELECT * FROM "{table}"')
    conn.exec_driver_sql(f'DROP TABLE "{table}"')
    conn.exec_driver_sql(f'ALTER TABLE "{tmp}" RENAME TO "{table}"')
    for sql in indexes + triggers:
        conn.exec_driver_sql(sql)


def _check_foreign_keys_off(conn: sa.Connection) -> None:
    if conn.exec_driver_sql("PRAGMA foreign_keys").scalar():
        raise RuntimeError(
            "0013_trust rebuilds tables and must run with SQLite foreign keys off "
            "(run it through `judgepanel db upgrade`)"
        )


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        _check_foreign_keys_off(conn)
        for table, ddl in _tables(conn):
            if "AUTOINCREMENT" in ddl.upper() or not _KEYED.search(ddl):
                continue  # no integer id key (campaign_judge), or done already
            new, keyed = _KEYED.subn(_AUTO, ddl, count=1)
            new, dropped = _PK.subn("", new, count=1)
            if (keyed, dropped) != (1, 1):
                raise RuntimeError(f"0013_trust: unexpected definition of table {table}: {ddl[:200]}")
            _rebuild(conn, table, new)
    op.create_table(
        "request_claim",
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("owner", sa.String(length=300), nullable=False),
        sa.Column("expires", sa.DateTime(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("request_hash", name=op.f("pk_request_claim")),
    )
    op.create_index("ix_request_claim_owner", "request_claim", ["owner"])
    # plain ADD COLUMN, not batch mode (see 0009_plan_shape)
    op.add_column("job", sa.Column("prompt_prefixes", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("job", "prompt_prefixes")
    op.drop_index("ix_request_claim_owner", table_name="request_claim")
    op.drop_table("request_claim")
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        _check_foreign_keys_off(conn)
        for table, ddl in _tables(conn):
            if _AUTO not in ddl:
                continue
            new = ddl.replace(_AUTO, "id INTEGER NOT NULL,", 1)
            close = new.rstrip().rfind(")")
            new = new[:close].rstrip() + f", \n\tCONSTRAINT pk_{table} PRIMARY KEY (id)\n)"
            _rebuild(conn, table, new)
