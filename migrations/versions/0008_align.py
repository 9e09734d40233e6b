"""alignment: human-supervised judge alignment runs (`judgepanel align run`)

Revision ID: 0008_align
Revises: 0007_checkers
Create Date: 2026-12-01 19:30:00.000000

- `alignment`: one row per alignment (few-shot, instructions or grid): its inputs, each step's
  state, the campaigns it made, the choices it made on development items (examples, rounds,
  configurations, with their scores), the judge templates, and the stored comparison.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_align"
down_revision: str | None = "0007_checkers"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "alignment",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("method", sa.String(length=20), nullable=False),
        sa.Column("inputs", sa.JSON(), nullable=False),
        sa.Column("steps", sa.JSON(), nullable=False),
        sa.Column("campaigns", sa.JSON(), nullable=False),
        sa.Column("choices", sa.JSON(), nullable=True),
        sa.Column("templates", sa.JSON(), nullable=True),
        sa.Column("comparison", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["dataset_id"], ["dataset.id"], name=op.f("fk_alignment_dataset_id_dataset")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alignment")),
        sa.UniqueConstraint("name", name=op.f("uq_alignment_name")),
    )


def downgrade() -> None:
    op.drop_table("alignment")
