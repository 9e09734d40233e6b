"""What the runner does to cut its own CPU per call (issue 20 §5) without changing what it does:
the heap frozen for the cyclic collector while a run works (and handed back as it was), and the
retry loop written by hand with tenacity's back-off (the attempts themselves are pinned by
tests/runner/test_executor.py::test_each_error_class_is_handled_as_specified)."""

from __future__ import annotations

import gc

import pytest
from sqlalchemy import Engine

from judgepanel.errors import RateLimited, Transient
from judgepanel.providers.base import ChatRequest, ChatResult
from judgepanel.runner import campaign as api
from judgepanel.runner.executor import Runner
from judgepanel.runner.options import RetryPolicy, RunOptions
from judgepanel.store.migrate import upgrade
from tests.runner.conftest import DATASET, ScriptedProvider, load_tiny, reply

GOOD = '{"rationale": "fine", "score": 4}'


@pytest.fixture
def sqlite_engine(sqlite_url: str) -> Engine:
    from judgepanel.store.engine import make_engine

    eng = make_engine(sqlite_url)
    upgrade(eng)
    load_tiny(eng, n_groups=2, per_group=3)
    api.create(eng, "c", dataset=DATASET, protocol="pointwise", judges=["sim:x"], limit=4)
    return eng


def _run_recording_freeze(engine: Engine) -> list[int]:
    """Run campaign `c`; the collector's freeze count seen by each call."""
    seen: list[int] = []

    def script(req: ChatRequest, n: int) -> ChatResult:
        seen.append(gc.get_freeze_count())
        return reply(GOOD)

    provider = ScriptedProvider("sim:x", script)
    summary = api.run(engine, "c", RunOptions(flush_ms=10), provider_factory=lambda s, n: provider)
    assert summary.done == summary.jobs == 4
    return seen


def test_a_run_freezes_the_heap_while_it_works_and_unfreezes_it_after(sqlite_engine: Engine) -> None:
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    seen = _run_recording_freeze(sqlite_engine)
    assert len(seen) == 4 and all(n > 0 for n in seen)  # every call ran with the heap frozen
    assert gc.get_freeze_count() == 0  # and it was handed back unfrozen


def test_a_heap_frozen_by_the_caller_stays_frozen(sqlite_engine: Engine) -> None:
    gc.freeze()
    try:
        seen = _run_recording_freeze(sqlite_engine)
        assert all(n > 0 for n in seen)
        # still frozen: the run did not unfreeze what it did not freeze (unfrozen, the count is 0;
        # frozen objects freed by their reference count meanwhile make it a little smaller)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_a_run_collects_young_objects_less_often_and_restores_the_thresholds(sqlite_engine: Engine) -> None:
    """While a run works the youngest generation is collected every RUN_GC_THRESHOLD allocations
    (the default 700 cost 0.10-0.12 CPU ms a call at zero latency); afterwards the thresholds are
    the caller's again, and a caller's own higher threshold is left alone."""
    from judgepanel.runner.collector import RUN_GC_THRESHOLD

    before = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []

    def script(req: ChatRequest, n: int) -> ChatResult:
        seen.append(gc.get_threshold())
        return reply(GOOD)

    try:
        gc.set_threshold(700, 10, 10)
        provider = ScriptedProvider("sim:x", script)
        assert (
            api.run(sqlite_engine, "c", RunOptions(flush_ms=10), provider_factory=lambda s, n: provider).done
            == 4
        )
        assert seen == [(RUN_GC_THRESHOLD, 10, 10)] * 4
        assert gc.get_threshold() == (700, 10, 10)
        gc.set_threshold(50_000, 10, 10)
        seen.clear()
        api.create(sqlite_engine, "c2", dataset=DATASET, protocol="pointwise", judges=["sim:x"], limit=2)
        assert (
            api.run(
                sqlite_engine,
                "c2",
                RunOptions(flush_ms=10, no_cache=True),
                provider_factory=lambda s, n: provider,
            ).done
            == 2
        )
        assert seen == [(50_000, 10, 10)] * 2 and gc.get_threshold() == (50_000, 10, 10)
    finally:
        gc.set_threshold(*before)


def test_a_threshold_lowered_during_a_run_is_raised_again_and_is_the_one_left_after(
    sqlite_engine: Engine,
) -> None:
    """The CLI puts CPython's default back after its start-up (`cli._collect_after_start_up`), at
    its first collection, which may fall inside a run: the run raises it again after that
    collection, and leaves the lowered value when it ends."""
    from judgepanel.runner.collector import RUN_GC_THRESHOLD

    before = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []

    def script(req: ChatRequest, n: int) -> ChatResult:
        seen.append(gc.get_threshold())
        if len(seen) == 1:
            gc.set_threshold(500, 10, 10)  # what a start-up hook restores
            seen.append(gc.get_threshold())
            gc.collect(0)
        return reply(GOOD)

    try:
        gc.set_threshold(700, 10, 10)
        provider = ScriptedProvider("sim:x", script)
        options = RunOptions(flush_ms=10, concurrency=1)
        assert api.run(sqlite_engine, "c", options, provider_factory=lambda s, n: provider).done == 4
        assert seen[:2] == [(RUN_GC_THRESHOLD, 10, 10), (500, 10, 10)]
        assert seen[2:] == [(RUN_GC_THRESHOLD, 10, 10)] * 3
        assert gc.get_threshold() == (500, 10, 10)
    finally:
        gc.set_threshold(*before)


def test_the_backoff_is_tenacitys_exponential_jitter_or_the_capped_retry_after(sqlite_engine: Engine) -> None:
    policy = RetryPolicy(initial_wait=0.5, max_wait=6.0, jitter=0.25, max_retry_after=30.0)
    runner = Runner(sqlite_engine, "c", RunOptions(retry=policy))
    try:
        for n in range(1, 9):
            for _ in range(50):
                wait = runner._backoff(Transient("503", status=503), n)
                low = min(0.5 * 2 ** (n - 1), 6.0)
                assert low - 1e-9 <= wait <= min(low + 0.25, 6.0) + 1e-9, (n, wait)
        # a Retry-After the server sent wins, capped at max_retry_after, plus up to 10 % (+10 ms) jitter
        for sent, base in ((2.0, 2.0), (1e9, 30.0), (float("inf"), 30.0)):
            wait = runner._backoff(RateLimited("429", status=429, retry_after=sent), 3)
            assert base <= wait <= base * 1.1 + 0.01 + 1e-9, (sent, wait)
        # no usable Retry-After (NaN): exponential back-off instead
        wait = runner._backoff(RateLimited("429", status=429, retry_after=float("nan")), 2)
        assert 1.0 - 1e-9 <= wait <= 1.25 + 1e-9
    finally:
        runner.presence.drop(runner.owner)


def test_an_answered_attempt_row_built_once_is_the_row_built_and_copied(sqlite_engine: Engine) -> None:
    """`_succeeded` builds a call's row in one go (`sent_row(…, **answer_fields(…))`) instead of
    building it and copying it twice with `replace`: the same row, field for field."""
    from dataclasses import replace

    from judgepanel.providers.spec import parse_spec
    from judgepanel.runner.prepare import CampaignContext
    from judgepanel.runner.rows import answer_fields, answered_row, prepare_leased, sent_row
    from judgepanel.store import campaigns as store

    js = parse_spec("sim:x")
    ctx = CampaignContext("pointwise", None, {}, {js.name: js})
    leased = store.lease_jobs(sqlite_engine, store.campaign_id(sqlite_engine, "c"), "host:1:a", 1)
    (p,), _ = prepare_leased(sqlite_engine, ctx, leased)
    r = replace(reply(GOOD), raw_body='{"x": "é"}', input_tokens=3, output_tokens=4, finish_reason="stop")
    for error in (None, "unreadable"):
        copied = replace(
            answered_row(sent_row(p, 2, ok=True), r, cost=0.5, error=error, latency_ms=1.5), queued_ms=0.25
        )
        once = sent_row(
            p, 2, ok=True, queued_ms=0.25, **answer_fields(r, cost=0.5, error=error, latency_ms=1.5)
        )
        assert once == copied
