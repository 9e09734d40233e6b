"""search: full-text indexes over verdict rationales and item texts, for the viewer's `?q=`

Revision ID: 0010_search
Revises: 0009_plan_shape
Create Date: 2026-12-03 09:00:00.000000

- SQLite: FTS5 tables `verdict_fts` (the verdict's rationale) and `item_fts` (the item's external
  id, input, output and system) as *external-content* indexes over `verdict` and `item` (the text
  is not stored twice), kept in step by triggers on insert, delete and update, and filled from
  the rows already stored. `detail=none`: the index keeps which rows hold a word, not where, which
  is all a search for words needs (phrases are not offered) and keeps the index and each insert
  small.
- PostgreSQL: GIN indexes on `to_tsvector('simple', …)` of the same texts (the 'simple'
  configuration: lower-cased words, no stemming or stop words, so every language is matched the
  same way); the server keeps them in step.

- `ix_job_updated_at`: the newest change of any job, which the viewer's cache key reads
  (`store.fingerprint.database_key`), in one index step instead of a scan of every job.

`judgepanel.store.find` uses the search indexes when present and falls back to LIKE otherwise (docs/reports.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0010_search"
down_revision: str | None = "0009_plan_shape"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# (index, table, the columns indexed): the names judgepanel.store.find and the drift check know
_SQLITE = (
    ("verdict_fts", "verdict", ("rationale",)),
    ("item_fts", "item", ("external_id", "input", "output", "system")),
)
# the expressions must be exactly those judgepanel.store.find matches, or the planner ignores them
_PG = (
    ("ix_verdict_rationale_search", "verdict", "to_tsvector('simple', coalesce(rationale, ''))"),
    (
        "ix_item_text_search",
        "item",
        "to_tsvector('simple', coalesce(external_id, '') || ' ' || coalesce(input, '') || ' ' "
        "|| coalesce(output, '') || ' ' || coalesce(system, ''))",
    ),
)


def _sqlite_up(fts: str, table: str, cols: tuple[str, ...]) -> list[str]:
    listed = ", ".join(cols)
    new = ", ".join(f"new.{c}" for c in cols)
    old = ", ".join(f"old.{c}" for c in cols)
    remove = f"INSERT INTO {fts}({fts}, rowid, {listed}) VALUES ('delete', old.id, {old});"
    add = f"INSERT INTO {fts}(rowid, {listed}) VALUES (new.id, {new});"
    return [
        f"CREATE VIRTUAL TABLE {fts} USING fts5({listed}, content='{table}', content_rowid='id', detail=none)",
        f"CREATE TRIGGER {fts}_ai AFTER INSERT ON {table} BEGIN {add} END",
        f"CREATE TRIGGER {fts}_ad AFTER DELETE ON {table} BEGIN {remove} END",
        f"CREATE TRIGGER {fts}_au AFTER UPDATE OF {listed} ON {table} BEGIN {remove} {add} END",
        f"INSERT INTO {fts}({fts}) VALUES ('rebuild')",
    ]


def upgrade() -> None:
    op.create_index("ix_job_updated_at", "job", ["updated_at"])
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for fts, table, cols in _SQLITE:
            for sql in _sqlite_up(fts, table, cols):
                op.execute(sql)
    else:
        for name, table, expr in _PG:
            op.execute(f"CREATE INDEX {name} ON {table} USING gin (({expr}))")


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for fts, _table, _cols in _SQLITE:
            for suffix in ("ai", "ad", "au"):
                op.execute(f"DROP TRIGGER IF EXISTS {fts}_{suffix}")
            op.execute(f"DROP TABLE IF EXISTS {fts}")
    else:
        for name, _table, _expr in _PG:
            op.execute(f"DROP INDEX IF EXISTS {name}")
    op.drop_index("ix_job_updated_at", table_name="job")
