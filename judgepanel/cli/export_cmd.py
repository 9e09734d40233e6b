"""`judgepanel export CAMPAIGN --format csv|jsonl|parquet --out FILE [--what …]`."""

from __future__ import annotations

import typer

from judgepanel.cli.context import state
from judgepanel.cli.render import emit_json


def export(
    ctx: typer.Context,
    campaign: str = typer.Argument(..., help="Campaign name."),
    fmt: str = typer.Option(..., "--format", help="csv, jsonl or parquet"),
    out: str = typer.Option(..., "--out", help="File to write (replaced when complete)."),
    what: str = typer.Option(
        "verdicts",
        "--what",
        help="verdicts (one row per verdict), attempts (one per request, with its error class), "
        "clauses (one per clause verdict) or labels (the dataset's imported labels).",
    ),
    force: bool = typer.Option(False, "--force", help="Replace FILE if it exists (never the database)."),
    raw: bool = typer.Option(
        False,
        "--raw",
        help="CSV: write text cells that start with = + - @, a tab or CR as stored, without the "
        "leading ' that stops spreadsheets from running them as formulas.",
    ),
    json_: bool = typer.Option(False, "--json", help="Print what was written as one JSON object."),
) -> None:
    """Export a campaign's verdicts, attempts, clause verdicts or labels for pandas and other tools."""
    from judgepanel.report.export import export_campaign

    result = export_campaign(state(ctx).engine(), campaign, what=what, fmt=fmt, out=out, force=force, raw=raw)
    if json_:
        emit_json(
            {
                "path": result.path,
                "format": result.format,
                "what": result.what,
                "rows": result.rows,
                "columns": result.columns,
                "cells_neutralised": result.cells_neutralised,
            }
        )
    else:
        print(f"{result.path}: {result.rows} {result.what} rows ({result.format})")
