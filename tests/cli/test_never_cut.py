"""Issue 28 §5: in an 80-column pipe, every κ cell of `metrics matrix` came out as `0…` and `query`
cut values (`[1] de…ise`). Numbers and queried values are never cut now: the matrix is printed in
blocks of columns that fit, and a query result too wide for a table is printed one record per row,
with a line pointing at `--format csv` / `--json`. Rendered as a user sees them: the real command
in a subprocess with a fixed COLUMNS."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import cli


def _shown(db: str, *args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "judgepanel", "--db", db, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": str(columns)},
        check=True,
    )


@pytest.mark.parametrize("columns", [80, 60])
def test_every_kappa_of_a_wide_matrix_is_shown_whole(demo_url: str, columns: int) -> None:
    args = ("metrics", "matrix", "--pairs", "summeval-sample-pairs", "--with-judges", "all")
    data = cli(*args, "--json", db=demo_url).json()
    assert len(data["raters"]) >= 10  # wider than 80 columns as one grid
    out = _shown(demo_url, *args, columns=columns).stdout
    assert "…" not in out
    lines = out.splitlines()
    assert max(len(ln) for ln in lines) <= columns
    for i, name in enumerate(data["raters"]):
        # "N name group κ κ …" (the groups are one word: expert, crowd, judge)
        shown = [ln.split()[3:] for ln in lines if ln.strip().startswith(f"{i + 1} {name} ")]
        cells = [c for part in shown for c in part]
        want = ["—" if k is None else f"{k:.2f}" for k in data["kappa"][i]]
        assert cells == want, (name, cells, want)


def test_a_wide_query_result_is_one_record_per_row_and_nothing_is_cut(demo_url: str) -> None:
    sql = "select id, name, spec from campaign order by id"
    rows = cli("query", sql, "--json", db=demo_url).json()["rows"]
    shown = _shown(demo_url, "query", sql)
    assert "…" not in shown.stdout
    assert "one record per row" in shown.stderr and "--format csv" in shown.stderr
    for r in rows:
        assert f"name  {r['name']}" in shown.stdout
        assert f"spec  {r['spec']}" in shown.stdout  # the whole JSON text, not a prefix
    # a result that fits is still a table
    narrow = _shown(demo_url, "query", "select id, name from campaign order by id")
    assert narrow.stdout.splitlines()[0].split() == ["id", "name"] and narrow.stderr == ""
    long_first = _shown(demo_url, "query", "select spec, id from campaign order by id limit 1")
    assert "[1]" not in long_first.stdout and rows[0]["spec"] in long_first.stdout
