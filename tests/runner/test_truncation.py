"""Replies cut at the output cap: the advice says what helps a rambling model (a lower cap, a
shorter rationale, a lower temperature), never "a larger max_tokens"; and such jobs are not re-asked
by `retry-parse-failures` (each re-ask pays the whole cap again) unless `--truncated` says so. The
real SDKs against the fake server's `length` fault, through the CLI."""

from __future__ import annotations

from sqlalchemy import Engine, select

from judgepanel.fake.server import FakeServerProcess
from judgepanel.store.engine import make_engine
from judgepanel.store.migrate import upgrade
from judgepanel.store.models import Job
from tests.helpers import cli
from tests.runner.conftest import create_argv, load_tiny


def _chat(fake: FakeServerProcess) -> int:
    by_path = fake.stats()["by_path"]
    return int(by_path.get("/v1/chat/completions", 0) + by_path.get("/v1/messages", 0))


def test_truncated_replies_get_useful_advice_and_are_not_re_asked_by_default(
    sqlite_url: str, fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    eng: Engine = make_engine(sqlite_url)
    upgrade(eng)
    load_tiny(eng, n_groups=1, per_group=2)
    judges = [
        f"openai:ramble!length?base_url={fake.url}/v1",
        f"anthropic:ramble!length?base_url={fake.url}",
        f"openai:garble!parse_error_rate=1?base_url={fake.url}/v1&structured=off",
    ]
    assert cli(*create_argv("cut", *judges), db=sqlite_url).code == 0
    ran = cli("campaign", "run", "cut", "--json", db=sqlite_url)
    summary = ran.json(code=3)
    assert summary["failed"] == 6
    advice = next(w for w in summary["warnings"] if "cut at the output cap" in w)
    assert "larger max_tokens= rarely helps" in advice and "lower the cap" in advice
    assert "shorter rationale" in advice and "temperature" in advice
    assert "give the judge a larger max_tokens" not in ran.stdout + ran.stderr
    with eng.connect() as conn:
        classes = sorted(c for c in conn.execute(select(Job.error_class)).scalars())
    truncated = classes.count("truncated")
    assert truncated >= 4 and classes.count("parse") == 6 - truncated

    before = _chat(fake)
    again = cli("campaign", "retry-parse-failures", "cut", "--json", db=sqlite_url).json(code=3)
    assert again["calls"] == 6 - truncated == _chat(fake) - before  # only the unreadable ones
    before = _chat(fake)
    forced = cli("campaign", "retry-parse-failures", "cut", "--truncated", "--json", db=sqlite_url).json(
        code=3
    )
    assert forced["calls"] >= truncated and _chat(fake) - before == forced["calls"]
    eng.dispose()


def test_a_cap_that_cannot_hold_any_answer_is_named_and_lowering_it_is_not_advised(
    sqlite_url: str, fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    # issue 34: `max_tokens=6` cannot hold even `{"rationale":"","score":1}`; "lower the cap" was
    # the advice, which cannot help
    eng: Engine = make_engine(sqlite_url)
    upgrade(eng)
    load_tiny(eng, n_groups=1, per_group=2)
    tiny = f"openai:tiny!length?base_url={fake.url}/v1&max_tokens=6"
    roomy = f"openai:roomy!length?base_url={fake.url}/v1&max_tokens=300"
    assert cli(*create_argv("six", tiny), db=sqlite_url).code == 0
    summary = cli("campaign", "run", "six", "--json", db=sqlite_url).json(code=3)
    advice = next(w for w in summary["warnings"] if "cut at the output cap" in w)
    assert "max_tokens=6 cannot hold even the shortest answer" in advice
    assert "about 7 tokens" in advice and "at least 7" in advice
    assert "lower the cap" not in advice and "rarely helps" not in advice
    # a cap that can hold an answer keeps the advice for a rambling model
    assert cli(*create_argv("roomy", roomy), db=sqlite_url).code == 0
    other = cli("campaign", "run", "roomy", "--json", db=sqlite_url).json(code=3)
    advice = next(w for w in other["warnings"] if "cut at the output cap" in w)
    assert "lower the cap" in advice and "cannot hold" not in advice
    eng.dispose()
