"""Hostile import files (issue 8): text no database stores alike, JSON beyond what we accept,
non-finite numbers, byte-order marks, truncated archives and items with nothing to judge.

Each refusal is one stderr line naming file and line, exit 2, and the database is unchanged: the
whole dump (every row of every table) is compared before and after, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from judgepanel.datasets.records import MAX_JSON_DEPTH
from tests.helpers import CliResult, cli, load_summeval_sample

LABEL_HEADER = "item_id,annotator,group,dimension,value\n"


def _label(**override: object) -> dict[str, object]:
    return {"item_id": "x1", "annotator": "a", "group": "g", "dimension": "d", "value": "1", **override}


def _jsonl(*rows: dict[str, object]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _summeval_row(**override: object) -> dict[str, object]:
    scores = {"coherence": 3, "consistency": 4, "fluency": 5, "relevance": 2}
    row: dict[str, object] = {
        "id": "art1",
        "model_id": "M1",
        "decoded": "a summary",
        "expert_annotations": [scores] * 3,
        "turker_annotations": None,
    }
    return {**row, **override}


DEEP = '{"item_id": "x1", "annotator": "a", "value": "1", "meta": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
HUGE_INT = "9" * 5_000

# (file name, content: text or bytes, command, what the one stderr line must contain)
Case = tuple[str, str | bytes, str, str]
CASES: list[Case] = [
    # lone surrogates: JSON escapes in every kind of field, and the raw bytes in a CSV
    ("s1.jsonl", _jsonl(_label(item_id="x\ud800")), "labels", "s1.jsonl:1: field 'item_id': contains a lone surrogate"),
    ("s2.jsonl", _jsonl(_label(annotator="\udfff")), "labels", "s2.jsonl:1: field 'annotator': contains a lone"),
    ("s3.jsonl", _jsonl(_label(), _label(item_id="x2", rationale="why \ud83d")), "labels", "s3.jsonl:2: field 'rationale'"),
    ("s4.jsonl", _jsonl({"id": "q", "output": "o", "meta": {"k\ud800": 1}}), "items", "s4.jsonl:1: field 'meta': contains a lone"),
    ("s5.jsonl", _jsonl({"id": "q", "output": "o", "topic": ["\ud800"]}), "items", "s5.jsonl:1: field 'topic': contains a lone"),
    ("s6.csv", LABEL_HEADER.encode() + b"x1,a,g,d,\xed\xa0\x80\n", "labels", "s6.csv:2: cannot read: not UTF-8 text"),
    ("s7.jsonl", _jsonl(_summeval_row(decoded="x\udc00")), "summeval", "s7.jsonl:1: field 'decoded': contains a lone"),
    # JSON nested 100,000 deep, and deeper than we store; a 5,000-digit integer
    ("d1.jsonl", DEEP, "labels", "d1.jsonl:1: not JSON we accept: nested too deep"),
    ("d2.jsonl", DEEP.replace('"item_id"', '"id"'), "items", "d2.jsonl:1: not JSON we accept: nested too deep"),
    (
        "d3.jsonl",
        '{"id": "q", "output": "o", "meta": ' + "[" * (MAX_JSON_DEPTH + 2) + "]" * (MAX_JSON_DEPTH + 2) + "}\n",
        "items",
        f"d3.jsonl:1: field 'meta': nested deeper than {MAX_JSON_DEPTH} levels",
    ),
    ("i1.jsonl", _jsonl(_label()).replace('"1"', HUGE_INT), "labels", "i1.jsonl:1: not JSON we accept: an integer"),
    ("i2.jsonl", '{"id": "q", "output": "o", "meta": {"n": ' + HUGE_INT + "}}\n", "items", "i2.jsonl:1: not JSON"),
    ("i3.jsonl", _jsonl(_summeval_row()).replace('"M1"', '"M1", "x": ' + HUGE_INT), "summeval", "i3.jsonl:1: not JSON"),
    # NUL characters (PostgreSQL text cannot hold them; refused on both backends alike)
    ("n1.jsonl", _jsonl(_label(item_id="x\x00y")), "labels", "n1.jsonl:1: field 'item_id': contains a NUL"),
    ("n2.csv", LABEL_HEADER + "x1,a,g,d,1\nx2,a\x00,g,d,1\n", "labels", "n2.csv:3: field 'annotator': contains a NUL"),
    ("n3.jsonl", _jsonl({"id": "q", "output": "o\x00"}), "items", "n3.jsonl:1: field 'output': contains a NUL"),
    ("n4.jsonl", _jsonl({"id": "q", "output": "o", "meta": {"k": "v\x00"}}), "items", "n4.jsonl:1: field 'meta': contains a NUL"),
    # non-finite numbers: labels and item meta
    ("f1.csv", LABEL_HEADER + "x1,a,g,d,NaN\n", "labels", "f1.csv:2: field 'value': 'NaN' is not a finite number"),
    ("f2.csv", LABEL_HEADER + "x1,a,g,d,1\nx1,b,g,d,-Infinity\n", "labels", "f2.csv:3: field 'value': '-Infinity' is not"),
    ("f3.csv", LABEL_HEADER + "x1,a,g,d,1e999\n", "labels", "f3.csv:2: field 'value': '1e999' is not a finite number"),
    ("f4.jsonl", _jsonl(_label()).replace('"1"', "NaN"), "labels", "f4.jsonl:1: not JSON we accept: NaN is not standard"),
    ("f5.jsonl", _jsonl(_label()).replace('"1"', "1e999"), "labels", "f5.jsonl:1: field 'value': inf is not a finite"),
    ("f6.jsonl", '{"id": "q", "output": "o", "meta": {"score": NaN}}\n', "items", "f6.jsonl:1: not JSON we accept: NaN"),
    ("f7.jsonl", '{"id": "q", "output": "o", "meta": {"s": -Infinity}}\n', "items", "f7.jsonl:1: not JSON we accept: -Infinity"),
    ("f8.jsonl", '{"id": "q", "output": "o", "meta": {"s": [1e400]}}\n', "items", "f8.jsonl:1: field 'meta': inf is not"),
    # a truncated archive names the file and the line where it breaks off
    ("t1.csv.gz", b"", "labels", "t1.csv.gz:"),
    # items with nothing to judge
    ("e1.jsonl", _jsonl({"id": "q1", "output": "o"}, {"id": "q2", "output": ""}), "items", "e1.jsonl:2: field 'output': missing or empty"),
    ("e2.jsonl", _jsonl({"id": "q1", "output": "o"}, {"id": "q2", "output": " \n"}), "items", "e2.jsonl:2: field 'output'"),
    ("e3.jsonl", _jsonl({"id": "q1", "input": "question only"}), "items", "e3.jsonl:1: field 'output': missing or empty"),
    ("e4.csv", "id,output\nq1,o\nq2,\n", "items", "e4.csv:3: field 'output': missing or empty"),
    ("e5.jsonl", _jsonl(_summeval_row(), _summeval_row(model_id="M2", decoded="  ")), "summeval", "e5.jsonl:2: field 'decoded': empty"),
    # a key given twice: JSON keeps the last silently; refused, as in YAML files (issue 17 §5)
    ("k1.jsonl", '{"id": "q1", "output": "a"}\n{"id": "q2", "output": "b", "output": "c"}\n', "items", "k1.jsonl:2: not JSON we accept: the key 'output' appears twice"),
    ("k2.jsonl", '{"id": "q1", "output": "o", "meta": {"k": 1, "k": 2}}\n', "items", "k2.jsonl:1: not JSON we accept: the key 'k' appears twice"),
    ("k3.jsonl", '{"item_id": "x1", "annotator": "a", "annotator": "b", "group": "g", "dimension": "d", "value": "1"}\n', "labels", "k3.jsonl:1: not JSON we accept: the key 'annotator'"),
    ("k5.csv", "id,output,output\nq1,a,b\n", "items", "k5.csv:1: the column(s) 'output' appear twice in the header"),
    ("k6.csv", LABEL_HEADER.replace("annotator", "annotator,annotator") + "x1,a,b,g,d,1\n", "labels", "k6.csv:1: the column(s) 'annotator' appear twice"),
    ("k4.jsonl", _jsonl(_summeval_row()).replace('"M1"', '"M1", "model_id": "M2"'), "summeval", "k4.jsonl:1: not JSON we accept: the key 'model_id' appears twice"),
]  # fmt: skip


def _truncated_gzip() -> bytes:
    rows = "".join(f"x{i},a,g,d,{i % 5 + 1}\n" for i in range(20_000))
    packed = gzip.compress((LABEL_HEADER + rows).encode())
    return packed[: len(packed) // 2]


COMMANDS = {
    "labels": ["data", "import-labels", "{file}", "--dataset", "hostile"],
    "items": ["data", "import-items", "{file}", "--dataset", "hostile"],
    "summeval": ["data", "import-summeval", "{file}", "--name", "hostile"],
}


@pytest.fixture(scope="module")
def baseline(module_db_url: str) -> str:
    """A database that already holds a dataset, so 'unchanged' means more than 'still empty'."""
    load_summeval_sample(module_db_url, articles=False)
    return module_db_url


def dump(url: str) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table, sorted: a refused import must leave all of it as it was."""
    eng = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with eng.connect() as c:
            return {
                t: sorted((tuple(r) for r in c.execute(text(f'select * from "{t}"'))), key=repr)
                for t in inspect(c).get_table_names()
            }
    finally:
        eng.dispose()


def _one_line_error(r: CliResult) -> str:
    assert r.code == 2, (r.code, r.stdout, r.stderr)
    assert r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.startswith("judgepanel: error: ") and r.stderr.count("\n") == 1, r.stderr
    return r.stderr


@pytest.mark.parametrize(("name", "content", "kind", "message"), CASES, ids=[c[0] for c in CASES])
def test_hostile_file_is_one_line_exit_2_and_changes_nothing(
    baseline: str, tmp_path: Path, name: str, content: str | bytes, kind: str, message: str
) -> None:
    f = tmp_path / name
    if name == "t1.csv.gz":
        content = _truncated_gzip()
    if isinstance(content, bytes):
        f.write_bytes(content)
    else:
        f.write_text(content, encoding="utf-8", errors="surrogatepass")
    before = dump(baseline)
    err = _one_line_error(cli(*(a.format(file=f) for a in COMMANDS[kind]), db=baseline))
    assert message in err, err
    assert dump(baseline) == before


def test_truncated_gzip_names_the_line_where_it_breaks_off(tmp_path: Path, baseline: str) -> None:
    f = tmp_path / "labels.csv.gz"
    f.write_bytes(_truncated_gzip())
    err = _one_line_error(cli("data", "import-labels", str(f), "--dataset", "t", db=baseline))
    # every line before the break was read whole: the reported line is the first one that was not
    good = 0
    with gzip.open(f, "rt") as g:
        try:
            for _ in g:
                good += 1
        except EOFError:
            pass
    assert f"{f}:" in err and "damaged or ends early" in err
    line = int(err.split(f"{f}:")[1].split(":")[0])
    assert good - 1 <= line <= good + 1, (line, good)


def _alttest(folder: Path, humans: str) -> Path:
    folder.mkdir()
    (folder / "human_annotations.json").write_text(humans, encoding="utf-8", errors="surrogatepass")
    (folder / "llm_annotations.json").write_text(json.dumps({"m": {"t1": "a", "t2": "b"}}))
    return folder


ALTTEST: list[tuple[str, str]] = [
    ('{"h1": {"t1": "a\\ud800"}}', "field 'h1': contains a lone surrogate"),
    ('{"h\\u0000": {"t1": "a"}}', "contains a NUL character"),
    ('{"h1": {"t1": ' + "[" * 100_000 + "]" * 100_000 + "}}", "nested too deep"),
    ('{"h1": {"t1": "a", "t1": "b"}}', "the key 't1' appears twice"),
    ('{"h1": {"t1": ' + HUGE_INT + "}}", "an integer with thousands of digits"),
    ('{"h1": {"t1": NaN}}', "field 'h1': nan is not a finite number"),
]


@pytest.mark.parametrize(
    ("humans", "message"), ALTTEST, ids=["surrogate", "nul", "deep", "duplicate", "int", "nan"]
)
def test_hostile_alttest_panel(baseline: str, tmp_path: Path, humans: str, message: str) -> None:
    folder = _alttest(tmp_path / "panel", humans)
    before = dump(baseline)
    err = _one_line_error(cli("data", "import-alttest", str(folder), "--name", "hostile", db=baseline))
    assert "human_annotations.json" in err and message in err, err
    assert dump(baseline) == before


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
def test_utf8_byte_order_mark_is_dropped(tmp_path: Path, baseline: str, packed: bool) -> None:
    """Excel's 'CSV UTF-8' starts with a BOM; it used to glue itself to the first column name."""
    suffix = ".gz" if packed else ""
    csv_body = "\ufeff" + LABEL_HEADER + "b1,a,g,d,1\nb2,a,g,d,2\n"
    jsonl_body = "\ufeff" + _jsonl(_label(item_id="j1"), _label(item_id="j2", value=3))
    for name, body in ((f"bom.csv{suffix}", csv_body), (f"bom.jsonl{suffix}", jsonl_body)):
        f = tmp_path / name
        raw = body.encode("utf-8")
        f.write_bytes(gzip.compress(raw) if packed else raw)
        ds = f"bom-{name}"
        out = cli("data", "import-labels", str(f), "--dataset", ds, "--json", db=baseline).json()
        assert (out["items_added"], out["labels_added"]) == (2, 2), name
        rows = cli(
            "query",
            "select i.external_id from item i join dataset d on d.id = i.dataset_id "
            f"where d.name = '{ds}' order by 1",
            "--json",
            db=baseline,
        ).json()["rows"]
        assert [r["external_id"] for r in rows] in (["b1", "b2"], ["j1", "j2"])


def test_library_records_are_checked_too(baseline: str) -> None:
    """Records built in Python (not read from a file) get the same refusals before any write."""
    from judgepanel.datasets.records import ItemRecord, ParsedDataset
    from judgepanel.errors import BadInput
    from judgepanel.store.engine import make_engine
    from judgepanel.store.imports import import_parsed

    bad: list[Callable[[], ParsedDataset]] = [
        lambda: ParsedDataset(
            "items", "h1", [ItemRecord("q", 0, output="o", meta={"x": float("nan")})], [], []
        ),
        lambda: ParsedDataset("items", "h2", [ItemRecord("q\x00", 0, output="o")], [], []),
        lambda: ParsedDataset("items", "h3", [ItemRecord("q", 0, output="\ud800")], [], []),
    ]
    eng = make_engine(baseline)
    try:
        before = dump(baseline)
        for make in bad:
            with pytest.raises(BadInput):
                import_parsed(eng, "lib", make())
        with pytest.raises(BadInput, match="dataset name"):
            import_parsed(
                eng, "na\udcffme", ParsedDataset("items", "h4", [ItemRecord("q", 0, output="o")], [], [])
            )
        assert dump(baseline) == before
    finally:
        eng.dispose()
