"""`judgepanel data import-inspect` and `data import-promptfoo`: other tools' graders as judges.

Parse the options, read the log (`datasets.inspect_log` / `datasets.promptfoo`, which stream),
store it (`store.graded_imports`, one transaction), print what was imported and what was not.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from judgepanel.cli.context import state
from judgepanel.cli.options import JSON
from judgepanel.cli.render import emit_json, table

if TYPE_CHECKING:
    from judgepanel.datasets.graded import GradedLog

NAME = typer.Option(..., "--name", help="Name of the imported campaign (and of its new dataset).")
REPLACE = typer.Option(
    False, "--replace", help="Replace an import stored under NAME (human labels added to its dataset stay)."
)
DATASET = typer.Option(
    None,
    "--dataset",
    help="Attach the grades to this existing dataset's items (sample id = item id) instead of a new dataset.",
)
DIMENSION = typer.Option(
    "",
    "--dimension",
    help="The label dimension the grades judge (e.g. coherence); a dict score's keys and a promptfoo "
    "assertion's metric name their own.",
)


def _store(
    ctx: typer.Context, name: str, log: GradedLog, replace: bool, dataset: str | None, json_: bool
) -> None:
    from judgepanel.store.graded_imports import import_graded

    result = import_graded(state(ctx).engine(), name, log, replace=replace, dataset=dataset)
    if json_:
        emit_json(result.as_dict())
        return
    if result.unchanged:
        typer.echo(f"{name}: already imported from the same file(s); nothing changed")
        return
    notes = ", ".join(f"{k} {v}" for k, v in result.counts.items() if k not in ("samples", "grades"))
    typer.echo(
        f"{name}: {result.counts.get('samples', 0)} samples into dataset {result.dataset} "
        f"({result.items_added} new items); {result.verdicts} verdicts, {result.failed} without a grade"
        + (f" ({notes})" if notes else "")
        + ("; simulated graders" if result.simulated else "")
    )
    table(
        f"graders imported from {log.tool}",
        ["judge", "verdicts", "unscored", "errors", "scale"],
        [[j, d["verdicts"], d["unscored"], d["errors"], d["scale"] or "—"] for j, d in result.judges.items()],
    )


def import_inspect(
    ctx: typer.Context,
    logs: list[Path] = typer.Argument(..., help="Inspect AI logs (.eval or .json)."),
    name: str = NAME,
    dimension: str = DIMENSION,
    dataset: str | None = DATASET,
    replace: bool = REPLACE,
    json_: bool = JSON,
) -> None:
    """Import the scorers of Inspect AI logs as judges: one verdict per sample, epoch and scorer.

    Needs the `judgepanel[inspect]` extra. Grades map C/P/I to 2/1/0, true/false to 1/0, numbers
    as given; samples without a grade, errors and cancelled samples are counted and reported."""
    from judgepanel.datasets.inspect_log import read_inspect

    _store(ctx, name, read_inspect(logs, dimension), replace, dataset, json_)


def import_promptfoo(
    ctx: typer.Context,
    results: Path = typer.Argument(..., help="promptfoo results file (`promptfoo eval -o FILE.json`)."),
    name: str = NAME,
    dimension: str = DIMENSION,
    id_var: str = typer.Option("id", "--id-var", help="The test var that names each item."),
    dataset: str | None = DATASET,
    replace: bool = REPLACE,
    json_: bool = JSON,
) -> None:
    """Import the assertions of a promptfoo results file as judges: one verdict per test, repeat
    and assertion (its score, shown as pass/fail); errors are counted and reported."""
    from judgepanel.datasets.promptfoo import read_promptfoo

    _store(ctx, name, read_promptfoo(results, id_var=id_var, dimension=dimension), replace, dataset, json_)
