"""`judgepanel export` and `judgepanel.api`: every format round-trips to the rows `query` sees."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import Engine

from judgepanel import api
from judgepanel.store.engine import make_engine
from judgepanel.store.export import COLUMNS, export_rows
from tests.helpers import cli
from tests.runner.conftest import DATASET, PAIRS, create_argv, tiny_db

CAMPAIGNS = {
    "pw": create_argv(
        "pw", "sim:a", "sim:b?position_bias=0.3", protocol="pairwise", extra=["--pairs", PAIRS]
    ),
    "pt": create_argv(
        "pt",
        "sim:a",
        extra=["--rubric", "summeval@1", "--condition", "none,rubric", "--dimension", "coherence"],
    ),
    "cl": create_argv(
        "cl",
        "sim:a",
        "sim:b",
        protocol="clauses",
        extra=["--rubric", "summeval@1", "--dimension", "consistency"],
    ),
}


@pytest.fixture(scope="module")
def db(module_db_url: str) -> str:
    eng = tiny_db(module_db_url, pairs=10)
    eng.dispose()
    assert cli("rubric", "add", "summeval", db=module_db_url).code == 0
    for name, argv in CAMPAIGNS.items():
        made = cli(*argv, db=module_db_url)
        assert made.code == 0, made.stderr
        ran = cli("campaign", "run", name, "--json", db=module_db_url)
        assert ran.code == 0, ran.stderr
    return module_db_url


def query_rows(db: str, sql: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = cli("query", sql, "--json", db=db).json()["rows"]
    return rows


def _read(path: Path, fmt: str) -> pd.DataFrame:
    if fmt == "csv":
        return pd.read_csv(path, keep_default_na=False, na_values=[""], dtype=str)
    if fmt == "jsonl":
        return pd.read_json(path, lines=True, dtype=False, precise_float=True)
    return pd.read_parquet(path)


def _norm(v: Any) -> Any:
    """Compare values across CSV text, JSON and Parquet types."""
    if v is None or (isinstance(v, float) and pd.isna(v)) or v is pd.NA:
        return None
    if isinstance(v, bool | int | float):  # booleans compare as 0/1: SQLite's query returns them so
        return float(v)
    s = str(v)
    if s in ("True", "False", "true", "false"):
        return float(s.lower() == "true")
    try:
        return float(s)
    except ValueError:
        return s


VERDICTS_SQL = """
select j.job_key, v.attempt, v.value_canonical as value, v.score, v.rationale, jd.name as judge,
       r.output_tokens, r.cost_usd, rq.template_hash, r.model_returned, j."order" as "order"
from verdict v join job j on j.id = v.job_id join campaign c on c.id = j.campaign_id
join judge jd on jd.id = j.judge_id join request rq on rq.id = v.request_id
left join response r on r.request_id = rq.id
where c.name = '{name}' order by j.id, v.attempt
"""


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
@pytest.mark.parametrize("campaign", ["pw", "pt", "cl"])
def test_verdicts_round_trip_to_query(db: str, tmp_path: Path, fmt: str, campaign: str) -> None:
    out = tmp_path / f"v.{fmt}"
    r = cli("export", campaign, "--format", fmt, "--out", str(out), "--json", db=db).json()
    want = query_rows(db, VERDICTS_SQL.format(name=campaign))
    assert r["rows"] == len(want) > 0
    got = _read(out, fmt)
    assert list(got.columns) == [c.name for c in COLUMNS["verdicts"]] == r["columns"]
    assert len(got) == len(want)
    for col in want[0]:
        assert [_norm(v) for v in got[col]] == [_norm(w[col]) for w in want], col


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_clause_verdicts_attempts_labels(db: str, tmp_path: Path, fmt: str) -> None:
    clauses = query_rows(
        db,
        "select cl.clause_key as clause, cv.met, cv.rationale from clause_verdict cv "
        "join clause cl on cl.id = cv.clause_id join verdict v on v.id = cv.verdict_id "
        "join job j on j.id = v.job_id join campaign c on c.id = j.campaign_id "
        "where c.name = 'cl' order by j.id, v.attempt, cl.dimension, cl.position",
    )
    out = tmp_path / f"c.{fmt}"
    assert cli("export", "cl", "--what", "clauses", "--format", fmt, "--out", str(out), db=db).code == 0
    got = _read(out, fmt)
    assert len(got) == len(clauses) > 0
    for col in ("clause", "met", "rationale"):
        assert [_norm(v) for v in got[col]] == [_norm(w[col]) for w in clauses], col

    attempts = query_rows(
        db,
        "select rq.request_hash, r.ok, r.error_class, r.latency_ms from request rq "
        "left join response r on r.request_id = rq.id join job j on j.id = rq.job_id "
        "join campaign c on c.id = j.campaign_id where c.name = 'pw' order by j.id, rq.attempt",
    )
    out = tmp_path / f"a.{fmt}"
    assert cli("export", "pw", "--what", "attempts", "--format", fmt, "--out", str(out), db=db).code == 0
    got = _read(out, fmt)
    assert len(got) == len(attempts) > 0
    for col in ("request_hash", "ok", "error_class", "latency_ms"):
        assert [_norm(v) for v in got[col]] == [_norm(w[col]) for w in attempts], col

    out = tmp_path / f"l.{fmt}"
    r = cli("export", "pt", "--what", "labels", "--format", fmt, "--out", str(out), "--json", db=db).json()
    n_labels = query_rows(
        db,
        f"select count(*) as n from label l join item i on i.id = l.item_id "
        f"join dataset d on d.id = i.dataset_id where d.name = '{DATASET}'",
    )[0]["n"]
    assert r["rows"] == n_labels


def test_api_frames_match_export(db: str, tmp_path: Path) -> None:
    df = api.verdicts(db, "pw")
    out = tmp_path / "v.jsonl"
    assert cli("export", "pw", "--format", "jsonl", "--out", str(out), db=db).code == 0
    lines = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert len(df) == len(lines)
    assert df["value"].tolist() == [ln["value"] for ln in lines]
    assert str(df["repeat"].dtype) == "Int64" and str(df["cached"].dtype) == "boolean"
    assert set(df["order"]) == {"AB", "BA"}
    assert set(df["unit"].str.count(r"\|")) == {1}  # pairs are named a|b
    cl = api.clause_verdicts(db, "cl")
    assert set(cl["clause"].str.startswith("consistency.")) == {True}
    assert len(api.attempts(db, "pw")) >= len(df)


def test_rows_stream_in_chunks(db: str) -> None:
    eng = make_engine(db)
    try:
        chunks = list(export_rows(eng, "pw", "verdicts", chunk=7))
    finally:
        eng.dispose()
    sizes = [len(c) for c in chunks]
    assert len(sizes) > 1 and all(s == 7 for s in sizes[:-1]) and 0 < sizes[-1] <= 7


def test_bad_input_is_one_line_and_writes_nothing(db: str, tmp_path: Path) -> None:
    out = tmp_path / "x.csv"
    for args, needle in [
        (("nope", "--format", "csv"), "no campaign named 'nope' (known: cl, pt, pw)"),
        (("pw", "--format", "xlsx"), "--format must be one of"),
        (("pw", "--format", "csv", "--what", "everything"), "--what must be one of"),
    ]:
        r = cli("export", *args, "--out", str(out), db=db)
        assert r.code == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = cli("export", "pw", "--format", "csv", "--out", str(tmp_path / "no" / "x.csv"), db=db)
    assert r.code == 2 and "does not exist" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_engine_argument_and_missing_campaign(engine: Engine) -> None:
    from judgepanel.errors import NotFound

    with pytest.raises(NotFound):
        api.verdicts(engine, "missing")
