"""scale and cost: shared rate-limit buckets, provider batches, prompt-cache token counts

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 20:10:00.000000

- `rate_bucket`: one token bucket per (judge, limit kind) shared by every worker through the
  database (`judgepanel worker`): tokens left and when they were last refilled, updated atomically.
- `provider_batch` / `provider_batch_job`: a submission to a provider's batch API (OpenAI Batch,
  Anthropic Message Batches) and the jobs it carries, so polling resumes from the database after a
  restart or on another machine, and no job is submitted twice while a batch holding it is open.
- `response.cache_read_tokens` / `response.cache_write_tokens`: prompt-cache token counts as the
  provider reports them, priced at their own rates.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("response", schema=None) as batch_op:
        batch_op.add_column(sa.Column("cache_read_tokens", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("cache_write_tokens", sa.Integer(), nullable=True))
    op.create_table(
        "rate_bucket",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=600), nullable=False),
        sa.Column("capacity", sa.Float(), nullable=False),
        sa.Column("refill_per_s", sa.Float(), nullable=False),
        sa.Column("tokens", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rate_bucket")),
        sa.UniqueConstraint("key", name=op.f("uq_rate_bucket_key")),
    )
    op.create_table(
        "provider_batch",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("judge_id", sa.Integer(), nullable=False),
        sa.Column("provider", sa.String(length=40), nullable=False),
        sa.Column("batch_id", sa.String(length=200), nullable=True),
        sa.Column("input_file_id", sa.String(length=200), nullable=True),
        sa.Column("output_file_id", sa.String(length=200), nullable=True),
        sa.Column("status", sa.String(length=30), nullable=False),
        sa.Column("request_counts", sa.JSON(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("submitted_at", sa.DateTime(), nullable=True),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaign.id"],
            name=op.f("fk_provider_batch_campaign_id_campaign"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(["judge_id"], ["judge.id"], name=op.f("fk_provider_batch_judge_id_judge")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_provider_batch")),
    )
    with op.batch_alter_table("provider_batch", schema=None) as batch_op:
        batch_op.create_index("ix_provider_batch_campaign_status", ["campaign_id", "status"], unique=False)
    op.create_table(
        "provider_batch_job",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("batch_pk", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("custom_id", sa.String(length=100), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.ForeignKeyConstraint(
            ["batch_pk"],
            ["provider_batch.id"],
            name=op.f("fk_provider_batch_job_batch_pk_provider_batch"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["job_id"], ["job.id"], name=op.f("fk_provider_batch_job_job_id_job"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_provider_batch_job")),
        sa.UniqueConstraint("batch_pk", "job_id", name=op.f("uq_provider_batch_job_batch_pk_job_id")),
        sa.UniqueConstraint("batch_pk", "custom_id", name=op.f("uq_provider_batch_job_batch_pk_custom_id")),
    )


def downgrade() -> None:
    op.drop_table("provider_batch_job")
    with op.batch_alter_table("provider_batch", schema=None) as batch_op:
        batch_op.drop_index("ix_provider_batch_campaign_status")
    op.drop_table("provider_batch")
    op.drop_table("rate_bucket")
    with op.batch_alter_table("response", schema=None) as batch_op:
        batch_op.drop_column("cache_write_tokens")
        batch_op.drop_column("cache_read_tokens")
