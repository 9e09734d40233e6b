"""`judgepanel export`: verdicts, attempts, clause verdicts or human labels as CSV, JSONL or Parquet.

Rows are streamed from the store in chunks and written as they come, so memory stays bounded at
any campaign size; the file appears under its name only when it is complete (written beside it,
then renamed), so an interrupted export never leaves half a file that looks whole.

CSV: a header row, empty cells for missing values, booleans as `True` / `False` and times in ISO
8601, which `pandas.read_csv` reads back as the same values. JSONL: one object per line, `null`
for missing. Parquet: one typed column per field (pyarrow), written one row group per chunk.
"""

from __future__ import annotations

import csv
import importlib
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import Engine

from judgepanel.errors import BadInput
from judgepanel.providers.errors import scrubber
from judgepanel.store.export import COLUMNS, WHATS, Column, export_rows

Format = Literal["csv", "jsonl", "parquet"]
FORMATS: tuple[Format, ...] = ("csv", "jsonl", "parquet")


@dataclass(frozen=True)
class ExportResult:
    path: str
    format: str
    what: str
    rows: int
    columns: list[str]


def _special(cols: Sequence[Column]) -> tuple[list[int], list[int]]:
    """Indexes of the boolean and datetime columns: the only cells that need converting (SQLite
    returns 0/1 for computed booleans; times are written in ISO 8601)."""
    return (
        [i for i, c in enumerate(cols) if c.kind == "bool"],
        [i for i, c in enumerate(cols) if c.kind == "datetime"],
    )


def _iso(v: Any) -> str:
    """ISO 8601 on every backend (SQLite stores `YYYY-MM-DD HH:MM:SS.ffffff` as text)."""
    return v.replace(" ", "T", 1) if isinstance(v, str) else str(v.isoformat())


def _rows(cols: Sequence[Column], chunk: Sequence[tuple[Any, ...]]) -> Sequence[Sequence[Any]]:
    bools, times = _special(cols)
    if not bools and not times:
        return chunk
    out = []
    for row in chunk:
        r = list(row)
        for i in bools:
            if r[i] is not None:
                r[i] = bool(r[i])
        for i in times:
            if r[i] is not None:
                r[i] = _iso(r[i])
        out.append(r)
    return out


def _write_csv(path: Path, cols: Sequence[Column], chunks: Iterable[Sequence[tuple[Any, ...]]]) -> int:
    n = 0
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)  # writes None as an empty cell
        w.writerow([c.name for c in cols])
        for chunk in chunks:
            w.writerows(_rows(cols, chunk))
            n += len(chunk)
    return n


def _write_jsonl(path: Path, cols: Sequence[Column], chunks: Iterable[Sequence[tuple[Any, ...]]]) -> int:
    names = [c.name for c in cols]
    encode = json.JSONEncoder(ensure_ascii=False).encode
    n = 0
    with path.open("w", encoding="utf-8") as f:
        for chunk in chunks:
            f.write("".join(encode(dict(zip(names, row, strict=True))) + "\n" for row in _rows(cols, chunk)))
            n += len(chunk)
    return n


def _pyarrow() -> tuple[Any, Any]:
    """pyarrow and pyarrow.parquet, untyped (their stubs are partial), or a clear error."""
    try:
        return importlib.import_module("pyarrow"), importlib.import_module("pyarrow.parquet")
    except ImportError as exc:  # installed without the `export` extra
        raise BadInput("Parquet export needs pyarrow: pip install 'judgepanel[export]'") from exc


def _arrow_schema(cols: Sequence[Column]) -> Any:
    pa, _ = _pyarrow()
    types = {
        "int": pa.int64(),
        "float": pa.float64(),
        "str": pa.string(),
        "bool": pa.bool_(),
        "datetime": pa.timestamp("us"),
    }
    return pa.schema([pa.field(c.name, types[c.kind]) for c in cols])


def _write_parquet(path: Path, cols: Sequence[Column], chunks: Iterable[Sequence[tuple[Any, ...]]]) -> int:
    pa, pq = _pyarrow()
    schema = _arrow_schema(cols)
    n = 0
    with pq.ParquetWriter(str(path), schema) as writer:
        for chunk in chunks:
            if not chunk:
                continue
            arrays = []
            for i, (c, values) in enumerate(zip(cols, zip(*chunk, strict=True), strict=True)):
                if c.kind == "bool":
                    values = tuple(None if v is None else bool(v) for v in values)
                elif c.kind == "datetime":
                    values = tuple(None if v is None else _iso(v) for v in values)
                    arrays.append(pa.array(values, type=pa.string()).cast(schema.field(i).type))
                    continue
                arrays.append(pa.array(values, type=schema.field(i).type))
            writer.write_table(pa.Table.from_arrays(arrays, schema=schema))
            n += len(chunk)
        if n == 0:
            writer.write_table(schema.empty_table())
    return n


def _scrubbed(
    cols: Sequence[Column], chunks: Iterable[Sequence[tuple[Any, ...]]]
) -> Iterator[Sequence[tuple[Any, ...]]]:
    """The rows with every configured key cut from their text cells (`providers.errors.redact`):
    the store never holds one, and an export is written where anyone may read it."""
    scrub = scrubber()
    texts = [i for i, c in enumerate(cols) if c.kind == "str"]
    for chunk in chunks:
        out = []
        for row in chunk:
            r = list(row)
            for i in texts:
                if isinstance(r[i], str):
                    r[i] = scrub(r[i])
            out.append(tuple(r))
        yield out


WRITERS = {"csv": _write_csv, "jsonl": _write_jsonl, "parquet": _write_parquet}


def export_campaign(engine: Engine, campaign: str, *, what: str, fmt: str, out: str | Path) -> ExportResult:
    """Write one campaign's `what` rows to `out` in `fmt`; returns how many rows were written."""
    if what not in WHATS:
        raise BadInput(f"--what must be one of {', '.join(WHATS)}, got {what!r}")
    if fmt not in FORMATS:
        raise BadInput(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    path = Path(out)
    if not path.parent.is_dir():
        raise BadInput(f"--out: folder {str(path.parent)!r} does not exist")
    kind = next(w for w in WHATS if w == what)
    cols = COLUMNS[kind]
    chunks = _scrubbed(cols, export_rows(engine, campaign, kind))
    tmp = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        n = WRITERS[fmt](tmp, cols, chunks)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return ExportResult(path=str(path), format=fmt, what=what, rows=n, columns=[c.name for c in cols])
