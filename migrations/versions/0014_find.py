"""find: the campaign's jobs of an item or a pair by index, for the viewer's search (issue 33)

Revision ID: 0014_find
Revises: 0013_trust
Create Date: 2026-12-05 12:00:00.000000

- `ix_job_item` (`job.item_id`) and `ix_job_pair` (`job.pair_id`): a search starts from the few
  verdicts a word finds (`store.find`): the full-text index gives the items whose texts hold the
  word, and these indexes their jobs. Without them the jobs of a matching item were found by
  walking every job of the campaign, and the search walked the campaign's verdicts in id order
  testing each one (0.6–0.9 s at 10⁶ verdicts for a rare word or a word in no rationale).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0014_find"
down_revision: str | None = "0013_trust"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_job_item", "job", ["item_id"])
    op.create_index("ix_job_pair", "job", ["pair_id"])


def downgrade() -> None:
    op.drop_index("ix_job_pair", table_name="job")
    op.drop_index("ix_job_item", table_name="job")
