"""`key_env` through the CLI and the real SDKs: a spec naming a variable that is not a model-server
credential is refused at `campaign create` (one line, exit 2, nothing written, nothing sent), a
value that turned into a database URL is refused before any call, and `campaign create` /
`campaign plan` say which variable each judge's key comes from and which host it goes to."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from judgepanel.fake.server import FakeServerProcess
from judgepanel.store.models import Campaign
from tests.helpers import cli
from tests.runner.conftest import create_argv, tiny_db


@pytest.fixture
def db(sqlite_url: str) -> tuple[str, Engine]:
    eng = tiny_db(sqlite_url, n_groups=1, per_group=2)
    return sqlite_url, eng


def _chat(fake: FakeServerProcess) -> int:
    return int(fake.stats()["by_path"].get("/v1/chat/completions", 0))


@pytest.mark.parametrize("name", ["AWS_SECRET_ACCESS_KEY", "JUDGEPANEL_DB", "DATABASE_URL", "PGPASSWORD"])
def test_a_judge_cannot_send_a_non_model_secret(
    name: str, db: tuple[str, Engine], fake: FakeServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, eng = db
    value = "postgresql://panel:s3cret-pw-123@db.internal/panel"
    monkeypatch.setenv(name, value)
    before = _chat(fake)
    r = cli(*create_argv("leak", f"openai:m?base_url={fake.url}/v1&key_env={name}"), db=url)
    assert r.code == 2 and r.stderr.count("\n") == 1 and name in r.stderr and value not in r.stderr + r.stdout
    with eng.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Campaign)).scalar() == 0
    assert _chat(fake) == before


def test_a_key_that_became_a_database_url_is_refused_before_any_call(
    db: tuple[str, Engine], fake: FakeServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = db
    monkeypatch.setenv("JUDGEPANEL_KEY_ENVS", "LOCAL_KEY")  # issue 29: allowed locally
    monkeypatch.setenv("LOCAL_KEY", "local-key-0123456789")
    assert cli(*create_argv("later", f"openai:m?base_url={fake.url}/v1&key_env=LOCAL_KEY"), db=url).code == 0
    monkeypatch.setenv("LOCAL_KEY", "postgresql://panel:s3cret-pw-123@db.internal/panel")
    before = _chat(fake)
    r = cli("campaign", "run", "later", "--json", db=url)
    assert r.code == 2 and r.stderr.count("\n") == 1 and "LOCAL_KEY" in r.stderr and "s3cret" not in r.stderr
    assert _chat(fake) == before


def test_create_and_plan_show_each_judges_key_variable_and_host(
    db: tuple[str, Engine], fake: FakeServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = db
    monkeypatch.setenv("OPENAI_API_KEY", "sk-ambient-key-0123456789abcdef")
    monkeypatch.setenv("TOGETHER_API_KEY", "tg-together-key-0123456789abcdef")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    host = fake.url.removeprefix("http://")
    judges = [
        f"openai:a?base_url={fake.url}/v1&key_env=TOGETHER_API_KEY",
        f"openai:b?base_url={fake.url}/v1",
        f"anthropic:c?base_url={fake.url}",
        "sim:d",
    ]
    want = [
        {"judge": f"openai:a?base_url={fake.url}/v1", "key_env": "TOGETHER_API_KEY", "host": host},
        {"judge": f"openai:b?base_url={fake.url}/v1", "key_env": "OPENAI_API_KEY", "host": host},
        {"judge": f"anthropic:c?base_url={fake.url}", "key_env": None, "host": host},
        {"judge": "sim:d", "key_env": None, "host": "(simulated, no network)"},
    ]
    created = cli(*create_argv("shown", *judges), "--json", db=url).json()
    assert created["judge_keys"] == want
    planned = cli("campaign", "plan", "shown", "--json", db=url).json()
    assert sorted(planned["judge_keys"], key=lambda k: str(k["judge"])) == sorted(
        want, key=lambda k: str(k["judge"])
    )
    text = cli("campaign", "plan", "shown", db=url)
    again = cli(*create_argv("shown2", *judges), db=url)
    for out in (text.stdout, again.stdout):
        assert f"key from $TOGETHER_API_KEY -> {host}" in out
        assert f"key from $OPENAI_API_KEY -> {host}" in out
        assert "0123456789abcdef" not in out


@pytest.mark.parametrize("name", ["ACTIONS_RUNTIME_TOKEN", "NODE_AUTH_TOKEN", "CLOUDFLARE_API_TOKEN"])
def test_a_campaign_file_cannot_mail_a_ci_secret_to_its_host(
    name: str,
    db: tuple[str, Engine],
    fake: FakeServerProcess,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """Issue 29 §4: a campaign file from a pull request, run in CI where these variables are set,
    named one as its judge's `key_env` and sent it to the host its `base_url` named. `key_env` is
    now an allow-list: refused at `campaign create --from` (one line, exit 2, nothing written,
    nothing sent) unless the user allows the name where judgepanel runs."""
    url, eng = db
    secret = "ci-runtime-secret-0123456789abcdef"
    monkeypatch.setenv(name, secret)
    monkeypatch.delenv("JUDGEPANEL_KEY_ENVS", raising=False)
    (tmp_path / "pr.yaml").write_text(
        f"name: pr\ndataset: tiny\nprotocol: pointwise\n"
        f'judges:\n  - "openai:m?base_url={fake.url}/v1&key_env={name}"\n'
    )
    before = _chat(fake)
    r = cli("campaign", "create", "--from", str(tmp_path / "pr.yaml"), db=url)
    assert r.code == 2 and r.stderr.count("\n") == 1, r.stderr
    assert name in r.stderr and "JUDGEPANEL_KEY_ENVS" in r.stderr and secret not in r.stderr + r.stdout
    with eng.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Campaign)).scalar() == 0
    assert _chat(fake) == before
    # the user, not the file, can allow it
    monkeypatch.setenv("JUDGEPANEL_KEY_ENVS", name)
    assert cli("campaign", "create", "--from", str(tmp_path / "pr.yaml"), db=url).code == 0
