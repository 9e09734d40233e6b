"""The README tour runs as written.

Every ```sh block of README.md is run in order on one fresh SQLite database, in a folder where the
shared real data sits where the README says it does (`../shared/data/…`, and the SummEval files by
their bare names, as if the user had `cd`-ed into the SummEval folder). Judges named `openai:` or
`anthropic:` talk to the fake provider server through `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL`
with throwaway keys, so a campaign in the README runs exactly as typed.

Inside a block, a line starting with `$ ` is a command whose following lines (up to the next `$ `
line or the end of the block) are what it must print, character for character; a bare line is a
command that must exit 0. A block is skipped only when the line right above its fence is
`<!-- tour: skip -->` (the set-up commands and option synopses with placeholders), and a command
that is meant to fail carries `# exit N` at its end.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from judgepanel.fake.server import FakeServerProcess
from tests.conftest import REPO
from tests.helpers import cli

README = REPO / "README.md"
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


# ---------------------------------------------------------------- running the tour


SUMMEVAL_FILES = ("model_annotations.reconstructed.jsonl.gz", "articles.jsonl.gz")


@pytest.fixture
def tour_dir(tmp_path: Path, shared_data: Path) -> Path:
    """`work/` with the shared data at `../shared/data` and SummEval's files by their bare names."""
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(shared_data, target_is_directory=True)
    for name in SUMMEVAL_FILES:
        src = shared_data / "summeval" / name
        if src.exists():
            (work / name).symlink_to(src)
    return work


@pytest.mark.slow
def test_readme_tour_runs_as_written(tour_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = parse_tour(README.read_text(encoding="utf-8"))
    assert sum(len(b.steps) for b in blocks if not b.skip) > 20
    db = f"sqlite:///{tour_dir / 'tour.db'}"
    with FakeServerProcess("--seed", "5") as fake:
        monkeypatch.chdir(tour_dir)
        monkeypatch.setenv("JUDGEPANEL_DB", db)
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url + "/v1")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-tour-not-a-real-key-0123456789")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-tour-not-a-real-key-0123456789")
        monkeypatch.setenv("COLUMNS", "200")
        for block in blocks:
            if block.skip:
                continue
            for step in block.steps:
                assert step.argv[0] == "judgepanel", (
                    f"README.md:{step.line}: the tour runs judgepanel commands only; mark the block "
                    f"`<!-- tour: skip -->` if it is not part of the tour: {step.raw}"
                )
                r = cli(*step.argv[1:])
                where = f"README.md:{step.line}: {shlex.join(step.argv)}"
                assert r.code == step.expect_code, f"{where}\nexit {r.code}\n{r.stderr[-2000:]}"
                if step.expect_output is not None:
                    got = [ln.rstrip() for ln in r.stdout.rstrip("\n").splitlines()]
                    want = [ln.rstrip() for ln in step.expect_output]
                    assert got == want, f"{where}: the README shows other output"
    shutil.rmtree(tour_dir, ignore_errors=True)
    assert not os.path.exists(tour_dir)
