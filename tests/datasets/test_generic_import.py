from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import cli, migrate_db


@pytest.fixture
def migrated(db_url: str) -> str:
    migrate_db(db_url)  # a copy of the run's one migrated database (`tests.helpers.migrate_db`)
    return db_url


def _count(db: str, table: str) -> int:
    n = cli("query", f"select count(*) n from {table}", "--json", db=db).json()["rows"][0]["n"]
    assert isinstance(n, int)
    return n


CSV = """item_id,annotator,group,dimension,value,rationale
q1,alice,expert,helpful,4,clear
q1,bob,crowd,helpful,5,
q2,alice,expert,helpful,2,off topic
q2,bob,crowd,helpful,yes,
"""


def test_labels_csv_and_jsonl(tmp_path: Path, migrated: str) -> None:
    f = tmp_path / "labels.csv"
    f.write_text(CSV)
    out = cli("data", "import-labels", str(f), "--dataset", "qa", "--json", db=migrated).json()
    assert out == {
        "dataset": "qa",
        "unchanged": False,
        "items_added": 2,
        "labels_added": 4,
        "annotators": 2,
        "skipped": {},
    }
    rows = cli(
        "query",
        'select i.external_id, a.name, a."group", l.value_num, l.value_text, l.rationale '
        "from label l join item i on i.id=l.item_id join annotator a on a.id=l.annotator_id "
        "order by i.external_id, a.name",
        "--json",
        db=migrated,
    ).json()["rows"]
    assert rows[0] == {
        "external_id": "q1",
        "name": "alice",
        "group": "expert",
        "value_num": 4.0,
        "value_text": "4",
        "rationale": "clear",
    }
    assert rows[3]["value_num"] is None and rows[3]["value_text"] == "yes"
    j = tmp_path / "labels.jsonl"
    j.write_text(
        "\n".join(
            json.dumps(
                {
                    "item_id": f"x{i}",
                    "annotator": "gpt",
                    "group": "llm",
                    "kind": "llm",
                    "dimension": "",
                    "value": i % 5 + 1,
                }
            )
            for i in range(10)
        )
        + "\n"
    )
    out = cli("data", "import-labels", str(j), "--dataset", "other", "--json", db=migrated).json()
    assert out["labels_added"] == 10 and out["items_added"] == 10
    kind = cli("query", "select kind from annotator where name='gpt'", "--json", db=migrated).json()["rows"]
    assert kind == [{"kind": "llm"}]


@pytest.mark.parametrize(
    ("content", "line", "field"),
    [
        ("item_id,annotator,group,dimension,value\nq1,a,g,d,1\nq2,,g,d,2\n", 3, "annotator"),
        ("item_id,annotator,group,dimension,value\nq1,a,g,d,1\nq1,a,g,d,2\n", 3, "value"),
        ("item_id,annotator,group,dimension,value\nq1,a,g,d,1\nq2,a,h,d,2\n", 3, "group"),
        ("item_id,annotator,group,dimension,value\nq1,a,g,d,1\nq2,a,g,d,\n", 3, "value"),
    ],
)
def test_bad_label_rows_change_nothing(
    tmp_path: Path, migrated: str, content: str, line: int, field: str
) -> None:
    f = tmp_path / "bad.csv"
    f.write_text(content)
    r = cli("data", "import-labels", str(f), "--dataset", "qa", db=migrated)
    assert r.code == 2 and f"bad.csv:{line}: field {field!r}" in r.stderr and r.stderr.count("\n") == 1
    assert _count(migrated, "label") == 0 and _count(migrated, "dataset") == 0


def test_missing_columns_and_unknown_format(tmp_path: Path, migrated: str) -> None:
    f = tmp_path / "x.csv"
    f.write_text("item,annotator\n1,a\n")
    r = cli("data", "import-labels", str(f), "--dataset", "qa", db=migrated)
    assert r.code == 2 and "missing column(s) item_id" in r.stderr
    g = tmp_path / "x.xlsx"
    g.write_text("nope")
    r = cli("data", "import-labels", str(g), "--dataset", "qa", db=migrated)
    assert r.code == 2 and "unknown format" in r.stderr


def test_items_then_labels_then_replace(tmp_path: Path, migrated: str) -> None:
    items = tmp_path / "items.jsonl"
    items.write_text(
        "\n".join(
            json.dumps(
                {
                    "id": f"q{i}",
                    "group": "g1",
                    "input": "Q?",
                    "output": f" answer {i}\n",
                    "system": "m",
                    "topic": "t",
                }
            )
            for i in range(1, 4)
        )
        + "\n"
    )
    out = cli("data", "import-items", str(items), "--dataset", "qa", "--json", db=migrated).json()
    assert out["items_added"] == 3
    row = cli("query", "select output, meta from item where external_id='q1'", "--json", db=migrated).json()[
        "rows"
    ][0]
    assert row["output"] == " answer 1\n" and json.loads(row["meta"]) == {"topic": "t"}
    labels = tmp_path / "labels.csv"
    labels.write_text(CSV)
    out = cli("data", "import-labels", str(labels), "--dataset", "qa", "--json", db=migrated).json()
    assert out["items_added"] == 0 and out["labels_added"] == 4
    assert cli("data", "import-labels", str(labels), "--dataset", "qa", "--json", db=migrated).json()[
        "unchanged"
    ]
    other = tmp_path / "labels2.csv"
    other.write_text(CSV.replace(",4,", ",3,"))
    r = cli("data", "import-labels", str(other), "--dataset", "qa", db=migrated)
    assert r.code == 2 and "--replace" in r.stderr
    out = cli(
        "data", "import-labels", str(other), "--dataset", "qa", "--replace", "--json", db=migrated
    ).json()
    assert out["labels_added"] == 4
    assert _count(migrated, "label") == 4 and _count(migrated, "item") == 3
    v = cli(
        "query",
        "select value_num from label l join annotator a on a.id=l.annotator_id join item i on "
        "i.id=l.item_id where a.name='alice' and i.external_id='q1'",
        "--json",
        db=migrated,
    ).json()["rows"]
    assert v == [{"value_num": 3.0}]


def test_duplicate_item_ids(tmp_path: Path, migrated: str) -> None:
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "a", "output": "o"}\n{"id": "a", "output": "p"}\n')
    r = cli("data", "import-items", str(items), "--dataset", "qa", db=migrated)
    assert r.code == 2 and "items.jsonl:2: field 'id': duplicate item a" in r.stderr
