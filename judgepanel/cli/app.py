"""The root Typer app and the registration of command groups."""

from __future__ import annotations

import sys
from typing import NoReturn

import typer
from sqlalchemy.exc import OperationalError, ProgrammingError

from judgepanel.cli import (
    campaign_cmd,
    conditions_cmd,
    data_cmd,
    db_cmd,
    demo_cmd,
    export_cmd,
    metrics_cmd,
    plan_cmd,
    prevalence_cmd,
    query_cmd,
    repair_cmd,
    report_cmd,
    rubric_cmd,
    simulate_cmd,
    validate_cmd,
    votes_cmd,
)
from judgepanel.cli.context import AppState
from judgepanel.config import DB_ENV, database_url
from judgepanel.errors import EXIT_INTERRUPTED, Interrupted, JudgepanelError

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
metrics_cmd.app.command("prevalence")(prevalence_cmd.prevalence)
metrics_cmd.app.command("votes")(votes_cmd.votes)
data_cmd.app.command("import-mtbench")(votes_cmd.import_mtbench)
app.add_typer(metrics_cmd.app, name="metrics")
metrics_cmd.app.command("conditions")(conditions_cmd.conditions)
app.add_typer(rubric_cmd.app, name="rubric")
app.add_typer(campaign_cmd.app, name="campaign")
app.add_typer(validate_cmd.app, name="validate")
app.add_typer(plan_cmd.app, name="plan")
app.add_typer(simulate_cmd.app, name="simulate")
app.add_typer(repair_cmd.app, name="repair")
app.command("query")(query_cmd.query)
app.command("demo")(demo_cmd.demo)
app.command("export")(export_cmd.export)
app.command("report")(report_cmd.report)


def _fail(message: str, code: int) -> NoReturn:
    print(f"judgepanel: {' '.join(message.split())}", file=sys.stderr)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """The console script: every failure a user can cause ends in one line on stderr and exit 2;
    other failures exit 1; Ctrl-C exits 130 (see the CLI contract in DESIGN.md)."""
    try:
        code = app(args=argv, prog_name="judgepanel", standalone_mode=False)
    except typer.TyperException as exc:  # click's usage errors: missing option, bad value …
        if type(exc).__name__ == "NoArgsIsHelpError":  # the help text is already printed
            sys.exit(exc.exit_code)
        ctx = getattr(exc, "ctx", None)
        hint = f"; see `{ctx.command_path} --help`" if ctx is not None else ""
        _fail(f"error: {exc.format_message().strip().rstrip('.')}{hint}", exc.exit_code)
    except typer.Abort:
        _fail("aborted", 1)
    except Interrupted as exc:
        _fail(str(exc), exc.exit_code)
    except JudgepanelError as exc:
        _fail(f"error: {exc}", exc.exit_code)
    except (OperationalError, ProgrammingError) as exc:
        line = (str(exc.orig or exc).strip().splitlines() or [type(exc).__name__])[0]
        if "no such table" in line or ("relation" in line and "does not exist" in line):
            _fail(f"error: the database lacks judgepanel's tables ({line}): run `judgepanel db upgrade`", 2)
        if isinstance(exc, ProgrammingError):
            raise  # our SQL is wrong: a bug, keep the traceback
        _fail(f"error: database: {line}", 1)
    if code == EXIT_INTERRUPTED:  # Typer turns KeyboardInterrupt into exit 130, silently
        _fail("interrupted", EXIT_INTERRUPTED)
    sys.exit(code if isinstance(code, int) else 0)
