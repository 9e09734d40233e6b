"""`judgepanel query "SQL"`: read-only SQL over the results database."""

from __future__ import annotations

import csv
import json
import sys
from typing import Any

import typer

from judgepanel.cli.context import state
from judgepanel.cli.render import console, emit_json, fits, out_width, records, table
from judgepanel.errors import BadInput

# judgepanel.store.readonly.DEFAULT_TIMEOUT and DEFAULT_MAX_BYTES, repeated so `--help` imports
# no SQLAlchemy (tests/cli/test_help.py checks that they agree)
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_BYTES = 100_000_000

FORMATS = ("table", "csv", "json")
SCHEMA_FORMATS = ("table", "json", "md")


def _plain(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, int | float | str | bool) or v is None:
        return v
    if isinstance(v, dict | list):  # JSON columns come back parsed on PostgreSQL, as text on SQLite
        return json.dumps(v, sort_keys=True)
    return str(v)


def _schema(fmt: str) -> None:
    from judgepanel.store import schema_doc

    if fmt not in SCHEMA_FORMATS:
        raise BadInput(f"--schema --format must be one of {', '.join(SCHEMA_FORMATS)}, got {fmt!r}")
    tables = schema_doc.tables()
    if fmt == "json":
        emit_json({"tables": [t.as_dict() for t in tables]})
    elif fmt == "md":
        sys.stdout.write(schema_doc.markdown())
    else:  # plain aligned lines: a meaning is a sentence, which a table would cut or wrap
        for t in tables:
            kinds = [c.type + (f" → {c.references}" if c.references else "") for c in t.columns]
            w_name = max(len(c.name) for c in t.columns)
            w_kind = max(len(k) for k in kinds)
            console.print(f"{t.name}: {t.doc}", soft_wrap=True, highlight=False)
            for c, k in zip(t.columns, kinds, strict=True):
                console.print(
                    f"  {c.name:<{w_name}}  {k:<{w_kind}}  {c.doc}", soft_wrap=True, highlight=False
                )
            console.print()


def query(
    ctx: typer.Context,
    sql: str | None = typer.Argument(None, help="One SQL statement; writes are refused."),
    fmt: str = typer.Option(
        "table", "--format", help="table, csv or json (with --schema: table, json or md)"
    ),
    json_: bool = typer.Option(False, "--json", help="Same as --format json."),
    timeout: float = typer.Option(
        DEFAULT_TIMEOUT, "--timeout", metavar="SECONDS", help="Cancel the statement after this long."
    ),
    max_bytes: int = typer.Option(
        DEFAULT_MAX_BYTES,
        "--max-bytes",
        metavar="BYTES",
        help="Refuse a result holding more than this (text by characters, blobs by bytes).",
    ),
    schema: bool = typer.Option(
        False, "--schema", help="Print the tables and columns you can select from, with their meaning."
    ),
) -> None:
    """Read-only SQL over the results database (table, CSV or JSON).
    Ctrl-C cancels the statement."""
    fmt = "json" if json_ else fmt
    if schema:
        if sql is not None:
            raise BadInput("give either SQL or --schema, not both")
        _schema(fmt)
        return
    if sql is None:
        raise BadInput("give one SQL statement, or --schema to see the tables")
    from judgepanel.store.readonly import run_read_only

    if fmt not in FORMATS:
        raise BadInput(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    result = run_read_only(state(ctx).db_url, sql, timeout=timeout, max_bytes=max_bytes)
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
        rows = [[_plain(v) for v in r] for r in result.rows]
        if fits(result.columns, rows):
            table(None, result.columns, rows)
        else:  # a queried value is never cut: one record per row instead of a table
            records(
                result.columns,
                rows,
                f"({len(result.columns)} column(s) too wide for {out_width()} columns: one record per "
                "row; --format csv or --json for machine-readable output)",
            )
