"""`judgepanel db …`: create, migrate and inspect the results database."""

from __future__ import annotations

import typer

from judgepanel.cli.context import state
from judgepanel.cli.render import emit_json

app = typer.Typer(help="Create, migrate and inspect the results database.", no_args_is_help=True)


@app.command()
def upgrade(ctx: typer.Context, revision: str = typer.Argument("head")) -> None:
    """Create or migrate the database to the latest (or the given) revision."""
    from judgepanel.store import migrate

    engine = state(ctx).engine(migrated=False, create=True)
    migrate.upgrade(engine, revision)
    typer.echo(f"database at revision {migrate.current_revision(engine) or 'base'}", err=True)


@app.command()
def downgrade(
    ctx: typer.Context, revision: str = typer.Argument(..., help="target, e.g. base or -1")
) -> None:
    """Migrate down to REVISION (`base` drops every judgepanel table)."""
    from judgepanel.store import migrate

    engine = state(ctx).engine(migrated=False)
    migrate.downgrade(engine, revision)
    typer.echo(f"database at revision {migrate.current_revision(engine) or 'base'}", err=True)


@app.command()
def current(ctx: typer.Context, json_: bool = typer.Option(False, "--json")) -> None:
    """Show the database's revision and the newest one this judgepanel knows."""
    from judgepanel.store import migrate

    engine = state(ctx).engine(migrated=False)
    cur, head = migrate.current_revision(engine), migrate.head_revision(engine)
    if json_:
        emit_json({"current": cur, "head": head, "up_to_date": cur == head})
    else:
        typer.echo(f"current: {cur or 'base (empty)'}\nhead:    {head}")
