"""`judgepanel rubric add / list / show` through the real entry point."""

from __future__ import annotations

from pathlib import Path

import yaml

from judgepanel.rubrics import bundled_rubric, bundled_rubrics
from tests.helpers import cli, migrate_db


def test_add_list_show(tmp_path: Path, sqlite_url: str) -> None:
    migrate_db(sqlite_url)
    src = bundled_rubrics()["summeval"]

    added = cli("rubric", "add", str(src), "--json", db=sqlite_url).json()
    assert (added["created"], added["name"], added["version"], added["parent_version"]) == (
        True,
        "summeval",
        1,
        None,
    )
    assert added["clauses"] == len(bundled_rubric("summeval").clauses)

    same = cli("rubric", "add", str(src), db=sqlite_url)
    assert same.code == 0 and "unchanged" in same.stdout

    body = yaml.safe_load(src.read_text())
    body["dimensions"]["fluency"]["clauses"].append({"id": "fluency.6", "text": "No sentence runs on."})
    edited = tmp_path / "summeval.yaml"
    edited.write_text(yaml.safe_dump(body, sort_keys=False))
    out = cli("rubric", "add", str(edited), "--note", "one more fluency clause", db=sqlite_url)
    assert out.code == 0 and "summeval@2 added" in out.stdout and "parent summeval@1" in out.stdout

    listed = cli("rubric", "list", "--json", db=sqlite_url).json()
    assert [(r["name"], r["latest_version"], r["versions"]) for r in listed["rubrics"]] == [
        ("summeval", 2, 2)
    ]

    shown = cli("rubric", "show", "summeval", "--json", db=sqlite_url).json()
    assert (shown["version"], shown["parent_version"], shown["versions"]) == (2, 1, [1, 2])
    assert shown["change_note"] == "one more fluency clause"
    fluency = next(d for d in shown["document"]["dimensions"] if d["name"] == "fluency")
    assert fluency["clauses"][-1] == {"id": "fluency.6", "text": "No sentence runs on."}

    old = cli("rubric", "show", "summeval@1", "--json", db=sqlite_url).json()
    assert old["version"] == 1 and old["clauses"] == added["clauses"]

    readable = cli("rubric", "show", "summeval@2", db=sqlite_url)
    assert readable.code == 0 and "fluency.6" in readable.stdout and "coherence:" in readable.stdout


def test_bundled_name_and_name_option(sqlite_url: str) -> None:
    migrate_db(sqlite_url)
    out = cli("rubric", "add", "helpfulness", "--name", "mtbench-help", "--json", db=sqlite_url).json()
    assert (out["name"], out["version"], out["dimensions"]) == ("mtbench-help", 1, ["helpfulness"])
    table = cli("rubric", "list", db=sqlite_url)
    assert table.code == 0 and "mtbench-help" in table.stdout


def test_user_mistakes_exit_2_with_one_line(tmp_path: Path, sqlite_url: str) -> None:
    migrate_db(sqlite_url)
    missing = cli("rubric", "add", str(tmp_path / "nope.yaml"), db=sqlite_url)
    assert missing.code == 2 and "no such rubric file" in missing.stderr and "Traceback" not in missing.stderr

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ndimensions:\n  clarity:\n    definition: x\n")
    invalid = cli("rubric", "add", str(bad), db=sqlite_url)
    assert invalid.code == 2
    assert invalid.stderr.strip() == f"judgepanel: error: {bad}: dimensions.clarity.criteria: missing"

    unknown = cli("rubric", "show", "nope", db=sqlite_url)
    assert unknown.code == 2 and "no rubric named 'nope'" in unknown.stderr
    assert cli("rubric", "show", "nope@x", db=sqlite_url).code == 2
    assert cli("rubric", "list", "--json", db=sqlite_url).json() == {"rubrics": []}
