"""`store.browse.failure_examples` (the viewer's failures table) against plain SQL, on SQLite and
PostgreSQL: per parse-failure kind and per attempt error class, the count and the first case."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, text

from judgepanel.store.browse import failure_examples
from tests.helpers import cli
from tests.runner.conftest import PAIRS, create_argv, load_tiny

# unreadable replies and simulated 503s on part of the calls
JUDGES = ("sim:a?parse_error_rate=0.3&error_rate=0.3", "sim:b?parse_error_rate=0.2&error_rate=0.2")

PARSE = """
SELECT coalesce(v.failure_kind, 'unknown'), count(*), min(v.id) FROM verdict v
JOIN job ON job.id = v.job_id JOIN campaign c ON c.id = job.campaign_id
WHERE c.name = 'f' AND v.parse_status != 'ok' GROUP BY v.failure_kind
"""
PARSE_CASE = """
SELECT coalesce(r.text, v.rationale), job.pair_id, v.request_id, judge.name FROM verdict v
JOIN job ON job.id = v.job_id JOIN judge ON judge.id = job.judge_id
LEFT JOIN response r ON r.request_id = v.request_id WHERE v.id = :id
"""
ATTEMPT = """
SELECT r.error_class, count(*), min(r.id) FROM response r JOIN request q ON q.id = r.request_id
JOIN job ON job.id = q.job_id JOIN campaign c ON c.id = job.campaign_id
WHERE c.name = 'f' AND r.error_class IS NOT NULL GROUP BY r.error_class
"""
ATTEMPT_CASE = """
SELECT r.error_message, job.pair_id, q.id, judge.name FROM response r
JOIN request q ON q.id = r.request_id JOIN job ON job.id = q.job_id
JOIN judge ON judge.id = job.judge_id WHERE r.id = :id
"""


def _by_sql(engine: Engine) -> list[dict[str, Any]]:
    out = []
    with engine.connect() as c:
        for source, counted, case in (("parse", PARSE, PARSE_CASE), ("attempt", ATTEMPT, ATTEMPT_CASE)):
            for kind, n, first in sorted(c.execute(text(counted)).all(), key=lambda r: str(r[0])):
                example, unit, request_id, judge = c.execute(text(case), {"id": first}).one()
                out.append(
                    {
                        "kind": kind,
                        "source": source,
                        "count": n,
                        "example": example,
                        "unit": unit,
                        "request_id": request_id,
                        "judge": judge,
                    }
                )
    return out


def test_failure_examples_match_plain_sql(engine: Engine, db_url: str) -> None:
    load_tiny(engine, pairs=6)
    assert cli(*create_argv("f", *JUDGES, protocol="pairwise", extra=("--pairs", PAIRS)), db=db_url).code == 0
    # one attempt per job: a simulated 503 leaves the job failed instead of waiting to retry it
    assert cli("campaign", "run", "f", "--max-attempts", "1", "--json", db=db_url).code == 3
    got = failure_examples(engine, "f")
    want = _by_sql(engine)
    assert sorted(got, key=lambda r: (r["source"], r["kind"])) == sorted(
        want, key=lambda r: (r["source"], r["kind"])
    )
    sources = {r["source"] for r in got}
    assert sources == {"parse", "attempt"}  # both kinds of failure were there to compare
    assert all(r["example"] and r["count"] > 0 for r in got)
