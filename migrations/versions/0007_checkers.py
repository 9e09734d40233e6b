"""clause checkers: proposals of deterministic checkers and checker-answered clause verdicts

Revision ID: 0007_checkers
Revises: 0006_money
Create Date: 2026-12-01 18:00:00.000000

- `clause_checker`: one editor proposal per (repair iteration, clause): the checker and its
  parameters, its agreement with the judge majority on development items, the threshold, kept.
- `clause_verdict.by_checker`: the clause was answered by a kept checker, not by the model.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_checkers"
down_revision: str | None = "0006_money"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "clause_checker",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("iteration", sa.String(length=200), nullable=False),
        sa.Column("rubric_version_id", sa.Integer(), nullable=False),
        sa.Column("clause_key", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=True),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("agreement", sa.Float(), nullable=True),
        sa.Column("n_items", sa.Integer(), nullable=False),
        sa.Column("threshold", sa.Float(), nullable=False),
        sa.Column("kept", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["rubric_version_id"],
            ["rubric_version.id"],
            name=op.f("fk_clause_checker_rubric_version_id_rubric_version"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_clause_checker")),
        sa.UniqueConstraint("iteration", "clause_key", name=op.f("uq_clause_checker_iteration_clause_key")),
    )
    with op.batch_alter_table("clause_verdict", schema=None) as batch_op:
        batch_op.add_column(sa.Column("by_checker", sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("clause_verdict", schema=None) as batch_op:
        batch_op.drop_column("by_checker")
    op.drop_table("clause_checker")
