"""rubric repair: iterations, editor campaigns, the editor of a rubric version

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 19:30:00.000000

- `repair_iteration`: one `judgepanel repair run` (inputs, the criterion stored before any
  evaluation call, step states, campaign names, rubric version refs, control seed, selection /
  rewrites / comparison as JSON).
- `campaign.protocol` gains `editor`: editor model calls are jobs of an editor campaign and go
  through the runner like judge calls; `campaign.dataset_id` may be NULL for an editor campaign
  that reads no dataset (`rubric split`).
- `rubric_version.editor`: the editor spec behind an `author = 'editor'` version.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("rubric_version", schema=None) as batch_op:
        batch_op.add_column(sa.Column("editor", sa.String(length=500), nullable=True))
    with op.batch_alter_table("campaign", schema=None) as batch_op:
        batch_op.alter_column("dataset_id", existing_type=sa.Integer(), nullable=True)
        batch_op.drop_constraint("protocol", type_="check")
        batch_op.create_check_constraint(
            "protocol", "protocol IN ('pairwise', 'pointwise', 'clauses', 'editor')"
        )
    op.create_table(
        "repair_iteration",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("inputs", sa.JSON(), nullable=False),
        sa.Column("criterion", sa.String(length=500), nullable=True),
        sa.Column("criterion_at", sa.DateTime(), nullable=True),
        sa.Column("steps", sa.JSON(), nullable=False),
        sa.Column("campaigns", sa.JSON(), nullable=False),
        sa.Column("original_version_id", sa.Integer(), nullable=False),
        sa.Column("contested_version_id", sa.Integer(), nullable=True),
        sa.Column("control_version_id", sa.Integer(), nullable=True),
        sa.Column("control_seed", sa.Integer(), nullable=False),
        sa.Column("selection", sa.JSON(), nullable=True),
        sa.Column("rewrites", sa.JSON(), nullable=True),
        sa.Column("comparison", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["dataset_id"], ["dataset.id"], name=op.f("fk_repair_iteration_dataset_id_dataset")
        ),
        sa.ForeignKeyConstraint(
            ["original_version_id"],
            ["rubric_version.id"],
            name=op.f("fk_repair_iteration_original_version_id_rubric_version"),
        ),
        sa.ForeignKeyConstraint(
            ["contested_version_id"],
            ["rubric_version.id"],
            name=op.f("fk_repair_iteration_contested_version_id_rubric_version"),
        ),
        sa.ForeignKeyConstraint(
            ["control_version_id"],
            ["rubric_version.id"],
            name=op.f("fk_repair_iteration_control_version_id_rubric_version"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_repair_iteration")),
        sa.UniqueConstraint("name", name=op.f("uq_repair_iteration_name")),
    )


def downgrade() -> None:
    op.drop_table("repair_iteration")
    with op.batch_alter_table("campaign", schema=None) as batch_op:
        batch_op.drop_constraint("protocol", type_="check")
        batch_op.create_check_constraint("protocol", "protocol IN ('pairwise', 'pointwise', 'clauses')")
        batch_op.alter_column("dataset_id", existing_type=sa.Integer(), nullable=False)
    with op.batch_alter_table("rubric_version", schema=None) as batch_op:
        batch_op.drop_column("editor")
