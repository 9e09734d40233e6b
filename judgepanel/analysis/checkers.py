"""What kept clause checkers saved a campaign (`campaign status`: `checker_verdicts`,
`checker_cost_saved_usd`); see `runner.checkers` for how they answer.

The cost saved is an estimate: each reply's cost times the share of its clauses the checkers
removed, k / n (k clauses answered by checkers, n still asked), i.e. the cost of the same request
with k more clauses, assuming cost grows in proportion to the number of clauses asked (output
tokens are per clause; the prompt's shared part makes this an upper bound). Kept light: the
reading commands import it without the runner.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Engine

# the Core reader: `campaign status` loads no ORM (tests/cli/test_startup.py)
from judgepanel.store.campaigns.readers import checker_job_rows


@dataclass(frozen=True)
class CheckerUse:
    checker_verdicts: int
    cost_saved_usd: float | None  # None when a reply was not priced

    def as_dict(self) -> dict[str, object]:
        return {"checker_verdicts": self.checker_verdicts, "checker_cost_saved_usd": self.cost_saved_usd}


def saved_estimate(rows: Sequence[tuple[int, int, float | None]]) -> CheckerUse:
    """From (checker-answered, still asked, reply cost) per verdict: the method in the docstring."""
    total = sum(k for k, _n, _c in rows)
    saved: float | None = 0.0
    for k, n, cost in rows:
        if cost is None:
            saved = None
            break
        assert saved is not None
        saved += cost * k / max(n, 1)
    return CheckerUse(total, None if saved is None else round(saved, 6))


def checker_use(engine: Engine, campaign: str) -> CheckerUse:
    return saved_estimate(checker_job_rows(engine, campaign))
