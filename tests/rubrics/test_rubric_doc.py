"""Rubric YAML: the bundled rubrics are valid, and every malformed file gets one line naming file and field."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from judgepanel.errors import BadInput, NotFound
from judgepanel.rubrics import (
    RubricDoc,
    bundled_rubric,
    bundled_rubrics,
    load_rubric_file,
    load_rubric_text,
    parse_ref,
)


def _minimal() -> dict[str, Any]:
    return {
        "name": "tiny",
        "dimensions": {
            "clarity": {
                "definition": "How clear it is.",
                "criteria": ["Short sentences?"],
                "anchors": {1: "opaque", 2: "murky", 3: "ok", 4: "clear", 5: "crystal"},
                "clauses": [{"id": "clarity.1", "text": "No sentence must be read twice."}],
            }
        },
    }


def test_bundled_rubrics_are_valid() -> None:
    assert {"summeval", "helpfulness"} <= set(bundled_rubrics())
    summeval = bundled_rubric("summeval")
    assert summeval.dimension_names == ("coherence", "consistency", "fluency", "relevance")
    for dim in summeval.dimensions:
        assert dim.definition and dim.criteria
        assert [level for level, _ in dim.anchors] == [1, 2, 3, 4, 5]
        assert dim.clause_ids == tuple(f"{dim.name}.{i}" for i in range(1, len(dim.clauses) + 1))
        assert len(dim.clauses) >= 4
    ids = summeval.clause_ids()
    assert len(ids) == len(set(ids))
    helpful = bundled_rubric("helpfulness")
    assert helpful.dimension_names == ("helpfulness",)
    assert (helpful.source_label, helpful.candidate_label) == ("user question", "answer")
    with pytest.raises(NotFound, match="no bundled rubric"):
        bundled_rubric("nope")


def test_round_trip_and_hash() -> None:
    doc = bundled_rubric("summeval")
    again = RubricDoc.from_dict(doc.to_dict(), origin="round trip")
    assert again == doc and again.content_hash == doc.content_hash
    renamed = RubricDoc.from_dict(doc.to_dict(), name="summeval-copy")
    assert renamed.name == "summeval-copy" and renamed.content_hash == doc.content_hash
    edited = copy.deepcopy(doc.to_dict())
    edited["dimensions"][0]["clauses"][0]["text"] += " Really."
    assert RubricDoc.from_dict(edited).content_hash != doc.content_hash


def test_mapping_and_list_forms_agree_and_keep_order() -> None:
    data = _minimal()
    data["dimensions"]["accuracy"] = copy.deepcopy(data["dimensions"]["clarity"])
    data["dimensions"]["accuracy"]["clauses"] = [{"id": "accuracy.1", "text": "No wrong fact."}]
    as_map = RubricDoc.from_dict(data)
    as_list = RubricDoc.from_dict(as_map.to_dict())
    assert as_map == as_list and as_map.dimension_names == ("clarity", "accuracy")


def test_yaml_text_is_folded_and_anchor_keys_may_be_strings() -> None:
    text = yaml.safe_dump(_minimal()).replace("How clear it is.", "How clear\n        it is.")
    doc = load_rubric_text(text.replace("1: opaque", "'1': opaque"))
    assert doc.dimensions[0].definition == "How clear it is."
    assert doc.dimensions[0].anchors[0] == (1, "opaque")


def _broken(mutate: Any) -> dict[str, Any]:
    data = _minimal()
    mutate(data)
    return data


def _dim(data: dict[str, Any]) -> dict[str, Any]:
    d: dict[str, Any] = data["dimensions"]["clarity"]
    return d


BAD: list[tuple[str, Any, str]] = [
    ("not a mapping", ["a", "list"], "a rubric must be a mapping"),
    ("unknown top key", _broken(lambda d: d.update(version=2)), "(top level): unknown key(s) version"),
    ("bad name", _broken(lambda d: d.update(name="my rubric@2")), "name: 'my rubric@2' is not a rubric name"),
    ("missing name", _broken(lambda d: d.pop("name")), "name: None is not a rubric name"),
    ("no dimensions", _broken(lambda d: d.update(dimensions={})), "dimensions: a rubric needs at least one"),
    ("dimensions not a map", _broken(lambda d: d.update(dimensions="clarity")), "dimensions: expected"),
    (
        "bad dimension name",
        _broken(lambda d: d.update(dimensions={"Clarity!": _dim(d)})),
        "dimensions.Clarity!: a dimension name",
    ),
    (
        "missing definition",
        _broken(lambda d: _dim(d).pop("definition")),
        "dimensions.clarity.definition: missing",
    ),
    (
        "empty definition",
        _broken(lambda d: _dim(d).update(definition="  ")),
        "dimensions.clarity.definition: expected",
    ),
    (
        "unknown dim key",
        _broken(lambda d: _dim(d).update(weight=2)),
        "dimensions.clarity: unknown key(s) weight",
    ),
    (
        "criteria empty",
        _broken(lambda d: _dim(d).update(criteria=[])),
        "dimensions.clarity.criteria: expected",
    ),
    (
        "criteria item",
        _broken(lambda d: _dim(d).update(criteria=["ok", 3])),
        "dimensions.clarity.criteria[1]",
    ),
    (
        "anchor missing",
        _broken(lambda d: _dim(d)["anchors"].pop(3)),
        "dimensions.clarity.anchors: missing level(s) 3",
    ),
    (
        "anchor out of range",
        _broken(lambda d: _dim(d)["anchors"].update({6: "x"})),
        "dimensions.clarity.anchors: 6 is not a score level",
    ),
    (
        "anchor given twice",
        _broken(lambda d: _dim(d)["anchors"].update({"2": "again"})),
        "dimensions.clarity.anchors: level 2 given twice",
    ),
    (
        "anchors not a map",
        _broken(lambda d: _dim(d).update(anchors=["a"])),
        "dimensions.clarity.anchors: expected",
    ),
    (
        "no clauses",
        _broken(lambda d: _dim(d).update(clauses=[])),
        "dimensions.clarity.clauses: expected a non-empty",
    ),
    (
        "clause id of another dimension",
        _broken(lambda d: _dim(d).update(clauses=[{"id": "coherence.1", "text": "x"}])),
        "dimensions.clarity.clauses[0].id: 'coherence.1' must have the form clarity.<n>",
    ),
    (
        "clause id without number",
        _broken(lambda d: _dim(d).update(clauses=[{"id": "clarity", "text": "x"}])),
        "clauses[0].id: 'clarity' must have the form",
    ),
    (
        "duplicate clause id",
        _broken(
            lambda d: _dim(d).update(
                clauses=[{"id": "clarity.1", "text": "x"}, {"id": "clarity.1", "text": "y"}]
            )
        ),
        "clauses[1].id: clause id 'clarity.1' is used twice",
    ),
    (
        "clause without text",
        _broken(lambda d: _dim(d).update(clauses=[{"id": "clarity.1"}])),
        "clauses[0].text: expected a non-empty text",
    ),
    (
        "clause unknown key",
        _broken(lambda d: _dim(d).update(clauses=[{"id": "clarity.1", "text": "x", "weight": 1}])),
        "clauses[0]: unknown key(s) weight",
    ),
    ("subject key", _broken(lambda d: d.update(subject={"input": "x"})), "subject: unknown key(s) input"),
]


@pytest.mark.parametrize(("data", "message"), [(b[1], b[2]) for b in BAD], ids=[b[0] for b in BAD])
def test_validation_errors_name_file_and_field(tmp_path: Path, data: Any, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(BadInput) as err:
        load_rubric_file(path)
    line = str(err.value)
    assert "\n" not in line
    assert line.startswith(f"{path}: ")
    assert message in line


def test_duplicate_yaml_keys_are_refused(tmp_path: Path) -> None:
    text = yaml.safe_dump(_minimal(), sort_keys=False)
    dim = text[text.index("  clarity:") :]
    path = tmp_path / "dupe.yaml"
    path.write_text(text + dim)
    with pytest.raises(BadInput, match=r"dupe.yaml: line \d+ not valid YAML: duplicate key 'clarity'"):
        load_rubric_file(path)


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="no such rubric file"):
        load_rubric_file(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(BadInput, match=r"bad.yaml: line 2 not valid YAML"):
        load_rubric_file(bad)
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(BadInput, match="cannot read rubric file"):
        load_rubric_file(binary)


@pytest.mark.parametrize(
    ("ref", "expected"),
    [("summeval", ("summeval", None)), ("summeval@3", ("summeval", 3)), ("a.b@1", ("a.b", 1))],
)
def test_parse_ref(ref: str, expected: tuple[str, int | None]) -> None:
    assert parse_ref(ref) == expected


@pytest.mark.parametrize("ref", ["", "@2", "summeval@", "summeval@0", "summeval@x", "summeval@-1"])
def test_parse_ref_rejects(ref: str) -> None:
    with pytest.raises(BadInput):
        parse_ref(ref)
