"""Options declared once and shared (issue 31 §4): `campaign run` and `campaign
retry-parse-failures` take their call limits from one `CallLimits` group (`cli.option_group`);
each option keeps the names, default and help both commands had when each listed it itself
(recorded from the code before the change), and a grouped command receives the values given."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import typer
from typer.testing import CliRunner

from judgepanel.cli.campaign_cmd import app as campaign_app
from judgepanel.cli.option_group import option_group

BEFORE = {
    "concurrency": (["--concurrency"], 16, "Calls in flight per judge."),
    "rpm": (["--rpm"], None, "Requests per minute per judge (client-side limit)."),
    "tpm": (["--tpm"], None, "Tokens per minute per judge (client-side limit)."),
    "max_cost": (
        ["--max-cost"],
        None,
        "Cap on the campaign's TOTAL spend in USD (every run, worker and batch), recorded on the "
        "campaign for later runs; stop scheduling before it would be exceeded.",
    ),
    "timeout": (["--timeout"], 120.0, "Seconds per call."),
    "max_attempts": (["--max-attempts"], 6, "Attempts per job for rate limits and transient errors."),
}


def test_call_limits_are_the_options_both_commands_had() -> None:
    group = typer.main.get_command(campaign_app)
    assert isinstance(group, typer.core.TyperGroup)
    for command in ("run", "retry-parse-failures"):
        params = {p.name: p for p in group.commands[command].params}
        for name, (opts, default, help_) in BEFORE.items():
            p = params[name]
            assert (list(p.opts), p.default, getattr(p, "help", None)) == (opts, default, help_), (
                command,
                name,
            )
        # each command's own options stay its own, after the shared ones
        names = [p.name for p in group.commands[command].params]
        assert names[: 1 + len(BEFORE)] == ["name", *BEFORE]
    run_only = {p.name for p in group.commands["run"].params} - set(BEFORE)
    assert {"no_cache", "retry_failed", "batch", "json_"} <= run_only


@dataclass(frozen=True)
class _Limits:
    concurrency: int
    rpm: float | None


def test_a_grouped_command_receives_the_values_given() -> None:
    got: dict[str, Any] = {}
    app = typer.Typer()

    @app.command()
    @option_group(
        _Limits,
        {"concurrency": typer.Option(16, "--concurrency"), "rpm": typer.Option(None, "--rpm")},
        after=1,
    )
    def go(
        name: str = typer.Argument(...), flag: bool = typer.Option(False, "--flag"), *, options: _Limits
    ) -> None:
        got.update(name=name, flag=flag, options=options)

    result = CliRunner().invoke(app, ["x", "--concurrency", "3", "--rpm", "2.5", "--flag"])
    assert result.exit_code == 0, result.output
    assert got == {"name": "x", "flag": True, "options": _Limits(3, 2.5)}
    result = CliRunner().invoke(app, ["y"])
    assert result.exit_code == 0, result.output
    assert got["options"] == _Limits(16, None)
    result = CliRunner().invoke(app, ["z", "--concurrency", "many"])
    assert result.exit_code == 2  # Typer still converts and refuses a bad value
