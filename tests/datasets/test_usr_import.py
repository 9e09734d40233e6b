"""`data import-usr`: the USR Topical-Chat file, all-or-nothing, file:line errors, idempotent."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from judgepanel.datasets.usr import DIMENSIONS, dialogue_input, parse_usr
from tests.helpers import cli, migrate_db

TABLES = ["dataset", "item", "annotator", "label"]


def _snapshot(db: str) -> str:
    parts = [cli("query", f"select * from {t} order by id", "--format", "csv", db=db).stdout for t in TABLES]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _response(tag: str, model: str, ratings: dict[str, list[int]] | None = None) -> dict[str, Any]:
    base = {"response": f"reply {tag} \n", "model": model}
    base.update(ratings or {k: [lo, hi, lo] for k, (_, lo, hi) in DIMENSIONS.items()})
    return base


CONTEXTS: list[dict[str, Any]] = [
    {
        "context": "hi , do you like jazz ? \n yes , a lot . \n",
        "fact": "jazz began in new orleans .",
        "annotators": ["a1", "a2", "a3"],
        "responses": [
            _response("r0a", "Original Ground Truth"),
            _response("r0b", "Nucleus Decoding (p = 0.3)"),
        ],
    },
    {
        "context": "what films do you like ? \n",
        "fact": "",
        "annotators": ["a1", "a2", "a4"],
        "responses": [_response("r1a", "Original Ground Truth")],
    },
]


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=2))  # pretty-printed like the USR release
    return path


@pytest.fixture
def migrated(db_url: str) -> str:
    migrate_db(db_url)  # a copy of the run's one migrated database (`tests.helpers.migrate_db`)
    return db_url


def test_real_topical_chat_imports_and_reimport_is_a_no_op(migrated: str, shared_data: Path) -> None:
    folder = shared_data / "usr"
    out = cli("data", "import-usr", str(folder), "--json", db=migrated).json()
    # PROVENANCE.md: 60 contexts × 6 responses; 3 ratings × 6 dimensions per response
    assert out == {
        "dataset": "usr",
        "unchanged": False,
        "items_added": 360,
        "labels_added": 360 * 6 * 3,
        "annotators": 5,
        "skipped": {},
    }
    q = (
        "select l.dimension d, min(l.value_num) lo, max(l.value_num) hi, count(*) n, "
        "count(distinct i.group_key) g from label l join item i on i.id = l.item_id group by 1 order by 1"
    )
    rows = cli("query", q, "--json", db=migrated).json()["rows"]
    expected = sorted((d, lo, hi) for d, lo, hi in DIMENSIONS.values())
    assert [(r["d"], r["lo"], r["hi"]) for r in rows] == expected
    assert {r["n"] for r in rows} == {1080} and {r["g"] for r in rows} == {60}
    groups = cli("query", 'select distinct "group" g, kind from annotator', "--json", db=migrated).json()[
        "rows"
    ]
    assert groups == [{"g": "expert", "kind": "human"}]
    systems = cli(
        "query", "select system s, count(*) n from item group by 1 order by 1", "--json", db=migrated
    ).json()["rows"]
    assert len(systems) == 6 and {r["n"] for r in systems} == {60}
    before = _snapshot(migrated)
    again = cli("data", "import-usr", str(folder / "tc_usr_data.json"), "--json", db=migrated).json()
    assert again["unchanged"] is True and again["labels_added"] == 0
    assert _snapshot(migrated) == before


def test_items_labels_and_annotators_as_in_the_file(tmp_path: Path) -> None:
    parsed = parse_usr(_write(tmp_path / "usr.json", CONTEXTS))
    assert [it.external_id for it in parsed.items] == [
        "tc000/original-ground-truth",
        "tc000/nucleus-decoding-p-0.3",
        "tc001/original-ground-truth",
    ]
    first = parsed.items[0]
    assert first.group_key == "tc000" and first.system == "Original Ground Truth"
    assert first.input == dialogue_input(CONTEXTS[0]["context"], CONTEXTS[0]["fact"])
    assert first.input.startswith("Dialogue so far:\nhi , do you like jazz ?\nyes , a lot .\n\nFact")
    assert first.output == "reply r0a"
    assert [(a.name, a.group) for a in parsed.annotators] == [
        ("a1", "expert"),
        ("a2", "expert"),
        ("a3", "expert"),
        ("a4", "expert"),
    ]
    assert len(parsed.labels) == 3 * 6 * 3
    # ratings pair with annotators by position: [lo, hi, lo]
    nat = [
        (lb.annotator, lb.value_num)
        for lb in parsed.labels
        if lb.item_external_id == "tc001/original-ground-truth" and lb.dimension == "naturalness"
    ]
    assert nat == [("a1", 1.0), ("a2", 3.0), ("a4", 1.0)]
    assert all(lb.rationale is None for lb in parsed.labels)


def _bad(mutate: Any) -> list[dict[str, Any]]:
    data = copy.deepcopy(CONTEXTS)
    mutate(data)
    return data


def _line_of(path: Path, needle: str) -> int:
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        if needle in line:
            return n
    raise AssertionError(needle)


@pytest.mark.parametrize(
    ("mutate", "field", "anchor"),
    [
        (lambda d: d[1]["responses"][0].update(Natural=[1, 4, 2]), "'Natural'", "reply r1a"),
        (lambda d: d[0]["responses"][1].update(Engaging=[1, 2]), "'Engaging'", "reply r0b"),
        (lambda d: d[0]["responses"][1].update(Overall=[1, 2.5, 3]), "'Overall'", "reply r0b"),
        (lambda d: d[0]["responses"][1].update(Understandable=[True, 0, 1]), "'Understandable'", "reply r0b"),
        (lambda d: d[0]["responses"][1].pop("model"), "'model'", "reply r0b"),
        (lambda d: d[1].update(annotators=["a1", "a1", "a2"]), "'annotators'", "what films"),
        (lambda d: d[1].pop("context"), "'context'", '"fact": ""'),
        (lambda d: d[0]["responses"].append(copy.deepcopy(d[0]["responses"][0])), "twice", None),
    ],
)
def test_bad_record_names_file_line_and_field_and_changes_nothing(
    tmp_path: Path, sqlite_url: str, mutate: Any, field: str, anchor: str | None
) -> None:
    migrate_db(sqlite_url)
    good = _write(tmp_path / "good.json", CONTEXTS)
    assert cli("data", "import-usr", str(good), "--name", "keep", db=sqlite_url).code == 0
    before = _snapshot(sqlite_url)
    bad = _write(tmp_path / "bad.json", _bad(mutate))
    r = cli("data", "import-usr", str(bad), "--name", "new", db=sqlite_url)
    assert r.code == 2
    assert r.stderr.strip().count("\n") == 0
    assert field in r.stderr
    if anchor is not None:
        # the line named is the first line of the record: the `{` just before the anchor's line
        line = int(r.stderr.split(f"{bad}:", 1)[1].split(":", 1)[0])
        text = bad.read_text().splitlines()
        assert text[line - 1].strip() == "{"
        assert line < _line_of(bad, anchor) <= line + 3
    assert _snapshot(sqlite_url) == before


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        ('[\n  {"context": "x",\n   "fact": "y",,\n', ":3: not JSON"),
        ('{"a": 1}', ":1: expected a JSON list"),
        ("[]", ":1: no dialogue contexts"),
        ("[1]\n[2]", ":2: not JSON: extra data"),
    ],
)
def test_broken_json_names_the_line(tmp_path: Path, sqlite_url: str, raw: str, where: str) -> None:
    migrate_db(sqlite_url)
    bad = tmp_path / "bad.json"
    bad.write_text(raw)
    r = cli("data", "import-usr", str(bad), db=sqlite_url)
    assert r.code == 2 and r.stderr.strip().count("\n") == 0
    assert f"{bad}{where}" in r.stderr


def test_bad_file_changes_nothing_on_each_backend(tmp_path: Path, migrated: str) -> None:
    good = _write(tmp_path / "good.json", CONTEXTS)
    assert cli("data", "import-usr", str(good), db=migrated).code == 0
    before = _snapshot(migrated)
    bad = _write(tmp_path / "bad.json", _bad(lambda d: d[1]["responses"][0].update(Natural=[1, 9, 2])))
    r = cli("data", "import-usr", str(bad), "--name", "other", db=migrated)
    assert r.code == 2 and "'Natural'" in r.stderr
    # a different file under the same name is refused without --replace, and accepted with it
    changed = _write(tmp_path / "changed.json", CONTEXTS[:1])
    r = cli("data", "import-usr", str(changed), db=migrated)
    assert r.code == 2 and "--replace" in r.stderr
    assert _snapshot(migrated) == before
    out = cli("data", "import-usr", str(changed), "--replace", "--json", db=migrated).json()
    assert out["items_added"] == 2


def test_missing_file(tmp_path: Path, sqlite_url: str) -> None:
    migrate_db(sqlite_url)
    r = cli("data", "import-usr", str(tmp_path / "nope.json"), db=sqlite_url)
    assert r.code == 2 and "no such file" in r.stderr
    r = cli("data", "import-usr", str(tmp_path), db=sqlite_url)
    assert r.code == 2 and "tc_usr_data.json: no such file" in r.stderr
