"""wire: queueing time apart from latency; no JSON null where there is no output schema

Revision ID: 0005_wire
Revises: 0004
Create Date: 2026-12-01 16:40:00.000000

- `response.queued_ms`: how long an attempt waited inside its provider before its request left
  (an OpenAI-compatible judge's calls wait for its first, probing call). The per-attempt deadline
  and `latency_ms` start when the request leaves; this is the time before.
- `request.output_schema`: requests without a schema were stored as the JSON value `null`, so
  `output_schema IS NULL` found none of them. Existing rows are turned into SQL NULL (the models
  now write SQL NULL); the downgrade leaves them NULL, which reads back as None all the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005_wire"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("response", schema=None) as batch_op:
        batch_op.add_column(sa.Column("queued_ms", sa.Float(), nullable=True))
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute("UPDATE request SET output_schema = NULL WHERE output_schema::text = 'null'")
    else:
        op.execute("UPDATE request SET output_schema = NULL WHERE output_schema = 'null'")


def downgrade() -> None:
    with op.batch_alter_table("response", schema=None) as batch_op:
        batch_op.drop_column("queued_ms")
