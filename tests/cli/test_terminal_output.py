"""What the CLI prints for people is safe for a terminal (issue 17 §5): stored text with control
sequences (`\\033]0;…\\a` retitles the window, `\\033[2J` clears it) is shown escaped in every table
and line, rich markup in a name (`[/]`) is text, and `query` bounds the bytes a result may hold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import cli, migrate_db

# what must never reach a terminal from stored text: C0 (but tab and newline), DEL, C1, bidi controls
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

HOSTILE = ["a\x1b]0;pwned\x07", "b\x1b[2J[/]x", "c\u202eevil", "d\x9b31m"]


@pytest.fixture
def db(db_url: str, tmp_path: Path) -> str:
    migrate_db(db_url)
    f = tmp_path / "l.csv"
    rows = ["item_id,annotator,group,dimension,value"]
    for i in range(8):
        for k, name in enumerate(HOSTILE):
            quoted = '"' + name.replace('"', '""') + '"'
            rows.append(f"q{i},{quoted},g,d,{(i + k) % 3}")
    f.write_text("\n".join(rows) + "\n", encoding="utf-8")
    r = cli("data", "import-labels", str(f), "--dataset", "qa", db=db_url)
    assert r.code == 0, r.stderr
    return db_url


def _assert_no_controls(text: str) -> None:
    assert not CONTROL.search(text), CONTROL.findall(text)


def test_query_table_escapes_control_sequences(db: str) -> None:
    r = cli("query", "select name from annotator order by name", db=db)
    assert r.code == 0, r.stderr
    _assert_no_controls(r.stdout)
    assert "a\\x1b]0;pwned\\x07" in r.stdout
    assert "b\\x1b[2J[/]x" in r.stdout and "c\\u202eevil" in r.stdout and "d\\x9b31m" in r.stdout
    # JSON keeps the stored value (json.dumps escapes it)
    names = [
        row["name"]
        for row in cli("query", "select name from annotator order by name", "--json", db=db).json()["rows"]
    ]
    assert names == sorted(HOSTILE)


def test_other_tables_and_lines_escape_too(db: str) -> None:
    r = cli("metrics", "matrix", "--dataset", "qa", db=db)  # a grid of its own, then cluster lines
    assert r.code == 0, r.stderr
    _assert_no_controls(r.stdout)
    assert "pwned\\x07" in r.stdout and "[/]x" in r.stdout
    r = cli("metrics", "agreement", "--dataset", "qa", "--metric", "alpha", db=db)
    assert r.code == 0, r.stderr
    _assert_no_controls(r.stdout + r.stderr)


def test_an_error_quoting_stored_text_is_escaped(db: str) -> None:
    r = cli("metrics", "agreement", "--dataset", "qa", "--raters", "x\x1b[2J", "--metric", "alpha", db=db)
    assert r.code == 2
    _assert_no_controls(r.stderr)


def _big_rows(db: str, rows: int, width: int) -> str:
    if db.startswith("sqlite"):
        return (
            f"with recursive n(i) as (select 1 union all select i + 1 from n where i < {rows}) "
            f"select i, substr(hex(zeroblob({width})), 1, {width}) as t from n"
        )
    return f"select i, repeat('0', {width}) as t from generate_series(1, {rows}) as i"


def test_max_bytes_bounds_the_result(db: str) -> None:
    ok = cli("query", _big_rows(db, 50, 100), "--json", "--max-bytes", "100000", db=db).json()
    assert ok["row_count"] == 50
    r = cli("query", _big_rows(db, 5000, 100), "--max-bytes", "100000", db=db)
    assert r.code == 2 and r.stdout == ""
    assert "more than 100,000 bytes" in r.stderr and "--max-bytes" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = cli("query", "select 1", "--max-bytes", "0", db=db)
    assert r.code == 2 and "--max-bytes must be a positive" in r.stderr


def test_a_huge_blob_is_refused_before_it_is_built(sqlite_url: str) -> None:
    migrate_db(sqlite_url)
    # refused by SQLite's length limit before it allocates (before: 2 GB, then MemoryError)
    r = cli("query", "select randomblob(400000000)", db=sqlite_url)
    assert r.code == 2 and "more than 100,000,000 bytes" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_schema_is_printed_without_sql(db: str) -> None:
    r = cli("query", db=db)
    assert r.code == 2 and "--schema" in r.stderr
    r = cli("query", "select 1", "--schema", db=db)
    assert r.code == 2 and "not both" in r.stderr
