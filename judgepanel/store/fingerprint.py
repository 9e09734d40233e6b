"""What a campaign's statistics are computed from, as a key a cache can trust: a new verdict or
label, a deleted one, or a campaign deleted and created again under the same name (even where
SQLite hands out its old id again) all give another key. Counts and newest ids, read by the
database (indexed, no row leaves it): cheap beside the statistics they guard.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, func, select

from judgepanel.store.annotation_tables import annotation_event as EV
from judgepanel.store.annotation_tables import annotation_queue as QU
from judgepanel.store.campaigns import campaign_by_name
from judgepanel.store.models import (
    Annotator,
    Campaign,
    Item,
    Job,
    Label,
    Pair,
    PairLabel,
    Request,
    Response,
    Verdict,
)


@dataclass(frozen=True)
class ResultsKey:
    """The campaign (id, name, creation time), its verdicts, its calls (responses), its jobs'
    statuses and the human labels on its units (how many, the newest id, the sum of ids: a delete
    and an insert cannot cancel out; the newest annotation event: an edit in place)."""

    campaign_id: int
    campaign: str
    created_at: str
    verdicts: tuple[int, int, int]
    labels: tuple[int, int, int]
    responses: tuple[int, int, int] = (0, 0, 0)
    jobs: tuple[tuple[str, int], ...] = ()
    # the newest annotation event of a queue on the campaign's dataset: a queue's edit updates its
    # label row in place (same id, same count), and always comes with an event
    events: int = 0

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
        responses = conn.execute(
            select(func.count(Response.id), func.max(Response.id), func.sum(Response.id))
            .join(Request, Request.id == Response.request_id)
            .join(Job, Job.id == Request.job_id)
            .where(Job.campaign_id == c.id)
        ).one()
        jobs = tuple(
            sorted(
                (str(st), int(n))
                for st, n in conn.execute(
                    select(Job.status, func.count()).where(Job.campaign_id == c.id).group_by(Job.status)
                )
            )
        )
        events = conn.execute(
            select(func.max(EV.c.id))
            .join(QU, QU.c.id == EV.c.queue_id)
            .where(QU.c.dataset_id == c.dataset_id)
        ).scalar()
        created = c.created_at.isoformat() if c.created_at else ""
        return ResultsKey(
            int(c.id),
            c.name,
            created,
            _triple(verdicts),
            _triple(labels),
            _triple(responses),
            jobs,
            int(events or 0),
        )


def database_key(engine: Engine) -> tuple[Any, ...]:
    """A cheap key of the whole database's results (newest ids, row counts, the newest job
    change, the newest annotation event): equal keys mean nothing a campaign page shows has changed anywhere, so a cached page
    needs no `results_key` (which reads the campaign's rows) to be trusted."""
    parts = [
        select(agg).select_from(m).scalar_subquery()
        for m in (Campaign, Job, Request, Response, Verdict, Label, PairLabel)
        for agg in (func.max(m.id), func.count())  # count(*): SQLite counts it from the b-tree
    ]
    parts.append(select(func.max(Job.updated_at)).scalar_subquery())  # ix_job_updated_at
    # a campaign created (again: even with an old id and the same counts) is the newest one
    parts.append(select(func.max(Campaign.created_at)).scalar_subquery())
    # a queue's label edited in place (the count: an event committed after a later-numbered one)
    parts += [
        select(func.max(EV.c.id)).scalar_subquery(),
        select(func.count()).select_from(EV).scalar_subquery(),
    ]
    with engine.connect() as conn:
        row = conn.execute(select(*parts)).one()
    return tuple(str(v) for v in row)


__all__ = ["ResultsKey", "database_key", "results_key"]
