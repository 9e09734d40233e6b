"""Plain records that importers produce and `store.imports` writes in one transaction.

Parsing never touches the database, so a bad row is found before anything is written.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from judgepanel.errors import BadInput


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
        h.update(p.name.encode())
        with p.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def open_text(path: Path) -> IO[str]:
    """Open plain or gzip text (detected by magic bytes, not by the suffix)."""
    if not path.exists():
        raise BadInput(f"{path}: no such file")
    if path.is_dir():
        raise BadInput(f"{path}: is a folder, expected a file")
    with path.open("rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return path.open("r", encoding="utf-8")


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) for every non-blank line; decoding errors become BadInput."""
    try:
        with open_text(path) as f:
            for n, line in enumerate(f, start=1):
                if line.strip():
                    yield n, line
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError, OSError) as exc:
        raise BadInput(f"{path}: cannot read: {exc}") from exc


def parse_number(text: str) -> float | None:
    """The label as a number when it is one (finite), else None."""
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None
