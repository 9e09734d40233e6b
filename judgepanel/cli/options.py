"""Typer options that many commands take with one meaning, declared once: `--json`, `--bootstrap`
and `--resample`. Declarations only (an option a single command group shares stays in its module,
as `campaign_cmd.CONCURRENCY` does; a group of options taken together is `cli.option_group`)."""

from __future__ import annotations

import typer

JSON = typer.Option(False, "--json", help="Print one JSON object.")
BOOTSTRAP = typer.Option(1000, "--bootstrap", help="Bootstrap replicates for the CIs.")
# judgepanel.metrics.names.RESAMPLE_MODES, repeated for the help text (checked in tests/cli/test_help.py)
RESAMPLE_MODES = ("groups", "items")
RESAMPLE = typer.Option(
    None,
    "--resample",
    help="What a bootstrap replicate draws: groups (articles, dialogues; the default where items share groups) or items.",
)
