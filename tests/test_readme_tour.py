"""The README and the guides in docs/ run as written.

Every ```sh block of the pages in `TOUR` is run, page after page in that order, on one fresh
SQLite database, in a folder where the shared real data sits where the guides say it does
(`../shared/data/…`, and the SummEval files by their bare names, as if the user had `cd`-ed into
the SummEval folder) and the bundled sample under `judgepanel/datasets/samples/`, as in a
checkout. Judges named `openai:` or `anthropic:` talk to the fake provider server through
`OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` with throwaway keys, so a campaign in the guides runs
exactly as typed. Every Markdown page under docs/ must be listed in `TOUR` (a page that is not
fails `test_every_page_is_in_the_tour`), so a new guide cannot escape the tour.

Inside a block, a line starting with `$ ` is a command whose following lines (up to the next `$ `
line or the end of the block) are what it must print — stdout and stderr together, as a terminal
shows them; a bare line is a command that must exit 0. A block is skipped only when the line
right above its fence is `<!-- tour: skip -->` (the set-up commands and option synopses with
placeholders), and a command that is meant to fail carries `# exit N` at its end.

How printed output is compared (`compare_output`), line by line, same number of lines:

* a line that is a JSON object or array on both sides is compared as JSON: the same keys in the
  same order, the same list lengths, strings, booleans and nulls exactly, integers exactly, and
  other numbers at a relative tolerance of `REL_TOL` = 1e-9 (absolute `ABS_TOL` = 1e-12 near 0),
  because floating-point results may differ in their last bits between CPUs and BLAS builds
  (issue 17 §1: a BCa interval printed `0.20130531973760105` here and `0.20130531973760127` on
  another machine);
* any other line is compared as text: the words exactly, and each free-standing number in it
  (not part of a word such as `se1000`) at the same tolerance (integers exactly);
* `…` in an expected line stands for any text on that line (such a line is compared as text, even
  when it is JSON) — only for what honestly varies from run to run (elapsed seconds, how many
  identical prompts happened to be in flight at once) and for what must not be hard-coded in a
  guide (the database's migration revision, which every new migration would make stale).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from judgepanel.cli import main
from judgepanel.fake.server import FakeServerProcess
from tests.conftest import REPO

# The pages the tour runs, in this order, on one database: each guide may use what the pages
# before it created (docs/README.md says so to the reader).
TOUR = (
    "README.md",
    "docs/README.md",
    "docs/offline.md",
    "docs/data.md",
    "docs/campaigns.md",
    "docs/conditions.md",
    "docs/agreement.md",
    "docs/validation.md",
    "docs/annotation.md",
    "docs/imports.md",
    "docs/repair.md",
    "docs/alignment.md",
    "docs/real-judges.md",
    "docs/reports.md",
    "docs/database.md",
    "docs/speed.md",
)
REL_TOL = 1e-9
ABS_TOL = 1e-12
WILDCARD = "…"

FENCE = re.compile(
    r"(?P<marker><!--\s*tour:\s*(?P<mode>[\w-]+)\s*-->\s*\n)?```sh\n(?P<body>.*?)^```", re.S | re.M
)
EXIT = re.compile(r"#\s*exit\s+(\d+)\s*$")


@dataclass
class Step:
    line: int
    argv: list[str]
    expect_code: int = 0
    expect_output: list[str] | None = None
    raw: str = ""


@dataclass
class Block:
    line: int
    skip: bool
    steps: list[Step] = field(default_factory=list)


def _commands(text: str) -> Iterator[tuple[str, int]]:
    """Logical command lines of a block (backslash continuations joined), with their offsets."""
    buf, start = "", 0
    for i, ln in enumerate(text.splitlines()):
        if not buf:
            start = i
        if ln.rstrip().endswith("\\"):
            buf += ln.rstrip()[:-1] + " "
            continue
        yield buf + ln, start
        buf = ""
    if buf:
        yield buf, start


def _split(command: str, line: int) -> list[Step]:
    """`a && b` into two steps; `# comment` dropped; `# exit N` kept as the expected exit code."""
    code = 0
    m = EXIT.search(command)
    if m:
        code = int(m.group(1))
    words = shlex.split(command, comments=True)
    steps, cur = [], []
    for w in [*words, "&&"]:
        if w == "&&":
            if cur:
                steps.append(Step(line=line, argv=cur, expect_code=code, raw=command))
            cur = []
        else:
            cur.append(w)
    return steps


def parse_tour(text: str) -> list[Block]:
    blocks = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start("body")) + 1
        block = Block(line=line, skip=(m.group("mode") == "skip"))
        body = m.group("body")
        current: Step | None = None
        for cmd, off in _commands(body):
            if cmd.startswith("$ "):
                steps = _split(cmd[2:], line + off)
                block.steps.extend(steps)
                current = steps[-1]
                current.expect_output = []
            elif current is not None and current.expect_output is not None:
                current.expect_output.append(cmd)
            elif cmd.strip() and not cmd.lstrip().startswith("#"):
                block.steps.extend(_split(cmd, line + off))
        blocks.append(block)
    return blocks


def test_parser_reads_blocks_outputs_and_markers() -> None:
    text = (
        "intro\n```sh\njudgepanel a --x 1   # note\njudgepanel b \\\n  --y 'q r' && judgepanel c # exit 2\n```\n"
        "<!-- tour: skip -->\n```sh\nmake demo\n```\n"
        '```sh\n$ judgepanel d\nline one\n{"k": 1}\n$ judgepanel e\n```\n'
    )
    blocks = parse_tour(text)
    assert [b.skip for b in blocks] == [False, True, False]
    assert [s.argv for s in blocks[0].steps] == [
        ["judgepanel", "a", "--x", "1"],
        ["judgepanel", "b", "--y", "q r"],
        ["judgepanel", "c"],
    ]
    assert [s.expect_code for s in blocks[0].steps] == [0, 2, 2]
    assert blocks[2].steps[0].expect_output == ["line one", '{"k": 1}']
    assert blocks[2].steps[1].expect_output == []


# ---------------------------------------------------------------- comparing printed output

_NUMBER = r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
# a number standing on its own: not glued to a word (`se1000`, `r1`) or to a dotted token
_FREE_NUMBER = re.compile(rf"(?<![\w.]){_NUMBER}(?!\w|\.\d)")
_INTEGER = re.compile(r"[-+]?\d+")


def _same_number_text(want: str, got: str) -> bool:
    if _INTEGER.fullmatch(want) and _INTEGER.fullmatch(got):
        return want == got
    return math.isclose(float(want), float(got), rel_tol=REL_TOL, abs_tol=ABS_TOL)


def _json_difference(want: Any, got: Any, where: str) -> str | None:
    """Where `got` differs from `want` (None when they agree), by the rules in the docstring."""
    if isinstance(want, bool) or isinstance(got, bool):
        return None if want is got else f"{where}: {got!r} where the page shows {want!r}"
    if isinstance(want, int) and isinstance(got, int):
        return None if want == got else f"{where}: {got!r} where the page shows {want!r}"
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        if math.isnan(want) and math.isnan(got):
            return None
        if math.isclose(want, got, rel_tol=REL_TOL, abs_tol=ABS_TOL):
            return None
        return f"{where}: {got!r} where the page shows {want!r} (beyond rel {REL_TOL:g})"
    if isinstance(want, dict) and isinstance(got, dict):
        if list(want) != list(got):
            missing = [k for k in want if k not in got]
            extra = [k for k in got if k not in want]
            return f"{where}: keys differ (missing {missing}, extra {extra}, or another order)"
        for k in want:
            diff = _json_difference(want[k], got[k], f"{where}.{k}")
            if diff:
                return diff
        return None
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return f"{where}: {len(got)} entries where the page shows {len(want)}"
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            diff = _json_difference(w, g, f"{where}[{i}]")
            if diff:
                return diff
        return None
    if type(want) is not type(got) or want != got:
        return f"{where}: {got!r} where the page shows {want!r}"
    return None


def _as_json(line: str) -> Any:
    s = line.strip()
    if not (s.startswith("{") or s.startswith("[")):
        return None
    try:
        return json.loads(s)
    except ValueError:
        return None


def _text_difference(want: str, got: str) -> str | None:
    pattern, numbers, pos = [], [], 0

    def literal(text: str) -> str:
        return ".*?".join(re.escape(part) for part in text.split(WILDCARD))

    for m in _FREE_NUMBER.finditer(want):
        pattern += [literal(want[pos : m.start()]), f"({_NUMBER})"]
        numbers.append(m.group())
        pos = m.end()
    pattern.append(literal(want[pos:]))
    m = re.fullmatch("".join(pattern), got, re.S)
    if m is None:
        return f"text differs:\n  page: {want}\n  got:  {got}"
    for w, g in zip(numbers, m.groups(), strict=True):
        if not _same_number_text(w, g):
            return f"number {g} where the page shows {w}:\n  page: {want}\n  got:  {got}"
    return None


def compare_output(want: list[str], got: list[str]) -> str | None:
    """None when `got` is what the page shows in `want`, else the first difference."""
    want = [ln.rstrip() for ln in want]
    got = [ln.rstrip() for ln in got]
    if len(want) != len(got):
        shown = "\n".join(got)
        return f"{len(got)} lines printed where the page shows {len(want)}:\n{shown}"
    for i, (w, g) in enumerate(zip(want, got, strict=True), 1):
        w_json = None if WILDCARD in w else _as_json(w)
        if w_json is not None:
            g_json = _as_json(g)
            if g_json is None:
                return f"line {i}: the page shows JSON, the command printed: {g}"
            diff = _json_difference(w_json, g_json, "$")
        else:
            diff = _text_difference(w, g)
        if diff:
            return f"line {i}: {diff}"
    return None


BCA_LINE = (
    '{"metric": "alpha", "value": 0.22143648467446253, "n_units": 1000, "ok": true, "note": null, '
    '"ci": [0.20130531973760105, 0.2459859282166368], "raters": ["expert_1", "turker_1"]}'
)


def test_comparer_accepts_last_bit_differences_in_numbers() -> None:
    # the two intervals of issue 17 §1: the same BCa computation on two machines
    other_machine = BCA_LINE.replace("0.20130531973760105", "0.20130531973760127").replace(
        "0.2459859282166368", "0.24598592821663695"
    )
    assert other_machine != BCA_LINE
    assert compare_output([BCA_LINE], [other_machine]) is None
    assert (
        compare_output(
            ["rho = 0.20130531973760105 over 1000 units"], ["rho = 0.20130531973760127 over 1000 units"]
        )
        is None
    )
    assert compare_output(["x 0.2013053197376"], ["x 0.2013053197377"]) is None  # 5e-13 relative
    # near zero the absolute tolerance decides
    assert compare_output(['{"d": 0.0}'], ['{"d": 4e-17}']) is None
    assert compare_output(["delta 0.0"], ["delta -3e-17"]) is None


def test_comparer_refuses_real_differences() -> None:
    changed_number = BCA_LINE.replace("0.20130531973760105", "0.20130541973760105")  # 5e-7 relative
    assert "$.ci[0]" in (compare_output([BCA_LINE], [changed_number]) or "")
    changed_string = BCA_LINE.replace('"turker_1"', '"turker_2"')
    assert "$.raters[1]" in (compare_output([BCA_LINE], [changed_string]) or "")
    missing_key = BCA_LINE.replace('"n_units": 1000, ', "")
    assert "missing ['n_units']" in (compare_output([BCA_LINE], [missing_key]) or "")
    extra_key = BCA_LINE.replace('"ok": true', '"ok": true, "new": 1')
    assert "extra ['new']" in (compare_output([BCA_LINE], [extra_key]) or "")
    reordered = '{"b": 1, "a": 2}'
    assert compare_output(['{"a": 2, "b": 1}'], [reordered]) is not None
    assert compare_output([BCA_LINE, "done"], [BCA_LINE]) is not None  # a line fewer
    assert compare_output([BCA_LINE], ["not json"]) is not None
    # booleans, nulls and integers are exact; True is not 1
    assert compare_output(['{"ok": true}'], ['{"ok": 1}']) is not None
    assert compare_output(['{"note": null}'], ['{"note": 0}']) is not None
    assert compare_output(['{"n": 1000}'], ['{"n": 1001}']) is not None
    # text: the words exactly, the numbers at the tolerance, integers exactly
    assert compare_output(["summeval: 1600 items"], ["summeval: 1601 items"]) is not None
    assert compare_output(["summeval: 1600 items"], ["summeval: 1600 item"]) is not None
    assert compare_output(["database at revision 0002"], ["database at revision 0004"]) is not None
    assert compare_output(["database at revision 0004"], ["database at revision 4"]) is not None
    assert compare_output(["α 0.221 [0.201, 0.246]"], ["α 0.221 [0.201, 0.247]"]) is not None
    assert compare_output(["pair set se1000"], ["pair set se1001"]) is not None


def test_comparer_wildcard_matches_only_within_its_line() -> None:
    want = ["database at revision …", "campaign c: done; … from cache, errors: none; spent 0.0000 USD in … s"]
    got = [
        "database at revision 0004",
        "campaign c: done; 4796 calls, 4 from cache, errors: none; spent 0.0000 USD in 10.5 s",
    ]
    assert compare_output(want, got) is None
    assert compare_output(want, [got[0], got[1].replace("none", "1 rate_limit")]) is not None
    assert compare_output(want, [got[0], got[1].replace("0.0000 USD", "0.0100 USD")]) is not None
    assert compare_output(["database at revision …"], ["database at revision 0004", "extra line"]) is not None
    current = ['{"current": "…", "head": "…", "up_to_date": true}']
    assert compare_output(current, ['{"current": "0004", "head": "0004", "up_to_date": true}']) is None
    assert compare_output(current, ['{"current": "0002", "head": "0004", "up_to_date": false}']) is not None


# ---------------------------------------------------------------- running the tour


def test_every_page_is_in_the_tour() -> None:
    pages = {p.relative_to(REPO).as_posix() for p in (REPO / "docs").rglob("*.md")}
    listed = {p for p in TOUR if p.startswith("docs/")}
    assert pages - listed == set(), "guides in docs/ the tour does not run: add them to TOUR"
    assert listed - pages == set(), "TOUR names pages that do not exist"
    assert len(TOUR) == len(set(TOUR))
    runnable = {
        p: sum(len(b.steps) for b in parse_tour((REPO / p).read_text(encoding="utf-8")) if not b.skip)
        for p in TOUR
    }
    assert runnable["README.md"] >= 8, runnable


_LINK = re.compile(r"\]\((?!https?://|mailto:)([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6} (.+)$", re.M)


def _anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in _HEADING.findall(text)}


def test_links_between_pages_resolve() -> None:
    broken = []
    for page in TOUR:
        path = REPO / page
        for target in _LINK.findall(path.read_text(encoding="utf-8")):
            file, _, anchor = target.partition("#")
            dest = (path.parent / file).resolve() if file else path
            if not dest.exists():
                broken.append(f"{page}: {target}")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest.read_text(encoding="utf-8")):
                broken.append(f"{page}: {target} (no such heading)")
    assert broken == []


SUMMEVAL_FILES = ("model_annotations.reconstructed.jsonl.gz", "articles.jsonl.gz")


@pytest.fixture
def tour_dir(tmp_path: Path, shared_data: Path) -> Path:
    """`work/` with the shared data at `../shared/data`, SummEval's files by their bare names and
    the bundled sample where a checkout has it."""
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(shared_data, target_is_directory=True)
    for name in SUMMEVAL_FILES:
        src = shared_data / "summeval" / name
        if src.exists():
            (work / name).symlink_to(src)
    # the grader runs docs/imports.md imports, where a checkout keeps them
    (work / "docs").mkdir()
    (work / "docs" / "examples").symlink_to(REPO / "docs" / "examples", target_is_directory=True)
    samples = work / "judgepanel" / "datasets"
    samples.mkdir(parents=True)
    (samples / "samples").symlink_to(REPO / "judgepanel" / "datasets" / "samples", target_is_directory=True)
    return work


# JUDGEPANEL_TOUR_UPDATE=1: write what the commands printed into the pages instead of failing (for a
# maintainer after a deliberate change of output; the diff is reviewed, the wildcards put back)
UPDATE = bool(os.environ.get("JUDGEPANEL_TOUR_UPDATE"))


def _rewrite(updates: list[tuple[str, int, list[str]]]) -> None:
    by_page: dict[str, list[tuple[int, list[str]]]] = {}
    for page, line, printed in updates:
        by_page.setdefault(page, []).append((line, printed))
    for page, items in by_page.items():
        path = REPO / page
        lines = path.read_text(encoding="utf-8").split("\n")
        for line, printed in sorted(items, reverse=True):
            i = line - 1
            while lines[i].rstrip().endswith("\\"):
                i += 1
            j = i + 1
            while j < len(lines) and not lines[j].startswith("$ ") and not lines[j].startswith("```"):
                j += 1
            lines[i + 1 : j] = printed
        path.write_text("\n".join(lines), encoding="utf-8")


def run_as_terminal(argv: list[str]) -> tuple[int, str]:
    """The CLI in-process, with stdout and stderr in one stream, as a terminal shows them."""
    buf = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return code, buf.getvalue()


@pytest.mark.slow
def test_readme_and_guides_run_as_written(tour_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pages = [(page, parse_tour((REPO / page).read_text(encoding="utf-8"))) for page in TOUR]
    updates: list[tuple[str, int, list[str]]] = []
    db = f"sqlite:///{tour_dir / 'tour.db'}"
    with FakeServerProcess("--seed", "5") as fake:
        monkeypatch.chdir(tour_dir)
        monkeypatch.setenv("JUDGEPANEL_DB", db)
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url + "/v1")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-tour-not-a-real-key-0123456789")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-tour-not-a-real-key-0123456789")
        monkeypatch.setenv("COLUMNS", "200")
        # the CLI's rich consoles read COLUMNS when first used: one made by an earlier test in this
        # process (80 columns) would wrap the pages' long lines, so the tour starts fresh ones
        from judgepanel.cli import render

        for lazy in (render.console, render.err_console):
            monkeypatch.setattr(lazy, "_console", None)
        for page, blocks in pages:
            for block in blocks:
                if block.skip:
                    continue
                for step in block.steps:
                    assert step.argv[0] == "judgepanel", (
                        f"{page}:{step.line}: the tour runs judgepanel commands only; mark the block "
                        f"`<!-- tour: skip -->` if it is not part of the tour: {step.raw}"
                    )
                    code, printed = run_as_terminal(step.argv[1:])
                    where = f"{page}:{step.line}: {shlex.join(step.argv)}"
                    assert code == step.expect_code, f"{where}\nexit {code}\n{printed[-2000:]}"
                    if step.expect_output is not None:
                        diff = compare_output(step.expect_output, printed.rstrip("\n").splitlines())
                        if diff is not None and UPDATE:
                            updates.append((page, step.line, printed.rstrip("\n").splitlines()))
                            continue
                        assert diff is None, f"{where}: the page shows other output; {diff}"
    if updates:
        _rewrite(updates)
        pytest.fail(f"JUDGEPANEL_TOUR_UPDATE: rewrote {len(updates)} expected outputs; review the diff")
    shutil.rmtree(tour_dir, ignore_errors=True)
    assert not os.path.exists(tour_dir)
