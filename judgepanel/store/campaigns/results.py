"""Results in: a batch of attempts, outcomes and verdicts in one transaction; the request cache."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Protocol, cast

from sqlalchemy import Connection, Engine, Table, bindparam, insert, select, update

from judgepanel.store import budget, claims, plain
from judgepanel.store import tables as t
from judgepanel.store.campaigns.records import (
    AttemptRow,
    Batch,
    BatchResult,
    CacheHit,
    JobOutcome,
    VerdictRow,
)
from judgepanel.store.engine import in_chunks
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


_REQ = Request.__table__
_RESP = Response.__table__
_VERD = Verdict.__table__
_CLV = ClauseVerdict.__table__
_JOB = Job.__table__
_ORM_TABLES = {x.name: x for x in (_REQ, _RESP, _VERD, _CLV)}


class _Mismatch(Exception):
    pass


def write_batch(engine: Engine, batch: Batch, owner: str, *, core: bool = False) -> BatchResult:
    """Store a batch of attempts and job outcomes in one transaction (see the module docstring),
    through `store.plain` where the driver is supported, else (or with `core`) through Core
    statements, which SQLAlchemy binds row by row (the reference the tests compare with)."""
    if not len(batch) and not batch.released and not batch.unclaimed:
        return BatchResult(frozenset(), frozenset())
    rows: _Statements = _Core() if core or not plain.supported(engine.dialect) else _PlainStatements()
    try:
        with engine.begin() as conn:
            return _write(conn, batch, owner, rows, per_row=False)
    except _Mismatch:
        with engine.begin() as conn:
            return _write(conn, batch, owner, rows, per_row=True)


# a job's outcome: (status, error_class, attempts, job id, owner); its progress: (attempts, job id, owner)
_Outcome = tuple[str, str | None, int, int, str]
_Progress = tuple[int, int, str]


def _write(conn: Connection, batch: Batch, owner: str, rows: _Statements, *, per_row: bool) -> BatchResult:
    now = utcnow()
    final = {o.job_id: o for o in batch.outcomes}
    last_attempt: dict[int, int] = {}
    for a in batch.attempts:
        last_attempt[a.job_id] = max(last_attempt.get(a.job_id, 0), a.attempt)
    # every writer of job rows locks them in ascending id order (see `leases._owned`)
    outcome_rows: list[tuple[Any, ...]] = [
        (o.status, o.error_class, o.attempts, o.job_id, owner)
        for o in sorted(final.values(), key=lambda o: o.job_id)
    ]
    progress_rows: list[tuple[Any, ...]] = [
        (n, jid, owner) for jid, n in sorted(last_attempt.items()) if jid not in final
    ]
    accepted: set[int] = set()
    ours: set[int] = set()
    for kind, job_rows in (("final", outcome_rows), ("progress", progress_rows)):
        if not job_rows:
            continue
        if not per_row:
            if rows.jobs(conn, kind, job_rows, now) != len(job_rows):
                raise _Mismatch
            got = {cast(int, r[-2]) for r in job_rows}
        else:
            got = {cast(int, r[-2]) for r in job_rows if rows.jobs(conn, kind, [r], now) == 1}
        ours |= got
        if kind == "final":
            accepted |= got
    attempts = [a for a in batch.attempts if a.job_id in ours]
    rejected = frozenset(set(final) - accepted)
    req_ids = _insert_attempts(conn, rows, attempts, now) if attempts else {}
    verdicts = [o for o in final.values() if o.job_id in accepted and o.verdict is not None]
    if verdicts:
        _insert_verdicts(conn, rows, verdicts, req_ids, now)
    if batch.released:
        budget.release(conn, owner, batch.released)
    if batch.unclaimed:  # with the answers: a twin that sees the claim gone finds them cached
        claims.release_in(conn, owner, batch.unclaimed)
    return BatchResult(frozenset(accepted), rejected)


# the columns each row is given in, in order (`created_at` is the batch's `now`)
_REQUEST_COLS = (
    "job_id",
    "attempt",
    "request_hash",
    "template_name",
    "template_hash",
    "messages",
    "params",
    "output_schema",
)
_RESPONSE_COLS = (
    "request_id",
    "ok",
    "error_class",
    "http_status",
    "error_message",
    "raw_body",
    "text",
    "model_returned",
    "system_fingerprint",
    "input_tokens",
    "output_tokens",
    "latency_ms",
    "cost_usd",
    "cached_from",
    "finish_reason",
    "cache_read_tokens",
    "cache_write_tokens",
    "queued_ms",
)
_VERDICT_COLS = (
    "job_id",
    "attempt",
    "request_id",
    "parse_status",
    "parse_method",
    "failure_kind",
    "value_presented",
    "value_canonical",
    "score",
    "rationale",
)
_CLAUSE_COLS = ("verdict_id", "clause_id", "met", "rationale", "by_checker")


def _insert_attempts(
    conn: Connection, rows: _Statements, attempts: list[AttemptRow], now: datetime
) -> dict[tuple[int, int], int]:
    req_rows = [
        (
            a.job_id,
            a.attempt,
            a.request_hash,
            a.template_name,
            a.template_hash,
            a.messages,
            a.params,
            a.output_schema,
        )
        for a in attempts
    ]
    # the rows name their own (job, attempt), so their order does not matter; asking for
    # `sort_by_parameter_order` made SQLite insert (and round-trip) one row per statement
    returned = rows.insert(conn, t.request, _REQUEST_COLS, req_rows, now, ("id", "job_id", "attempt"))
    ids = {(job, att): rid for rid, job, att in returned}
    rows.insert(
        conn,
        t.response,
        _RESPONSE_COLS,
        [
            (
                ids[(a.job_id, a.attempt)],
                a.ok,
                a.error_class,
                a.http_status,
                a.error_message,
                a.raw_body,
                a.text,
                a.model_returned,
                a.system_fingerprint,
                a.input_tokens,
                a.output_tokens,
                a.latency_ms,
                a.cost_usd,
                a.cached_from,
                a.finish_reason,
                a.cache_read_tokens,
                a.cache_write_tokens,
                a.queued_ms,
            )
            for a in attempts
        ],
        now,
    )
    return ids


def _insert_verdicts(
    conn: Connection,
    rows: _Statements,
    outcomes: list[JobOutcome],
    req_ids: dict[tuple[int, int], int],
    now: datetime,
) -> None:
    verdict_rows = []
    for o in outcomes:
        v = o.verdict
        assert v is not None
        rid = req_ids.get((o.job_id, o.attempts))
        if rid is None:  # the verdict's attempt was written by an earlier batch
            rid = conn.execute(
                select(_REQ.c.id).where(_REQ.c.job_id == o.job_id, _REQ.c.attempt == o.attempts)
            ).scalar_one()
        verdict_rows.append(
            (
                o.job_id,
                o.attempts,
                rid,
                v.parse_status,
                v.parse_method,
                v.failure_kind,
                v.value_presented,
                v.value_canonical,
                v.score,
                v.rationale,
            )
        )
    if not any(o.verdict and o.verdict.clauses for o in outcomes):
        rows.insert(conn, t.verdict, _VERDICT_COLS, verdict_rows, now)
        return
    returned = rows.insert(conn, t.verdict, _VERDICT_COLS, verdict_rows, now, ("id", "job_id"))
    vid = {job: v for v, job in returned}
    clause_rows = [
        (vid[o.job_id], cid, met, why, cid in o.verdict.checked)
        for o in outcomes
        if o.verdict is not None
        for cid, met, why in o.verdict.clauses
    ]
    if clause_rows:
        rows.insert(conn, t.clause_verdict, _CLAUSE_COLS, clause_rows, None)


class _Statements(Protocol):
    """The writer's statements, run one way or the other."""

    def jobs(self, conn: Connection, kind: str, rows: list[tuple[Any, ...]], now: datetime) -> int:
        """Finish (`final`: _Outcome rows) or advance (`progress`: _Progress rows) jobs still
        leased to the row's owner and running; the number of rows matched."""
        ...

    def insert(
        self,
        conn: Connection,
        table: Table,
        columns: tuple[str, ...],
        rows: list[tuple[Any, ...]],
        now: datetime | None,
        returning: tuple[str, ...] = (),
    ) -> list[tuple[Any, ...]]:
        """Insert `rows` (and `created_at` = `now` unless None); the `returning` columns."""
        ...


# A Protocol signature (issue 31 §4): `_PlainStatements` and `_Core` implement `_Statements`, so
# their `jobs` and `insert` repeat its signatures.
class _PlainStatements:
    """`store.plain`: SQL text built once per dialect, plain parameter tuples."""

    def jobs(self, conn: Connection, kind: str, rows: list[tuple[Any, ...]], now: datetime) -> int:
        return _plain_job_update(conn.dialect, kind).run(conn, rows, (now,))

    def insert(
        self,
        conn: Connection,
        table: Table,
        columns: tuple[str, ...],
        rows: list[tuple[Any, ...]],
        now: datetime | None,
        returning: tuple[str, ...] = (),
    ) -> list[tuple[Any, ...]]:
        same = None if now is None else {"created_at": now}
        return plain.insert(conn, table, columns, rows, same=same, returning=returning)


def _plain_job_update(dialect: Any, kind: str) -> plain.Update:
    """The statements of `_Core.jobs`: only a job still leased to the row's owner and running is
    changed (the lease fence)."""
    running = (("status", "running"),)
    if kind == "final":
        return plain.update(
            dialect,
            t.job,
            ("status", "error_class", "attempts"),
            ("id", "lease_owner"),
            same=("updated_at",),
            set_null=("lease_owner", "lease_expires"),
            where_literals=running,
        )
    return plain.update(
        dialect, t.job, ("attempts",), ("id", "lease_owner"), same=("updated_at",), where_literals=running
    )


# A Protocol signature (issue 31 §4): implements `_Statements`, as `_PlainStatements` does.
class _Core:
    """Core statements with bound parameters: SQLAlchemy processes every row's parameters."""

    def jobs(self, conn: Connection, kind: str, rows: list[tuple[Any, ...]], now: datetime) -> int:
        where = (
            _JOB.c.id == bindparam("b_id"),
            _JOB.c.lease_owner == bindparam("b_owner"),
            _JOB.c.status == "running",
        )
        if kind == "final":
            stmt = (
                update(_JOB)
                .where(*where)
                .values(
                    status=bindparam("status"),
                    error_class=bindparam("error_class"),
                    attempts=bindparam("attempts"),
                    lease_owner=None,
                    lease_expires=None,
                    updated_at=now,
                )
            )
            params = [
                {"status": s, "error_class": e, "attempts": n, "b_id": jid, "b_owner": own}
                for s, e, n, jid, own in rows
            ]
        else:
            stmt = update(_JOB).where(*where).values(attempts=bindparam("attempts"), updated_at=now)
            params = [{"attempts": n, "b_id": jid, "b_owner": own} for n, jid, own in rows]
        if len(params) == 1:
            return int(conn.execute(stmt, params[0]).rowcount)
        return int(conn.execute(stmt, params).rowcount)

    def insert(
        self,
        conn: Connection,
        table: Table,
        columns: tuple[str, ...],
        rows: list[tuple[Any, ...]],
        now: datetime | None,
        returning: tuple[str, ...] = (),
    ) -> list[tuple[Any, ...]]:
        table = _ORM_TABLES[table.name]  # the statements exactly as they were before `store.plain`
        extra = {} if now is None else {"created_at": now}
        dicts = [{**dict(zip(columns, r, strict=True)), **extra} for r in rows]
        stmt = insert(table)
        if returning:
            return [tuple(r) for r in conn.execute(stmt.returning(*(table.c[n] for n in returning)), dicts)]
        conn.execute(stmt, dicts)
        return []


# ---------------------------------------------------------------- the request cache


def cache_lookup(engine: Engine, hashes: Iterable[str]) -> dict[str, CacheHit]:
    """Original (not themselves cached) successful responses whose reply parsed, by request hash."""
    wanted = set(hashes)
    out: dict[str, CacheHit] = {}
    if not wanted:
        return out
    with engine.connect() as conn:
        for chunk in in_chunks(wanted):
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
