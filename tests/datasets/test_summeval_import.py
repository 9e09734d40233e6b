from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import cli, migrate_db

SUMMEVAL = "summeval/model_annotations.reconstructed.jsonl.gz"
ARTICLES = "summeval/articles.jsonl.gz"


def _snapshot(db: str) -> str:
    """A digest of every row the user can see, to show a failed import changed nothing."""
    tables = ["dataset", "item", "annotator", "label", "pair_set", "pair", "pair_label"]
    parts = [cli("query", f"select * from {t} order by id", "--format", "csv", db=db).stdout for t in tables]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


@pytest.fixture
def migrated(db_url: str) -> str:
    migrate_db(db_url)  # a copy of the run's one migrated database (`tests.helpers.migrate_db`)
    return db_url


def test_full_shared_file_imports(migrated: str, shared_data: Path) -> None:
    r = cli(
        "data",
        "import-summeval",
        str(shared_data / SUMMEVAL),
        "--articles",
        str(shared_data / ARTICLES),
        "--json",
        db=migrated,
    )
    out = r.json()
    # 1600 rows × 3 experts × 4 dims + 1200 abstractive rows × 5 turkers × 4 dims
    assert out["items_added"] == 1600
    assert out["labels_added"] == 1600 * 3 * 4 + 1200 * 5 * 4
    assert out["annotators"] == 8
    assert out["skipped"] == {"turker_annotations_null": 400}
    q = cli(
        "query",
        'select a."group" g, count(distinct a.name) n, count(*) labels from label l '
        'join annotator a on a.id = l.annotator_id group by a."group" order by g',
        "--json",
        db=migrated,
    ).json()
    assert q["rows"] == [{"g": "crowd", "n": 5, "labels": 24000}, {"g": "expert", "n": 3, "labels": 19200}]
    groups = cli(
        "query",
        "select count(distinct group_key) n, sum(case when input is null then 1 else 0 end) "
        "no_article from item",
        "--json",
        db=migrated,
    ).json()["rows"][0]
    assert groups == {"n": 100, "no_article": 0}
    # again: nothing changes
    again = cli(
        "data",
        "import-summeval",
        str(shared_data / SUMMEVAL),
        "--articles",
        str(shared_data / ARTICLES),
        "--json",
        db=migrated,
    ).json()
    assert again["unchanged"] is True and again["labels_added"] == 0


def _write_rows(path: Path, rows: list[dict[str, object]], gz: bool = False) -> Path:
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def _rows(shared: Path, n: int) -> list[dict[str, object]]:
    with gzip.open(shared / SUMMEVAL, "rt") as f:
        return [json.loads(next(f)) for _ in range(n)]


def test_plain_and_gzip_give_the_same_labels(tmp_path: Path, shared_data: Path, sqlite_url: str) -> None:
    rows = _rows(shared_data, 32)
    plain = _write_rows(tmp_path / "a.jsonl", rows)
    gz = _write_rows(tmp_path / "b.jsonl.gz", rows, gz=True)
    migrate_db(sqlite_url)
    a = cli("data", "import-summeval", str(plain), "--name", "p", "--json", db=sqlite_url).json()
    b = cli("data", "import-summeval", str(gz), "--name", "g", "--json", db=sqlite_url).json()
    assert a["labels_added"] == b["labels_added"] > 0


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda r: r.update(expert_annotations=[{"coherence": 9}] * 3), "expert_annotations[0].coherence"),
        (lambda r: r.update(turker_annotations=[{}]), "turker_annotations"),
        (lambda r: r.pop("model_id"), "model_id"),
        (lambda r: r["expert_annotations"][1].update(fluency="good"), "expert_annotations[1].fluency"),
    ],
)
def test_bad_row_names_file_line_field_and_changes_nothing(
    tmp_path: Path,
    shared_data: Path,
    migrated: str,
    mutate,
    field: str,  # type: ignore[no-untyped-def]
) -> None:
    good = _write_rows(tmp_path / "good.jsonl", _rows(shared_data, 16))
    assert cli("data", "import-summeval", str(good), "--name", "keep", db=migrated).code == 0
    before = _snapshot(migrated)
    rows = _rows(shared_data, 20)
    mutate(rows[17])
    bad = _write_rows(tmp_path / "bad.jsonl", rows)
    r = cli("data", "import-summeval", str(bad), "--name", "new", db=migrated)
    assert r.code == 2
    assert r.stderr.strip().count("\n") == 0
    assert f"bad.jsonl:18: field {field!r}" in r.stderr
    assert _snapshot(migrated) == before


def test_not_json_and_missing_file(tmp_path: Path, migrated: str, shared_data: Path) -> None:
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"id": "a"\n')
    r = cli("data", "import-summeval", str(bad), db=migrated)
    assert r.code == 2 and "x.jsonl:1: not JSON" in r.stderr
    r = cli("data", "import-summeval", str(tmp_path / "missing.jsonl"), db=migrated)
    assert r.code == 2 and "no such file" in r.stderr
    truncated = tmp_path / "t.jsonl.gz"
    truncated.write_bytes((shared_data / SUMMEVAL).read_bytes()[:3000])
    r = cli("data", "import-summeval", str(truncated), db=migrated)
    assert r.code == 2 and "cannot read" in r.stderr


def test_different_file_refused_unless_replace(tmp_path: Path, shared_data: Path, migrated: str) -> None:
    first = _write_rows(tmp_path / "one.jsonl", _rows(shared_data, 16))
    second = _write_rows(tmp_path / "two.jsonl", _rows(shared_data, 32))
    assert cli("data", "import-summeval", str(first), db=migrated).code == 0
    before = _snapshot(migrated)
    r = cli("data", "import-summeval", str(second), db=migrated)
    assert r.code == 2 and "--replace" in r.stderr and "one.jsonl" in r.stderr
    assert _snapshot(migrated) == before
    out = cli("data", "import-summeval", str(second), "--replace", "--json", db=migrated).json()
    assert out["items_added"] == 32
    n = cli("query", "select count(*) n from item", "--json", db=migrated).json()["rows"][0]["n"]
    assert n == 32


def test_copy_of_same_bytes_under_other_name_is_same_import(
    tmp_path: Path, shared_data: Path, migrated: str
) -> None:
    src = _write_rows(tmp_path / "a.jsonl", _rows(shared_data, 16))
    assert cli("data", "import-summeval", str(src), db=migrated).code == 0
    copy = tmp_path / "a-copy" / "a.jsonl"
    copy.parent.mkdir()
    shutil.copy(src, copy)
    assert cli("data", "import-summeval", str(copy), "--json", db=migrated).json()["unchanged"] is True
