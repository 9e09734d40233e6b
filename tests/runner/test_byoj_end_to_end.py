"""The issue's "done when": a campaign from a YAML file with a custom pairwise template, two
OpenAI-compatible judges on two fake servers with different keys (key_env), and an Anthropic
judge, run end to end over real HTTP; each server saw only its own judge's key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from judgepanel.fake.server import FakeServerProcess
from tests.helpers import cli
from tests.runner.conftest import DATASET, PAIRS, create_argv, tiny_db

KEYS = {
    "JP_TEST_HOST_ONE_KEY": "host-one-secret-0f1e2d3c4b5a69788796",
    "JP_TEST_HOST_TWO_KEY": "host-two-secret-a1b2c3d4e5f60718293a",
    "JP_TEST_CLAUDE_KEY": "claude-secret-99887766554433221100ff",
}
TEMPLATE = """Compare two summaries of the article.
<source>
{{ source }}
</source>
Summary A:
<candidate_a>
{{ candidate_a }}
</candidate_a>
Summary B:
<candidate_b>
{{ candidate_b }}
</candidate_b>
Reply with {"rationale": "...", "verdict": "A" | "B" | "tie"}.
"""


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[FakeServerProcess, FakeServerProcess]]:
    with FakeServerProcess("--seed", "1") as one, FakeServerProcess("--seed", "2") as two:
        yield one, two


@pytest.fixture
def db(sqlite_url: str) -> tuple[str, Engine]:
    eng = tiny_db(sqlite_url, pairs=3)
    return sqlite_url, eng


def test_a_campaign_file_panel_with_per_judge_keys_runs_end_to_end(
    db: tuple[str, Engine],
    servers: tuple[FakeServerProcess, FakeServerProcess],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, eng = db
    one, two = servers
    one.reset()
    two.reset()
    for k, v in KEYS.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("JUDGEPANEL_KEY_ENVS", ",".join(KEYS))  # issue 29: the user allows their own names
    for k in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
    ):
        monkeypatch.delenv(k, raising=False)
    (tmp_path / "judge.j2").write_text(TEMPLATE, encoding="utf-8")
    (tmp_path / "panel.yaml").write_text(
        f"""\
name: byoj
dataset: {DATASET}
pairs: {PAIRS}
protocol: pairwise
templates:
  pairwise: judge.j2
judges:
  - "openai:host-one-model?base_url={one.url}/v1&key_env=JP_TEST_HOST_ONE_KEY&temperature=0"
  - "openai:host-two-model?base_url={two.url}/v1&key_env=JP_TEST_HOST_TWO_KEY&temperature=0"
  - "anthropic:claude-judge?base_url={two.url}&key_env=JP_TEST_CLAUDE_KEY&max_tokens=400"
""",
        encoding="utf-8",
    )
    made = cli("campaign", "create", "--from", str(tmp_path / "panel.yaml"), "--json", db=url).json()
    assert made["jobs"] == 3 * 3 * 2
    run = cli("campaign", "run", "byoj", "--json", db=url)
    assert run.code == 0, run.stderr
    summary = run.json()
    assert (summary["status"], summary["done"], summary["failed"]) == ("done", 18, 0)

    def keys_seen(server: FakeServerProcess, path: str) -> set[str]:
        seen = set()
        for r in server.requests():
            if r["path"] != path:
                continue
            h = r["headers"]
            seen.add(h.get("x-api-key") or h.get("authorization", "").removeprefix("Bearer "))
        return seen

    assert keys_seen(one, "/v1/chat/completions") == {KEYS["JP_TEST_HOST_ONE_KEY"]}
    assert keys_seen(two, "/v1/chat/completions") == {KEYS["JP_TEST_HOST_TWO_KEY"]}
    assert keys_seen(two, "/v1/messages") == {KEYS["JP_TEST_CLAUDE_KEY"]}
    with eng.connect() as c:
        verdicts = c.execute(
            text(
                "SELECT j.provider, COUNT(*) FROM verdict v JOIN job ON job.id = v.job_id "
                "JOIN judge j ON j.id = job.judge_id WHERE v.parse_status = 'ok' GROUP BY j.provider"
            )
        ).all()
        hashes = set(c.execute(text("SELECT DISTINCT template_hash FROM request")).scalars())
        dump = "\n".join(
            str(row)
            for t in ("request", "response", "judge", "campaign")
            for row in c.execute(text(f"SELECT * FROM {t}"))
        )
    assert dict(verdicts) == {"openai": 12, "anthropic": 6}
    assert len(hashes) == 1
    for secret in KEYS.values():
        assert secret not in dump  # only the variables' names are stored


def test_a_missing_key_variable_is_one_line_before_any_call(
    db: tuple[str, Engine],
    servers: tuple[FakeServerProcess, FakeServerProcess],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, _ = db
    one, _two = servers
    one.reset()
    monkeypatch.delenv("JP_TEST_UNSET_KEY", raising=False)
    monkeypatch.setenv("JUDGEPANEL_KEY_ENVS", "JP_TEST_UNSET_KEY")  # issue 29: allowed locally
    judge = f"openai:m?base_url={one.url}/v1&key_env=JP_TEST_UNSET_KEY"
    made = cli(*create_argv("c", judge, protocol="pairwise", extra=("--pairs", PAIRS)), db=url)
    assert made.code == 0
    run = cli("campaign", "run", "c", db=url)
    assert run.code == 2
    assert run.stderr.strip().count("\n") == 0 and "key_env JP_TEST_UNSET_KEY is not set" in run.stderr
    assert one.stats()["requests"] == 0
