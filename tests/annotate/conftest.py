"""Fixtures for the annotation queues: the bundled SummEval sample on a real SQLite file and a real
PostgreSQL database, with queues made through the library."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine

from judgepanel.annotate.queues import CreateOptions, create, invite
from judgepanel.store import annotation as store
from judgepanel.store.engine import make_engine
from tests.helpers import ServedCli, load_summeval_sample


@pytest.fixture
def sample(db_url: str) -> Iterator[tuple[str, Engine]]:
    """The SummEval sample as dataset `se` (128 items; experts and turkers), on each backend."""
    load_summeval_sample(db_url)
    eng = make_engine(db_url)
    yield db_url, eng
    eng.dispose()


def make_queue(engine: Engine, name: str = "q", **options: object) -> dict[str, object]:
    opts = {"dataset": "se", "dimension": "coherence", "items": 6, "per_item": 2, **options}
    return create(engine, CreateOptions(name=name, **opts))  # type: ignore[arg-type]


def member(engine: Engine, queue: str, name: str) -> tuple[store.Member, str]:
    token = invite(engine, queue, name, "http://127.0.0.1:1")["token"]
    return store.member_by_token(engine, queue, store.token_hash(token)), token


class Server(ServedCli):
    """`judgepanel annotate serve` in its own process; `url` is what it printed first."""

    def __init__(self, db: str, *args: str) -> None:
        super().__init__(db, "annotate", "serve", "--port", "0", *args)


def as_judge_campaign(engine: Engine, queue: str, dataset: str, pair_set: str, campaign: str) -> int:
    """Store the humans' presented answers of a pairwise queue as one judge's AB and BA verdicts of
    a campaign `campaign` (the pairs the humans saw in both orders, the first label in each order):
    the data shape `metrics bias` reads. Returns how many pairs."""
    from sqlalchemy import text

    from judgepanel.store import annotation_read as read

    first: dict[tuple[int, str], str] = {}
    for unit, order, presented in read.presented_pairs(engine, queue):
        first.setdefault((unit, order), presented)
    both = sorted({u for u, o in first if o == "AB"} & {u for u, o in first if o == "BA"})
    with engine.begin() as c:
        pair_of = dict(c.execute(text("SELECT id, pair_id FROM annotation_unit")).all())
        ds = c.execute(text("SELECT id FROM dataset WHERE name = :n"), {"n": dataset}).scalar()
        ps = c.execute(text("SELECT id FROM pair_set WHERE name = :n"), {"n": pair_set}).scalar()
        jid = c.execute(
            text(
                "INSERT INTO judge (name, provider, model, params) VALUES (:n, 'sim', 'humans', '{}') RETURNING id"
            ),
            {"n": f"sim:humans-{campaign}"},
        ).scalar()
        cid = c.execute(
            text(
                "INSERT INTO campaign (name, dataset_id, pair_set_id, protocol, repeats, status, spec, created_at) "
                "VALUES (:c, :d, :p, 'pairwise', 1, 'done', '{}', CURRENT_TIMESTAMP) RETURNING id"
            ),
            {"c": campaign, "d": ds, "p": ps},
        ).scalar()
        c.execute(
            text("INSERT INTO campaign_judge (campaign_id, judge_id) VALUES (:c, :j)"), {"c": cid, "j": jid}
        )
        for unit in both:
            for order in ("AB", "BA"):
                job = c.execute(
                    text(
                        'INSERT INTO job (campaign_id, job_key, judge_id, pair_id, "order", repeat, status, attempts, '
                        "updated_at) VALUES (:c, :k, :j, :p, :o, 0, 'done', 1, CURRENT_TIMESTAMP) RETURNING id"
                    ),
                    {"c": cid, "k": f"{unit}-{order}", "j": jid, "p": pair_of[unit], "o": order},
                ).scalar()
                req = c.execute(
                    text(
                        "INSERT INTO request (job_id, attempt, request_hash, template_name, template_hash, messages, "
                        "params, created_at) VALUES (:j, 1, 'h', 't', 'th', '[]', '{}', CURRENT_TIMESTAMP) RETURNING id"
                    ),
                    {"j": job},
                ).scalar()
                shown = first[(unit, order)]
                c.execute(
                    text(
                        "INSERT INTO verdict (job_id, attempt, request_id, parse_status, value_presented, created_at) "
                        "VALUES (:j, 1, :r, 'ok', :v, CURRENT_TIMESTAMP)"
                    ),
                    {"j": job, "r": req, "v": "tie" if shown == "T" else shown},
                )
    return len(both)
