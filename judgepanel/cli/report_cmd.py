"""`judgepanel report CAMPAIGN [CAMPAIGN …] --out FILE [--format html|md] [--iteration ITER]
[--alignment NAME]`."""

from __future__ import annotations

import typer

from judgepanel.cli.context import state
from judgepanel.cli.render import emit_json


def report(
    ctx: typer.Context,
    campaigns: list[str] = typer.Argument(
        None, help="Campaign names (optional with --iteration or --alignment)."
    ),
    out: str = typer.Option(..., "--out", help="File to write (HTML, or Markdown with plots beside it)."),
    fmt: str = typer.Option("html", "--format", help="html (one self-contained file) or md"),
    bootstrap: int = typer.Option(200, "--bootstrap", help="Bootstrap replicates for the agreement CIs."),
    cases: int = typer.Option(200, "--cases", help="At most this many disagreement cases per campaign."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
    iteration: str | None = typer.Option(
        None, "--iteration", help="Add a repair iteration: α and human agreement per version, the edits."
    ),
    alignment: str | None = typer.Option(
        None,
        "--alignment",
        help="Add an alignment (`align run`): agreement per version, deltas, overfitting gap, TOST, cost, "
        "its choices; with --iteration, the repair's versions as `align compare NAME --repair ITER` made them.",
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="Replace FILE (and a Markdown report's plots) if it exists (never the database).",
    ),
    json_: bool = typer.Option(False, "--json", help="Print what was written as one JSON object."),
) -> None:
    """A report people would rather look at than read: what ran, agreement, bias, judges vs humans, cases."""
    from sqlalchemy.engine import make_url

    from judgepanel.report.render import write_report

    st = state(ctx)
    result = write_report(
        st.engine(),
        list(campaigns or []),
        out,
        fmt_=fmt,
        iteration=iteration,
        alignment=alignment,
        db_label=make_url(st.db_url).render_as_string(hide_password=True),
        n_boot=bootstrap,
        cases=cases,
        seed=seed,
        force=force,
    )
    if json_:
        emit_json(
            {
                "path": result.path,
                "format": result.format,
                "campaigns": result.campaigns,
                "sections": result.sections,
                "plots": result.plots,
                "bytes": result.bytes,
                "files": result.files,
                "simulated": result.simulated,
            }
        )
    else:
        print(result.path)
