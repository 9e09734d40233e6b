"""Large JSON files read one record at a time, in bounded memory, with every failure one line.

Boundary: bytes in, parsed records out (ijson's C parser); no database. Used by the readers of
other tools' results (`datasets.promptfoo`, `datasets.inspect_log`), whose files can be gigabytes.

The bound: no more than `MAX_RECORD` bytes may be read between two records the caller receives
(and before the first, after the last). A single record, or a header or trailer, larger than that
is refused as soon as that many bytes have been read, so a 500 MB string in one field costs at most
`MAX_RECORD` bytes of memory before the one-line refusal, never the whole field.
"""

from __future__ import annotations

import gzip
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

from judgepanel.errors import BadInput

MAX_RECORD = 32 * 1024 * 1024
# ijson's C backend re-reads the token it is in at every read: 1 MB reads keep a 32 MB token at
# about a second (64 KB reads took 45 s for 64 MB here)
CHUNK = 1 << 20


class RecordTooLarge(Exception):
    pass


class _Guarded:
    """A binary file whose reads fail once `limit` bytes have passed since the last `mark()`."""

    def __init__(self, f: IO[bytes], limit: int) -> None:
        self.f, self.limit, self.pos, self.marked = f, limit, 0, 0

    def read(self, n: int = -1) -> bytes:
        if n == 0:  # ijson asks for 0 bytes to learn whether the file gives bytes or text
            return b""
        data = self.f.read(n if n > 0 else CHUNK)
        self.pos += len(data)
        if self.pos - self.marked > self.limit:
            raise RecordTooLarge
        return data

    def mark(self) -> None:
        self.marked = self.pos


# a string (closed, or open to the chunk's end: group 1 then not a quote), or a non-JSON number
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*("|\\?\Z)|NaN|-?Infinity')
_STRING_TAIL = re.compile(rb'(?:[^"\\]|\\.)*"')  # the rest of a string a chunk before opened
NAN_MARK = "\x00NaN\x00"  # what NaN is read as: a string no stored text may hold (NUL is refused)
_NUMBERS = {b"NaN": b'"\\u0000NaN\\u0000"', b"Infinity": b"1e999", b"-Infinity": b"-1e999"}


class _StandardNumbers:
    """Python's and Inspect's JSON writers emit NaN and ±Infinity, which are not JSON and which
    ijson refuses: outside strings they are read as the string `NAN_MARK` (see `restore_nan`) and
    ±1e999 (a float that overflows to ±inf); text inside strings is left alone. It works on a stream: whether a chunk ends inside a
    string carries over to the next, and a token or an escape cut in two waits for the rest."""

    def __init__(self, f: Any) -> None:
        self.f, self.in_string, self.held, self.eof = f, False, b"", False
        self.nans = 0  # NaNs read so far

    def read(self, n: int = -1) -> bytes:
        if n == 0:
            return b""
        while True:
            raw = self.f.read(n if n > 0 else CHUNK)
            self.eof = not raw
            data: bytes = self.held + raw
            self.held = b""
            if self.eof:
                return data
            out = self._convert(data)
            if out:
                return out

    def _convert(self, data: bytes) -> bytes:
        out = bytearray()
        pos = 0
        if self.in_string:
            m = _STRING_TAIL.match(data)
            if m is None:  # the chunk ends inside the string
                return self._inside(data)
            out += data[: m.end()]
            pos, self.in_string = m.end(), False
        for m in _TOKEN.finditer(data, pos):
            out += data[pos : m.start()]
            pos = m.end()
            if m.group().startswith(b'"') and m.group(1) != b'"':  # the chunk ends inside a string
                self.in_string = True
                return bytes(out) + self._inside(m.group())
            if m.group() == b"NaN":
                self.nans += 1
            out += _NUMBERS.get(m.group(), m.group())
        rest = data[pos:]
        ends = range(1, min(9, len(rest)) + 1)
        keep = max((k for k in ends if any(t.startswith(rest[-k:]) for t in _NUMBERS)), default=0)
        if keep:
            out += rest[:-keep]
            self.held = rest[-keep:]
        else:
            out += rest
        return bytes(out)

    def _inside(self, data: bytes) -> bytes:
        """Text inside a string: passed on, but an odd backslash at the end (an escape cut in two)
        waits for the next chunk."""
        if (len(data) - len(data.rstrip(b"\\"))) % 2 == 1:
            self.held = data[-1:]
            return data[:-1]
        return data


def restore_nan(value: Any) -> Any:
    """`value` with every `NAN_MARK` string put back as the float NaN it was written as."""
    if isinstance(value, str):
        return math.nan if value == NAN_MARK else value
    if isinstance(value, dict):
        return {k: restore_nan(v) for k, v in value.items()}
    if isinstance(value, list):
        return [restore_nan(v) for v in value]
    return value


def open_bytes(path: Path) -> IO[bytes]:
    """A plain or gzip file (by its magic bytes), as bytes."""
    if not path.exists():
        raise BadInput(f"{path}: no such file")
    if path.is_dir():
        raise BadInput(f"{path}: is a folder, expected a file")
    with path.open("rb") as head:
        packed = head.read(2) == b"\x1f\x8b"
    if packed:
        return cast("IO[bytes]", gzip.open(path, "rb"))
    return path.open("rb")


def first_line(exc: BaseException) -> str:
    arg = exc.args[0] if exc.args else ""
    text = (arg.decode("utf-8", "backslashreplace") if isinstance(arg, bytes) else str(arg)).strip()
    return (text.splitlines()[0].strip() if text else type(exc).__name__)[:200]


def guarded_items(
    path: Path, prefix: str, what: str, *, limit: int = MAX_RECORD, nonfinite: bool = False
) -> Iterator[Any]:
    """Every value at `prefix` (ijson's notation, e.g. ``results.results.item``) of a plain or
    gzip JSON file, one at a time. A file that is not JSON (truncated, not UTF-8 …) or holds a
    record over `limit` bytes raises one BadInput line starting with `what`. `nonfinite`: read
    NaN and ±Infinity (Python's and Inspect's writers emit them) as null and ±inf."""
    import ijson

    with open_bytes(path) as raw:
        f = _Guarded(raw, limit)
        numbers = _StandardNumbers(f)
        try:
            for value in ijson.items(numbers if nonfinite else f, prefix, use_float=True, buf_size=CHUNK):
                # ijson reads ahead, so a NaN seen may belong to this record or a later one: from the
                # first NaN on, every record is walked
                yield restore_nan(value) if numbers.nans else value
                f.mark()
        except RecordTooLarge:
            raise BadInput(
                f"{what}: a record larger than {limit // (1024 * 1024)} MB (read up to byte {f.pos:,}); "
                "judgepanel reads these files one record at a time and refuses larger ones"
            ) from None
        except ijson.JSONError as exc:
            raise BadInput(f"{what}: not valid JSON near byte {f.pos:,}: {first_line(exc)}") from exc
        except (OSError, EOFError, UnicodeDecodeError) as exc:  # a damaged .gz
            raise BadInput(f"{what}: {first_line(exc)}") from exc


def head_values(path: Path, wanted: dict[str, str], stop: str, what: str) -> dict[str, Any]:
    """The values at the prefixes `wanted` maps to names (scalars, arrays or objects), read from
    the start of the file until the first event at prefix `stop` (they must come before it): cheap
    on a file of any size."""
    import ijson

    out: dict[str, Any] = {}
    with open_bytes(path) as raw:
        f = _Guarded(raw, MAX_RECORD)
        building: tuple[str, Any, int] | None = None  # (name, builder, depth)
        try:
            for prefix, event, value in ijson.parse(f, use_float=True, buf_size=CHUNK):
                if building is not None:
                    name, builder, depth = building
                    builder.event(event, value)
                    depth += (
                        1
                        if event in ("start_map", "start_array")
                        else -1
                        if event in ("end_map", "end_array")
                        else 0
                    )
                    if depth == 0:
                        out[name] = builder.value
                        building = None
                    else:
                        building = (name, builder, depth)
                    continue
                if prefix == stop:
                    break
                wanted_name = wanted.get(prefix)
                if wanted_name is None or event in ("map_key", "end_map", "end_array"):
                    continue
                if event in ("start_map", "start_array"):
                    builder = ijson.ObjectBuilder()
                    builder.event(event, value)
                    building = (wanted_name, builder, 1)
                else:
                    out[wanted_name] = value
        except RecordTooLarge:
            raise BadInput(f"{what}: its header is larger than {MAX_RECORD // (1024 * 1024)} MB") from None
        except ijson.JSONError as exc:
            raise BadInput(f"{what}: not valid JSON near byte {f.pos:,}: {first_line(exc)}") from exc
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            raise BadInput(f"{what}: {first_line(exc)}") from exc
    return out
