"""The root Typer app and the registration of command groups."""

from __future__ import annotations

import sys

import typer

from judgepanel.cli import (
    campaign_cmd,
    data_cmd,
    db_cmd,
    demo_cmd,
    metrics_cmd,
    plan_cmd,
    query_cmd,
    rubric_cmd,
    simulate_cmd,
    validate_cmd,
)
from judgepanel.cli.context import AppState
from judgepanel.config import DB_ENV, database_url
from judgepanel.errors import JudgepanelError

app = typer.Typer(
    name="judgepanel",
    help="Run LLM judge panels and measure how far to trust them.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root(
    ctx: typer.Context,
    db: str | None = typer.Option(
        None, "--db", envvar=DB_ENV, help="Database URL (default sqlite:///judgepanel.db)."
    ),
) -> None:
    ctx.obj = AppState(db_url=database_url(db))
    ctx.call_on_close(ctx.obj.close)


app.add_typer(db_cmd.app, name="db")
app.add_typer(data_cmd.app, name="data")
app.add_typer(metrics_cmd.app, name="metrics")
app.add_typer(rubric_cmd.app, name="rubric")
app.add_typer(campaign_cmd.app, name="campaign")
app.add_typer(validate_cmd.app, name="validate")
app.add_typer(plan_cmd.app, name="plan")
app.add_typer(simulate_cmd.app, name="simulate")
app.command("query")(query_cmd.query)
app.command("demo")(demo_cmd.demo)


def main(argv: list[str] | None = None) -> None:
    try:
        app(args=argv, prog_name="judgepanel", standalone_mode=True)
    except JudgepanelError as exc:
        print(f"judgepanel: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
