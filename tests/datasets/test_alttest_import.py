"""`data import-alttest`: the alt-test panel format, plain or gzip, all-or-nothing."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import cli, migrate_db

TABLES = ["dataset", "item", "annotator", "label"]


def _snapshot(db: str) -> str:
    parts = [cli("query", f"select * from {t} order by id", "--format", "csv", db=db).stdout for t in TABLES]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _panel(folder: Path, humans: Any, llms: Any, *, gz: bool = False, raw: bytes | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in (("human_annotations.json", humans), ("llm_annotations.json", llms)):
        body = raw if (raw is not None and name.startswith("human")) else json.dumps(data).encode()
        if gz:
            (folder / f"{name}.gz").write_bytes(gzip.compress(body))
        else:
            (folder / name).write_bytes(body)
    return folder


HUMANS = {
    "h1": {"t1__a": 1, "t1__b": 2.5, "t2__a": "x"},
    "h2": {"t1__a": 3, "t2__a": "y"},
}
LLMS = {"m1": {"t1__a": 1, "t1__b": 2, "t2__a": "x"}}


@pytest.fixture
def migrated(db_url: str) -> str:
    migrate_db(db_url)  # a copy of the run's one migrated database (`tests.helpers.migrate_db`)
    return db_url


def test_real_mtbench_panel_imports_and_reimport_is_a_no_op(migrated: str, shared_data: Path) -> None:
    folder = shared_data / "alttest" / "mtbench"
    out = cli("data", "import-alttest", str(folder), "--name", "mtbench", "--json", db=migrated).json()
    # README: 120 instances; 3 humans with 74 + 84 + 88 votes; 6 LLMs × 120
    assert out == {
        "dataset": "mtbench",
        "unchanged": False,
        "items_added": 120,
        "labels_added": 74 + 84 + 88 + 6 * 120,
        "annotators": 9,
        "skipped": {},
    }
    kinds = cli(
        "query",
        'select kind, "group" g, count(*) n from annotator group by kind, "group" order by kind',
        "--json",
        db=migrated,
    ).json()["rows"]
    assert kinds == [{"kind": "human", "g": "human", "n": 3}, {"kind": "llm", "g": "llm", "n": 6}]
    groups = cli("query", "select count(distinct group_key) n from item", "--json", db=migrated).json()
    assert groups["rows"][0]["n"] == 42  # README: 42 questions
    before = _snapshot(migrated)
    again = cli("data", "import-alttest", str(folder), "--name", "mtbench", "--json", db=migrated).json()
    assert again["unchanged"] is True and again["labels_added"] == 0
    assert _snapshot(migrated) == before


def test_labels_kept_as_given_and_gzip_equals_plain(tmp_path: Path, sqlite_url: str) -> None:
    migrate_db(sqlite_url)
    plain = _panel(tmp_path / "plain", HUMANS, LLMS)
    packed = _panel(tmp_path / "packed", HUMANS, LLMS, gz=True)
    a = cli("data", "import-alttest", str(plain), "--name", "p", "--json", db=sqlite_url).json()
    b = cli("data", "import-alttest", str(packed), "--name", "g", "--json", db=sqlite_url).json()
    assert a["labels_added"] == b["labels_added"] == 8
    assert a["items_added"] == b["items_added"] == 3
    rows = cli(
        "query",
        "select i.external_id e, i.group_key g, a.name n, l.value_num v, l.value_text t from label l "
        "join item i on i.id = l.item_id join annotator a on a.id = l.annotator_id "
        "join dataset d on d.id = i.dataset_id where d.name = 'p' and a.name = 'h1' order by i.position",
        "--json",
        db=sqlite_url,
    ).json()["rows"]
    assert rows == [
        {"e": "t1__a", "g": "t1", "n": "h1", "v": 1.0, "t": "1"},
        {"e": "t1__b", "g": "t1", "n": "h1", "v": 2.5, "t": "2.5"},
        {"e": "t2__a", "g": "t2", "n": "h1", "v": None, "t": "x"},
    ]


@pytest.mark.parametrize(
    ("humans", "llms", "raw", "where"),
    [
        (None, LLMS, b'{"h1": {"a": 1}', "human_annotations.json:1: not JSON"),
        (None, LLMS, b"[1, 2]", "human_annotations.json: expected an object"),
        ({"h1": ["a", "b"]}, LLMS, None, "human_annotations.json: field 'h1'"),
        ({"h1": {"a": None}}, LLMS, None, "human_annotations.json: field 'h1.a'"),
        ({"h1": {"a": True}}, LLMS, None, "human_annotations.json: field 'h1.a'"),
        ({"h1": {"a": " "}}, LLMS, None, "human_annotations.json: field 'h1.a'"),
        (HUMANS, {"m1": {"a": [1]}}, None, "llm_annotations.json: field 'm1.a'"),
        (HUMANS, {"h1": {"t1__a": 1}}, None, "llm_annotations.json: field 'h1'"),
        ({}, LLMS, None, "human_annotations.json: no annotators"),
    ],
)
def test_bad_panel_names_file_and_field_and_changes_nothing(
    tmp_path: Path, sqlite_url: str, humans: Any, llms: Any, raw: bytes | None, where: str
) -> None:
    # parsing fails before anything is written, so one backend is enough here (see the next test)
    migrate_db(sqlite_url)
    _bad_import_changes_nothing(tmp_path, sqlite_url, humans, llms, raw, where)


def test_bad_panel_changes_nothing_on_each_backend(tmp_path: Path, migrated: str) -> None:
    _bad_import_changes_nothing(
        tmp_path, migrated, {"h1": {"a": None}}, LLMS, None, "human_annotations.json: field 'h1.a'"
    )


def _bad_import_changes_nothing(
    tmp_path: Path, migrated: str, humans: Any, llms: Any, raw: bytes | None, where: str
) -> None:
    good = _panel(tmp_path / "good", HUMANS, LLMS)
    assert cli("data", "import-alttest", str(good), "--name", "keep", db=migrated).code == 0
    before = _snapshot(migrated)
    bad = _panel(tmp_path / "bad", humans, llms, raw=raw)
    r = cli("data", "import-alttest", str(bad), "--name", "new", db=migrated)
    assert r.code == 2
    assert r.stderr.strip().count("\n") == 0
    assert where in r.stderr
    assert _snapshot(migrated) == before


def test_missing_folder_or_file(tmp_path: Path, sqlite_url: str) -> None:
    migrate_db(sqlite_url)
    r = cli("data", "import-alttest", str(tmp_path / "nope"), "--name", "x", db=sqlite_url)
    assert r.code == 2 and "not a folder" in r.stderr
    only_humans = tmp_path / "half"
    only_humans.mkdir()
    (only_humans / "human_annotations.json").write_text(json.dumps(HUMANS))
    r = cli("data", "import-alttest", str(only_humans), "--name", "x", db=sqlite_url)
    assert r.code == 2 and "no llm_annotations.json" in r.stderr
    truncated = _panel(tmp_path / "trunc", HUMANS, LLMS, gz=True)
    data = (truncated / "human_annotations.json.gz").read_bytes()
    (truncated / "human_annotations.json.gz").write_bytes(data[: len(data) // 2])
    r = cli("data", "import-alttest", str(truncated), "--name", "x", db=sqlite_url)
    assert r.code == 2 and "human_annotations.json.gz" in r.stderr
