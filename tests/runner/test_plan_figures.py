"""`campaign plan` from the prompt figures `campaign create` stores (issue 20 §1, `runner.shape`).

Plan must say exactly what it said when it rendered every pending prompt: each case compares its
JSON with the figures against its JSON with them cleared (a campaign created before migration
0009, which renders as before), in the cases where keys or figures depend on more than the job:
a `base_url` judge with and without a recorded served model, learnt refusals, a partly finished
campaign that the response cache partly answers, pairwise AB/BA, clauses answered by a kept
checker, and prompts long enough for the prompt-cache forecast. Runs go through the real fake
server (OpenAI wire); the store is a real SQLite file, and PostgreSQL for the fresh campaign."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import Engine, insert, select, update

from judgepanel.fake.server import FakeServerProcess
from judgepanel.providers.spec import parse_spec
from judgepanel.runner import RunOptions
from judgepanel.runner import campaign as api
from judgepanel.runner.prepare import CampaignContext, context_options, prepare
from judgepanel.runner.shape import shape_of
from judgepanel.store import campaigns as store
from judgepanel.store import tables
from judgepanel.store.engine import session_scope
from judgepanel.store.models import Campaign, ClauseChecker, Request, utcnow
from judgepanel.store.rubrics import rubric_version
from tests.helpers import cli
from tests.runner.conftest import DATASET, PAIRS, tiny_db
from tests.runner.test_prompt_cache import LONG, load_long

FIGURES = ("prompt_chars", "prompt_messages", "prompt_prefix_tokens", "prompt_sig", "prompt_prefixes")


@contextmanager
def _counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many jobs plan prepares (renders and keys) while inside."""
    seen: list[int] = []
    real = api.prepare

    def counted(job: Any, *args: Any, **kw: Any) -> Any:
        seen.append(job.id)
        return real(job, *args, **kw)

    with monkeypatch.context() as m:
        m.setattr(api, "prepare", counted)
        yield seen


def _figures(eng: Engine, name: str) -> dict[int, tuple[Any, ...]]:
    cid = store.campaign_id(eng, name)
    j = tables.job
    with eng.connect() as c:
        rows = c.execute(select(j.c.id, *(j.c[f] for f in FIGURES)).where(j.c.campaign_id == cid)).all()
    return {r[0]: tuple(r[1:]) for r in rows}


def _rendered_plan(eng: Engine, name: str) -> dict[str, Any]:
    """The plan with the campaign's stored figures cleared (as before 0009), then put back."""
    saved = _figures(eng, name)
    j = tables.job
    with eng.begin() as c:
        c.execute(update(j).where(j.c.id.in_(list(saved))).values(dict.fromkeys(FIGURES)))
    try:
        return api.estimate(eng, name).as_dict()
    finally:
        with eng.begin() as c:
            for jid, values in saved.items():
                c.execute(update(j).where(j.c.id == jid).values(dict(zip(FIGURES, values, strict=True))))


def _same_plan(eng: Engine, name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], int]:
    """The plan from the stored figures, checked equal to the rendered one, and how many jobs the
    stored pass still prepared."""
    with _counting(monkeypatch) as seen:
        stored = api.estimate(eng, name).as_dict()
    assert stored == _rendered_plan(eng, name)
    return stored, len(seen)


def _db(url: str) -> Engine:
    eng = tiny_db(url)
    return eng


def test_plan_of_a_fresh_campaign_renders_no_prompt(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The regression test of issue 20 §1: plan re-rendered and re-keyed all 10,000 jobs."""
    eng = _db(db_url)
    judges = ["sim:a", "openai:m?base_url=http://127.0.0.1:9/v1&price_in=1&price_out=2"]
    info = api.create(eng, "c", dataset=DATASET, protocol="pointwise", judges=judges, dimensions=["x", "y"])
    figures = _figures(eng, "c")
    assert len(figures) == info.jobs == 12 * 2 * 2
    assert all(None not in f for f in figures.values())
    with _counting(monkeypatch) as seen:
        plan = api.estimate(eng, "c").as_dict()
    assert seen == []
    assert plan["calls"] == info.jobs and plan["input_tokens"] > 0 and plan["cost_usd"] > 0
    with _counting(monkeypatch) as seen:
        assert _rendered_plan(eng, "c") == plan
    assert len(seen) == info.jobs  # the fallback renders every job, as plan did
    eng.dispose()


def test_the_stored_figures_are_those_of_the_prompt_sent(sqlite_url: str) -> None:
    """Each job's figures equal those of the prompt `prepare` builds for it now (what a run sends)."""
    eng = _db(sqlite_url)
    api.create(eng, "p", dataset=DATASET, protocol="pairwise", pairs=PAIRS, judges=["sim:a", "sim:b"])
    spec, _rv = store.campaign_spec(eng, "p")
    ctx = CampaignContext(
        spec.protocol, None, {}, {s.name: s for s in map(parse_spec, spec.judges)}, **context_options(spec)
    )
    figures = _figures(eng, "p")
    jobs = store.pending_jobs(eng, store.campaign_id(eng, "p"))
    assert {j.order for j in jobs} == {"AB", "BA"}
    for job in jobs:
        p = prepare(job, ctx)
        shape = shape_of(p.prompt)
        assert figures[job.id][:3] == (shape.chars, shape.messages, shape.prefix_tokens)
        assert shape.chars == p.prompt_chars == sum(len(m["content"]) for m in p.request.messages)
    eng.dispose()


def _run(url: str, name: str) -> None:
    ran = cli("campaign", "run", name, "--json", db=url)
    assert ran.code == 0, ran.stderr


def test_base_url_judge_served_model_refusals_and_a_partly_cached_campaign(
    sqlite_url: str, fake: FakeServerProcess, keys_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    eng = _db(sqlite_url)
    local = f"openai:local?base_url={fake.url}/v1&temperature=0&price_in=1&price_out=2"
    judges = ["sim:a", local]
    api.create(eng, "a", dataset=DATASET, protocol="pointwise", judges=judges, limit=5)
    api.create(eng, "b", dataset=DATASET, protocol="pointwise", judges=judges)  # 12 items, 5 asked by `a`
    _run(sqlite_url, "a")
    local_name = store.campaign_spec(eng, "a")[0].judges[1]
    assert store.learnt_served_models(eng, "b", [local_name])  # the run recorded it
    plan, _ = _same_plan(eng, "b", monkeypatch)
    assert (plan["cached"], plan["calls"]) == (10, 14)
    assert plan["served_model_unknown"] == []

    # without the record: the base_url judge's keys are the spec's, which the cache does not hold
    with session_scope(eng) as s:
        camp = s.scalar(select(Campaign).where(Campaign.name == "a"))
        assert camp is not None
        camp.spec = {k: v for k, v in camp.spec.items() if k != "served_models"}
    plan, _ = _same_plan(eng, "b", monkeypatch)
    assert (plan["cached"], plan["served_model_unknown"]) == (5, [local_name])

    # a learnt refusal changes the judge's requests, so its keys
    store.remember_refusals(eng, "a", local_name, ["temperature"])
    plan, _ = _same_plan(eng, "b", monkeypatch)
    assert plan["cached"] == 5

    # partly finished: `b`'s own finished jobs are not pending; only the sim judge is keyed
    _run(sqlite_url, "b")
    api.create(eng, "b2", dataset=DATASET, protocol="pointwise", judges=["sim:a", "sim:other"])
    plan, prepared = _same_plan(eng, "b2", monkeypatch)
    assert plan["cached"] == 12 and plan["calls"] == 12
    assert prepared == 12  # sim:a's jobs, which the cache may answer; sim:other has never been asked
    eng.dispose()


def test_pairwise_partly_finished_campaign(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    eng = _db(sqlite_url)
    api.create(eng, "pw", dataset=DATASET, protocol="pairwise", pairs=PAIRS, judges=["sim:a"], limit=3)
    api.create(eng, "pw2", dataset=DATASET, protocol="pairwise", pairs=PAIRS, judges=["sim:a", "sim:b"])
    api.run(eng, "pw", RunOptions())
    plan, prepared = _same_plan(eng, "pw2", monkeypatch)
    assert prepared == plan["jobs"] // 2  # sim:a's
    assert plan["cached"] == 3 * 2  # both orders of the three pairs `pw` asked
    eng.dispose()


def test_plan_reads_only_the_jobs_it_renders(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A partly cached campaign: plan renders sim:a's jobs (the cache may answer them) and reads
    those jobs with their texts, not every pending job's; its JSON is the one it gives reading
    them all, as it did before."""
    from judgepanel.store.campaigns import leases

    eng = _db(sqlite_url)
    api.create(eng, "pw", dataset=DATASET, protocol="pairwise", pairs=PAIRS, judges=["sim:a"], limit=3)
    api.create(eng, "pw2", dataset=DATASET, protocol="pairwise", pairs=PAIRS, judges=["sim:a", "sim:b"])
    api.run(eng, "pw", RunOptions())
    read: list[int] = []
    real_texts = leases._with_texts

    def reading(s: Any, rows: Any) -> Any:
        read.extend(r[0] for r in rows)
        return real_texts(s, rows)

    with monkeypatch.context() as m, _counting(monkeypatch) as seen:
        m.setattr(leases, "_with_texts", reading)
        plan = api.estimate(eng, "pw2").as_dict()
    assert len(seen) == plan["jobs"] // 2 and plan["cached"] == 3 * 2
    assert sorted(read) == sorted(seen)  # the texts of the jobs rendered, no others
    real_pending = store.pending_jobs
    with monkeypatch.context() as m:
        m.setattr(store, "pending_jobs", lambda engine, cid, **_: real_pending(engine, cid))
        assert api.estimate(eng, "pw2").as_dict() == plan  # every pending job read
    eng.dispose()


def test_clauses_with_a_kept_checker(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    eng = _db(sqlite_url)
    assert cli("rubric", "add", "summeval", db=sqlite_url).code == 0
    with session_scope(eng) as s:
        rv_id = rubric_version(s, "summeval").id
    with eng.begin() as c:
        c.execute(
            insert(ClauseChecker.__table__).values(
                iteration="k",
                rubric_version_id=rv_id,
                clause_key="coherence.1",
                kind="word_count",
                params={"min": 1, "max": 1000},
                n_items=3,
                threshold=0.9,
                agreement=1.0,
                kept=True,
                created_at=utcnow(),
            )
        )
    args = {"dataset": DATASET, "protocol": "clauses", "rubric": "summeval", "dimensions": ["coherence"]}
    api.create(eng, "k", judges=["sim:a"], **args)
    assert store.campaign_spec(eng, "k")[1] == rv_id
    plan, prepared = _same_plan(eng, "k", monkeypatch)
    assert prepared == 0  # the stored figures hold: those of the prompt without the checker's clause
    assert plan["calls"] == 12
    with eng.connect() as c:
        assert c.scalar(select(Request.id).limit(1)) is None
    eng.dispose()


def test_prompt_cache_forecast_renders_the_long_prompts(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    eng = _db(sqlite_url)
    load_long(eng)
    judges = ["openai:gpt-4o-mini?price_in=2&price_out=8&price_cache_read=0.5", "sim:a"]
    api.create(eng, "long", dataset=LONG, protocol="pointwise", judges=judges)
    plan, prepared = _same_plan(eng, "long", monkeypatch)
    assert plan["cache_read_tokens"] > 0
    # issue 28 §5: the prefixes' digests are stored at create, so the forecast renders nothing
    # (before, the OpenAI judge's 8 jobs were rendered: their prefixes reach its 1,024-token floor)
    assert prepared == 0
    # a campaign created before the digests were stored renders those 8 jobs, and plans the same
    j = tables.job
    with eng.begin() as c:
        c.execute(update(j).values(prompt_prefixes=None))
    with _counting(monkeypatch) as seen:
        assert api.estimate(eng, "long").as_dict() == plan
    assert len(seen) == 8
    eng.dispose()
