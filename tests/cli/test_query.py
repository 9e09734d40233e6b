from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from tests.helpers import cli, migrate_db


@pytest.fixture
def db(db_url: str, tmp_path: Path) -> str:
    migrate_db(db_url)
    f = tmp_path / "l.csv"
    f.write_text("item_id,annotator,group,dimension,value\nq1,a,g,d,1\nq2,a,g,d,2\nq3,b,g,d,x\n")
    assert cli("data", "import-labels", str(f), "--dataset", "qa", db=db_url).code == 0
    return db_url


def test_formats(db: str) -> None:
    sql = "select value_text as v, value_num as n from label order by id"
    j = cli("query", sql, "--format", "json", db=db).json()
    assert j == {
        "columns": ["v", "n"],
        "rows": [{"v": "1", "n": 1.0}, {"v": "2", "n": 2.0}, {"v": "x", "n": None}],
        "row_count": 3,
    }
    c = cli("query", sql, "--format", "csv", db=db)
    assert list(csv.reader(io.StringIO(c.stdout))) == [["v", "n"], ["1", "1.0"], ["2", "2.0"], ["x", ""]]
    t = cli("query", sql, db=db)
    assert t.code == 0 and "x" in t.stdout and "2.0" in t.stdout


@pytest.mark.parametrize(
    "sql",
    [
        "delete from label",
        "update label set value_text = 'z'",
        "insert into dataset (name, kind, source_hash, meta, created_at) values ('x', 'y', 'z', '{}', '2020-01-01')",
        "drop table label",
        "create table evil (x int)",
    ],
)
def test_writes_refused_and_nothing_changes(db: str, sql: str) -> None:
    before = cli("query", "select * from label order by id", "--json", db=db).json()
    r = cli("query", sql, db=db)
    assert r.code == 2
    assert "read-only" in r.stderr or "returned no rows" in r.stderr
    assert r.stderr.count("\n") == 1
    assert cli("query", "select * from label order by id", "--json", db=db).json() == before


def test_bad_sql_and_bad_format(db: str) -> None:
    r = cli("query", "select nope from nothing", db=db)
    assert r.code == 2 and r.stderr.startswith("judgepanel: error: query failed")
    r = cli("query", "select 1", "--format", "xml", db=db)
    assert r.code == 2 and "--format" in r.stderr


def test_missing_sqlite_file_is_not_created(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'none.db'}"
    r = cli("query", "select 1", db=url)
    assert r.code == 2 and "db upgrade" in r.stderr
    assert not (tmp_path / "none.db").exists()


def test_json_is_one_object(db: str) -> None:
    r = cli("query", "select 1 as one", "--json", db=db)
    assert json.loads(r.stdout) == {"columns": ["one"], "rows": [{"one": 1}], "row_count": 1}
