"""`cli.plain` writes what rich writes where rich styles nothing (issue 20 §2: read commands print
without loading rich's console): the same bytes as a rich Console made as `render` makes it, over
generated tables, lines and widths, and the same width under the environment variables rich reads.
"""

from __future__ import annotations

import contextlib
import io
import random
import sys
from collections.abc import Callable

import pytest
from rich.console import Console

from judgepanel.cli import plain, render

# names as stored: ASCII, what `_shorten` and the tables put in (…, —, ±, κ, −), wide characters,
# a combining accent, spaces at either end, markup-like and emoji-code-like text
WORDS = [
    "sim:a", "gpt-4o-mini", "openai:gpt-4o-mini?temperature=0&max_tokens=512", "expert_1", "turker_5",
    "c (simulated)", "—", "…", "0.183 ± 0.02", "κ", "−0.5", "漢字", "😀", "e\u0301", " lead", "trail ",
    "\xa0nbsp\xa0", "[bold]x[/]", "x" * 45, "",
]  # fmt: skip
# emoji codes rich replaces (with a variant, in capitals), and some it leaves
ODD_WORDS = [":smile:", ":SMILE:", ":thumbs_up-emoji:", "a:b:c", "x:-emoji:", "::", "p:q?r=s:t"]


def _word(rng: random.Random) -> str:
    return rng.choice(ODD_WORDS if rng.random() < 0.02 else WORDS)


HEADERS = ["judge", "name", "p_value", "cost USD", "95% CI", "a b c", "jobs", "κ", ""]
ODD_HEADERS = ["[b]", ":smile:", "a\tb"]  # markup and an emoji code rich would read, a tab
NUMBERS: list[object] = [0, 7, 200, -3, 0.183, 4.8e-73, -0.0261, float("nan"), None, 12345678, True]


def _through(
    monkeypatch: pytest.MonkeyPatch, columns: int, draw: Callable[[], None], *, rich: bool
) -> tuple[str, bool]:
    """What `draw` writes to stdout at COLUMNS=`columns`, with the rich Console `render` would
    make (`rich=True`) or none yet (plain where it can); and whether rich was left unused."""
    monkeypatch.setenv("COLUMNS", str(columns))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        monkeypatch.setattr(render.console, "_console", Console() if rich else None)
        draw()
        unused = render.console._console is None  # type: ignore[attr-defined]
    monkeypatch.setattr(render.console, "_console", None)
    return out.getvalue(), unused


def _cell(rng: random.Random) -> object:
    if rng.random() < 0.5:
        return rng.choice(NUMBERS)
    return " ".join(_word(rng) for _ in range(rng.choice([1, 1, 1, 2, 3])))


def test_tables_are_the_bytes_rich_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(20)
    plain_cases = 0
    for _ in range(600):
        n = rng.randint(1, 7)
        headers = [rng.choice(ODD_HEADERS if rng.random() < 0.03 else HEADERS) for _ in range(n)]
        rows = [[_cell(rng) for _ in range(n)] for _ in range(rng.choice([0, 1, 2, 3, 5]))]
        if rng.random() < 0.3:  # a column of numbers only, as most tables have
            for r in rows:
                r[-1] = rng.choice([0, 7, 200, 0.183, -0.0261, 4.8e-73])
        title = rng.choice([None, "", "campaigns", "agreement on pair set se200", "  x  ", "t" * 90])
        columns = rng.choice([20, 40, 60, 80, 100, 200])

        def draw() -> None:
            render.table(title, headers, [list(r) for r in rows])  # noqa: B023

        by_rich, _ = _through(monkeypatch, columns, draw, rich=True)
        mine, unused = _through(monkeypatch, columns, draw, rich=False)
        assert mine == by_rich, (title, headers, rows, columns)
        plain_cases += unused
    assert plain_cases > 250  # most of them were laid out without rich


@pytest.mark.parametrize("soft_wrap", [False, True])
def test_printed_lines_are_the_bytes_rich_writes(monkeypatch: pytest.MonkeyPatch, soft_wrap: bool) -> None:
    rng = random.Random(21 + soft_wrap)
    plain_cases = 0
    for _ in range(400):
        text = rng.choice([" ", ", ", "  "]).join(_word(rng) for _ in range(rng.randint(0, 30)))
        if rng.random() < 0.1:
            text += rng.choice(["\n", "\t", "\u2028", "   "])
        columns = rng.choice([10, 13, 20, 45, 80, 100])
        highlight = rng.choice([None, False])

        def draw() -> None:
            kw = {} if highlight is None else {"highlight": highlight}  # noqa: B023
            render.console.print(text, soft_wrap=soft_wrap, **kw)  # noqa: B023

        by_rich, _ = _through(monkeypatch, columns, draw, rich=True)
        mine, unused = _through(monkeypatch, columns, draw, rich=False)
        assert mine == by_rich, (text, columns)
        plain_cases += unused
    assert plain_cases > 250


@pytest.mark.parametrize("code", ["\x07", "\x08", "\x1b", "\x00", "\x7f", "\x0b", "\x0c", "\r"])
def test_control_characters_in_a_stored_name_print_as_rich_prints_them(
    monkeypatch: pytest.MonkeyPatch, code: str
) -> None:
    """rich's Text drops BEL, BS, VT, FF and CR (`rich.control.strip_control_codes`); a campaign
    or judge name stored with one must come out of a pipe as rich writes it, not with the code."""
    name = f"camp{code}aign"

    def draw() -> None:
        render.table("t", ["campaign", "jobs"], [[name, 3]])
        render.console.print(f"judge {name} has no price")

    by_rich, _ = _through(monkeypatch, 80, draw, rich=True)
    mine, _ = _through(monkeypatch, 80, draw, rich=False)
    assert mine == by_rich


def test_an_empty_line(monkeypatch: pytest.MonkeyPatch) -> None:
    by_rich, _ = _through(monkeypatch, 80, render.console.print, rich=True)
    mine, unused = _through(monkeypatch, 80, render.console.print, rich=False)
    assert mine == by_rich == "\n" and unused


def test_the_legend_under_a_table_and_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name too long for its column becomes a key with a legend line; `warn` writes to stderr."""
    long = "openai:gpt-4o-mini?temperature=0&max_tokens=512&base_url=http://127.0.0.1:8000/v1"

    def draw() -> None:
        render.table("t", ["judge", "jobs"], [[long, 3], ["sim:a", 4]])

    by_rich, _ = _through(monkeypatch, 80, draw, rich=True)
    mine, unused = _through(monkeypatch, 80, draw, rich=False)
    assert mine == by_rich and unused and f"[1] {long}\n" in mine
    for message in ("judge [b]x[/b] has no price", "judge :smile: has no price"):
        shown = []
        for made in (Console(stderr=True), None):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                monkeypatch.setattr(render.err_console, "_console", made)
                render.warn(message)
                shown.append((err.getvalue(), render.err_console._console is None))  # type: ignore[attr-defined]
        monkeypatch.setattr(render.err_console, "_console", None)
        assert shown[0][0] == shown[1][0], message
        assert shown[1][1] == (":" not in message)  # rich replaces the emoji code: 😄


def test_every_emoji_name_is_one_plain_text_leaves_to_rich() -> None:
    from rich._emoji_codes import EMOJI

    assert all(plain._EMOJI_NAME.fullmatch(name) for name in EMOJI)


ENVIRONMENTS: list[dict[str, str | None]] = [
    {},
    {"COLUMNS": "100"},
    {"COLUMNS": "7"},
    {"COLUMNS": "0"},
    {"COLUMNS": "wide"},
    {"FORCE_COLOR": ""},
    {"FORCE_COLOR": "1"},
    {"TTY_COMPATIBLE": "0", "FORCE_COLOR": "1"},
    {"TTY_COMPATIBLE": "1"},
    {"TTY_COMPATIBLE": "2", "COLUMNS": "33"},
    {"LINES": "10", "COLUMNS": "90"},
]


@pytest.mark.parametrize(
    "env", ENVIRONMENTS, ids=lambda e: ",".join(f"{k}={v}" for k, v in e.items()) or "none"
)
@pytest.mark.parametrize("stderr", [False, True], ids=["stdout", "stderr"])
def test_the_width_is_richs_where_rich_writes_plain_text(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str | None], stderr: bool
) -> None:
    for name in ("COLUMNS", "LINES", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        if value is not None:
            monkeypatch.setenv(name, value)
    buffer = io.StringIO()
    redirect = contextlib.redirect_stderr(buffer) if stderr else contextlib.redirect_stdout(buffer)
    with redirect:
        rich = Console(stderr=stderr)
        width = plain.width(stderr)
        if width is not None:
            assert not rich.is_terminal and rich.color_system is None
            assert width == rich.width
        else:  # rich styles this output, or its width is one plain text does not follow
            assert rich.is_terminal or rich.width < 10


def test_a_terminal_gets_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal rich styles tables (bold headers …): no plain layout there."""

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setattr(sys, "stdout", Terminal())
    assert plain.width(False) is None
