"""Output: exactly one JSON object for `--json`, rich tables for people.

rich is imported on first use (a command that prints JSON, or `--help`, never pays for it).

Stored text (an item id, a rationale, a judge or annotator name, anything `query` returns) may
hold terminal control sequences: `\033]0;…\a` retitles the window, `\033[2J` clears the screen,
and bidirectional overrides reorder what is shown. Everything printed for people goes through
`printable`, which shows such characters as `\x1b`-style escapes instead of sending them; table
cells and printed lines are plain text, never rich markup. JSON output is left alone (`json.dumps` escapes them).
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from rich.console import Console

# A first-column name (a judge spec, `JUDGE@CAMPAIGN`) longer than the room the other columns leave
# (at most NAME_WIDTH, at least NAME_MIN) is shown as a short key with a legend under the table, so
# that it neither wraps over several lines nor squeezes the numbers.
NAME_WIDTH, NAME_MIN = 40, 10
SMALL = 1e-3  # below this, a number is shown in scientific notation (a p-value of 4.8e-73 is not 0.000)


# C0 controls except tab and newline, DEL, C1 controls, and the Unicode bidirectional controls
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape_char(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every terminal control character shown as an escape (`\x1b`, `\u202e`)."""
    return _CONTROL.sub(_escape_char, text)


# `print` options that change nothing in plain text (highlighting only adds styles)
_PLAIN_OPTIONS = frozenset({"highlight", "soft_wrap"})


class _LazyConsole:
    """A rich Console created on first use; plain text without it where rich would print plain
    text (`cli.plain`)."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    def _real(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real(), name)

    def plain_width(self) -> int | None:
        """The width to lay plain text out at without rich (`cli.plain`), where rich would write
        plain text; None once a rich Console exists here (it printed something plain text could
        not, or a test put its own in place): from then on rich prints everything."""
        if self._console is not None:
            return None
        from judgepanel.cli import plain

        return plain.width(bool(self._options.get("stderr")))

    def write_plain(self, text: str) -> None:
        """Write what `cli.plain` laid out, to the stream rich would write to, and flush as rich does."""
        from judgepanel.cli import plain

        out = plain.stream(bool(self._options.get("stderr")))
        assert out is not None  # `plain_width` said so
        out.write(text)
        out.flush()

    def print(self, *objects: Any, markup: bool = False, **options: Any) -> None:
        """rich's print, with control characters in plain strings escaped and no markup unless
        asked for: lines hold stored names, and `[/]` in a name is not a tag (module docstring).
        One string, where rich would print plain text, is laid out without rich (`cli.plain`)."""
        shown = [printable(o) if isinstance(o, str) else o for o in objects]
        one = len(shown) == 1 and isinstance(shown[0], str)
        if (one or not shown) and not markup and options.keys() <= _PLAIN_OPTIONS:
            width = self.plain_width()
            if width is not None:
                from judgepanel.cli import plain

                text = plain.line(shown[0], width, soft_wrap=bool(options.get("soft_wrap"))) if one else "\n"
                if text is not None:
                    self.write_plain(text)
                    return
        self._real().print(*shown, markup=markup, **options)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._real(), name, value)


console = cast("Console", _LazyConsole())
err_console = cast("Console", _LazyConsole(stderr=True))


def _clean(value: Any, scrub: Callable[[str], str]) -> Any:
    """NaN and infinities are not JSON: they become null; a configured key in any string is cut."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {scrub(str(k)): _clean(v, scrub) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v, scrub) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return _clean(value.item(), scrub)
    return value


def emit_json(obj: Mapping[str, Any]) -> None:
    """The one JSON object of a `--json` command, with every configured key (in any form a server
    may have echoed it in) cut from its strings (`providers.errors.redact`)."""
    from judgepanel.providers.errors import scrubber

    sys.stdout.write(json.dumps(_clean(obj, scrubber()), sort_keys=False) + "\n")
    sys.stdout.flush()


def warn(message: str) -> None:
    """One warning, one stderr line: no wrapping at the terminal width, no rich markup (names and
    messages may hold brackets)."""
    from judgepanel.providers.errors import scrubber  # no configured key in any form, ever

    err_console.print(f"warning: {scrubber()(message)}", markup=False, highlight=False, soft_wrap=True)


def fmt_number(value: Any, digits: int = 3) -> str:
    """A table cell: floats to `digits` decimals, except magnitudes below 0.001, which keep three
    significant digits in scientific notation; NaN and None are empty."""
    if value is None:
        return ""
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    if math.isnan(value):
        return ""
    if value != 0 and abs(value) < SMALL:
        return f"{value:.3g}"
    return f"{value:.{digits}f}"


# a cell that reads as one number (or a number ± its error), however it was formatted
_NUMBER = re.compile(r"^[-+−]?(\d[\d,]*\.?\d*|\.\d+)(e[-+]?\d+)?%?( ± \d+\.?\d*(e[-+]?\d+)?)?$", re.I)


def _is_number(cell: str) -> bool:
    return bool(_NUMBER.match(cell))


def _shorten(name: str, width: int) -> str:
    """`name` in `width` characters with an ellipsis in the middle: judge specs differ at both ends
    (the model, and the parameters)."""
    if len(name) <= width:
        return name
    head = max(1, (width - 1) // 2)
    return f"{name[:head]}…{name[len(name) - (width - 1 - head) :]}" if width > 2 else name[:width]


def table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A rich table that reads at 80 columns. Floats go through `fmt_number` (scientific notation
    below 0.001). A column of numbers is right-aligned and at least as wide as its longest number,
    so a number (its minus sign, its exponent) is never broken; its header may wrap instead. A name
    in the first column longer than NAME_WIDTH becomes a short key (`[1]`, `[2]` …) with a legend
    printed under the table, instead of wrapping over several lines."""
    lazy = console if isinstance(console, _LazyConsole) else None
    plain_width = None if lazy is None else lazy.plain_width()
    terminal = console.width if plain_width is None else plain_width
    cells = [[printable(fmt_number(v)) for v in r] for r in rows]
    n = len(columns)
    data = [[r[i] for r in cells if len(r) > i and r[i] not in ("", "—")] for i in range(n)]
    numeric = [i > 0 and bool(col) and all(_is_number(v) for v in col) for i, col in enumerate(data)]
    widest = [max((len(v) for v in col), default=0) for col in data]

    # a number column is exactly as wide as its widest number, or its header when there is room
    # (else the header wraps at its spaces); the first column gets what the others leave
    def fixed(full_header: bool) -> list[int]:
        return [
            max(widest[i], len(str(c)) if full_header else max(len(w) for w in str(c).split() or [""]))
            for i, c in enumerate(columns)
        ]

    widths = fixed(True)
    others = sum(widths[i] + 1 for i in range(1, n))
    if others + NAME_MIN > terminal:
        widths = fixed(False)
        others = sum(widths[i] + 1 for i in range(1, n))
    name_width = max(NAME_MIN, min(NAME_WIDTH, terminal - others))
    legend: list[tuple[str, str]] = []
    if any(r and len(r[0]) > name_width for r in cells):
        for i, r in enumerate(cells, 1):
            if len(r[0]) > name_width:
                key = f"[{i}]"
                legend.append((key, r[0]))
                r[0] = f"{key} {_shorten(r[0], name_width - len(key) - 1)}"
    # (header, right-justified, width): numbers right-aligned at their width, the first column
    # as wide as its longest name allows, the others as wide as their cells
    headers = [printable(str(c)) for c in columns]
    specs: list[tuple[str, bool, int | None]] = []
    for i, c in enumerate(headers):
        if numeric[i]:
            specs.append((c, True, widths[i]))
        elif i == 0:
            specs.append((c, False, min(name_width, max([len(c), *(len(r[0]) for r in cells if r)]))))
        else:
            specs.append((c, False, None))
    # too many columns for the terminal: let the lines run long rather than cut numbers
    needed = min(name_width, max(len(headers[0]), widest[0])) + others if n else 0
    shown_title = None if title is None else printable(title)
    if lazy is not None and plain_width is not None:
        from judgepanel.cli import plain

        text = plain.table(shown_title, specs, cells, max(needed, plain_width))
        if text is not None:
            lazy.write_plain(text)
            for key, name in legend:
                console.print(f"{key} {name}", markup=False, highlight=False, soft_wrap=True)
            return
    _rich_table(shown_title, specs, cells, needed)
    for key, name in legend:
        console.print(f"{key} {name}", markup=False, highlight=False, soft_wrap=True)


def out_width() -> int:
    """The width stdout's tables are laid out at (the terminal's, or rich's default in a pipe)."""
    lazy = console if isinstance(console, _LazyConsole) else None
    plain_width = None if lazy is None else lazy.plain_width()
    return console.width if plain_width is None else plain_width


def fits(columns: Sequence[str], rows: Sequence[Sequence[Any]], width: int | None = None) -> bool:
    """Whether `table` can show every cell whole: one line per cell, the columns side by side within
    `width`, and no first-column value long enough to be replaced by a key."""
    from rich.cells import cell_len

    cells = [[printable(fmt_number(v)) for v in r] for r in rows]
    if any("\n" in c or "\t" in c for r in cells for c in r):
        return False
    widths = [
        max([cell_len(str(c)), *(cell_len(r[i]) for r in cells if len(r) > i)]) for i, c in enumerate(columns)
    ]
    if widths and any(len(r) and cell_len(r[0]) > NAME_WIDTH for r in cells):
        return False
    return sum(widths) + max(0, len(widths) - 1) <= (width or out_width())


def column_blocks(widths: Sequence[int], room: int, gap: int = 2) -> list[list[int]]:
    """The column indices in runs that fit `room` characters (each column `gap` wider than its
    widest cell; at least one column a run): a too-wide grid printed in blocks instead of cut."""
    blocks: list[list[int]] = [[]]
    used = 0
    for i, w in enumerate(widths):
        if blocks[-1] and used + w + gap > room:
            blocks.append([])
            used = 0
        blocks[-1].append(i)
        used += w + gap
    return [b for b in blocks if b] or [[]]


def records(columns: Sequence[str], rows: Sequence[Sequence[Any]], note: str | None = None) -> None:
    """One record per row (`-- row N --`), one line per cell: the column name, padded, then the
    value whole (a long one wraps at the terminal, never cut): the layout for results too wide for a
    table. `note` says why, on stderr, first."""
    if note:
        err_console.print(note, markup=False, highlight=False, soft_wrap=True)
    names = [printable(str(c)) for c in columns]
    pad = max((len(n) for n in names), default=0)
    lines: list[str] = []
    for i, r in enumerate(rows, 1):
        lines.append(f"-- row {i} --")
        for name, v in zip(names, r, strict=False):
            lines.append(f"{name.ljust(pad)}  {printable(fmt_number(v))}")
    sys.stdout.write("\n".join(lines) + ("\n" if lines else ""))
    sys.stdout.flush()


def _rich_table(
    title: str | None,
    specs: Sequence[tuple[str, bool, int | None]],
    cells: Sequence[Sequence[str]],
    needed: int,
) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    # the box draws one space between columns and no outer edge: nothing else pads the cells
    t = Table(title=None if title is None else Text(title), box=box.SIMPLE_HEAD, padding=0, show_edge=False)
    for header, right, width in specs:
        t.add_column(header, justify="right" if right else "left", width=width, overflow="fold")
    for r in cells:
        t.add_row(*(Text(c) for c in r))  # text, never rich markup: `[/]` in a name is not a tag
    if needed <= console.width:
        console.print(t)
    else:
        terminal = console.width
        console.width = needed
        try:
            console.print(t, crop=False)
        finally:
            console.width = terminal


SIMULATED_WORD = "SIMULATED"


def simulated(engine: Any, campaigns: Sequence[str]) -> bool:
    """Whether any of `campaigns` rests on simulated answers (`sim:` judges or the fake server):
    the `simulated` key of a command's JSON, and the word its table title carries."""
    from judgepanel.store.simulated import simulated_campaigns

    return any(simulated_campaigns(engine, list(campaigns)).values())


def sim_title(title: str, is_simulated: bool) -> str:
    return f"{SIMULATED_WORD} · {title}" if is_simulated else title
