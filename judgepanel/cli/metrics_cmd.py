"""`judgepanel metrics …`: agreement coefficients and rater κ matrices over stored labels."""

from __future__ import annotations

import math
from typing import Any, cast

import typer
from rich import box
from rich.table import Table

from judgepanel.cli.context import state
from judgepanel.cli.render import console, emit_json, table
from judgepanel.errors import BadInput
from judgepanel.metrics.agreement import LEVELS, METRICS, WEIGHT_NAMES, WeightName
from judgepanel.metrics.bootstrap import METHODS, agreement_with_ci
from judgepanel.metrics.raters import cluster_raters, kappa_matrix
from judgepanel.store.matrices import MatrixRequest, select_matrix

app = typer.Typer(
    help="Agreement, rater matrices and other statistics over stored labels.", no_args_is_help=True
)

JSON = typer.Option(False, "--json", help="Print one JSON object.")
DATASET = typer.Option(None, "--dataset", help="Dataset whose item labels to use.")
PAIRS = typer.Option(None, "--pairs", help="Pair set whose A/B/T labels to use.")
DIMENSION = typer.Option(None, "--dimension", help="Label dimension (item labels only).")
RATERS = typer.Option(None, "--raters", help="Comma-separated rater names (default: all).")
GROUP = typer.Option(None, "--group", help="Only raters of this group (e.g. expert, crowd).")
EXCLUDE = typer.Option(
    None, "--exclude-duplicates", help="Leave out the items `data duplicates` flags for this group."
)


def _names(raters: str | None) -> tuple[str, ...] | None:
    if raters is None:
        return None
    names = tuple(n.strip() for n in raters.split(",") if n.strip())
    if not names:
        raise BadInput("--raters needs at least one name")
    return names


def _fmt(v: float | None, digits: int = 3) -> str:
    return "—" if v is None or not math.isfinite(v) else f"{v:.{digits}f}"


@app.command("agreement")
def agreement_cmd(
    ctx: typer.Context,
    dataset: str | None = DATASET,
    pairs: str | None = PAIRS,
    dimension: str | None = DIMENSION,
    raters: str | None = RATERS,
    group: str | None = GROUP,
    metric: str = typer.Option(..., "--metric", help=f"One of {', '.join(METRICS)}."),
    level: str | None = typer.Option(
        None,
        "--level",
        help=f"Level of measurement for alpha and ac1: {', '.join(LEVELS)} (default nominal).",
    ),
    bootstrap: int = typer.Option(0, "--bootstrap", help="Unit-resampling bootstrap replicates (0: no CI)."),
    seed: int = typer.Option(42, "--seed", help="Seed of the bootstrap."),
    ci_method: str = typer.Option("percentile", "--ci-method", help=f"{' or '.join(METHODS)}."),
    confidence: float = typer.Option(0.95, "--confidence", help="Coverage of the CI."),
    exclude_duplicates: str | None = EXCLUDE,
    json_: bool = JSON,
) -> None:
    """One agreement coefficient over the chosen raters' labels (humans and judges alike)."""
    sel = select_matrix(
        state(ctx).engine(),
        MatrixRequest(dataset, pairs, dimension, _names(raters), group, exclude_duplicates),
    )
    m = sel.matrix
    est = agreement_with_ci(
        metric,
        m.values,
        m.categories,
        level,
        ordered=m.numeric,
        n_boot=bootstrap,
        confidence=confidence,
        method=ci_method,
        seed=seed,
    )
    out: dict[str, Any] = {
        **est.as_dict(),
        "raters": list(m.rater_names),
        "dataset": sel.dataset,
        "pairs": pairs,
        "dimension": m.dimension,
        "categories": list(m.category_labels),
        "excluded_items": sel.excluded_items,
    }
    if json_:
        emit_json(out)
        return
    r = est.result
    where = f"pair set {pairs}" if pairs else f"{sel.dataset}/{m.dimension}"
    ci = "" if est.ci is None else f"[{_fmt(est.ci.lo)}, {_fmt(est.ci.hi)}]"
    table(
        f"agreement on {where}"
        + (f" without {sel.excluded_items} duplicated items" if sel.excluded_items else ""),
        ["metric", "level", "value", f"{int(confidence * 100)}% CI" if est.ci else "CI", "units", "raters"],
        [[r.metric, r.level, _fmt(r.value), ci or "—", r.n_units, r.n_raters]],
    )
    console.print("raters: " + ", ".join(m.rater_names))


@app.command("matrix")
def matrix_cmd(
    ctx: typer.Context,
    pairs: str | None = PAIRS,
    dataset: str | None = DATASET,
    dimension: str | None = DIMENSION,
    raters: str | None = RATERS,
    group: str | None = GROUP,
    first: int | None = typer.Option(None, "--first", help="Only the first N units (a training split)."),
    clusters: int = typer.Option(2, "--clusters", help="Cut the average-linkage tree into K clusters."),
    threshold: float | None = typer.Option(
        None, "--threshold", help="Cut instead where the average κ between clusters falls below this."
    ),
    weights: str | None = typer.Option(
        None, "--weights", help=f"Weighted κ for ordered scores: {', '.join(WEIGHT_NAMES[1:])}."
    ),
    exclude_duplicates: str | None = EXCLUDE,
    json_: bool = JSON,
) -> None:
    """Rater × rater Cohen κ (pairwise-complete) and average-linkage clusters on 1 − κ."""
    sel = select_matrix(
        state(ctx).engine(),
        MatrixRequest(dataset, pairs, dimension, _names(raters), group, exclude_duplicates),
    )
    m = sel.matrix
    if weights is not None and not m.numeric:
        raise BadInput("--weights needs ordered scores; these labels are nominal")
    if weights is not None and weights not in WEIGHT_NAMES:
        raise BadInput(f"unknown --weights {weights!r}; use one of {', '.join(WEIGHT_NAMES[1:])}")
    w = cast("WeightName | None", weights)
    km = kappa_matrix(m.values, m.categories, first, names=m.rater_names, weights=w)
    found = cluster_raters(km, k=clusters, threshold=threshold)
    groups = dict(zip(m.rater_names, m.rater_groups, strict=True))
    out: dict[str, Any] = {
        **km.as_dict(),
        "clusters": found,
        "groups": groups,
        "kinds": dict(zip(m.rater_names, m.rater_kinds, strict=True)),
        "dataset": sel.dataset,
        "pairs": pairs,
        "dimension": m.dimension,
        "weights": weights,
        "excluded_items": sel.excluded_items,
    }
    if json_:
        emit_json(out)
        return
    where = f"pair set {pairs}" if pairs else f"{sel.dataset}/{m.dimension}"
    split = f", first {km.n_units} units" if first else f", {km.n_units} units"
    # a compact grid with numbered columns, so eight or more raters fit an 80-column terminal
    grid = Table(title=f"Cohen κ on {where}{split}", box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    grid.add_column("rater", no_wrap=True)
    grid.add_column("group", no_wrap=True)
    for i in range(m.n_raters):
        grid.add_column(str(i + 1), justify="right", no_wrap=True)
    for i, name in enumerate(m.rater_names):
        grid.add_row(f"{i + 1} {name}", groups[name] or "", *(_fmt(v, 2) for v in km.kappa[i]))
    console.print(grid)
    for i, members in enumerate(found, 1):
        composition = ", ".join(
            f"{g} ×{sum((groups[n] or '—') == g for n in members)}"
            for g in dict.fromkeys(groups[n] or "—" for n in members)
        )
        console.print(f"cluster {i}: {', '.join(members)}  ({composition})")
