"""plan shape: what `campaign plan` needs of each job's prompt, stored when the campaign is created

Revision ID: 0009_plan_shape
Revises: 0008_align
Create Date: 2026-12-01 22:20:00.000000

- `job.prompt_chars`, `job.prompt_messages`, `job.prompt_prefix_tokens`: the rendered prompt's
  length, message count and longest stable prefix (in estimated tokens), so `campaign plan` can
  count input tokens without rendering every prompt again (issue 20 §1);
- `job.prompt_sig`: a fingerprint of what they were rendered with; plan renders again when it
  differs (and for jobs created before this revision, whose columns are NULL);
- `ix_job_judge`: plan asks whether any request was sent to a judge's provider and model (only
  then can the response cache answer its jobs); without the index that is a scan of every request.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_plan_shape"
down_revision: str | None = "0008_align"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COLUMNS = ("prompt_chars", "prompt_messages", "prompt_prefix_tokens")

# Plain ADD / DROP COLUMN (SQLite has both since 3.35), not batch mode: batch mode copies `job` to
# a new table and drops the old one, and with foreign keys on, that DROP cascades to every
# request, response and verdict of every job.


def upgrade() -> None:
    for name in _COLUMNS:
        op.add_column("job", sa.Column(name, sa.Integer(), nullable=True))
    op.add_column("job", sa.Column("prompt_sig", sa.String(length=16), nullable=True))
    op.create_index("ix_job_judge", "job", ["judge_id"])


def downgrade() -> None:
    op.drop_index("ix_job_judge", table_name="job")
    for name in ("prompt_sig", *reversed(_COLUMNS)):
        op.drop_column("job", name)
