"""`data import-alttest DIR --into DATASET`: a panel's LLM scores attached to an existing dataset's
items, all or nothing, and pair sets made before the attachment refused until re-derived."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import cli, migrate_db

DIMS = ("coherence", "consistency", "fluency", "relevance")
TABLES = ["dataset", "item", "annotator", "label", "pair_set", "pair", "pair_label"]


def _snapshot(db: str) -> str:
    parts = [cli("query", f"select * from {t} order by id", "--format", "csv", db=db).stdout for t in TABLES]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _summeval(path: Path) -> Path:
    """One article, three systems, experts only (the turkers' list is null)."""
    rows = []
    for k, system in enumerate(("M0", "M1", "M2")):
        experts = [{d: 1 + (k + i + j) % 5 for j, d in enumerate(DIMS)} for i in range(3)]
        rows.append(
            {
                "id": "a1",
                "model_id": system,
                "decoded": f"s{k}",
                "expert_annotations": experts,
                "turker_annotations": None,
            }
        )
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def _llms(folder: Path, scores: dict[str, dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "llm_annotations.json").write_text(json.dumps(scores))
    return folder


def _panel_scores(systems: tuple[str, ...] = ("M0", "M1", "M2")) -> dict[str, dict[str, Any]]:
    return {
        "m1": {f"a1__{s}__{d}": 5 - k for k, s in enumerate(systems) for d in DIMS},  # M0 > M1 > M2
        "m2": {f"a1__{s}__{d}": 3 for s in systems for d in DIMS},  # ties everywhere
    }


@pytest.fixture
def db(db_url: str, tmp_path: Path) -> str:
    migrate_db(db_url)  # a copy of the run's one migrated database (`tests.helpers.migrate_db`)
    assert cli("data", "import-summeval", str(_summeval(tmp_path / "se.jsonl")), db=db_url).code == 0
    return db_url


def test_attached_llms_become_judges_and_new_pair_sets_derive_their_labels(db: str, tmp_path: Path) -> None:
    out = cli(
        "data",
        "import-alttest",
        str(_llms(tmp_path / "p", _panel_scores())),
        "--into",
        "summeval",
        "--json",
        db=db,
    ).json()
    assert out["labels_added"] == 2 * 3 * 4 and out["annotators"] == 2 and out["stale_pair_sets"] == []
    rows = cli(
        "query",
        'select kind, "group" g, count(*) n from annotator where kind = \'llm\' group by kind, "group"',
        "--json",
        db=db,
    ).json()["rows"]
    assert rows == [{"kind": "llm", "g": "llm", "n": 2}]
    cli("data", "pairs", "summeval", "--name", "p3", "--sample", "3", "--seed", "1", db=db)
    labels = cli(
        "query",
        "select a.name, i1.system sa, i2.system sb, pl.value from pair_label pl join annotator a on a.id = pl.annotator_id "
        "join pair p on p.id = pl.pair_id join item i1 on i1.id = p.item_a_id join item i2 on i2.id = p.item_b_id "
        "where a.kind = 'llm'",
        "--json",
        db=db,
    ).json()["rows"]
    assert len(labels) == 6
    for r in labels:
        want = "T" if r["name"] == "m2" else ("A" if r["sa"] < r["sb"] else "B")
        assert r["value"] == want, r
    m = cli("metrics", "matrix", "--pairs", "p3", "--with-judges", "all", "--json", db=db).json()
    assert {"m1", "m2"} <= set(m["raters"])
    again = cli("data", "import-alttest", str(tmp_path / "p"), "--into", "summeval", "--json", db=db).json()
    assert again["unchanged"] is True and again["labels_added"] == 0


@pytest.mark.parametrize(
    ("scores", "needle"),
    [
        ({"m1": {"a1__M0__coherence": 3, "a9__M0__coherence": 2}}, "'a9__M0__coherence'"),
        ({"m1": {"a1__M0__style": 3}}, "'style'"),
        ({"expert_1": {"a1__M0__coherence": 3}}, "expert_1"),
        ({"m1": {"a1__M0__coherence": None}}, "a1__M0__coherence"),
    ],
)
def test_bad_panels_are_refused_whole_with_one_line(
    db: str, tmp_path: Path, scores: Any, needle: str
) -> None:
    before = _snapshot(db)
    r = cli("data", "import-alttest", str(_llms(tmp_path / "bad", scores)), "--into", "summeval", db=db)
    assert r.code == 2
    assert len(r.stderr.strip().splitlines()) == 1 and needle in r.stderr
    assert _snapshot(db) == before


def test_name_or_into_exactly_one(db: str, tmp_path: Path) -> None:
    folder = str(_llms(tmp_path / "p", _panel_scores()))
    assert cli("data", "import-alttest", folder, db=db).code == 2
    assert cli("data", "import-alttest", folder, "--name", "x", "--into", "summeval", db=db).code == 2
    assert cli("data", "import-alttest", folder, "--into", "nope", db=db).code == 2


def test_pair_set_made_before_the_attachment_is_refused_until_re_derived(db: str, tmp_path: Path) -> None:
    cli("data", "pairs", "summeval", "--name", "old", "--sample", "3", db=db)
    pairs_before = cli(
        "query", "select id, item_a_id, item_b_id from pair order by id", "--json", db=db
    ).json()["rows"]
    out = cli(
        "data",
        "import-alttest",
        str(_llms(tmp_path / "p", _panel_scores())),
        "--into",
        "summeval",
        "--json",
        db=db,
    ).json()
    assert out["stale_pair_sets"] == ["old"]
    for args in (
        ("metrics", "matrix", "--pairs", "old", "--json"),
        ("metrics", "heldout", "--pairs", "old", "--train", "2", "--json"),
        ("data", "pairs", "summeval", "--name", "old", "--sample", "3"),  # same parameters, no --replace
    ):
        r = cli(*args, db=db)
        assert r.code == 2, args
        assert "derived before annotators m1, m2" in r.stderr and "--name old --replace" in r.stderr
    assert cli("data", "pairs", "summeval", "--name", "old", "--sample", "3", "--replace", db=db).code == 0
    # the same pairs (ids kept, so campaigns stay valid), now with the judges' labels
    assert (
        cli("query", "select id, item_a_id, item_b_id from pair order by id", "--json", db=db).json()["rows"]
        == pairs_before
    )
    m = cli("metrics", "matrix", "--pairs", "old", "--with-judges", "all", "--json", db=db).json()
    assert {"m1", "m2"} <= set(m["raters"])
    same = cli("data", "pairs", "summeval", "--name", "old", "--sample", "3", "--json", db=db).json()
    assert same["labels_by_group"]["llm"] == {"A": 3, "B": 0, "T": 3}  # m1: M0 > M1 > M2; m2: all tied
