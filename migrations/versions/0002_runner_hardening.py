"""runner hardening: finish reason, the output schema sent, the kind of a parse failure

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 19:00:00.000000

- `response.finish_reason`: the provider's `finish_reason` / `stop_reason`, so a reply cut at the
  output cap is visible as such (`length` / `max_tokens`).
- `request.output_schema`: the JSON schema (or tool definition) sent with the request; it was folded
  into the request hash but not kept.
- `verdict.failure_kind`: why a parse failed or was partial (`unreadable`, `truncated`,
  `missing_clauses`); `parse_status` gains `partial` for a clause reply that answers only some
  clauses.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("response", schema=None) as batch_op:
        batch_op.add_column(sa.Column("finish_reason", sa.String(length=40), nullable=True))
    with op.batch_alter_table("request", schema=None) as batch_op:
        batch_op.add_column(sa.Column("output_schema", sa.JSON(), nullable=True))
    with op.batch_alter_table("verdict", schema=None) as batch_op:
        batch_op.add_column(sa.Column("failure_kind", sa.String(length=30), nullable=True))
        batch_op.drop_constraint("parse_status", type_="check")
        batch_op.create_check_constraint("parse_status", "parse_status IN ('ok', 'partial', 'failed')")


def downgrade() -> None:
    with op.batch_alter_table("verdict", schema=None) as batch_op:
        batch_op.drop_constraint("parse_status", type_="check")
        batch_op.create_check_constraint("parse_status", "parse_status IN ('ok', 'failed')")
        batch_op.drop_column("failure_kind")
    with op.batch_alter_table("request", schema=None) as batch_op:
        batch_op.drop_column("output_schema")
    with op.batch_alter_table("response", schema=None) as batch_op:
        batch_op.drop_column("finish_reason")
