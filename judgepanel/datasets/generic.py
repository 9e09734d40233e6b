"""Generic imports: labels (CSV or JSONL) and items (JSONL) for any dataset."""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from judgepanel.datasets.records import (
    AnnotatorRecord,
    ItemRecord,
    LabelRecord,
    ParsedDataset,
    check_row,
    display_path,
    iter_lines,
    loads_json,
    parse_number,
    read_lines,
    sha256_files,
)
from judgepanel.errors import BadInput

LABEL_FIELDS = ("item_id", "annotator", "group", "dimension", "value")
KINDS = ("human", "llm")


def _rows(path: Path, columns: Sequence[str] = LABEL_FIELDS) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of a CSV (header line 1, which must name `columns`) or JSONL file, with their line numbers."""
    if path.is_dir():
        raise BadInput(f"{path}: is a folder, expected a file")
    name = path.name.lower().removesuffix(".gz")
    if name.endswith(".csv"):
        reader = csv.DictReader(read_lines(path))
        try:
            header = list(reader.fieldnames or [])
            twice = sorted({c for c in header if header.count(c) > 1})
            if twice:  # DictReader would keep the last column of that name, silently
                raise BadInput(
                    f"{path}:1: the column(s) {', '.join(map(repr, twice))} appear twice in the header"
                )
            missing = [c for c in columns if c not in header]
            if missing:
                raise BadInput(f"{path}:1: missing column(s) {', '.join(missing)}")
            for row in reader:
                if None in row:
                    raise BadInput(f"{path}:{reader.line_num}: more fields than the header has")
                check_row(f"{path}:{reader.line_num}", row)
                yield reader.line_num, dict(row)
        except csv.Error as exc:
            raise BadInput(f"{path}:{reader.line_num}: cannot read as CSV: {exc}") from exc
    elif name.endswith((".jsonl", ".ndjson", ".json")):
        for n, text in iter_lines(path):
            row = loads_json(text, f"{path}:{n}")
            if not isinstance(row, dict):
                raise BadInput(f"{path}:{n}: expected a JSON object")
            check_row(f"{path}:{n}", row)
            yield n, row
    else:
        raise BadInput(f"{path}: unknown format; use .csv or .jsonl (optionally .gz)")


def _text(
    path: Path, n: int, row: dict[str, Any], key: str, *, required: bool = True, strip: bool = True
) -> str | None:
    v = row.get(key)
    if v is None or (isinstance(v, str) and not v.strip()):
        if required:
            raise BadInput(f"{path}:{n}: field {key!r}: missing")
        return None
    if isinstance(v, bool) or not isinstance(v, str | int | float):
        raise BadInput(f"{path}:{n}: field {key!r}: expected text or a number, got {type(v).__name__}")
    return str(v).strip() if strip else str(v)


def parse_labels(path: Path) -> ParsedDataset:
    labels: list[LabelRecord] = []
    annotators: dict[str, AnnotatorRecord] = {}
    items: dict[str, ItemRecord] = {}
    keys: set[tuple[str, str, str]] = set()
    for n, row in _rows(path):
        item_id = _text(path, n, row, "item_id")
        name = _text(path, n, row, "annotator")
        group = _text(path, n, row, "group", required=False)
        dim = _text(path, n, row, "dimension", required=False) or ""
        value = _text(path, n, row, "value")
        kind = _text(path, n, row, "kind", required=False) or "human"
        if kind not in KINDS:
            raise BadInput(f"{path}:{n}: field 'kind': expected human or llm, got {kind!r}")
        rationale = row.get("rationale")
        if rationale is not None and not isinstance(rationale, str):
            raise BadInput(f"{path}:{n}: field 'rationale': expected text")
        assert item_id is not None and name is not None and value is not None
        if (item_id, name, dim) in keys:
            raise BadInput(
                f"{path}:{n}: field 'value': a second label for {item_id} by {name} on {dim or '(no dimension)'}"
            )
        keys.add((item_id, name, dim))
        prev = annotators.get(name)
        if prev and (prev.group != group or prev.kind != kind):
            raise BadInput(f"{path}:{n}: field 'group': annotator {name} changes group or kind")
        annotators[name] = AnnotatorRecord(name, kind, group)
        items.setdefault(item_id, ItemRecord(external_id=item_id, position=len(items)))
        num = parse_number(value, f"{path}:{n}: field 'value'")
        labels.append(LabelRecord(item_id, name, dim, num, value, rationale or None))
    if not labels:
        raise BadInput(f"{path}: no label rows")
    return ParsedDataset(
        kind="labels",
        source_hash=sha256_files(path),
        items=list(items.values()),
        annotators=list(annotators.values()),
        labels=labels,
        meta={"files": [display_path(path)]},
        items_optional=True,
    )


ITEM_FIELDS = {"id", "item_id", "group", "input", "output", "system", "split", "meta"}
ROLES = ("system", "user", "assistant")


def _conversation(path: Path, n: int, raw: Any) -> list[dict[str, str]]:
    """A `conversation` field: a non-empty list of {role, content} turns, oldest first."""
    where = f"{path}:{n}: field 'conversation'"
    if not isinstance(raw, list) or not raw:
        raise BadInput(f"{where}: expected a non-empty list of {{role, content}} turns")
    turns = []
    for k, t in enumerate(raw, 1):
        if not isinstance(t, dict) or set(t) != {"role", "content"}:
            raise BadInput(f"{where}: turn {k}: expected an object with exactly role and content")
        if t["role"] not in ROLES:
            raise BadInput(f"{where}: turn {k}: role must be one of {', '.join(ROLES)}, got {t['role']!r}")
        if not isinstance(t["content"], str):
            raise BadInput(f"{where}: turn {k}: content must be text")
        turns.append({"role": t["role"], "content": t["content"]})
    return turns


def parse_items(path: Path) -> ParsedDataset:
    items: list[ItemRecord] = []
    seen: set[str] = set()
    for n, row in _rows(path, columns=()):
        ext = _text(path, n, row, "item_id", required=False) or _text(path, n, row, "id")
        assert ext is not None
        if ext in seen:
            raise BadInput(f"{path}:{n}: field 'id': duplicate item {ext}")
        seen.add(ext)
        meta = row.get("meta") or {}
        if not isinstance(meta, dict):
            raise BadInput(f"{path}:{n}: field 'meta': expected an object")
        extra = {k: v for k, v in row.items() if k not in ITEM_FIELDS}
        output = _text(path, n, row, "output", required=False, strip=False)
        if "conversation" in row:
            # the turns a reply answers; without an `output`, a final assistant turn is the reply judged
            extra["conversation"] = _conversation(path, n, row["conversation"])
            last = extra["conversation"][-1]
            if output is None and last["role"] == "assistant" and last["content"].strip():
                output = last["content"]
        if "reference" in row:
            extra["reference"] = _text(path, n, row, "reference", strip=False)
        if output is None:  # caught here, not as a failed job of every campaign that asks about it
            raise BadInput(f"{path}:{n}: field 'output': missing or empty (judges need a text to judge)")
        items.append(
            ItemRecord(
                external_id=ext,
                position=len(items),
                group_key=_text(path, n, row, "group", required=False),
                input=_text(path, n, row, "input", required=False, strip=False),
                output=output,
                system=_text(path, n, row, "system", required=False),
                split=_text(path, n, row, "split", required=False),
                meta={**meta, **extra},
            )
        )
    if not items:
        raise BadInput(f"{path}: no item rows")
    return ParsedDataset(
        kind="items",
        source_hash=sha256_files(path),
        items=items,
        annotators=[],
        labels=[],
        meta={"files": [display_path(path)]},
    )
