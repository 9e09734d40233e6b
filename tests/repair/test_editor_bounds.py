"""The editor's replies are bounded (issue 17 §5): a clause longer than MAX_CLAUSE_CHARS or a split
into more than MAX_CLAUSES clauses is a failed editor job, never a rubric version — through the
fake server's OpenAI wire, for `rubric split` and for a repair iteration's rewrites."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from judgepanel.fake.server import FakeServerProcess
from judgepanel.protocol.editor import MAX_CLAUSE_CHARS, MAX_CLAUSES, REWRITE, SPLIT, parse_editor
from tests.helpers import cli
from tests.repair.conftest import PANEL_SIM, prepare_db, run_args
from tests.runner.conftest import FAKE_KEYS


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServerProcess]:
    with FakeServerProcess() as server:
        yield server


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in FAKE_KEYS.items():
        monkeypatch.setenv(k, v)


def _editor(fake: FakeServerProcess, sprawl: int) -> str:
    return f"openai:editor!editor_sprawl={sprawl}?base_url={fake.url}/v1"


def _versions(db: str) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = cli(
        "query",
        "select rv.version, rv.author, (select max(length(text)) from clause c where c.rubric_version_id = rv.id) as longest,"
        " (select count(*) from clause c where c.rubric_version_id = rv.id) as n"
        " from rubric_version rv join rubric r on r.id = rv.rubric_id where r.name = 'summeval' order by rv.version",
        "--json",
        db=db,
    ).json()["rows"]
    return rows


def test_split_into_3000_clauses_is_a_failed_job_not_a_version(db_url: str, fake: FakeServerProcess) -> None:
    prepare_db(db_url)
    before = _versions(db_url)
    r = cli(
        "rubric",
        "split",
        "summeval",
        "--editor",
        _editor(fake, 3000),
        "--dimension",
        "coherence",
        "--json",
        db=db_url,
    )
    assert r.code == 1, r.stdout + r.stderr
    assert "3,000 clauses" in r.stderr and f"limit of {MAX_CLAUSES}" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert _versions(db_url) == before
    failed = cli(
        "query",
        "select j.status, resp.error_class from job j join campaign c on c.id = j.campaign_id"
        " join request rq on rq.job_id = j.id left join response resp on resp.request_id = rq.id"
        " where c.protocol = 'editor'",
        "--json",
        db=db_url,
    ).json()["rows"]
    assert failed and all(row["status"] == "failed" for row in failed)


def test_a_reasonable_split_still_makes_a_version(db_url: str, fake: FakeServerProcess) -> None:
    prepare_db(db_url)
    out = cli(
        "rubric",
        "split",
        "summeval",
        "--editor",
        _editor(fake, 12),
        "--dimension",
        "coherence",
        "--json",
        db=db_url,
    ).json()
    assert out["created"] and len(out["clauses"]["coherence"]) == 12


def test_an_80000_character_rewrite_is_a_failed_step_not_a_version(
    sqlite_url: str, fake: FakeServerProcess
) -> None:
    prepare_db(sqlite_url)
    before = _versions(sqlite_url)
    out = cli(
        *run_args("big", PANEL_SIM, _editor(fake, 80_202)), "--stop-after", "rewrite", "--json", db=sqlite_url
    )
    # a failed editor call leaves the rewrite step undone (exit 3), and the line says which bound
    assert out.code == 3, out.stderr
    assert "the editor gave no usable rewrite" in out.stderr
    # (the clause is counted after its whitespace is normalised: about 80,200 characters)
    assert re.search(
        rf"a clause of 80,\d{{3}} characters, more than the limit of {MAX_CLAUSE_CHARS:,}", out.stderr
    )
    status = cli("repair", "status", "big", "--json", db=sqlite_url).json()
    assert status["steps"]["rewrite"] == "pending" and status["rubrics"]["contested"] is None
    assert _versions(sqlite_url) == before
    longest = max(int(str(v["longest"])) for v in _versions(sqlite_url))
    assert longest <= MAX_CLAUSE_CHARS


@pytest.mark.parametrize(
    ("schema", "reply", "ok"),
    [
        (REWRITE, {"reason": "r", "clause": "x" * MAX_CLAUSE_CHARS}, True),
        (REWRITE, {"reason": "r", "clause": "x" * (MAX_CLAUSE_CHARS + 1)}, False),
        (SPLIT, {"reason": "r", "clauses": ["A clause."] * MAX_CLAUSES}, True),
        (SPLIT, {"reason": "r", "clauses": ["A clause."] * (MAX_CLAUSES + 1)}, False),
        (SPLIT, {"reason": "r", "clauses": ["A clause.", "y" * (MAX_CLAUSE_CHARS + 1)]}, False),
    ],
)
def test_bounds_at_the_edge(schema: str, reply: dict[str, object], ok: bool) -> None:
    import json

    for structured, text in ((reply, None), (None, "Here it is: " + json.dumps(reply))):
        got = parse_editor(schema, text, structured)
        assert got.ok is ok and (got.proposal is None) is (not ok)
        if not ok:
            assert got.error and "limit" in got.error
