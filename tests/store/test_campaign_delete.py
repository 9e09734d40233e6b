"""`campaign delete NAME` (issue 19 §6): a campaign's rows go in one transaction, other campaigns'
rows and shared rows stay, and it is refused (nothing deleted) while jobs are leased or another
campaign reuses its answers — on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import Engine, func, select, update

from judgepanel.store.models import (
    Base,
    Campaign,
    ClauseVerdict,
    Job,
    Judge,
    Request,
    Response,
    Verdict,
    utcnow,
)
from tests.helpers import cli
from tests.runner.conftest import PAIRS, create_argv, load_tiny


def _counts(engine: Engine) -> dict[str, int]:
    with engine.connect() as c:
        return {
            t.name: int(c.scalar(select(func.count()).select_from(t)) or 0)
            for t in Base.metadata.sorted_tables
        }


def _campaign_rows(engine: Engine, name: str) -> dict[str, int]:
    with engine.connect() as c:
        cid = c.scalar(select(Campaign.id).where(Campaign.name == name))
        jobs = select(Job.id).where(Job.campaign_id == cid)
        reqs = select(Request.id).where(Request.job_id.in_(jobs))
        verdicts = select(Verdict.id).where(Verdict.job_id.in_(jobs))

        def n(model: type[Base], *where: object) -> int:
            return int(c.scalar(select(func.count()).select_from(model).where(*where)) or 0)  # type: ignore[arg-type]

        return {
            "job": n(Job, Job.campaign_id == cid),
            "request": n(Request, Request.job_id.in_(jobs)),
            "response": n(Response, Response.request_id.in_(reqs)),
            "verdict": n(Verdict, Verdict.job_id.in_(jobs)),
            "clause_verdict": n(ClauseVerdict, ClauseVerdict.verdict_id.in_(verdicts)),
        }


@pytest.fixture
def db(engine: Engine, db_url: str) -> str:
    load_tiny(engine, pairs=6)
    assert cli("rubric", "add", "summeval", db=db_url).code == 0
    made = [
        create_argv("pw", "sim:a", "sim:b", protocol="pairwise", extra=["--pairs", PAIRS]),
        create_argv(
            "cl", "sim:a", protocol="clauses", extra=["--rubric", "summeval@1", "--dimension", "consistency"]
        ),
    ]
    for argv in made:
        assert cli(*argv, db=db_url).code == 0
    for name in ("pw", "cl"):
        assert cli("campaign", "run", name, "--json", db=db_url).code == 0
    return db_url


def test_delete_removes_the_campaigns_rows_and_only_them(db: str, engine: Engine) -> None:
    before = _counts(engine)
    own = _campaign_rows(engine, "cl")
    other = _campaign_rows(engine, "pw")
    assert own["clause_verdict"] > 0 and own["response"] > 0
    out = cli("campaign", "delete", "cl", "--json", db=db).json()
    assert out["campaign"] == "cl"
    for table, n in own.items():
        assert out["deleted"][table] == n, table
    after = _counts(engine)
    for table in ("job", "request", "response", "verdict", "clause_verdict"):
        assert after[table] == before[table] - own[table], table
    assert after["campaign"] == before["campaign"] - 1
    assert _campaign_rows(engine, "pw") == other
    # shared rows stay: judges, the dataset, pair sets, rubric versions
    for table in ("judge", "dataset", "item", "pair_set", "pair", "rubric_version", "clause"):
        assert after[table] == before[table], table
    assert [c["name"] for c in cli("campaign", "list", "--json", db=db).json()["campaigns"]] == ["pw"]
    again = cli("campaign", "delete", "cl", db=db)
    assert again.code == 2 and "no campaign named 'cl'" in again.stderr


def test_refused_while_a_job_is_leased(db: str, engine: Engine) -> None:
    with engine.begin() as c:
        cid = c.scalar(select(Campaign.id).where(Campaign.name == "pw"))
        job = c.scalar(select(Job.id).where(Job.campaign_id == cid).order_by(Job.id))
        c.execute(
            update(Job)
            .where(Job.id == job)
            .values(
                status="running", lease_owner="otherhost:123", lease_expires=utcnow() + timedelta(minutes=5)
            )
        )
    before = _counts(engine)
    r = cli("campaign", "delete", "pw", db=db)
    assert r.code == 2 and "1 leased job(s)" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert _counts(engine) == before
    # a lease that has run out belongs to no live worker: the campaign may go
    with engine.begin() as c:
        c.execute(update(Job).where(Job.id == job).values(lease_expires=utcnow() - timedelta(minutes=5)))
    assert cli("campaign", "delete", "pw", db=db).code == 0


def test_refused_while_another_campaign_reuses_its_answers(db: str, engine: Engine) -> None:
    # the same judge on the same pairs: the store's request cache answers "pw2" from "pw"
    argv = create_argv("pw2", "sim:a", protocol="pairwise", extra=["--pairs", PAIRS])
    assert cli(*argv, db=db).code == 0
    assert cli("campaign", "run", "pw2", "--json", db=db).code == 0
    with engine.connect() as c:
        assert (
            c.scalar(select(func.count()).select_from(Response).where(Response.cached_from.is_not(None))) > 0
        )
    before = _counts(engine)
    r = cli("campaign", "delete", "pw", db=db)
    assert r.code == 2 and "pw2 reuse answers stored under 'pw'" in r.stderr
    assert _counts(engine) == before
    assert cli("campaign", "delete", "pw2", db=db).code == 0
    assert cli("campaign", "delete", "pw", db=db).code == 0
    with engine.connect() as c:
        assert c.scalar(select(func.count()).select_from(Judge)) == before["judge"]
