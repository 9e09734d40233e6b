"""checker rule: the figures a clause checker is kept by, beyond raw agreement (issue 30 §3)

Revision ID: 0011_checker_rule
Revises: 0010_search
Create Date: 2026-12-03 10:00:00.000000

`clause_checker` gains what the new rule decides by (`metrics.checker_validation`): Cohen's κ
against the judge majority, the one-sided Clopper–Pearson lower bound of the agreement, the
items per class of the majority, sensitivity and specificity, the decision (`kept` | `refused` |
`cannot be validated` | `unusable`; NULL for a proposal decided by the old agreement-only rule,
until `repair checkers --recheck`), its reason in words, a warning when the checker's kind does
not fit the clause's wording, and the rule's settings as JSON.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011_checker_rule"
down_revision: str | None = "0010_search"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COLUMNS: tuple[tuple[str, sa.types.TypeEngine[object]], ...] = (
    ("kappa", sa.Float()),
    ("lower_bound", sa.Float()),
    ("n_met", sa.Integer()),
    ("n_not_met", sa.Integer()),
    ("sensitivity", sa.Float()),
    ("specificity", sa.Float()),
    ("decision", sa.String(length=40)),
    ("decision_reason", sa.Text()),
    ("warning", sa.Text()),
    ("rule", sa.JSON()),
)

# Plain ADD / DROP COLUMN (SQLite has both since 3.35), as 0009 does: nothing references the table.


def upgrade() -> None:
    for name, kind in _COLUMNS:
        op.add_column("clause_checker", sa.Column(name, kind, nullable=True))


def downgrade() -> None:
    for name, _kind in reversed(_COLUMNS):
        op.drop_column("clause_checker", name)
