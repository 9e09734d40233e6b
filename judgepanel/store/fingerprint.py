"""What a campaign's statistics are computed from, as a key a cache can trust: a new verdict or
label, a deleted one, or a campaign deleted and created again under the same name (even where
SQLite hands out its old id again) all give another key. Counts and newest ids, read by the
database (indexed, no row leaves it): cheap beside the statistics they guard.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, func, select

from judgepanel.store.campaigns import campaign_by_name
from judgepanel.store.models import Annotator, Campaign, Item, Job, Label, Pair, PairLabel, Verdict


@dataclass(frozen=True)
class ResultsKey:
    """The campaign (id, name, creation time), its verdicts and the human labels on its units
    (how many, the newest id, the sum of ids: a delete and an insert cannot cancel out)."""

    campaign_id: int
    campaign: str
    created_at: str
    verdicts: tuple[int, int, int]
    labels: tuple[int, int, int]

    @property
    def n_verdicts(self) -> int:
        return self.verdicts[0]

    @property
    def n_labels(self) -> int:
        return self.labels[0]


def _triple(row: Any) -> tuple[int, int, int]:
    return (int(row[0] or 0), int(row[1] or 0), int(row[2] or 0))


def results_key(engine: Engine, name: str) -> ResultsKey:
    """The key of campaign `name`'s stored results (NotFound when there is no such campaign)."""
    from sqlalchemy.orm import Session

    with Session(engine) as s:
        c: Campaign = campaign_by_name(s, name)
        conn = s.connection()
        verdicts = conn.execute(
            select(func.count(Verdict.id), func.max(Verdict.id), func.sum(Verdict.id))
            .join(Job, Job.id == Verdict.job_id)
            .where(Job.campaign_id == c.id)
        ).one()
        human = Annotator.kind == "human"
        if c.pair_set_id is not None:
            labels = conn.execute(
                select(func.count(PairLabel.id), func.max(PairLabel.id), func.sum(PairLabel.id))
                .join(Pair, Pair.id == PairLabel.pair_id)
                .join(Annotator, Annotator.id == PairLabel.annotator_id)
                .where(Pair.pair_set_id == c.pair_set_id, human)
            ).one()
        else:
            labels = conn.execute(
                select(func.count(Label.id), func.max(Label.id), func.sum(Label.id))
                .join(Item, Item.id == Label.item_id)
                .join(Annotator, Annotator.id == Label.annotator_id)
                .where(Item.dataset_id == c.dataset_id, human)
            ).one()
        created = c.created_at.isoformat() if c.created_at else ""
        return ResultsKey(int(c.id), c.name, created, _triple(verdicts), _triple(labels))


__all__ = ["ResultsKey", "results_key"]
