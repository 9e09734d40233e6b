"""`judgepanel data …`: import items and labels; derive pair sets; find duplicated annotation."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from judgepanel.cli.context import state
from judgepanel.cli.options import JSON
from judgepanel.cli.render import emit_json, table
from judgepanel.errors import BadInput

if TYPE_CHECKING:  # the library is imported inside each command, so `--help` stays fast
    from judgepanel.datasets.records import ParsedDataset

app = typer.Typer(help="Import datasets and derive pair sets.", no_args_is_help=True)

REPLACE = typer.Option(False, "--replace", help="Replace a dataset that holds a different import.")


def _import(
    ctx: typer.Context, name: str, parse: Callable[[], ParsedDataset], replace: bool, json_: bool
) -> None:
    """Every import command's last step: open the database, parse, store the dataset under `name`,
    and say what changed."""
    from judgepanel.store.imports import import_parsed

    engine = state(ctx).engine()
    result = import_parsed(engine, name, parse(), replace=replace)
    if json_:
        emit_json(result.as_dict())
        return
    if result.unchanged:
        typer.echo(f"{result.dataset}: already imported from the same file(s); nothing changed")
        return
    skipped = ", ".join(f"{k}: {v}" for k, v in result.skipped.items())
    typer.echo(
        f"{result.dataset}: {result.items_added} items, {result.labels_added} labels, "
        f"{result.annotators} annotators" + (f"; skipped {skipped}" if skipped else "")
    )


@app.command("import-summeval")
def import_summeval(
    ctx: typer.Context,
    annotations: Path = typer.Argument(..., help="model_annotations*.jsonl (plain or .gz)"),
    articles: Path | None = typer.Option(None, "--articles", help="articles.jsonl(.gz) with id and text"),
    name: str = typer.Option("summeval", "--name"),
    replace: bool = REPLACE,
    json_: bool = JSON,
) -> None:
    """Import SummEval rows: items grouped by article, 3 experts and 5 crowd workers."""
    from judgepanel.datasets.summeval import parse_summeval

    parsed = parse_summeval(annotations, articles)  # read before the database is opened, as it always was
    _import(ctx, name, lambda: parsed, replace, json_)


@app.command("import-usr")
def import_usr(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="USR Topical-Chat tc_usr_data.json, or the folder holding it"),
    name: str = typer.Option("usr", "--name"),
    replace: bool = REPLACE,
    json_: bool = JSON,
) -> None:
    """Import USR dialogue responses: items grouped by dialogue context, three raters per context."""
    from judgepanel.datasets.usr import parse_usr

    _import(ctx, name, lambda: parse_usr(path), replace, json_)


@app.command("import-alttest")
def import_alttest(
    ctx: typer.Context,
    folder: Path = typer.Argument(
        ..., help="Folder with human_annotations.json and llm_annotations.json (plain or .gz)"
    ),
    name: str | None = typer.Option(None, "--name", help="Import the panel as a new dataset."),
    into: str | None = typer.Option(
        None, "--into", help="Attach only the panel's LLM annotations to this existing dataset's items."
    ),
    replace: bool = REPLACE,
    json_: bool = JSON,
) -> None:
    """Import an alt-test panel: humans as human annotators, each LLM as a judge (kind llm)."""
    from judgepanel.datasets.alttest import parse_alttest, parse_llm_annotations
    from judgepanel.store.imports import attach_llm_annotations

    if (name is None) == (into is None):
        raise BadInput("give either --name (a new dataset) or --into (an existing one)")
    if into is not None:
        if replace:
            raise BadInput("--replace applies to --name; --into only adds annotators")
        done = attach_llm_annotations(state(ctx).engine(), into, parse_llm_annotations(folder))
        if json_:
            emit_json(done.as_dict())
            return
        if done.unchanged:
            typer.echo(f"{into}: these LLM annotations are already attached; nothing changed")
            return
        typer.echo(f"{into}: {done.annotators} LLM annotators, {done.labels_added} labels attached")
        for ps in done.stale_pair_sets:
            typer.echo(
                f"pair set {ps} predates them: re-create it with `judgepanel data pairs {into} --name {ps} --replace`"
            )
        return
    assert name is not None
    _import(ctx, name, lambda: parse_alttest(folder), replace, json_)


@app.command("import-labels")
def import_labels(
    ctx: typer.Context,
    file: Path = typer.Argument(
        ...,
        help="CSV or JSONL: item_id, annotator, group, dimension, value[, rationale][, kind]; "
        "kind is human (the default) or llm for an external judge's labels",
    ),
    dataset: str = typer.Option(..., "--dataset"),
    replace: bool = REPLACE,
    json_: bool = JSON,
) -> None:
    """Import human (or external judge) labels; items are created as needed.

    A UTF-8 byte-order mark is ignored; NaN / Infinity values, NUL characters and lone surrogates
    are refused with the file and line."""
    from judgepanel.datasets.generic import parse_labels

    _import(ctx, dataset, lambda: parse_labels(file), replace, json_)


@app.command("import-items")
def import_items(
    ctx: typer.Context,
    file: Path = typer.Argument(
        ..., help="JSONL or CSV: id, group, input, output, system, split, meta, conversation, reference"
    ),
    dataset: str = typer.Option(..., "--dataset"),
    replace: bool = REPLACE,
    json_: bool = JSON,
) -> None:
    """Import the items of a dataset (what judges will see)."""
    from judgepanel.datasets.generic import parse_items

    _import(ctx, dataset, lambda: parse_items(file), replace, json_)


def _list_pair_sets(ctx: typer.Context, dataset: str | None, json_: bool) -> None:
    from judgepanel.store.queries import list_pair_sets

    # an unknown DATASET is bad input (one line, exit 2), not an empty list
    rows = list_pair_sets(state(ctx).engine(), dataset)
    if json_:
        emit_json({"pair_sets": rows})
        return
    table(
        "pair sets" + (f" of {dataset}" if dataset else ""),
        ["name", "dataset", "pairs", "of", "seed", "pair labels"],
        [[p["name"], p["dataset"], p["pairs"], p["pairs_total"], p["seed"], p["labels"]] for p in rows],
    )


@app.command("pairs")
def pairs(
    ctx: typer.Context,
    dataset: str | None = typer.Argument(None, help="The dataset to draw pairs from (with --list: to list)."),
    name: str | None = typer.Option(None, "--name", help="Name under which the pair set is stored."),
    seed: int = typer.Option(42, "--seed"),
    sample: int = typer.Option(1000, "--sample", help="How many pairs to draw."),
    tie_eps: float = typer.Option(1e-6, "--tie-eps", help="Mean-score gap below which a pair is a tie."),
    replace: bool = REPLACE,
    list_: bool = typer.Option(False, "--list", help="List the stored pair sets (of DATASET, if given)."),
    json_: bool = JSON,
) -> None:
    """Sample within-group pairs and derive each annotator's A/B/T preference."""
    from judgepanel.store.queries import create_pair_set

    if list_:
        _list_pair_sets(ctx, dataset, json_)
        return
    if dataset is None:
        raise BadInput("missing DATASET; see `judgepanel data pairs --help` (or --list to see the pair sets)")
    if name is None:
        raise BadInput("missing --name for the new pair set (or --list to see the stored ones)")

    summary = create_pair_set(
        state(ctx).engine(), dataset, name, seed=seed, sample=sample, tie_eps=tie_eps, replace=replace
    )
    if json_:
        emit_json(summary.as_dict())
        return
    typer.echo(f"pair set {name}: {summary.sampled} of {summary.pairs_total} within-group pairs")
    rows = [[g, *c.values()] for g, c in summary.labels_by_group.items()]
    table("labels by group", ["group", "A", "B", "T"], [*rows, ["all", *summary.labels.values()]])


@app.command("duplicates")
def duplicates(ctx: typer.Context, dataset: str = typer.Argument(...), json_: bool = JSON) -> None:
    """Items where every annotator of a group gave the identical full score vector."""
    from judgepanel.store.queries import find_duplicates

    d = find_duplicates(state(ctx).engine(), dataset)
    if json_:
        emit_json(d.as_dict())
        return
    table(
        "identical score vectors within a group",
        ["group", "items", "of checked"],
        [[g, d.by_group[g], d.items_checked[g]] for g in d.by_group],
    )


@app.command("split")
def split(
    ctx: typer.Context,
    dataset: str = typer.Argument(...),
    fractions: str = typer.Option("dev=0.5,eval=0.5", "--fractions", help="NAME=FRACTION,… adding up to 1."),
    seed: int = typer.Option(0, "--seed"),
    by: str = typer.Option("item", "--by", help="item, or group: keep each group inside one split."),
    json_: bool = JSON,
) -> None:
    """Assign every item a split (seeded); campaigns then take `--split NAME`."""
    from judgepanel.datasets.splits import parse_fractions
    from judgepanel.store.splits import split_dataset

    if by not in ("item", "group"):
        raise BadInput(f"--by must be item or group, got {by!r}")
    result = split_dataset(
        state(ctx).engine(), dataset, parse_fractions(fractions), seed=seed, by_group=by == "group"
    )
    if json_:
        emit_json(result.as_dict())
        return
    table(
        f"{dataset}: splits (seed {seed}, by {by})",
        ["split", "items", "groups"],
        [[k, result.splits[k], result.groups[k]] for k in result.splits],
    )


@app.command("list")
def list_(ctx: typer.Context, json_: bool = JSON) -> None:
    """The datasets in the database, and the pair sets drawn from them."""
    from judgepanel.store.queries import list_datasets, list_pair_sets

    engine = state(ctx).engine()
    rows = list_datasets(engine)
    pair_sets = list_pair_sets(engine)
    if json_:
        emit_json({"datasets": rows, "pair_sets": pair_sets})
        return
    table("datasets", ["name", "kind", "items", "labels"], [list(r.values()) for r in rows])
    if pair_sets:
        table(
            "pair sets",
            ["name", "dataset", "pairs", "of", "seed", "pair labels"],
            [
                [p["name"], p["dataset"], p["pairs"], p["pairs_total"], p["seed"], p["labels"]]
                for p in pair_sets
            ],
        )


# MT-Bench lives beside `metrics votes` (cli/votes_cmd.py), whose agreement settings it feeds
from judgepanel.cli.votes_cmd import import_mtbench  # noqa: E402

app.command("import-mtbench")(import_mtbench)

# other tools' graders (Inspect AI, promptfoo) live in cli/graders_cmd.py
from judgepanel.cli.graders_cmd import import_inspect, import_promptfoo  # noqa: E402

app.command("import-inspect")(import_inspect)
app.command("import-promptfoo")(import_promptfoo)
