"""`judgepanel rubric …`: add rubric YAML files as versions, list them, show one."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from judgepanel.cli.context import state
from judgepanel.cli.options import JSON
from judgepanel.cli.render import emit_json, table, warn
from judgepanel.errors import BadInput

if TYPE_CHECKING:  # imported inside the commands that use them, so that `--help` stays fast
    from judgepanel.rubrics import RubricDoc


app = typer.Typer(help="Store rubrics as versions with stable clause ids.", no_args_is_help=True)


def _read(file: str, name: str | None) -> RubricDoc:
    from judgepanel.rubrics import bundled_rubrics, load_rubric_file

    path = Path(file)
    if path.exists():
        return load_rubric_file(path, name=name)
    bundled = bundled_rubrics()
    if file in bundled:
        return load_rubric_file(bundled[file], name=name)
    raise BadInput(f"{file}: no such rubric file (bundled rubrics: {', '.join(bundled) or 'none'})")


@app.command("add")
def add(
    ctx: typer.Context,
    file: str = typer.Argument(
        ..., help="Rubric YAML file, or the name of a bundled rubric (summeval, helpfulness)."
    ),
    name: str | None = typer.Option(None, "--name", help="Store under this name instead of the file's."),
    note: str | None = typer.Option(None, "--note", help="Change note for a new version."),
    json_: bool = JSON,
) -> None:
    """Add a rubric: content identical to the current version (the newest a person added, what a
    bare NAME means) is a no-op; changed content becomes the next version."""
    from judgepanel.store.rubrics import add_rubric

    added = add_rubric(state(ctx).engine(), _read(file, name), change_note=note)
    if json_:
        emit_json(added.as_dict())
        return
    r = added.rubric
    if not added.created:
        typer.echo(f"{r.ref} (unchanged: identical to the current version, the newest a person added)")
        return
    parent = f", parent {r.name}@{r.parent_version}" if r.parent_version else ""
    typer.echo(f"{r.ref} added: {len(r.doc.dimensions)} dimension(s), {len(r.doc.clauses)} clauses{parent}")


@app.command("list")
def list_(ctx: typer.Context, json_: bool = JSON) -> None:
    """The stored rubrics with their latest version and their current one (the newest a person
    added: what a bare NAME means; editor versions only by NAME@VERSION)."""
    from judgepanel.store.rubrics import list_rubrics

    rows = list_rubrics(state(ctx).engine())
    if json_:
        emit_json({"rubrics": rows})
        return
    table(
        "rubrics",
        ["name", "current", "latest", "versions", "clauses", "dimensions"],
        [
            [
                r["name"],
                r["current_version"],
                r["latest_version"],
                r["versions"],
                r["clauses"],
                ", ".join(r["dimensions"]),
            ]
            for r in rows
        ],
    )


@app.command("show")
def show(
    ctx: typer.Context,
    ref: str = typer.Argument(
        ...,
        metavar="NAME[@VERSION]",
        help="The current version (the newest a person added) unless @VERSION is given.",
    ),
    json_: bool = JSON,
) -> None:
    """One rubric version: its dimensions, criteria, anchors and clauses."""
    from judgepanel.store.rubrics import get_rubric, rubric_versions

    engine = state(ctx).engine()
    r = get_rubric(engine, ref)
    versions = rubric_versions(engine, r.name)
    if json_:
        emit_json({**r.as_dict(), "versions": versions, "document": r.doc.to_dict()})
        return
    parent = f" (parent @{r.parent_version})" if r.parent_version else ""
    typer.echo(
        f"{r.ref}{parent}, {r.author}, {r.created_at:%Y-%m-%d %H:%M}; versions: {', '.join(map(str, versions))}"
    )
    if r.change_note:
        typer.echo(f"note: {r.change_note}")
    if r.doc.title:
        typer.echo(r.doc.title)
    for d in r.doc.dimensions:
        typer.echo(f"\n{d.name}: {d.definition}")
        for c in d.criteria:
            typer.echo(f"  - {c}")
        for level, text in d.anchors:
            typer.echo(f"  {level}: {text}")
        table(None, ["clause", "text"], [[c.id, c.text] for c in d.clauses])


@app.command("diff")
def diff(
    ctx: typer.Context,
    a: str = typer.Argument(..., metavar="A", help="NAME[@VERSION], the older version."),
    b: str = typer.Argument(..., metavar="B", help="NAME[@VERSION], the newer version."),
    json_: bool = JSON,
) -> None:
    """Clause-level diff: clauses added, removed, or changed in text under the same id."""
    from judgepanel.rubrics import diff_rubrics
    from judgepanel.store.rubrics import get_rubric

    engine = state(ctx).engine()
    d = diff_rubrics(get_rubric(engine, a).doc, get_rubric(engine, b).doc)
    if json_:
        emit_json(d.as_dict())
        return
    rows = [[k, "changed", f"- {v['old']}\n+ {v['new']}"] for k, v in d.changed.items()]
    rows += [[k, "added", ""] for k in d.added] + [[k, "removed", ""] for k in d.removed]
    table(f"{a} -> {b}", ["clause", "change", "text"], rows)


@app.command("split")
def split(
    ctx: typer.Context,
    ref: str = typer.Argument(..., metavar="NAME[@VERSION]"),
    editor: str = typer.Option(
        ..., "--editor", help="The editor model's spec, e.g. openai:gpt-4o?temperature=0."
    ),
    dimension: list[str] = typer.Option([], "--dimension", help="Only these dimensions (default: all)."),
    concurrency: int = typer.Option(8, "--concurrency"),
    max_cost: float | None = typer.Option(None, "--max-cost", help="Stop before this many USD."),
    json_: bool = JSON,
) -> None:
    """An editor model proposes atomic clauses per dimension; stored as a new version (author editor)."""
    from judgepanel.repair.iteration import split_rubric
    from judgepanel.runner import RunOptions

    out = split_rubric(
        state(ctx).engine(),
        ref,
        editor,
        dimensions=dimension,
        options=RunOptions(concurrency=concurrency, max_cost=max_cost),
    )
    if json_:
        emit_json(out)
        return
    typer.echo(f"{out['rubric']}@{out['version']}" + ("" if out["created"] else " (unchanged)"))
    table(None, ["dimension", "clauses"], [[d, ", ".join(ids)] for d, ids in out["clauses"].items()])
    for d, why in out["failed"].items():
        warn(f"{d} keeps its clauses: the editor's reply was not used ({why})")
