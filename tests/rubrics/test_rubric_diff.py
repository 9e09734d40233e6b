"""`judgepanel rubric diff A B`: clause-level changes by stable id."""

from __future__ import annotations

from pathlib import Path

import yaml

from judgepanel.rubrics import bundled_rubrics
from tests.helpers import cli, migrate_db


def test_diff_changed_added_removed(tmp_path: Path, sqlite_url: str) -> None:
    migrate_db(sqlite_url)
    src = bundled_rubrics()["summeval"]
    assert cli("rubric", "add", str(src), db=sqlite_url).code == 0
    body = yaml.safe_load(src.read_text())
    clauses = body["dimensions"]["fluency"]["clauses"]
    old_text = clauses[0]["text"]
    clauses[0]["text"] = "Every sentence has a subject and a finite verb."
    removed = clauses.pop(2)["id"]
    clauses.append({"id": "fluency.9", "text": "No sentence runs on."})
    edited = tmp_path / "summeval.yaml"
    edited.write_text(yaml.safe_dump(body, sort_keys=False))
    assert cli("rubric", "add", str(edited), db=sqlite_url).code == 0

    d = cli("rubric", "diff", "summeval@1", "summeval@2", "--json", db=sqlite_url).json()
    assert d == {
        "changed": {"fluency.1": {"old": old_text, "new": "Every sentence has a subject and a finite verb."}},
        "added": ["fluency.9"],
        "removed": [removed],
    }
    same = cli("rubric", "diff", "summeval@2", "summeval", "--json", db=sqlite_url).json()
    assert same == {"changed": {}, "added": [], "removed": []}
    text = cli("rubric", "diff", "summeval@1", "summeval@2", db=sqlite_url)
    assert text.code == 0 and "fluency.9" in text.stdout
    bad = cli("rubric", "diff", "summeval@1", "summeval@7", db=sqlite_url)
    assert bad.code == 2 and bad.stderr.count("\n") == 1
