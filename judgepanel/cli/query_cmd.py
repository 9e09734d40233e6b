"""`judgepanel query "SQL"`: read-only SQL over the results database."""

from __future__ import annotations

import csv
import json
import sys
from typing import Any

import typer

from judgepanel.cli.context import state
from judgepanel.cli.render import emit_json, table
from judgepanel.errors import BadInput

# judgepanel.store.readonly.DEFAULT_TIMEOUT, repeated so `--help` imports no SQLAlchemy
# (tests/cli/test_help.py checks that the two agree)
DEFAULT_TIMEOUT = 30.0

FORMATS = ("table", "csv", "json")


def _plain(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, int | float | str | bool) or v is None:
        return v
    if isinstance(v, dict | list):  # JSON columns come back parsed on PostgreSQL, as text on SQLite
        return json.dumps(v, sort_keys=True)
    return str(v)


def query(
    ctx: typer.Context,
    sql: str = typer.Argument(..., help="One SQL statement; writes are refused."),
    fmt: str = typer.Option("table", "--format", help="table, csv or json"),
    json_: bool = typer.Option(False, "--json", help="Same as --format json."),
    timeout: float = typer.Option(
        DEFAULT_TIMEOUT, "--timeout", metavar="SECONDS", help="Cancel the statement after this long."
    ),
) -> None:
    """Read-only SQL over the results database (table, CSV or JSON).
    Ctrl-C cancels the statement."""
    from judgepanel.store.readonly import run_read_only

    fmt = "json" if json_ else fmt
    if fmt not in FORMATS:
        raise BadInput(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    result = run_read_only(state(ctx).db_url, sql, timeout=timeout)
    if fmt == "json":
        emit_json(
            {
                "columns": result.columns,
                "rows": [{c: _plain(v) for c, v in zip(result.columns, r, strict=True)} for r in result.rows],
                "row_count": len(result.rows),
            }
        )
    elif fmt == "csv":
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(result.columns)
        w.writerows([[_plain(v) for v in r] for r in result.rows])
    else:
        table(None, result.columns, [[_plain(v) for v in r] for r in result.rows])
