"""`store.plain`: the writer's rows stored with plain parameter tuples are the rows the Core
statements store, column by column, on SQLite and PostgreSQL (issue 20 §5)."""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import Engine, Table, select

from judgepanel.runner import campaign as api
from judgepanel.store import campaigns as store
from judgepanel.store import plain
from judgepanel.store import tables as t
from judgepanel.store.campaigns import results
from tests.runner.conftest import DATASET, load_tiny

HOSTILE = "héllo wörld ✓ 🚀 \u202eRTL\u202c 'quote' \"dq\" \\back\\slash %s %(x)s ? :name $1 \n\t\r -- ; DROP TABLE job;"
BIG = '{"id": "x", "text": "' + "ünïcode and ascii " * 60_000 + '"}'  # about 1 MB


def _attempt(job_id: int, attempt: int, i: int) -> store.AttemptRow:
    """Every column filled on even rows, every nullable one NULL on odd rows."""
    full = i % 2 == 0
    return store.AttemptRow(
        job_id,
        attempt,
        f"{i:064x}",
        "pointwise_none.j2" if full else HOSTILE[:40],
        "f" * 64,
        [{"role": "system", "content": HOSTILE}, {"role": "user", "content": f"item {i} ∑ {HOSTILE}"}],
        {
            "temperature": 0.1 + i / 3,
            "max_tokens": 1024,
            "stop": ["\n", "é"],
            "nested": {"a": [1, None, True]},
        }
        if full
        else {},
        ok=full,
        error_class=None if full else "transient",
        http_status=200 if full else None,
        error_message=None if full else HOSTILE,
        raw_body=(BIG if i == 0 else json.dumps({"text": HOSTILE}, ensure_ascii=False)) if full else None,
        text=HOSTILE if full else None,
        model_returned="bench-ü" if full else None,
        system_fingerprint="fp_1" if full else None,
        input_tokens=300 + i if full else None,
        output_tokens=20 if full else None,
        latency_ms=1.0 / 3 + i if full else None,
        cost_usd=1e-7 * (i + 1) / 3 if full else None,
        cached_from=None,
        output_schema={"type": "object", "properties": {"score": {"enum": [1, 2, 3]}}, "title": "ü"}
        if full
        else None,
        finish_reason="end_turn" if full else None,
        cache_read_tokens=0 if full else None,
        queued_ms=0.25 if full else None,
        cache_write_tokens=7 if full else None,
    )


def _verdict(i: int, clause_ids: list[int]) -> store.VerdictRow:
    if i % 2:
        return store.VerdictRow("failed", None, None, None, None, None, failure_kind="unreadable")
    clauses = tuple(
        (cid, (None if k == 2 else bool(k % 2)), None if k else HOSTILE) for k, cid in enumerate(clause_ids)
    )
    checked = frozenset(clause_ids[:1])
    return store.VerdictRow("ok", "structured", "4", "4", 4.0 + i / 7, HOSTILE, clauses, checked=checked)


def _campaign(engine: Engine, name: str, ref: str) -> int:
    api.create(
        engine,
        name,
        dataset=DATASET,
        protocol="clauses",
        judges=["sim:a"],
        rubric=ref,
        dimensions=["coherence"],
    )
    return store.campaign_id(engine, name)


def _rows(engine: Engine, table: Table, where: Any, order: Any) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(select(table).where(where).order_by(*order))]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)
    return bool(a == b and type(a) is type(b))


def _stored_text(engine: Engine, table: str, column: str, ids: list[int]) -> list[Any]:
    """The JSON columns as the database holds them (text), not as SQLAlchemy decodes them."""
    cast = "::text" if engine.dialect.name == "postgresql" else ""
    with engine.connect() as conn:
        return [
            conn.exec_driver_sql(f"SELECT {column}{cast} FROM {table} WHERE id = {i}").scalar_one()
            for i in ids
        ]


@pytest.mark.parametrize("when", ["utc-naive", "aware-non-utc"])
def test_plain_rows_are_the_rows_core_writes(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    from judgepanel.rubrics import bundled_rubric
    from judgepanel.store.rubrics import add_rubric

    fixed = datetime(2026, 12, 2, 1, 2, 3, 456789)
    if when == "aware-non-utc":
        fixed = datetime(2026, 12, 2, 3, 2, 3, 456789, tzinfo=timezone(timedelta(hours=2)))
    monkeypatch.setattr(results, "utcnow", lambda: fixed)
    load_tiny(engine, n_groups=2, per_group=3)
    ref = add_rubric(engine, bundled_rubric("summeval")).rubric.ref
    with engine.connect() as conn:
        clause_ids = list(conn.scalars(select(t.clause.c.id).where(t.clause.c.dimension == "coherence")))
    assert len(clause_ids) >= 3
    written: dict[str, list[int]] = {}
    for name, core in (("core", True), ("plain", False)):
        cid = _campaign(engine, name, ref)
        jobs = store.lease_jobs(engine, cid, f"host:1:{name}", 100)
        assert len(jobs) == 6
        # two attempts of each job (the first one failed), the second one's verdict
        attempts = [_attempt(j.id, n, 2 * k + n - 1) for k, j in enumerate(jobs) for n in (1, 2)]
        outcomes = [
            store.JobOutcome(
                j.id,
                "done" if k % 2 == 0 else "failed",
                2,
                None if k % 2 == 0 else "parse",
                _verdict(k, clause_ids),
            )
            for k, j in enumerate(jobs)
        ]
        result = store.write_batch(engine, store.Batch(attempts, outcomes), f"host:1:{name}", core=core)
        assert result.accepted == {j.id for j in jobs} and not result.rejected
        written[name] = [j.id for j in jobs]

    def by_job(name: str) -> dict[str, list[dict[str, Any]]]:
        ids = written[name]
        job_rows = _rows(engine, t.job, t.job.c.id.in_(ids), [t.job.c.id])
        reqs = _rows(
            engine, t.request, t.request.c.job_id.in_(ids), [t.request.c.job_id, t.request.c.attempt]
        )
        req_ids = [r["id"] for r in reqs]
        resps = _rows(engine, t.response, t.response.c.request_id.in_(req_ids), [t.response.c.request_id])
        verds = _rows(engine, t.verdict, t.verdict.c.job_id.in_(ids), [t.verdict.c.job_id])
        clauses = _rows(
            engine,
            t.clause_verdict,
            t.clause_verdict.c.verdict_id.in_([v["id"] for v in verds]),
            [t.clause_verdict.c.verdict_id, t.clause_verdict.c.clause_id],
        )
        stored = {
            f"{c}_text": _stored_text(engine, "request", c, req_ids)
            for c in ("messages", "params", "output_schema")
        }
        return {
            "job": job_rows,
            "request": reqs,
            "response": resps,
            "verdict": verds,
            "clause_verdict": clauses,
            **{k: [{"v": v} for v in vs] for k, vs in stored.items()},
        }

    core, new = by_job("core"), by_job("plain")
    # the row ids differ (and the job's campaign and key); every other value is the same
    ids = {"id", "job_id", "request_id", "verdict_id", "campaign_id", "job_key", "lease_owner"}
    for table, rows in core.items():
        assert len(rows) == len(new[table]) > 0, table
        for a, b in zip(rows, new[table], strict=True):
            assert a.keys() == b.keys()
            for col in a.keys() - ids:
                assert _same(a[col], b[col]), (table, col, a[col], b[col])
    # what NULL is NULL both ways (the odd rows), and the schema is SQL NULL, not JSON null
    assert [r["output_schema"] for r in new["request"]].count(None) == 6
    assert [r["v"] for r in new["output_schema_text"]].count(None) == 6
    assert {r["lease_owner"] for r in new["job"]} == {None}
    assert new["response"][0]["raw_body"] == BIG  # a large body, byte for byte
    assert (
        new["request"][0]["created_at"] == new["response"][0]["created_at"] == new["verdict"][0]["created_at"]
    )
    # the JSON text is what `json.dumps` writes (what SQLAlchemy's JSON type binds)
    first = _attempt(0, 1, 0)
    assert new["messages_text"][0]["v"] == json.dumps(first.messages)
    assert new["params_text"][0]["v"] == json.dumps(first.params)


def test_the_lease_fence_holds_on_the_plain_path(engine: Engine) -> None:
    """A batch with one job no longer ours: the statement's match count differs, the batch is
    redone row by row, and nothing of the foreign job is stored."""
    load_tiny(engine, n_groups=1, per_group=3)
    info = api.create(engine, "fence", dataset=DATASET, protocol="pointwise", judges=["sim:x"])
    jobs = store.lease_jobs(engine, info.id, "host:1:a", 10)
    assert len(jobs) == 3
    store.release_leases(engine, "host:1:a", [jobs[1].id])
    taken = store.lease_jobs(engine, info.id, "host:2:b", 10)
    assert [j.id for j in taken] == [jobs[1].id]
    rows = [_attempt(j.id, 1, 2 * k) for k, j in enumerate(jobs)]
    outcomes = [store.JobOutcome(j.id, "done", 1, None, _verdict(0, [])) for j in jobs]
    result = store.write_batch(engine, store.Batch(rows, outcomes), "host:1:a")
    assert result.accepted == {jobs[0].id, jobs[2].id} and result.rejected == {jobs[1].id}
    with engine.connect() as conn:
        stored = set(conn.scalars(select(t.request.c.job_id)))
        status = dict(conn.execute(select(t.job.c.id, t.job.c.status)).all())
    assert stored == {jobs[0].id, jobs[2].id}
    assert [status[j.id] for j in jobs] == ["done", "running", "done"]


def test_plain_statements_quote_and_page_as_the_dialect_does(engine: Engine) -> None:
    """`order` is a reserved word: quoted by the dialect's preparer; a page holds no more
    parameters than SQLAlchemy's own insertmanyvalues allows."""
    up = plain.update(engine.dialect, t.job, ("order",), ("id",))
    assert '"order"' in up.sql
    ins = plain._insert(engine.dialect, t.response, results._RESPONSE_COLS, ("created_at",), ())
    assert ins.per_page * (len(results._RESPONSE_COLS) + 1) <= engine.dialect.insertmanyvalues_max_parameters
    with pytest.raises(ValueError, match="created_at"):
        plain._insert(engine.dialect, t.request, results._REQUEST_COLS, (), ())
    assert plain.supported(engine.dialect)


@pytest.mark.parametrize("core", [False, True], ids=["plain", "core"])
def test_the_writer_binds_no_row_through_sqlalchemy(engine: Engine, core: bool) -> None:
    """The writer's job updates and its request, response and verdict inserts run as driver SQL
    (no compiled statement, so no per-row parameter processing): SQLAlchemy's `construct_params`
    and bind processors were about half of the writer's CPU at zero latency. With `core=True`
    they run as the compiled Core statements instead, the reference that
    `test_plain_rows_are_the_rows_core_writes` compares with (`write_batch` once tested the
    `store.plain` module's truth instead of `core`, so that comparison compared plain with plain)."""
    from sqlalchemy import event

    load_tiny(engine, n_groups=1, per_group=4)
    info = api.create(engine, "driver", dataset=DATASET, protocol="pointwise", judges=["sim:x"])
    jobs = store.lease_jobs(engine, info.id, "host:1:a", 10)
    rows = [_attempt(j.id, 1, 2 * k) for k, j in enumerate(jobs)]
    outcomes = [store.JobOutcome(j.id, "done", 1, None, _verdict(1, [])) for j in jobs]
    seen: list[tuple[str, bool]] = []

    def note(conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool) -> None:
        words = statement.split()[:3]
        if words[0] in ("INSERT", "UPDATE"):
            seen.append((" ".join(words), context.compiled is None))

    event.listen(engine, "before_cursor_execute", note)
    try:
        assert store.write_batch(engine, store.Batch(rows, outcomes), "host:1:a", core=core).accepted == {
            j.id for j in jobs
        }
    finally:
        event.remove(engine, "before_cursor_execute", note)
    assert {w for w, _ in seen} == {
        "UPDATE job SET",
        "INSERT INTO request",
        "INSERT INTO response",
        "INSERT INTO verdict",
    }
    assert [driver for _, driver in seen] == [not core] * len(seen), seen
