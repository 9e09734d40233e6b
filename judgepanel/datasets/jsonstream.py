"""Large JSON files read one record at a time, in bounded memory, with every failure one line.

Boundary: bytes in, parsed records out; no database. Used by the readers of other tools' results
(`datasets.promptfoo`, `datasets.inspect_log`), whose files can be gigabytes.

How: the file is decoded as UTF-8 a chunk at a time; each record is parsed whole by the standard
library's C scanner (`json.JSONDecoder.raw_decode`, about twice as fast here as ijson's C backend
building the same objects from its events), and the few tokens around the records (the keys that
lead to the array, its commas) are walked here. Everything else in the document is parsed too, and
dropped, so a broken file is refused whole, as a parser of the whole document would. The values
at the front of a file (`head_values`) are read with ijson's events, which stop where asked.

The bound: no more than `MAX_RECORD` bytes may be read between two records the caller receives
(and before the first, after the last). A single record, or a header or trailer, larger than that
is refused as soon as that many bytes have been read, so a 500 MB string in one field costs at most
`MAX_RECORD` bytes of memory before the one-line refusal, never the whole field.
"""

from __future__ import annotations

import codecs
import gzip
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

from judgepanel.errors import BadInput

MAX_RECORD = 32 * 1024 * 1024
# a record cut by a chunk's end is parsed again once the buffer has doubled; and ijson's C backend
# (`head_values`) re-reads the token it is in at every read (64 KB reads took 45 s on a 64 MB string)
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


class NotJSON(Exception):
    """The text is not JSON at `pos` (a character index into the reader's buffer)."""

    def __init__(self, msg: str, pos: int) -> None:
        super().__init__(msg)
        self.msg, self.pos = msg, pos


_WS = re.compile(r"[ \t\n\r]*")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NotJSON(f"numeric overflow: {text[:40]}", -1)
    return value


def _no_constant(text: str) -> Any:
    raise NotJSON(f"{text} is not a JSON value", -1)


def _replace_surrogates(value: Any) -> Any:
    """Lone surrogates (a `\\ud800` escape with no partner) become "?", as ijson reads them."""
    if isinstance(value, str):
        return _SURROGATE.sub("?", value)
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_surrogates(v) for v in value]
    return value


class _Text:
    """A JSON document read a chunk at a time: UTF-8 decoded incrementally into a buffer with a
    cursor; values are parsed by the standard library's C scanner (`raw_decode`), and one cut by
    the end of the buffer is parsed again once more text is there (the buffer at least doubled,
    so a large value costs linear time)."""

    def __init__(self, raw: IO[bytes], limit: int, nonfinite: bool) -> None:
        self.f = _Guarded(raw, limit)
        self.utf8 = codecs.getincrementaldecoder("utf-8")()
        self.buf, self.pos, self.eof = "", 0, False
        self.ahead = 0  # characters to have in the buffer before parsing a value: 2 × the last record
        self.escapes: list[int] = []  # buffer positions of `\\uD800`-style escapes (lone surrogates?)
        if nonfinite:  # NaN and ±Infinity (Python's and Inspect's writers) as floats
            self.decoder = json.JSONDecoder()
        else:
            self.decoder = json.JSONDecoder(parse_float=_finite, parse_constant=_no_constant)

    def byte_at(self, pos: int) -> int:
        """The file offset of buffer position `pos` (for messages): what was read, less what the
        buffer holds from `pos` on and the bytes the decoder holds back."""
        held = len(self.utf8.getstate()[0])
        return self.f.pos - held - len(self.buf[max(0, pos) :].encode("utf-8", "surrogatepass"))

    def more(self) -> bool:
        """Read one more chunk into the buffer; False at the end of the file."""
        if self.eof:
            return False
        data = self.f.read(CHUNK)
        self.eof = not data
        held = len(self.utf8.getstate()[0])  # the start of a character the last chunk cut
        try:
            text = self.utf8.decode(data, final=self.eof)
        except UnicodeDecodeError as exc:
            at = self.f.pos - len(data) - held + exc.start
            raise NotJSON(f"not UTF-8: {str(exc)[:200]}", -1 - at) from None
        kept = len(self.buf) - self.pos
        self.escapes = [p - self.pos for p in self.escapes if p >= self.pos]
        self.buf = self.buf[self.pos :] + text if self.pos else self.buf + text
        self.pos = 0
        # an escape may straddle the two chunks: look again at the last few characters kept
        since = max(kept - 5, 0, self.escapes[-1] + 1 if self.escapes else 0)
        self.escapes += [m.start() for m in _SURROGATE_ESCAPE.finditer(self.buf, since)]
        return bool(text) or not self.eof

    def ws(self) -> None:
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf) or not self.more():
                return

    def peek(self) -> str:
        self.ws()
        return self.buf[self.pos] if self.pos < len(self.buf) else ""

    def take(self, allowed: str, expected: str) -> str:
        c = self.peek()
        if not c or c not in allowed:
            raise NotJSON(expected, self.pos)
        self.pos += 1
        return c

    def value(self) -> Any:
        """The JSON value at the cursor, parsed whole (the cursor moves past it)."""
        self.ws()
        # a value cut by the buffer's end is parsed twice, and its error message counts the lines
        # of the buffer: read on first when the last record would not fit twice
        while len(self.buf) - self.pos < self.ahead and self.more():
            pass
        while True:
            start, size = self.pos, len(self.buf) - self.pos
            try:
                value, end = self.decoder.raw_decode(self.buf, start)
            except json.JSONDecodeError as exc:
                cut = exc.msg.startswith("Unterminated string") or exc.pos >= len(self.buf) - 16
                if not cut or not self._grow(size):
                    raise NotJSON(exc.msg, exc.pos) from None
                continue
            except RecursionError:
                raise NotJSON("nested too deeply", start) from None
            except NotJSON as exc:
                raise NotJSON(exc.msg, start) from None
            # a number at the very end of the buffer may go on in the next chunk
            if end == len(self.buf) and isinstance(value, int | float) and self._grow(size):
                continue
            if self.escapes and any(start <= p < end for p in self.escapes):
                value = _replace_surrogates(value)
            self.pos = end
            return value

    def _grow(self, size: int) -> bool:
        """Read until the text from the cursor on is at least twice `size` long; False when the
        file ended before any more text came."""
        grew = False
        while len(self.buf) - self.pos < 2 * size + CHUNK and self.more():
            grew = True
        return grew

    def items(self, keys: tuple[str, ...]) -> Iterator[Any]:
        """Every element of the array found by following `keys` from the top-level object; the
        rest of the document is parsed (and dropped) so that a broken file is refused whole."""
        yield from self._inside(keys)
        if self.peek():
            raise NotJSON("trailing garbage", self.pos)

    def _inside(self, keys: tuple[str, ...]) -> Iterator[Any]:
        c = self.peek()
        if not keys:
            if c != "[":
                self.value()
                return
            self.pos += 1
            if self.peek() == "]":
                self.pos += 1
                return
            while True:
                start = self.pos
                yield self.value()
                self.ahead = min(2 * (self.pos - start), self.f.limit)
                self.f.mark()
                if self.take(",]", "Expecting ',' delimiter") == "]":
                    return
        if c != "{":
            self.value()
            return
        self.pos += 1
        if self.peek() == "}":
            self.pos += 1
            return
        while True:
            if self.peek() != '"':
                raise NotJSON("Expecting property name enclosed in double quotes", self.pos)
            key = self.value()
            self.take(":", "Expecting ':' delimiter")
            if key == keys[0]:
                yield from self._inside(keys[1:])
            else:
                self.value()
            if self.take(",}", "Expecting ',' delimiter") == "}":
                return


def guarded_items(
    path: Path, prefix: str, what: str, *, limit: int = MAX_RECORD, nonfinite: bool = False
) -> Iterator[Any]:
    """Every value at `prefix` (ijson's notation, e.g. ``results.results.item``: object keys,
    then the elements of the array they lead to) of a plain or gzip JSON file, one at a time. A
    file that is not JSON (truncated, not UTF-8 …) or holds a record over `limit` bytes raises one
    BadInput line starting with `what`. `nonfinite`: read NaN and ±Infinity (Python's and
    Inspect's writers emit them) as floats; otherwise they, and numbers that overflow a float,
    are not JSON."""
    keys = tuple(prefix.split("."))
    if keys[-1] != "item":
        raise ValueError(f"{prefix}: only the elements of an array are streamed")
    with open_bytes(path) as raw:
        text = _Text(raw, limit, nonfinite)
        try:
            yield from text.items(keys[:-1])
        except RecordTooLarge:
            raise BadInput(
                f"{what}: a record larger than {limit // (1024 * 1024)} MB (read up to byte {text.f.pos:,}); "
                "judgepanel reads these files one record at a time and refuses larger ones"
            ) from None
        except NotJSON as exc:
            at = -1 - exc.pos if exc.pos < 0 else text.byte_at(exc.pos)
            raise BadInput(f"{what}: not valid JSON near byte {at:,}: {exc.msg}") from None
        except (OSError, EOFError) as exc:  # a damaged .gz
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
