"""The store paths on both backends (SQLite file and PostgreSQL): a full run, the cache, status,
and several workers sharing one campaign through leases (`FOR UPDATE SKIP LOCKED` on PostgreSQL)."""

from __future__ import annotations

import asyncio

from sqlalchemy import Engine, func, select

from judgepanel.runner import campaign as api
from judgepanel.runner.executor import Runner, RunSummary
from judgepanel.runner.options import RunOptions
from judgepanel.store import campaigns as store
from judgepanel.store.models import Request, Response, Verdict
from tests.runner.conftest import DATASET, PAIRS, load_tiny


def test_run_cache_and_status(engine: Engine) -> None:
    load_tiny(engine)
    judges = ["sim:a?position_bias=0.3", "sim:b?noise=0.2"]
    info = api.create(engine, "p1", dataset=DATASET, protocol="pairwise", pairs=PAIRS, judges=judges, limit=5)
    summary = api.run(engine, "p1", RunOptions(flush_ms=10))
    assert (summary.status, summary.done, summary.calls) == ("done", info.jobs, info.jobs)
    api.create(engine, "p2", dataset=DATASET, protocol="pairwise", pairs=PAIRS, judges=judges, limit=5)
    again = api.run(engine, "p2", RunOptions(flush_ms=10))
    assert (again.calls, again.cached, again.done) == (0, info.jobs, info.jobs)
    st = store.campaign_status(engine, "p2")
    assert (st.jobs, st.done, st.calls, st.cached) == (info.jobs, info.jobs, 0, info.jobs)
    with engine.connect() as conn:
        originals = conn.execute(
            select(func.count()).select_from(Response).where(Response.cached_from.is_(None))
        ).scalar_one()
    assert originals == info.jobs
    rows = store.judge_verdict_rows(engine, "p1")
    assert len(rows) == info.jobs and {r["order"] for r in rows} == {"AB", "BA"}
    listed = {c["name"]: c for c in store.list_campaigns(engine)}
    assert listed["p1"]["done"] == info.jobs and listed["p2"]["status"] == "done"


def test_several_workers_share_a_campaign_exactly_once(engine: Engine) -> None:
    load_tiny(engine, n_groups=4, per_group=5)
    info = api.create(
        engine, "shared", dataset=DATASET, protocol="pointwise", judges=["sim:a?latency=0.002"], repeats=3
    )

    async def main() -> list[RunSummary]:
        runners = [
            Runner(engine, "shared", RunOptions(concurrency=4, flush_ms=10, lease_chunk=4)) for _ in range(3)
        ]
        return await asyncio.gather(*(r.run() for r in runners))

    summaries = asyncio.run(main())
    assert sum(s.calls for s in summaries) == info.jobs  # no job was asked twice
    assert sum(1 for s in summaries if s.calls) >= 2  # the work was actually shared
    with engine.connect() as conn:
        per_job = conn.execute(select(Verdict.job_id, func.count()).group_by(Verdict.job_id)).all()
        n_requests = conn.execute(select(func.count()).select_from(Request)).scalar_one()
    assert len(per_job) == info.jobs and {n for _, n in per_job} == {1}
    assert n_requests == info.jobs


def test_clause_protocol_stores_one_verdict_per_clause_and_caches_them(engine: Engine) -> None:
    from judgepanel.rubrics import bundled_rubric
    from judgepanel.store.models import Clause, ClauseVerdict, Job
    from judgepanel.store.rubrics import add_rubric

    load_tiny(engine, n_groups=2, per_group=3)
    ref = add_rubric(engine, bundled_rubric("summeval")).rubric.ref
    for name in ("cl1", "cl2"):
        api.create(
            engine,
            name,
            dataset=DATASET,
            protocol="clauses",
            judges=["sim:a"],
            rubric=ref,
            dimensions=["coherence"],
        )
    first = api.run(engine, "cl1", RunOptions(flush_ms=10))
    second = api.run(engine, "cl2", RunOptions(flush_ms=10))
    assert (first.done, first.calls, second.done, second.calls, second.cached) == (6, 6, 6, 0, 6)
    with engine.connect() as conn:
        n_clauses = conn.execute(
            select(func.count()).select_from(Clause).where(Clause.dimension == "coherence")
        ).scalar_one()
        per_campaign = conn.execute(
            select(Job.campaign_id, func.count(ClauseVerdict.id))
            .join(Verdict, Verdict.job_id == Job.id)
            .join(ClauseVerdict, ClauseVerdict.verdict_id == Verdict.id)
            .group_by(Job.campaign_id)
        ).all()
        answers = conn.execute(
            select(Job.campaign_id, Job.item_id, Clause.clause_key, ClauseVerdict.met)
            .join(Verdict, Verdict.job_id == Job.id)
            .join(ClauseVerdict, ClauseVerdict.verdict_id == Verdict.id)
            .join(Clause, Clause.id == ClauseVerdict.clause_id)
        ).all()
    assert n_clauses >= 2
    assert sorted(n for _, n in per_campaign) == [6 * n_clauses, 6 * n_clauses]
    by_campaign: dict[int, set[tuple[int, str, bool]]] = {}
    for cid, item, key, met in answers:
        by_campaign.setdefault(cid, set()).add((item, key, met))
    a, b = by_campaign.values()
    assert a == b  # the cached campaign reads exactly what the original did
