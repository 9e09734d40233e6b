"""Running the real promptfoo CLI for the import tests, and the config that made the kept fixture.

`write_config` writes a promptfoo config over the bundled SummEval sample's first summaries: the
`echo` provider returns each summary as the output under test, and two `llm-rubric` graders served
by the fake provider server grade it (`coherence` on a 1–5 scale named in the rubric, and a
pass/fail faithfulness rubric on a second grader model, which the fake server fails with a 500 on
the last test so promptfoo records a grader error). `promptfoo eval --repeat 2` then repeats every
test. tests/data/promptfoo/README.md names the command and version that wrote the kept file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.datasets.graded_logs import summeval_rows

VERSION = "0.121.20"  # the last promptfoo that runs on Node.js 20 (0.122 needs 22.22)
KEY = "sk-fake-promptfoo-not-a-key-0123456789"
FIXTURE = Path(__file__).resolve().parents[1] / "data" / "promptfoo" / f"results-{VERSION}.json"


def promptfoo_command() -> list[str] | None:
    """How to start promptfoo here: $JUDGEPANEL_PROMPTFOO, else `promptfoo` on the PATH (what
    .ci/run installs with npm), else None."""
    given = os.environ.get("JUDGEPANEL_PROMPTFOO")
    if given:
        return [given]
    found = shutil.which("promptfoo")
    return [found] if found else None


def config(fake_url: str, n: int = 6) -> dict[str, Any]:
    def grader(model: str) -> dict[str, Any]:
        return {"id": f"openai:chat:{model}", "config": {"apiBaseUrl": fake_url + "/v1", "apiKey": KEY}}

    rows = summeval_rows(n)
    tests = []
    for k, r in enumerate(rows):
        tests.append(
            {
                "description": f"summary {r['id']}",
                "vars": {"id": r["id"], "article": r["article"], "summary": r["summary"]},
                "assert": [
                    {
                        "type": "llm-rubric",
                        "metric": "coherence",
                        "value": "Rate the coherence of this summary on a scale from 1 (worst) to 5 (best). "
                        "The article it summarises: {{article}}",
                    },
                    {
                        "type": "llm-rubric",
                        # the fake server fails the last test's calls to this grader with a 500
                        "provider": grader("grader-big!500" if k == len(rows) - 1 else "grader-big"),
                        "value": "The summary states only facts found in this article: {{article}}",
                    },
                ],
            }
        )
    return {
        "description": "SummEval summaries graded by two llm-rubric graders on the fake server",
        "prompts": ["{{summary}}"],
        "providers": ["echo"],
        "defaultTest": {"options": {"provider": grader("grader-mini")}},
        "tests": tests,
    }


def write_config(folder: Path, fake_url: str, n: int = 6) -> Path:
    path = folder / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config(fake_url, n), sort_keys=False, allow_unicode=True))
    return path


def run(command: list[str], cfg: Path, out: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """`promptfoo eval` as the fixture was made, offline: no telemetry, no update check, no cache,
    its own config folder."""
    env = {
        **os.environ,
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_CONFIG_DIR": str(home),
        "PROMPTFOO_CACHE_ENABLED": "false",
    }
    return subprocess.run(
        [*command, "eval", "-c", str(cfg), "-o", str(out), "--repeat", "2", "--no-cache", "--no-progress-bar",
         "--max-concurrency", "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip


if __name__ == "__main__":  # regenerate the fixture: python -m tests.datasets.promptfoo_runs
    import tempfile

    from judgepanel.fake.server import FakeServer

    cmd = promptfoo_command()
    assert cmd, "no promptfoo CLI"
    with tempfile.TemporaryDirectory() as tmp, FakeServer(seed=5) as fake:
        done = run(cmd, write_config(Path(tmp), fake.url), FIXTURE, Path(tmp) / "home")
        print(done.stdout[-2000:], done.stderr[-2000:])
