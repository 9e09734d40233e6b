"""`datasets.jsonstream.guarded_items`: the records of a large JSON file, read a chunk at a time.

The reader parses each record with the standard library's C scanner and walks the document around
the records itself, so what it must get right is the chunking: a record, a string, an escape, a
number or a multi-byte character cut by the end of a chunk. Every case is read with chunks from
one byte up and compared with `json.loads` of the whole file.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest

from judgepanel.datasets import jsonstream
from judgepanel.datasets.jsonstream import guarded_items
from judgepanel.errors import BadInput
from tests.datasets.promptfoo_runs import FIXTURE

CHUNKS = (1, 2, 3, 5, 7, 64, 4096, 1 << 20)

DOC = {
    "evalId": "e",
    "config": {"nested": [1, [2, {"x": "y"}]], "empty": {}, "none": None},
    "results": {
        "version": 3,
        "prompts": [],
        "results": [
            {"a": 1, "b": -12345678901234567890, "c": 1.5e-7, "d": [True, False, None]},
            {"text": 'café ☕ 𝄞 "quoted" \\ back\\slash \n\t\u0001 \u2028', "k": {}},
            {"deep": [[[[[[{"z": []}]]]]]]},
            "a bare string",
            12345,
            [],
            {"big": "x" * 5000, "n": 0.1},
        ],
    },
    "trailer": [{"k": "v"}] * 3,
}


def _read(path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, **kw: Any) -> list[Any]:
    monkeypatch.setattr(jsonstream, "CHUNK", chunk)
    return list(guarded_items(path, "results.results.item", "bad", **kw))


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("indent", [None, 2])
def test_records_are_those_json_loads_reads_whatever_the_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, indent: int | None
) -> None:
    path = tmp_path / "doc.json"
    for ascii_only in (True, False):
        path.write_text(json.dumps(DOC, indent=indent, ensure_ascii=ascii_only), encoding="utf-8")
        assert _read(path, monkeypatch, chunk) == DOC["results"]["results"]  # type: ignore[index]


@pytest.mark.parametrize("chunk", [7, 4096, 1 << 20])
def test_the_kept_promptfoo_file_plain_and_gzip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    expected = json.loads(FIXTURE.read_text(encoding="utf-8"))["results"]["results"]
    packed = tmp_path / "results.json.gz"
    packed.write_bytes(gzip.compress(FIXTURE.read_bytes()))
    assert _read(FIXTURE, monkeypatch, chunk) == expected
    assert _read(packed, monkeypatch, chunk) == expected


@pytest.mark.parametrize("chunk", [1, 5, 4096])
def test_lone_surrogates_are_read_as_question_marks_and_pairs_as_characters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    path = tmp_path / "s.json"
    path.write_bytes(rb'{"results": {"results": [{"a": "x\ud800y \ud83d\ude00 \uDC00"}, {"b": "\\ud800"}]}}')
    assert _read(path, monkeypatch, chunk) == [{"a": "x?y 😀 ?"}, {"b": "\\ud800"}]


def test_nan_and_infinity_only_where_asked_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "n.json"
    path.write_text('{"samples": [{"v": NaN, "w": Infinity, "x": -Infinity, "s": "NaN"}]}')
    monkeypatch.setattr(jsonstream, "CHUNK", 3)
    (got,) = list(guarded_items(path, "samples.item", "bad", nonfinite=True))
    assert math.isnan(got["v"]) and got["w"] == math.inf and got["x"] == -math.inf and got["s"] == "NaN"
    with pytest.raises(BadInput, match="bad: not valid JSON near byte 13: NaN is not a JSON value"):
        list(guarded_items(path, "samples.item", "bad"))
    path.write_text('{"samples": [{"v": 1e999}]}')
    with pytest.raises(BadInput, match="not valid JSON near byte 13: numeric overflow"):
        list(guarded_items(path, "samples.item", "bad"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"results": {"results": [{"a": 1}]}} x', "near byte 37: trailing garbage"),
        ('{"results": {"results": [{"a": 1},]}}', "near byte 34: Expecting value"),
        ('{"results": {"results": [{"a": "x\x01"}]}}', "Invalid control character"),
        ('{"results": {"results": [{"a": 01}]}}', "Expecting ',' delimiter"),
        ('{"results": {"results": [{"a": 1}] "x": 2}}', "Expecting ',' delimiter"),
        ('{"results" {"results": []}}', "Expecting ':' delimiter"),
        ('{"results": {1: []}}', "Expecting property name"),
        ("", "near byte 0: Expecting value"),
        ('{"results": {"results": [' + "[" * 100_000 + "]" * 100_000 + "]}}", "nested too deeply"),
    ],
)
def test_broken_documents_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    for chunk in (1, 4096):
        with pytest.raises(BadInput, match=r"^bad: not valid JSON") as err:
            _read(path, monkeypatch, chunk)
        assert message in str(err.value) and "\n" not in str(err.value)


def test_every_truncation_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = json.dumps(DOC, ensure_ascii=False).encode()
    path = tmp_path / "cut.json"
    for cut in range(0, len(data), 97):
        path.write_bytes(data[:cut])
        with pytest.raises(BadInput, match=r"^bad: not valid JSON"):
            _read(path, monkeypatch, 64)


def test_not_utf8_names_the_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "latin.json"
    path.write_bytes(b'{"results": {"results": [{"a": "caf\xe9"}]}}')
    with pytest.raises(BadInput, match=r"not valid JSON near byte 35: not UTF-8"):
        _read(path, monkeypatch, 4)


def test_a_record_over_the_limit_is_refused_before_it_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.json"
    path.write_text('{"results": {"results": [{"a": 1}, {"a": "' + "x" * 100_000 + '"}]}}')
    monkeypatch.setattr(jsonstream, "CHUNK", 1000)
    read = guarded_items(path, "results.results.item", "bad", limit=20_000)
    assert next(read) == {"a": 1}
    with pytest.raises(BadInput, match="bad: a record larger than 0 MB"):
        next(read)
