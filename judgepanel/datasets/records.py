"""Plain records that importers produce and `store.imports` writes in one transaction.

Parsing never touches the database, so a bad row is found before anything is written.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from judgepanel.errors import BadInput
from judgepanel.inputs import check_regular


@dataclass(frozen=True)
class ItemRecord:
    external_id: str
    position: int
    group_key: str | None = None
    input: str | None = None
    output: str | None = None
    system: str | None = None
    split: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AnnotatorRecord:
    name: str
    kind: str = "human"  # human | llm
    group: str | None = None


@dataclass(frozen=True)
class LabelRecord:
    item_external_id: str
    annotator: str
    dimension: str
    value_num: float | None
    value_text: str
    rationale: str | None = None


@dataclass
class ParsedDataset:
    kind: str
    source_hash: str
    items: list[ItemRecord]
    annotators: list[AnnotatorRecord]
    labels: list[LabelRecord]
    # what was skipped and why, e.g. {"turker_annotations_null": 400}; reported, never silent
    skipped: dict[str, int] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    # True when items may already exist in the dataset (label files create items as needed)
    items_optional: bool = False


def sha256_files(*paths: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        check_regular(p, "file")  # a FIFO or /dev/zero would be hashed for ever
        h.update(p.name.encode())
        with p.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


# JSON nested deeper than this (in `meta` or any other field) is refused: nothing judgepanel reads
# needs it, and serialising it again (json, the database's JSON type) recurses once per level.
MAX_JSON_DEPTH = 64

# Errors a compressed or undecodable file raises part-way through; each becomes one BadInput line.
READ_ERRORS = (UnicodeDecodeError, gzip.BadGzipFile, EOFError, zlib.error, OSError)


def read_error(path: Path, line: int | None, exc: BaseException) -> BadInput:
    """One line for a file that cannot be read to its end (a truncated .gz, bad UTF-8 …)."""
    where = f"{path}:{line}" if line else f"{path}"
    if isinstance(exc, EOFError | zlib.error | gzip.BadGzipFile):
        why = f"the compressed file is damaged or ends early ({exc or type(exc).__name__})"
        return BadInput(f"{where}: cannot read: {why}")
    return BadInput(f"{where}: cannot read: {exc}")


def display_path(path: Path) -> str:
    """The path as stored text: a file name that is not UTF-8 keeps its bytes as escapes instead of
    carrying lone surrogates into the database."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _nonstandard(name: str) -> Any:
    raise ValueError(f"{name} is not standard JSON")


class DuplicateKey(ValueError):
    pass


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict, refusing a key given twice (`json` keeps the last silently,
    so `{"output": "a", "output": "b"}` would import "b" with no sign; YAML files are refused too)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(f"the key {key!r} appears twice in one object")
        out[key] = value
    return out


def loads_json(text: str, where: str) -> Any:
    """`json.loads` for untrusted files: NaN / Infinity, absurd nesting, integers beyond Python's
    digit limit and duplicate keys are one `BadInput` line naming `where` (file:line), not a
    traceback or a silent choice."""
    try:
        return json.loads(text, parse_constant=_nonstandard, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{where}: not JSON: {exc.msg}") from exc
    except RecursionError as exc:
        raise BadInput(f"{where}: not JSON we accept: nested too deep") from exc
    except ValueError as exc:  # parse_constant, or int() refusing thousands of digits
        msg = str(exc)
        if "integer string conversion" in msg:
            msg = "an integer with thousands of digits"
        raise BadInput(f"{where}: not JSON we accept: {msg}") from exc


def check_text(where: str, text: str) -> str:
    """Refuse text no database stores the same way: lone surrogates (not encodable as UTF-8) and
    NUL characters (PostgreSQL's text type has none; SQLite would cut them in places)."""
    if "\x00" in text:
        raise BadInput(f"{where}: contains a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadInput(f"{where}: contains a lone surrogate ({exc.object[exc.start : exc.end]!a})") from exc
    return text


def check_value(where: str, value: Any, depth: int = 0) -> None:
    """Every string (keys too) of a parsed JSON value passes `check_text`, every float is finite,
    and nesting stays within MAX_JSON_DEPTH."""
    if depth > MAX_JSON_DEPTH:
        raise BadInput(f"{where}: nested deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, str):
        check_text(where, value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise BadInput(f"{where}: {value} is not a finite number")
    elif isinstance(value, dict):
        for k, v in value.items():
            check_text(where, str(k))
            check_value(where, v, depth + 1)
    elif isinstance(value, list):
        for v in value:
            check_value(where, v, depth + 1)


def check_row(where: str, row: dict[str, Any]) -> None:
    """`check_value` for one row of a file, naming the field at fault."""
    for key, value in row.items():
        check_text(f"{where}: a field name", str(key))
        check_value(f"{where}: field {key!r}", value)


def _gzipped(path: Path) -> bool:
    """Whether the regular file at `path` is gzip (by its magic bytes, not its suffix); a missing
    path, a folder or anything but a regular file is refused."""
    if not path.exists():
        raise BadInput(f"{path}: no such file")
    if path.is_dir():
        raise BadInput(f"{path}: is a folder, expected a file")
    check_regular(path, "file")
    with path.open("rb") as f:
        return f.read(2) == b"\x1f\x8b"


def open_text(path: Path) -> IO[str]:
    """Open plain or gzip text (detected by magic bytes, not by the suffix); a UTF-8 byte-order
    mark (Excel writes one) is dropped."""
    if _gzipped(path):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig")
    return path.open("r", encoding="utf-8-sig")


def read_lines(path: Path) -> Iterator[str]:
    """Every line of a plain or gzip file as text (line ends kept, a leading byte-order mark
    dropped), decoded one line at a time so that a bad byte or a truncated archive is reported at
    its line: "FILE:N: cannot read: …" as a BadInput."""
    packed = _gzipped(path)
    n = 0
    try:
        with gzip.open(path, "rb") if packed else path.open("rb") as f:
            for n, raw in enumerate(f, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise BadInput(f"{path}:{n}: cannot read: not UTF-8 text ({exc.reason})") from exc
                yield line.removeprefix("\ufeff") if n == 1 else line
    except READ_ERRORS as exc:
        raise read_error(path, n + 1, exc) from exc


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) for every non-blank line (see `read_lines`)."""
    for n, line in enumerate(read_lines(path), start=1):
        if line.strip():
            yield n, line


def parse_number(text: str, where: str) -> float | None:
    """The label as a number when it is one, else None; a non-finite number is an error: NaN or
    Infinity (or a number beyond the float range) is no label."""
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(v):
        raise BadInput(f"{where}: {text.strip()[:20]!r} is not a finite number")
    return v


def check_parsed(parsed: ParsedDataset) -> None:
    """The same checks for records built in Python rather than read from a file (the importers
    have already run them with file and line): text a database can store, finite numbers,
    JSON-safe `meta`."""
    for it in parsed.items:
        where = f"item {it.external_id!r}"
        for name in ("external_id", "group_key", "input", "output", "system", "split"):
            value = getattr(it, name)
            if value is not None:
                check_text(f"{where}: field {name!r}", value)
        check_value(f"{where}: field 'meta'", it.meta)
    for a in parsed.annotators:
        check_value(f"annotator {a.name!r}", [a.name, a.kind, a.group])
    for lb in parsed.labels:
        check_value(
            f"label of {lb.item_external_id!r} by {lb.annotator!r}",
            [lb.dimension, lb.value_num, lb.value_text, lb.rationale],
        )
    check_value("dataset meta", parsed.meta)
