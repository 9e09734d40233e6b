"""Results in: a batch of attempts, outcomes and verdicts in one transaction; the request cache."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import cast

from sqlalchemy import Connection, Engine, Table, bindparam, insert, select, update

from judgepanel.store import budget
from judgepanel.store.campaigns.records import (
    AttemptRow,
    Batch,
    BatchResult,
    CacheHit,
    JobOutcome,
    VerdictRow,
)
from judgepanel.store.models import (
    Clause,
    ClauseVerdict,
    Job,
    Request,
    Response,
    Verdict,
    utcnow,
)

# ---------------------------------------------------------------- writing results


_REQ = cast(Table, Request.__table__)
_RESP = cast(Table, Response.__table__)
_VERD = cast(Table, Verdict.__table__)
_CLV = cast(Table, ClauseVerdict.__table__)
_JOB = cast(Table, Job.__table__)


class _Mismatch(Exception):
    pass


def write_batch(engine: Engine, batch: Batch, owner: str) -> BatchResult:
    """Store a batch of attempts and job outcomes in one transaction (see the module docstring)."""
    if not len(batch) and not batch.released:
        return BatchResult(frozenset(), frozenset())
    try:
        with engine.begin() as conn:
            return _write(conn, batch, owner, per_row=False)
    except _Mismatch:
        with engine.begin() as conn:
            return _write(conn, batch, owner, per_row=True)


def _write(conn: Connection, batch: Batch, owner: str, *, per_row: bool) -> BatchResult:
    now = utcnow()
    final = {o.job_id: o for o in batch.outcomes}
    last_attempt: dict[int, int] = {}
    for a in batch.attempts:
        last_attempt[a.job_id] = max(last_attempt.get(a.job_id, 0), a.attempt)
    outcome_rows = [
        {
            "b_id": o.job_id,
            "b_owner": owner,
            "status": o.status,
            "error_class": o.error_class,
            "attempts": o.attempts,
        }
        for o in sorted(final.values(), key=lambda o: o.job_id)
    ]
    progress_rows = [
        {"b_id": jid, "b_owner": owner, "attempts": n}
        for jid, n in sorted(last_attempt.items())
        if jid not in final
    ]
    fin_stmt = (
        update(_JOB)
        .where(
            _JOB.c.id == bindparam("b_id"),
            _JOB.c.lease_owner == bindparam("b_owner"),
            _JOB.c.status == "running",
        )
        .values(
            status=bindparam("status"),
            error_class=bindparam("error_class"),
            attempts=bindparam("attempts"),
            lease_owner=None,
            lease_expires=None,
            updated_at=now,
        )
    )
    prog_stmt = (
        update(_JOB)
        .where(
            _JOB.c.id == bindparam("b_id"),
            _JOB.c.lease_owner == bindparam("b_owner"),
            _JOB.c.status == "running",
        )
        .values(attempts=bindparam("attempts"), updated_at=now)
    )
    accepted: set[int] = set()
    ours: set[int] = set()
    for stmt, rows, is_final in ((fin_stmt, outcome_rows, True), (prog_stmt, progress_rows, False)):
        if not rows:
            continue
        if not per_row:
            res = conn.execute(stmt, rows)
            if res.rowcount != len(rows):
                raise _Mismatch
            got = {cast(int, r["b_id"]) for r in rows}
        else:
            got = {cast(int, r["b_id"]) for r in rows if conn.execute(stmt, r).rowcount == 1}
        ours |= got
        if is_final:
            accepted |= got
    attempts = [a for a in batch.attempts if a.job_id in ours]
    rejected = frozenset(set(final) - accepted)
    req_ids = _insert_attempts(conn, attempts, now) if attempts else {}
    verdicts = [o for o in final.values() if o.job_id in accepted and o.verdict is not None]
    if verdicts:
        _insert_verdicts(conn, verdicts, req_ids, now)
    if batch.released:
        budget.release(conn, owner, batch.released)
    return BatchResult(frozenset(accepted), rejected)


def _insert_attempts(
    conn: Connection, attempts: list[AttemptRow], now: datetime
) -> dict[tuple[int, int], int]:
    req_rows = [
        {
            "job_id": a.job_id,
            "attempt": a.attempt,
            "request_hash": a.request_hash,
            "template_name": a.template_name,
            "template_hash": a.template_hash,
            "messages": a.messages,
            "params": a.params,
            "output_schema": a.output_schema,
            "created_at": now,
        }
        for a in attempts
    ]
    # the rows name their own (job, attempt), so their order does not matter; asking for
    # `sort_by_parameter_order` made SQLite insert (and round-trip) one row per statement
    returned = conn.execute(insert(_REQ).returning(_REQ.c.id, _REQ.c.job_id, _REQ.c.attempt), req_rows).all()
    ids = {(job, att): rid for rid, job, att in returned}
    conn.execute(
        insert(_RESP),
        [
            {
                "request_id": ids[(a.job_id, a.attempt)],
                "ok": a.ok,
                "error_class": a.error_class,
                "http_status": a.http_status,
                "error_message": a.error_message,
                "raw_body": a.raw_body,
                "text": a.text,
                "model_returned": a.model_returned,
                "system_fingerprint": a.system_fingerprint,
                "input_tokens": a.input_tokens,
                "output_tokens": a.output_tokens,
                "latency_ms": a.latency_ms,
                "cost_usd": a.cost_usd,
                "cached_from": a.cached_from,
                "finish_reason": a.finish_reason,
                "cache_read_tokens": a.cache_read_tokens,
                "cache_write_tokens": a.cache_write_tokens,
                "queued_ms": a.queued_ms,
                "created_at": now,
            }
            for a in attempts
        ],
    )
    return ids


def _insert_verdicts(
    conn: Connection, outcomes: list[JobOutcome], req_ids: dict[tuple[int, int], int], now: datetime
) -> None:
    rows = []
    for o in outcomes:
        v = o.verdict
        assert v is not None
        rid = req_ids.get((o.job_id, o.attempts))
        if rid is None:  # the verdict's attempt was written by an earlier batch
            rid = conn.execute(
                select(_REQ.c.id).where(_REQ.c.job_id == o.job_id, _REQ.c.attempt == o.attempts)
            ).scalar_one()
        rows.append(
            {
                "job_id": o.job_id,
                "attempt": o.attempts,
                "request_id": rid,
                "parse_status": v.parse_status,
                "parse_method": v.parse_method,
                "failure_kind": v.failure_kind,
                "value_presented": v.value_presented,
                "value_canonical": v.value_canonical,
                "score": v.score,
                "rationale": v.rationale,
                "created_at": now,
            }
        )
    if not any(o.verdict and o.verdict.clauses for o in outcomes):
        conn.execute(insert(_VERD), rows)
        return
    returned = conn.execute(
        insert(_VERD).returning(_VERD.c.id, _VERD.c.job_id, sort_by_parameter_order=True), rows
    ).all()
    vid = {job: v for v, job in returned}
    clause_rows = [
        {
            "verdict_id": vid[o.job_id],
            "clause_id": cid,
            "met": met,
            "rationale": why,
            "by_checker": cid in o.verdict.checked,
        }
        for o in outcomes
        if o.verdict is not None
        for cid, met, why in o.verdict.clauses
    ]
    if clause_rows:
        conn.execute(insert(_CLV), clause_rows)


# ---------------------------------------------------------------- the request cache


def cache_lookup(engine: Engine, hashes: Iterable[str]) -> dict[str, CacheHit]:
    """Original (not themselves cached) successful responses whose reply parsed, by request hash."""
    wanted = sorted(set(hashes))
    out: dict[str, CacheHit] = {}
    if not wanted:
        return out
    with engine.connect() as conn:
        for i in range(0, len(wanted), 500):
            chunk = wanted[i : i + 500]
            rows = conn.execute(
                select(
                    _REQ.c.request_hash,
                    _RESP.c.id,
                    _RESP.c.text,
                    _RESP.c.model_returned,
                    _RESP.c.system_fingerprint,
                    _RESP.c.input_tokens,
                    _RESP.c.output_tokens,
                    _RESP.c.finish_reason,
                    _VERD.c.id,
                    _VERD.c.parse_method,
                    _VERD.c.value_presented,
                    _VERD.c.score,
                    _VERD.c.rationale,
                )
                .join(_RESP, _RESP.c.request_id == _REQ.c.id)
                .join(_VERD, _VERD.c.request_id == _REQ.c.id)
                .where(
                    _REQ.c.request_hash.in_(chunk),
                    _RESP.c.ok.is_(True),
                    _RESP.c.cached_from.is_(None),
                    _VERD.c.parse_status == "ok",
                )
                .order_by(_RESP.c.id)
            ).all()
            verdict_ids = {r[8] for r in rows}
            clauses: dict[int, list[tuple[str, bool | None, str | None]]] = defaultdict(list)
            if verdict_ids:
                for vid, key, met, why in conn.execute(
                    select(_CLV.c.verdict_id, Clause.clause_key, _CLV.c.met, _CLV.c.rationale)
                    .join(Clause, Clause.id == _CLV.c.clause_id)
                    .where(_CLV.c.verdict_id.in_(verdict_ids), _CLV.c.by_checker.is_(False))
                    .order_by(_CLV.c.id)
                ):
                    clauses[vid].append((key, met, why))
            for h, rid, text, model, fp, tin, tout, finish, vid, method, value, score, why in rows:
                if h in out:
                    continue  # the oldest answer wins, so every campaign reuses the same one
                out[h] = CacheHit(
                    rid,
                    text,
                    model,
                    fp,
                    tin,
                    tout,
                    VerdictRow("ok", method, value, None, score, why),
                    tuple(clauses.get(vid, ())),
                    finish,
                )
    return out
