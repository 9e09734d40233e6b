"""`make test-real`'s study step: the commands of docs/real-judges.md (the blocks marked
`<!-- real: study -->`, which the guides' tour skips), run as written by bash against the local
model server, in a folder where `../shared/data` is the shared data. The model's figures are not
compared (they are the page's measurements, not a contract); every command must succeed, and what
the page's tables rest on is checked: every job classified, the study's JSON readable. Each
block's output, and the study's database, are kept in `$JUDGEPANEL_STUDY_OUT` (default: the
test's temporary folder)."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.real.conftest import KEY, ROOT, LocalModel, assert_every_job_classified

pytestmark = pytest.mark.real

PAGE = ROOT / "docs" / "real-judges.md"
BLOCK = re.compile(
    r"<!--\s*real:\s*study\s*-->\s*\n<!--\s*tour:\s*skip\s*-->\s*\n```sh\n(?P<body>.*?)^```", re.S | re.M
)


def study_blocks(text: str) -> list[str]:
    return [m.group("body") for m in BLOCK.finditer(text)]


def test_the_page_marks_its_study_blocks() -> None:
    blocks = study_blocks(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) == 3 and all("judgepanel" in b for b in blocks)


def test_the_study_runs_as_written(llm: LocalModel, tmp_path: Path) -> None:
    out_dir = Path(os.environ.get("JUDGEPANEL_STUDY_OUT") or tmp_path / "study-out")
    out_dir.mkdir(parents=True, exist_ok=True)
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "shared").symlink_to(ROOT.parent / "shared")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "LLM_PORT": str(llm.port),
        "OPENAI_API_KEY": KEY,
    }
    env.pop("OPENAI_BASE_URL", None)
    for k, body in enumerate(study_blocks(PAGE.read_text(encoding="utf-8"))):
        ran = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", body], cwd=work, env=env, capture_output=True, text=True
        )
        (out_dir / f"block{k}.out").write_text(
            ran.stdout + "\n--- stderr ---\n" + ran.stderr, encoding="utf-8"
        )
        assert ran.returncode == 0, (k, ran.stderr[-2000:])
        for line in ran.stdout.splitlines():
            if line.startswith("{"):
                json.loads(line)  # every --json output is one readable object
    db = f"sqlite:///{work / 'real.db'}"
    for camp in ("real-cond", "real-mt"):
        assert_every_job_classified(db, camp)
    # the database too, for figures the page's tables do not show (scores per condition, latencies)
    (out_dir / "real.db").unlink(missing_ok=True)
    con = sqlite3.connect(work / "real.db")
    try:
        con.execute("VACUUM INTO ?", (str(out_dir / "real.db"),))
    finally:
        con.close()
    print(f"study outputs in {out_dir}")
