"""money: a campaign's spending cap and the budget reservations of the processes working on it

Revision ID: 0006_money
Revises: 0005_wire
Create Date: 2026-12-01 16:30:00.000000

- `campaign.max_cost_usd`: the cap on the campaign's total spend across runs, workers and batch
  submissions (`max_cost:` in a campaign file, set or raised by `campaign run --max-cost`).
- `budget_hold`: money reserved under that cap by one lease owner (a run or a worker) for calls
  it has in flight or whose replies it has not yet stored; released in the transaction that stores
  the reply, dropped when the owner ends, ignored once `expires` has passed (an owner that died).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_money"
down_revision: str | None = "0005_wire"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# A deliberate mirror (issue 31 §4): a migration spells out its tables as they were at its own
# revision and never imports `store.tables`, which moves on; so its column lists repeat one another
# and those of the other revisions, and `duplicates` lists them. Never share code between them.


def upgrade() -> None:
    with op.batch_alter_table("campaign", schema=None) as batch_op:
        batch_op.add_column(sa.Column("max_cost_usd", sa.Float(), nullable=True))
    op.create_table(
        "budget_hold",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("owner", sa.String(length=300), nullable=False),
        sa.Column("amount_usd", sa.Float(), nullable=False),
        sa.Column("expires", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaign.id"],
            name=op.f("fk_budget_hold_campaign_id_campaign"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_budget_hold")),
        sa.UniqueConstraint("campaign_id", "owner", name=op.f("uq_budget_hold_campaign_id_owner")),
    )


def downgrade() -> None:
    op.drop_table("budget_hold")
    # ALTER TABLE … DROP COLUMN in place (SQLite ≥ 3.35): a batch copy of `campaign` would drop
    # the old table, and with foreign keys on, SQLite's implicit DELETE cascades to every job,
    # request and reply of every campaign
    with op.batch_alter_table("campaign", schema=None, recreate="never") as batch_op:
        batch_op.drop_column("max_cost_usd")
