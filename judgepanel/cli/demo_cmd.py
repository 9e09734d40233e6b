"""`judgepanel demo`: the main job end to end on embedded defaults (SQLite, bundled sample, offline)."""

from __future__ import annotations

import typer

from judgepanel.cli.context import state
from judgepanel.cli.render import console, emit_json
from judgepanel.demo import run_demo


def demo(ctx: typer.Context, json_: bool = typer.Option(False, "--json")) -> None:
    """Import the bundled sample and run the whole job on it, offline."""
    st = state(ctx)
    report = run_demo(st.engine(), say=(lambda _m: None) if json_ else (lambda m: console.print(f"• {m}")))
    if json_:
        emit_json({"db": st.db_url, "steps": {title: result for title, result in report.steps}})
        return
    for title, result in report.steps:
        console.rule(title)
        console.print_json(data=result)
    console.print(
        f'\nresults are in {st.db_url}; try: judgepanel --db {st.db_url} query "select * from dataset"'
    )
