"""annotation queues: the human loop in the browser (`judgepanel annotate`, issue 32)

Revision ID: 0012_annotation
Revises: 0011_checker_rule
Create Date: 2026-12-05 10:00:00.000000

- `annotation_queue`: a queue's options (dataset, kind, dimension, scale, rubric version,
  instructions, where its units came from and in which order, labels per unit, reservation time,
  access, the annotator group, the certification's ε, q and scorer, --stop-when-decided);
- `annotation_unit`: its items or pairs in the order it hands them out;
- `annotation_member`: the invited annotators with the SHA-256 of their token (never the token);
- `annotation_slot`: the seats (labels) each unit needs, free / reserved until a time / done;
- `annotation_event`: every label, edit and skip in arrival order (the latest value is the
  ordinary `label` / `pair_label` row; earlier ones stay here).

Labels themselves land in the existing `label` and `pair_label` tables, so nothing else changes.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012_annotation"
down_revision: str | None = "0011_checker_rule"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# A deliberate mirror (issue 31 §4): a migration spells out its tables as they were at its own
# revision and never imports `store.tables`, which moves on; so its column lists repeat one another
# and those of the other revisions, and `duplicates` lists them. Never share code between them.


def upgrade() -> None:
    op.create_table(
        "annotation_queue",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=10), nullable=False),
        sa.Column("dimension", sa.String(length=100), nullable=False),
        sa.Column("scale", sa.JSON(), nullable=False),
        sa.Column("rubric_version_id", sa.Integer(), nullable=True),
        sa.Column("instructions", sa.Text(), nullable=True),
        sa.Column("source", sa.String(length=20), nullable=False),
        sa.Column("item_order", sa.String(length=20), nullable=False),
        sa.Column("allocation_id", sa.Integer(), nullable=True),
        sa.Column("pair_set_id", sa.Integer(), nullable=True),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("per_item", sa.Integer(), nullable=False),
        sa.Column("reserve_minutes", sa.Float(), nullable=False),
        sa.Column("access", sa.String(length=10), nullable=False),
        sa.Column("group_name", sa.String(length=100), nullable=False),
        sa.Column("epsilon", sa.Float(), nullable=False),
        sa.Column("q", sa.Float(), nullable=False),
        sa.Column("scorer", sa.String(length=20), nullable=False),
        sa.Column("stop_when_decided", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("decided_at", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.CheckConstraint("access IN ('any', 'assigned')", name=op.f("ck_annotation_queue_access")),
        sa.CheckConstraint("kind IN ('pointwise', 'pairwise')", name=op.f("ck_annotation_queue_kind")),
        sa.CheckConstraint("status IN ('open', 'closed')", name=op.f("ck_annotation_queue_status")),
        sa.CheckConstraint("per_item >= 1", name=op.f("ck_annotation_queue_per_item")),
        sa.ForeignKeyConstraint(
            ["allocation_id"],
            ["allocation.id"],
            name=op.f("fk_annotation_queue_allocation_id_allocation"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["dataset_id"],
            ["dataset.id"],
            name=op.f("fk_annotation_queue_dataset_id_dataset"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["pair_set_id"],
            ["pair_set.id"],
            name=op.f("fk_annotation_queue_pair_set_id_pair_set"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["rubric_version_id"],
            ["rubric_version.id"],
            name=op.f("fk_annotation_queue_rubric_version_id_rubric_version"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_annotation_queue")),
        sa.UniqueConstraint("name", name=op.f("uq_annotation_queue_name")),
    )
    op.create_table(
        "annotation_member",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("queue_id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("invited_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["annotator_id"],
            ["annotator.id"],
            name=op.f("fk_annotation_member_annotator_id_annotator"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["queue_id"],
            ["annotation_queue.id"],
            name=op.f("fk_annotation_member_queue_id_annotation_queue"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_annotation_member")),
        sa.UniqueConstraint("queue_id", "name", name=op.f("uq_annotation_member_queue_id_name")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_annotation_member_token_hash")),
    )
    op.create_table(
        "annotation_unit",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("queue_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=True),
        sa.Column("pair_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["item_id"], ["item.id"], name=op.f("fk_annotation_unit_item_id_item"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["pair_id"], ["pair.id"], name=op.f("fk_annotation_unit_pair_id_pair"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["queue_id"],
            ["annotation_queue.id"],
            name=op.f("fk_annotation_unit_queue_id_annotation_queue"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_annotation_unit")),
        sa.UniqueConstraint("queue_id", "position", name=op.f("uq_annotation_unit_queue_id_position")),
    )
    op.create_table(
        "annotation_slot",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("queue_id", sa.Integer(), nullable=False),
        sa.Column("unit_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("assignee", sa.String(length=200), nullable=True),
        sa.Column("member_id", sa.Integer(), nullable=True),
        sa.Column("state", sa.String(length=10), nullable=False),
        sa.Column("shown_order", sa.String(length=2), nullable=True),
        sa.Column("reserved_at", sa.DateTime(), nullable=True),
        sa.Column("reserved_until", sa.DateTime(), nullable=True),
        sa.Column("done_at", sa.DateTime(), nullable=True),
        sa.CheckConstraint("state IN ('free', 'reserved', 'done')", name=op.f("ck_annotation_slot_state")),
        sa.ForeignKeyConstraint(
            ["member_id"],
            ["annotation_member.id"],
            name=op.f("fk_annotation_slot_member_id_annotation_member"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["queue_id"],
            ["annotation_queue.id"],
            name=op.f("fk_annotation_slot_queue_id_annotation_queue"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["unit_id"],
            ["annotation_unit.id"],
            name=op.f("fk_annotation_slot_unit_id_annotation_unit"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_annotation_slot")),
        sa.UniqueConstraint("unit_id", "member_id", name=op.f("uq_annotation_slot_unit_id_member_id")),
        sa.UniqueConstraint("unit_id", "seat", name=op.f("uq_annotation_slot_unit_id_seat")),
    )
    op.create_index("ix_annotation_slot_member_id", "annotation_slot", ["member_id", "state"], unique=False)
    op.create_index(
        "ix_annotation_slot_queue_id_state",
        "annotation_slot",
        ["queue_id", "state", "position"],
        unique=False,
    )
    op.create_table(
        "annotation_event",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("queue_id", sa.Integer(), nullable=False),
        sa.Column("unit_id", sa.Integer(), nullable=False),
        sa.Column("slot_id", sa.Integer(), nullable=True),
        sa.Column("member_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=10), nullable=False),
        sa.Column("value", sa.String(length=20), nullable=True),
        sa.Column("presented", sa.String(length=20), nullable=True),
        sa.Column("shown_order", sa.String(length=2), nullable=True),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("skip_reason", sa.Text(), nullable=True),
        sa.Column("seconds", sa.Float(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.CheckConstraint("kind IN ('label', 'edit', 'skip')", name=op.f("ck_annotation_event_kind")),
        sa.ForeignKeyConstraint(
            ["member_id"],
            ["annotation_member.id"],
            name=op.f("fk_annotation_event_member_id_annotation_member"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["queue_id"],
            ["annotation_queue.id"],
            name=op.f("fk_annotation_event_queue_id_annotation_queue"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["slot_id"],
            ["annotation_slot.id"],
            name=op.f("fk_annotation_event_slot_id_annotation_slot"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["unit_id"],
            ["annotation_unit.id"],
            name=op.f("fk_annotation_event_unit_id_annotation_unit"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_annotation_event")),
    )
    op.create_index(
        "ix_annotation_event_member_id", "annotation_event", ["member_id", "unit_id"], unique=False
    )
    op.create_index(
        "ix_annotation_event_queue_id", "annotation_event", ["queue_id", "created_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_annotation_event_queue_id", table_name="annotation_event")
    op.drop_index("ix_annotation_event_member_id", table_name="annotation_event")
    op.drop_table("annotation_event")
    op.drop_index("ix_annotation_slot_queue_id_state", table_name="annotation_slot")
    op.drop_index("ix_annotation_slot_member_id", table_name="annotation_slot")
    op.drop_table("annotation_slot")
    op.drop_table("annotation_unit")
    op.drop_table("annotation_member")
    op.drop_table("annotation_queue")
