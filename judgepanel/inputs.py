"""Reading a file the user names: a regular file only, up to a size, and YAML only so deep.

Boundary: the checks every reader of a user's file shares (campaign files, templates, rubrics,
price files, instruction files; the dataset importers use `regular_file` alone, as their files are
large and read as streams). Only `BadInput`, one line naming the file: a FIFO, `/dev/zero` or
`/dev/urandom` named by `--from` or `--template` was read for ever, a 60 MB campaign file was
never answered, and YAML nested 100,000 deep ended in a 2,991-line traceback (issue 29 §6).

* `regular_file` — the path names a regular file (symlinks followed), not a folder, a FIFO, a
  socket or a device. It is checked on the opened file (`fstat`), so the file cannot be swapped
  for a FIFO between the check and the read, and the open itself never blocks (`O_NONBLOCK`).
* `read_file` — at most `max_bytes` (default `MAX_FILE_BYTES`, 1 MB: a campaign file, a
  template or a rubric is a few kilobytes); a longer file is refused without being read.
* `check_yaml_depth` — YAML nested deeper than `MAX_YAML_DEPTH` (block indentation, `- ` items
  and `[`/`{` flow collections together) is refused before PyYAML, which composes recursively,
  sees it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from judgepanel.errors import BadInput

MAX_FILE_BYTES = 1 << 20
MAX_YAML_DEPTH = 64


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def regular_file(path: Path, what: str) -> int:
    """An open, read-only descriptor of `path` after checking it is a regular file (the caller
    closes it); `BadInput` naming `what` and the path otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise BadInput(f"{what} {path} does not exist") from None
    except IsADirectoryError:
        raise BadInput(f"{what} {path} is a folder, not a file") from None
    except OSError as exc:
        raise BadInput(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise BadInput(f"{what} {path} is {_kind(mode)}: give a regular file")
    os.set_blocking(fd, True)
    return fd


def check_regular(path: Path, what: str) -> None:
    """`regular_file` for a reader that opens the file itself (the importers' streams)."""
    os.close(regular_file(path, what))


def read_file(path: Path, what: str, *, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most `max_bytes`; `BadInput` (one line) otherwise."""
    fd = regular_file(path, what)
    try:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise BadInput(
                f"{what} {path} is {_size(size)}, more than the {_size(max_bytes)} such a file may be"
            )
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise BadInput(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # it grew while being read
        raise BadInput(f"{what} {path} is more than the {_size(max_bytes)} such a file may be")
    return data


def read_text(path: Path, what: str, *, max_bytes: int = MAX_FILE_BYTES) -> str:
    """`read_file` decoded as UTF-8 (a byte-order mark dropped)."""
    try:
        return read_file(path, what, max_bytes=max_bytes).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BadInput(f"cannot read {what} {path}: not UTF-8 text") from None


def _size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MB" if n >= 1 << 20 else f"{n:,} bytes"


def yaml_depth(text: str) -> int:
    """How deep `text` nests as YAML, counted without parsing it: the block levels of a line (its
    indentation, one level per distinct indentation still open, plus one per `- ` or `? ` that
    starts it) plus the `[`/`{` open at that point (quoted strings and comments skipped). Linear
    in the text; it may count a little more than a parser would, never less."""
    deepest = 0
    indents: list[int] = []
    flow = 0
    quote = ""
    for line in text.splitlines():
        if not quote and flow == 0:
            body = line.lstrip(" ")
            if not body or body.startswith("#"):
                continue
            indent = len(line) - len(body)
            while indents and indents[-1] >= indent:
                indents.pop()
            indents.append(indent)
            markers = 0
            while body[:2] in ("- ", "? ") or body in ("-", "?"):
                markers += 1
                body = body[2:].lstrip(" ")
            deepest = max(deepest, len(indents) + markers)
            line = body
        for i, ch in enumerate(line):
            if quote:
                if ch == quote:
                    quote = ""
            elif ch in "\"'" and (i == 0 or line[i - 1] in " \t[{,:"):  # a quote opening a scalar
                quote = ch
            elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
                break
            elif ch in "[{":
                flow += 1
                deepest = max(deepest, len(indents) + flow)
            elif ch in "]}":
                flow = max(0, flow - 1)
    return deepest


def check_yaml_depth(text: str, where: str, *, limit: int = MAX_YAML_DEPTH) -> None:
    """`BadInput` when `text` nests deeper than `limit` (see `yaml_depth`)."""
    if yaml_depth(text) > limit:
        raise BadInput(f"{where}: YAML nested more than {limit} levels deep")
