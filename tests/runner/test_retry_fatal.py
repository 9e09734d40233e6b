"""Failed jobs are re-asked by name of what failed them, and every run and `campaign status` says
which command does it. A job refused as `fatal` (a 401 for a wrong key, a 404 model) had no way
back into a campaign: a plain run skips failed jobs and `--retry-failed` leaves `fatal` out, so a
campaign run once with a mistyped key stayed failed for good. `--retry-fatal` re-asks them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from judgepanel.fake.server import FakeServer
from tests.helpers import cli
from tests.runner.conftest import create_argv, tiny_db


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(seed=11) as fake:
        yield fake


def _calls(fake: FakeServer) -> int:
    return int(fake.stats()["by_path"].get("/v1/chat/completions", 0))


@pytest.mark.parametrize("batch", [False, True], ids=["realtime", "batch"])
def test_jobs_refused_as_fatal_are_re_asked_by_retry_fatal_only(
    sqlite_url: str, server: FakeServer, keys_env: dict[str, str], batch: bool
) -> None:
    tiny_db(sqlite_url, n_groups=1, per_group=4).dispose()
    judge = f"openai:judge?base_url={server.url}/v1"
    assert cli(*create_argv("k", judge), db=sqlite_url).code == 0
    server.faults = {"401": 1.0}  # the key is refused until it is fixed
    first = cli("campaign", "run", "k", "--json", db=sqlite_url)
    out = first.json(code=3)
    jobs = out["jobs"]
    assert (out["failed"], out["errors"]) == (jobs, {"fatal": jobs}), out
    advice = [line for line in first.stderr.splitlines() if "--retry-fatal" in line]
    assert len(advice) == 1, first.stderr
    assert advice[0].startswith(
        f'`campaign run k --retry-fatal` re-asks the {jobs} refused as fatal (the last: "'
    )
    assert "HTTP 401" in advice[0] and advice[0].endswith(
        '"), once what their error names is fixed (the key, the model, the request)'
    ), advice[0]
    status = cli("campaign", "status", "k", db=sqlite_url)
    assert status.code == 0 and f"fatal {jobs}" in status.stdout and "--retry-fatal" in status.stdout
    server.faults = {}  # the key fixed
    flags = ("--batch", "--poll-interval", "0.1") if batch else ()
    asked = _calls(server)
    for plain in (cli("campaign", "run", "k", "--json", *flags, db=sqlite_url),
                  cli("campaign", "run", "k", "--json", "--retry-failed", *flags, db=sqlite_url)):  # fmt: skip
        assert plain.json(code=3)["failed"] == jobs  # neither re-asks a fatal refusal
    assert _calls(server) == asked and server.stats()["batches"]["created"] == {}
    again = cli("campaign", "run", "k", "--json", "--retry-fatal", *flags, db=sqlite_url).json()
    assert (again["status"], again["done"], again["failed"]) == ("done", jobs, 0)
    if batch:
        assert server.stats()["batches"]["created"] == {"openai": 1} and _calls(server) == asked
    else:
        assert _calls(server) == asked + jobs


def test_each_class_of_failure_is_told_its_command() -> None:
    from judgepanel.cli.campaign_cmd import reask_advice

    said = "openai HTTP 404: no model \x1b[31mred\x1b[0m " + "x" * 200
    lines = reask_advice(
        "c",
        {"transient": 2, "certificate": 1, "parse": 3, "truncated": 4, "fatal": 5, "unknown": 6},
        {"fatal": said, "transient": "HTTP 503"},
    )
    shown = said[:159].replace("\x1b", "\\x1b") + "…"  # cut at 160 characters, escapes shown
    assert lines == [
        "`campaign run c --retry-failed` re-asks the 3 failed on transient, certificate",
        "`campaign retry-parse-failures c` re-asks the 3 whose reply could not be read",
        "`campaign retry-parse-failures c --truncated` re-asks the 4 cut at the output cap (raise the "
        "judge's max_tokens first)",
        f'`campaign run c --retry-fatal` re-asks the 5 refused as fatal (the last: "{shown}"), once what '
        "their error names is fixed (the key, the model, the request)",
    ]
    assert "\x1b" not in "".join(lines)  # a server's escape codes never reach the terminal
    assert reask_advice("c", {}) == [] and reask_advice("c", {"fatal": 0}) == []
    batch = reask_advice("c", {"transient": 1, "parse": 1, "fatal": 1}, batch=True)  # a batch run's
    assert [line.split("`")[1] for line in batch] == [
        "campaign run c --batch --retry-failed",
        "campaign retry-parse-failures c",
        "campaign run c --batch --retry-fatal",
    ]
