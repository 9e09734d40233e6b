"""`judgepanel export`: verdicts, attempts, clause verdicts or human labels as CSV, JSONL or Parquet.

Rows are streamed from the store in chunks and written as they come, so memory stays bounded at
any campaign size; the file appears under its name only when it is complete (written beside it,
then renamed), so an interrupted export never leaves half a file that looks whole.

CSV: a header row, empty cells for missing values, booleans as `True` / `False` and times in ISO
8601, which `pandas.read_csv` reads back as the same values. JSONL: one object per line, `null`
for missing. Parquet: one typed column per field (pyarrow), written one row group per chunk.

Spreadsheets run a CSV cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return as a
formula (`=HYPERLINK(…)` in an item id, a rationale). As OWASP recommends, such text cells are
written with a leading `'` unless they read as a plain number (`-0.5`); `raw=True` (`--raw`)
writes them unchanged. JSONL and Parquet keep every value as stored: they are read by programs.

The file is never the live database (its path is compared after resolving symlinks, and with
`os.path.samefile` for hard links), never a folder, and an existing file is replaced only with
`force=True` (`--force`).
"""

from __future__ import annotations

import csv
import importlib
import json
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import Engine

from judgepanel.errors import BadInput
from judgepanel.providers.errors import scrubber
from judgepanel.store.engine import sqlite_file
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
    cells_neutralised: int = 0


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


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_FIRST = frozenset(FORMULA_START)
_PLAIN_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def neutralise(cell: str) -> str:
    """`cell` as a spreadsheet shows it as text: a leading `'` when it starts like a formula
    (OWASP's CSV-injection advice), except a plain number such as `-0.5`."""
    if cell.startswith(FORMULA_START) and not _PLAIN_NUMBER.fullmatch(cell):
        return "'" + cell
    return cell


class _Neutraliser:
    def __init__(self, cols: Sequence[Column]) -> None:
        self.text = [i for i, c in enumerate(cols) if c.kind == "str"]
        self.changed = 0

    def rows(self, rows: Sequence[Sequence[Any]]) -> Sequence[Sequence[Any]]:
        """`rows` with risky cells neutralised; a row without one is passed on as it is (the check
        is one dictionary lookup per text cell, so a million-row export stays fast)."""
        out: list[Sequence[Any]] = []
        text, first = self.text, _FIRST
        for row in rows:
            hits = [i for i in text if (v := row[i]).__class__ is str and v[:1] in first]
            if hits:
                r = list(row)
                for i in hits:
                    safe = neutralise(r[i])
                    if safe != r[i]:
                        r[i] = safe
                        self.changed += 1
                row = r
            out.append(row)
        return out


def _write_csv(
    path: Path,
    cols: Sequence[Column],
    chunks: Iterable[Sequence[tuple[Any, ...]]],
    guard: _Neutraliser | None = None,
) -> int:
    n = 0
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)  # writes None as an empty cell
        w.writerow([c.name for c in cols])
        for chunk in chunks:
            rows = _rows(cols, chunk)
            w.writerows(rows if guard is None else guard.rows(rows))
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


WRITERS = {"jsonl": _write_jsonl, "parquet": _write_parquet}
# SQLite keeps a database in up to four files; none of them may be written over
_SQLITE_COMPANIONS = ("", "-wal", "-shm", "-journal")


def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)  # hard links, bind mounts
    except OSError:  # one of them does not exist
        return False


def check_out_path(engine: Engine, out: str | Path, *, force: bool) -> Path:
    """`out` if an export may write it: its folder exists, it is not a folder, not the live
    database (or one of its WAL / journal files), and not an existing file unless `force`."""
    path = Path(out)
    if path.is_dir():
        raise BadInput(f"--out {str(path)!r} is a folder: give a file name")
    if not path.parent.is_dir():
        raise BadInput(f"--out: folder {str(path.parent)!r} does not exist")
    db = sqlite_file(engine)
    if db is not None:
        for suffix in _SQLITE_COMPANIONS:
            live = db.with_name(db.name + suffix)
            if _same_file(path, live):
                raise BadInput(f"--out {str(path)!r} is the results database itself: choose another file")
    if os.path.lexists(path) and not force:  # a symlink counts, even one that points nowhere
        raise BadInput(f"--out {str(path)!r} already exists: pass --force to replace it")
    return path


def replace_file(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file renamed over it: a symlink at `path` is
    replaced, never followed, and a crash leaves the old file or the new one, never half of it."""
    tmp = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def export_campaign(
    engine: Engine,
    campaign: str,
    *,
    what: str,
    fmt: str,
    out: str | Path,
    force: bool = False,
    raw: bool = False,
) -> ExportResult:
    """Write one campaign's `what` rows to `out` in `fmt`; returns how many rows were written.
    CSV text cells that start like a formula get a leading `'` unless `raw` (module docstring)."""
    if what not in WHATS:
        raise BadInput(f"--what must be one of {', '.join(WHATS)}, got {what!r}")
    if fmt not in FORMATS:
        raise BadInput(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    path = check_out_path(engine, out, force=force)
    kind = next(w for w in WHATS if w == what)
    cols = COLUMNS[kind]
    chunks = _scrubbed(cols, export_rows(engine, campaign, kind))
    guard = _Neutraliser(cols) if fmt == "csv" and not raw else None
    tmp = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        n = _write_csv(tmp, cols, chunks, guard) if fmt == "csv" else WRITERS[fmt](tmp, cols, chunks)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return ExportResult(
        path=str(path),
        format=fmt,
        what=what,
        rows=n,
        columns=[c.name for c in cols],
        cells_neutralised=0 if guard is None else guard.changed,
    )
