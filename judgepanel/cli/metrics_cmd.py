"""`judgepanel metrics …`: agreement coefficients and rater κ matrices over stored labels."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, cast

import typer

from judgepanel.cli.conditions_cmd import conditions
from judgepanel.cli.context import state
from judgepanel.cli.options import JSON
from judgepanel.cli.render import (
    column_blocks,
    console,
    emit_json,
    out_width,
    printable,
    sim_title,
    simulated,
    table,
)
from judgepanel.cli.selection import (
    EXCLUDE,
    GROUP,
    RATERS,
    WITH_JUDGES,
    Selection,
    labels_place,
    parse_raters,
    parse_with_judges,
    provenance,
    select,
    selection_json,
    selection_options,
    source,
)
from judgepanel.errors import BadInput
from judgepanel.metrics.names import LEVELS, METHODS, METRICS, WEIGHT_NAMES  # no numpy: `--help` stays light

if TYPE_CHECKING:  # imported inside the commands that use them, so that `--help` stays fast
    from judgepanel.metrics.agreement import WeightName
    from judgepanel.metrics.heldout import HeldoutResult
    from judgepanel.metrics.matrix import RatingMatrix
    from judgepanel.metrics.summary import MetaEvaluation


# judgepanel.metrics.prediction.MODELS (checked in tests/cli/test_help.py)
PREDICTION_MODELS = tuple(
    f"{f}-{c}"
    for f in ("scores", "labels", "dims", "groups", "select")
    for c in ("humans", "joint", "judges")
)

app = typer.Typer(
    help="Agreement, rater matrices and other statistics over stored labels.", no_args_is_help=True
)

NO_VERDICTS = "no verdicts yet"


def _judge_campaigns(ctx: typer.Context, m: RatingMatrix) -> list[str]:
    """The campaigns whose judges are columns of `m` (named `JUDGE@CAMPAIGN[/VARIANT]`)."""
    from judgepanel.metrics.matrix import JUDGE
    from judgepanel.store.campaigns import list_campaigns

    names = [n for n, k in zip(m.rater_names, m.kinds, strict=True) if k == JUDGE]
    if not names:
        return []
    campaigns = sorted((c["name"] for c in list_campaigns(state(ctx).engine())), key=len, reverse=True)
    found = {next((c for c in campaigns if n.endswith(f"@{c}") or f"@{c}/" in n), None) for n in names}
    return sorted(c for c in found if c is not None)


def _fmt(v: float | None, digits: int = 3) -> str:
    return "—" if v is None or not math.isfinite(v) else f"{v:.{digits}f}"


@app.command("agreement")
@selection_options(pairs_first=False)
def agreement_cmd(
    ctx: typer.Context,
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
    categories: str | None = typer.Option(
        None,
        "--categories",
        help="Comma-separated category set (default: the scale the dataset declares, else the "
        "categories the selected raters used).",
    ),
    json_: bool = JSON,
    *,
    selection: Selection,
) -> None:
    """One agreement coefficient over the chosen raters' labels (the human raters unless judges are named)."""
    from judgepanel.metrics.bootstrap import agreement_with_ci

    sel = select(ctx, selection, categories)
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
        **source(sel, selection.pairs),
        "categories": list(m.category_labels),
        "selection": selection_json(m, selection.raters, selection.group, selection.with_judges),
        "excluded_items": sel.excluded_items,
    }
    if json_:
        emit_json(out)
        return
    r = est.result
    where = labels_place(sel, selection.pairs)
    ci = "" if est.ci is None else f"[{_fmt(est.ci.lo)}, {_fmt(est.ci.hi)}]"
    table(
        f"agreement on {where}"
        + (f" without {sel.excluded_items} duplicated items" if sel.excluded_items else ""),
        ["metric", "level", "value", f"{int(confidence * 100)}% CI" if est.ci else "CI", "units", "raters"],
        [[r.metric, r.level, _fmt(r.value), ci or "—", r.n_units, r.n_raters]],
    )
    console.print(f"raters ({out['selection']['rule']}): " + ", ".join(m.rater_names))


@app.command("matrix")
@selection_options(pairs_first=True)
def matrix_cmd(
    ctx: typer.Context,
    first: int | None = typer.Option(None, "--first", help="Only the first N units (a training split)."),
    clusters: int = typer.Option(2, "--clusters", help="Cut the average-linkage tree into K clusters."),
    threshold: float | None = typer.Option(
        None, "--threshold", help="Cut instead where the average κ between clusters falls below this."
    ),
    weights: str | None = typer.Option(
        None, "--weights", help=f"Weighted κ for ordered scores: {', '.join(WEIGHT_NAMES[1:])}."
    ),
    json_: bool = JSON,
    *,
    selection: Selection,
) -> None:
    """Rater × rater Cohen κ (pairwise-complete) and average-linkage clusters on 1 − κ."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from judgepanel.metrics.raters import cluster_raters, kappa_matrix

    sel = select(ctx, selection)
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
        "kinds": dict(zip(m.rater_names, m.kinds, strict=True)),
        **provenance(sel, selection),
        "weights": weights,
        "excluded_items": sel.excluded_items,
    }
    if json_:
        emit_json(out)
        return
    where = labels_place(sel, selection.pairs)
    split = f", first {km.n_units} units" if first else f", {km.n_units} units"
    # a compact grid with numbered columns; when the raters' columns do not all fit the width, the
    # grid is printed in blocks of columns that do, so no κ is ever cut to `0…`
    labels = [printable(f"{i + 1} {name}") for i, name in enumerate(m.rater_names)]
    kinds = [printable(groups[name] or "") for name in m.rater_names]
    cells = [[_fmt(v, 2) for v in row] for row in km.kappa]
    label_w = max([5, *(len(x) for x in labels)])
    kind_w = max([5, *(len(x) for x in kinds)])
    col_w = [max(len(str(j + 1)), *(len(r[j]) for r in cells)) for j in range(m.n_raters)]
    # each column takes its cells, a space of padding each side and the box's one-space divider
    blocks = column_blocks(col_w, out_width() - (label_w + 2) - (kind_w + 3) - 1, gap=3)
    for cols in blocks:
        span = f", raters {cols[0] + 1}–{cols[-1] + 1}" if len(blocks) > 1 else ""
        grid = Table(
            title=f"Cohen κ on {where}{split}{span}", box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False
        )
        grid.add_column("rater", no_wrap=True)
        grid.add_column("group", no_wrap=True)
        for j in cols:
            grid.add_column(str(j + 1), justify="right", no_wrap=True)
        for i in range(m.n_raters):
            grid.add_row(Text(labels[i]), Text(kinds[i]), *(Text(cells[i][j]) for j in cols))
        console.print(grid)
    if len(blocks) > 1:
        console.print(
            "(the matrix is printed in blocks of columns to keep every κ whole; --json has it in one piece)"
        )
    for i, members in enumerate(found, 1):
        composition = ", ".join(
            f"{g} ×{sum((groups[n] or '—') == g for n in members)}"
            for g in dict.fromkeys(groups[n] or "—" for n in members)
        )
        console.print(f"cluster {i}: {', '.join(members)}  ({composition})")


# ---------------------------------------------------------------- truth inference and meta-evaluation

TRUTH_CHOICES = {"majority": "majority", "dawid-skene": "dawid_skene", "mace": "mace"}


def _split(n_units: int, split: int | None, option: str = "--train") -> int:
    train = round(0.8 * n_units) if split is None else split
    if not 0 < train < n_units:
        raise BadInput(f"{option} must leave units on both sides: 0 < {train} < {n_units} units")
    return train


@app.command("truth")
@selection_options(pairs_first=True)
def truth_cmd(
    ctx: typer.Context,
    method: str = typer.Option(..., "--method", help="majority, dawid-skene or mace."),
    seed: int = typer.Option(0, "--seed", help="Seed for tie-breaking and MACE restarts."),
    pseudo_count: float = typer.Option(0.01, "--pseudo-count", help="Dawid–Skene pseudo-count."),
    max_iter: int | None = typer.Option(None, "--max-iter", help="EM iteration cap (DS 100, MACE 500)."),
    tol: float = typer.Option(1e-7, "--tol", help="EM stops below this gain per observed label."),
    restarts: int = typer.Option(10, "--restarts", help="MACE random restarts."),
    json_: bool = JSON,
    *,
    selection: Selection,
) -> None:
    """Infer each unit's label (majority vote, Dawid–Skene or MACE) and what it says about raters."""
    from judgepanel.metrics.summary import truth_report

    if method not in TRUTH_CHOICES:
        raise BadInput(f"unknown --method {method!r}; use one of {', '.join(TRUTH_CHOICES)}")
    if pseudo_count < 0 or tol < 0 or restarts < 1 or (max_iter is not None and max_iter < 1):
        raise BadInput("--pseudo-count and --tol must be >= 0, --restarts and --max-iter >= 1")
    sel = select(ctx, selection)
    m = sel.matrix
    rep = truth_report(
        m,
        TRUTH_CHOICES[method],
        seed=seed,
        pseudo_count=pseudo_count,
        max_iter=max_iter,
        tol=tol,
        restarts=restarts,
    )
    body = rep.as_dict()
    out: dict[str, Any] = {
        **body,
        "method": method,
        "agreement_with": {k.replace("_", "-"): v for k, v in body["agreement_with"].items()},
        "raters": list(m.rater_names),
        "groups": dict(zip(m.rater_names, m.rater_groups, strict=True)),
        **provenance(sel, selection),
        "seed": seed,
        "excluded_items": sel.excluded_items,
    }
    if json_:
        emit_json(out)
        return
    where = labels_place(sel, selection.pairs)
    fit = "" if rep.n_iter is None else f"; {rep.n_iter} iterations, converged: {rep.converged}"
    console.print(f"{method} on {where}: {int((rep.labels >= 0).sum())} units labelled{fit}")
    table(
        "inferred labels",
        ["label", "units"],
        [[lab, n] for lab, n in rep.distribution.items()] + [["ties broken", rep.tied_units]],
    )
    what = {"majority": "agreement with majority", "dawid-skene": "estimated accuracy", "mace": "competence"}
    table(
        "raters",
        ["rater", "group", what[method]],
        [[n, m.rater_groups[i] or "", _fmt(rep.rater_accuracy[n])] for i, n in enumerate(m.rater_names)],
    )
    table(
        "agreement with the other methods",
        ["method", "agreement", "units"],
        [[k.replace("_", "-"), _fmt(v), n] for k, (v, n) in rep.agreement_with.items()],
    )


def _heldout_rows(result: HeldoutResult, names: tuple[str, ...]) -> list[list[Any]]:
    from judgepanel.metrics.heldout import METHODS as HELDOUT_METHODS

    cluster_no = {m: i for i, c in enumerate(result.clusters, 1) for m in c}
    rows: list[list[Any]] = []
    for r in result.raters:
        rows.append(
            [
                names[r.rater],
                r.group,
                cluster_no.get(r.rater, ""),
                r.n_test,
                *(_fmt(r.accuracy(mt)) for mt in HELDOUT_METHODS),
            ]
        )
    for g in result.groups:
        rows.append([f"{g.group} (pooled)", "", "", g.n, *(_fmt(g.micro[mt]) for mt in HELDOUT_METHODS)])
    return rows


HELDOUT_COLUMNS = ["rater", "group", "cluster", "test labels", "majority", "cluster maj.", "dawid-skene"]


@app.command("heldout")
@selection_options(pairs_first=True)
def heldout_cmd(
    ctx: typer.Context,
    train: int | None = typer.Option(
        None, "--train", help="The first N units train (clusters), the rest test (default 80 %)."
    ),
    clusters: int = typer.Option(2, "--clusters", help="Clusters cut from the training κ tree."),
    method: str = typer.Option(
        "all",
        "--method",
        help="Fitted models beside the baselines: all (the scores-* and labels-* models), or "
        "comma-separated from " + ", ".join(PREDICTION_MODELS) + "; add mace for a MACE baseline",
    ),
    folds: int = typer.Option(1, "--folds", help="K random train/test splits (1: the first N units train)."),
    split_by: str = typer.Option(
        "items",
        "--split-by",
        help="items: units train or test; group: whole articles (item groups) do, so test units "
        "come from articles no training unit does (--train then sets the share of articles).",
    ),
    bootstrap: int = typer.Option(1000, "--bootstrap", help="Replicates for the CIs of accuracy − cluster."),
    seed: int = typer.Option(0, "--seed"),
    json_: bool = JSON,
    *,
    selection: Selection,
) -> None:
    """Leave-one-rater-out: predict each rater's test labels from everyone else."""
    import numpy as np

    from judgepanel.cli.heldout_render import ceiling_words, render_ceilings, render_registered
    from judgepanel.metrics.heldout import METHODS as HELDOUT_METHODS
    from judgepanel.metrics.heldout_splits import SPLIT_DESIGNS
    from judgepanel.metrics.prediction import JUDGE_GAIN, choose_methods, heldout_battery
    from judgepanel.metrics.registered import group_ceilings, registered_comparisons
    from judgepanel.metrics.summary import heldout_report
    from judgepanel.store.matrices import unit_groups
    from judgepanel.store.pair_scores import pair_dimension_differences, pair_score_differences

    if split_by not in SPLIT_DESIGNS:
        raise BadInput(f"--split-by must be one of {', '.join(SPLIT_DESIGNS)}, got {split_by!r}")
    if clusters < 1:
        raise BadInput(f"--clusters must be at least 1, got {clusters}")
    if folds < 1:
        raise BadInput(f"--folds must be at least 1, got {folds}")
    if bootstrap < 1:
        raise BadInput(f"--bootstrap must be at least 1, got {bootstrap}")
    requested = [x.strip() for x in method.split(",") if x.strip()]
    if not requested:
        raise BadInput("--method needs all or method names")
    sel = select(ctx, selection)
    m = sel.matrix
    n_train = _split(m.n_units, train, "--train")
    chosen = choose_methods(m, requested, have_scores=selection.pairs is not None)
    keys = unit_groups(state(ctx).engine(), m)
    if split_by == "group" and len({k for k in keys if k is not None}) < 2:
        raise BadInput(
            f"--split-by group needs items in at least two groups; {labels_place(sel, selection.pairs)} has fewer"
        )
    diffs = (
        pair_score_differences(state(ctx).engine(), selection.pairs, m)
        if selection.pairs is not None
        else np.full(m.values.shape, np.nan)
    )
    dims = (
        pair_dimension_differences(state(ctx).engine(), selection.pairs, m)[0]
        if selection.pairs is not None
        and any(mt.split("-", 1)[0] in ("dims", "groups", "select") for mt in chosen)
        else None
    )
    result, found, _ = heldout_report(m, train=n_train, n_clusters=clusters, seed=seed)
    battery = heldout_battery(
        m,
        diffs,
        train=n_train,
        methods=chosen,
        folds=folds,
        n_clusters=clusters,
        n_bootstrap=bootstrap,
        seed=seed,
        dimension_differences=dims,
        mace_baseline="mace" in requested,
        split_by=split_by,
        unit_groups=keys,
    )
    bands = group_ceilings(m)
    ceilings = {g: (b.as_dict() if (b := bands.get(g)) is not None else None) for g in battery.groups}
    registered = registered_comparisons(battery, m, n_bootstrap=bootstrap, seed=seed).as_dict()
    names = m.rater_names
    out: dict[str, Any] = {
        **battery.as_dict(),
        "clusters": found,
        "raters": {
            names[r.rater]: {
                "group": r.group,
                "n_test": r.n_test,
                "cluster_mates": [names[i] for i in r.cluster_mates],
                "fallback_label": m.category_labels[r.fallback_label],
                **{mt.replace("_", "-"): r.accuracy(mt) for mt in HELDOUT_METHODS},
                "fallbacks": {mt.replace("_", "-"): r.scores[mt].fallbacks for mt in HELDOUT_METHODS},
                "dawid_skene_ece": r.dawid_skene_ece,
            }
            for r in result.raters
        },
        "groups": {
            g.group: {
                "n": g.n,
                "micro": {k.replace("_", "-"): v for k, v in g.micro.items()},
                "macro": {k.replace("_", "-"): v for k, v in g.macro.items()},
            }
            for g in result.groups
        },
        **provenance(sel, selection),
        # campaigns whose judges were counted (one judge once per request: a campaign answered
        # entirely from another's cache adds none)
        "judge_campaigns": _judge_campaigns(ctx, m),
        "seed": seed,
        "excluded_items": sel.excluded_items,
        "ceiling": ceilings,
        "registered": registered,
    }
    if json_:
        emit_json(out)
        return
    if out["judge_campaigns"]:
        console.print(f"judges included from campaign(s): {', '.join(out['judge_campaigns'])}")
    where = labels_place(sel, selection.pairs)
    table(
        f"leave-one-rater-out accuracy on {where} (train {n_train}, test {m.n_units - n_train})",
        HELDOUT_COLUMNS,
        _heldout_rows(result, names),
    )
    for i, c in enumerate(found, 1):
        console.print(f"cluster {i} (κ on the first {n_train} units): {', '.join(c)}")
    bd = out["methods"]
    split = out["folds"]["split"] + (f", mean of {folds} folds" if folds > 1 else "")
    render_ceilings(ceilings)
    for g in battery.groups:
        table(
            f"group {g}: accuracy by method ({split}); Δ = accuracy − cluster, 95% CI: {battery.ci_method}; "
            + ceiling_words(ceilings.get(g)),
            ["method", "accuracy", "Δ", "CI", "log loss", "ECE"],
            [
                [
                    mt,
                    _fmt(bd[mt]["accuracy"][g]),
                    f"{bd[mt]['delta_vs_cluster'][g]['value']:+.3f}",
                    "[" + ", ".join(_fmt(x) for x in bd[mt]["delta_vs_cluster"][g]["ci"]) + "]",
                    _fmt(bd[mt]["log_loss"][g]),
                    _fmt(bd[mt]["ece"][g]),
                ]
                for mt in battery.methods
            ],
        )
    if battery.judges_add:
        table(
            f"do the LLM judges add at least {JUDGE_GAIN:.0%} accuracy? (F-joint − F-humans, 95% CI: {battery.ci_method})",
            ["features", "group", "Δ", "CI", "verdict"],
            [
                [fam, g, f"{v['value']:+.3f}", "[" + ", ".join(_fmt(x) for x in v["ci"]) + "]", v["verdict"]]
                for fam, by_group in battery.judges_add.items()
                for g, v in by_group.items()
            ],
        )
    render_registered(registered, ceilings)


@app.command("summary")
def summary_cmd(
    ctx: typer.Context,
    pairs: str = typer.Option(..., "--pairs", help="Pair set to evaluate."),
    train: int | None = typer.Option(
        None, "--train", help="The first N pairs train (κ, clusters), the rest test (default 80 %)."
    ),
    split: int | None = typer.Option(None, "--split", hidden=True),  # the old name of --train
    clusters: int = typer.Option(2, "--clusters", help="Clusters cut from the training κ tree."),
    seed: int = typer.Option(0, "--seed", help="Seed for tie-breaking and MACE restarts."),
    raters: str | None = RATERS,
    group: str | None = GROUP,
    with_judges: str | None = WITH_JUDGES,
    exclude_duplicates: str | None = EXCLUDE,
    json_: bool = JSON,
) -> None:
    """The whole meta-evaluation battery on a pair set (human raters by default): labels by group, κ clusters,
    duplicates, held-out prediction, vote entropy against the score gap, and agreement between
    truth-inference methods."""
    from judgepanel.metrics.summary import meta_evaluation
    from judgepanel.store.pair_scores import pair_set_inputs

    if clusters < 1:
        raise BadInput(f"--clusters must be at least 1, got {clusters}")
    inputs = pair_set_inputs(
        state(ctx).engine(),
        pairs,
        exclude_duplicates=exclude_duplicates,
        raters=parse_raters(raters),
        group=group,
        with_judges=parse_with_judges(with_judges),
    )
    if train is not None and split is not None:
        raise BadInput("--split is the old name of --train: give one of them")
    n_train = _split(
        inputs.matrix.n_units,
        train if split is None else split,
        "--split" if split is not None else "--train",
    )
    res = meta_evaluation(
        inputs.matrix,
        train=n_train,
        seed=seed,
        score_gap=inputs.score_gap,
        duplicate_units=inputs.duplicate_units,
        n_clusters=clusters,
    )
    out: dict[str, Any] = {
        "pairs": pairs,
        "dataset": inputs.dataset,
        **res.as_dict(),
        "duplicate_items": inputs.duplicate_items,
        "excluded_duplicates_of": exclude_duplicates,
        "selection": selection_json(inputs.matrix, raters, group, with_judges),
    }
    if json_:
        emit_json(out)
        return
    _render_summary(pairs, res, inputs.duplicate_items)


def _render_summary(pairs: str, res: MetaEvaluation, duplicate_items: dict[str, int]) -> None:
    from judgepanel.metrics.summary import group_composition

    console.print(
        f"meta-evaluation of pair set {pairs}: {res.n_units} pairs, "
        f"{len(res.raters)} raters; train = first {res.n_train}, test = last {res.n_test}; seed {res.seed}"
    )
    table(
        "label distribution by group",
        ["group", *res.categories],
        [[g, *c.values()] for g, c in res.labels_by_group.items()],
    )
    kappa_rows: list[list[Any]] = [[f"within {g}", _fmt(v)] for g, v in res.kappa_within.items()]
    kappa_rows += [[f"between {k.replace('|', ' and ')}", _fmt(v)] for k, v in res.kappa_between.items()]
    table(f"mean pairwise Cohen κ (first {res.n_train} pairs)", ["raters", "κ"], kappa_rows)
    for i, c in enumerate(res.clusters, 1):
        comp = ", ".join(
            f"{g} ×{n}" for g, n in group_composition([res.groups[res.raters.index(x)] for x in c]).items()
        )
        console.print(f"cluster {i}: {', '.join(c)}  ({comp})")
    if res.duplicates:
        table(
            "duplicated annotation (items where a group's members gave identical score vectors)",
            ["group", "flagged items", "pairs touched", "κ with", "κ without", "α with", "α without"],
            [
                [
                    d.group,
                    duplicate_items.get(d.group, 0),
                    f"{d.flagged_units} of {d.units_with}",
                    _fmt(d.kappa_with),
                    _fmt(d.kappa_without),
                    _fmt(d.alpha_with),
                    _fmt(d.alpha_without),
                ]
                for d in res.duplicates
            ],
        )
    table(
        f"leave-one-rater-out accuracy on the last {res.n_test} pairs",
        HELDOUT_COLUMNS,
        _heldout_rows(res.heldout, res.raters),
    )
    table(
        "entropy (nats) and score-gap rank correlations",
        ["x", "y", "Spearman ρ", "Kendall τ", "units"],
        [
            [c.x, c.y, _fmt(c.result.spearman), _fmt(c.result.kendall), c.result.n]
            for c in res.correlations
            if c.y == "score_gap" or (c.x.startswith("vote_entropy(") and c.y.startswith("vote_entropy("))
        ],
    )
    table(
        "truth inference: labels",
        ["method", *res.categories],
        [[m.replace("_", "-"), *d.values()] for m, d in res.truth.distribution.items()],
    )
    rows: list[list[Any]] = [
        [f"{a.replace('_', '-')} vs {b.replace('_', '-')}", _fmt(v), n] for a, b, v, n in res.truth.agreement
    ]
    rows += [
        [f"{m.replace('_', '-')} vs {g} majority", _fmt(v), n]
        for m, by_g in res.truth.with_group_majority.items()
        for g, (v, n) in by_g.items()
    ]
    table("truth inference: agreement (units)", ["pair of labelings", "agreement", "units"], rows)
    if res.calibration:
        table(
            "calibration on the test pairs",
            ["posterior", "against", "ECE", "units"],
            [[c.posterior, c.labels, _fmt(c.ece), c.n] for c in res.calibration],
        )


@app.command("bias")
def bias_cmd(
    ctx: typer.Context,
    campaign: str = typer.Option(..., "--campaign", help="A pairwise campaign (asked in AB and BA order)."),
    json_: bool = JSON,
) -> None:
    """Position bias per judge: back/front slot wins over inconsistent swapped pairs, exact sign test."""
    from judgepanel.runner.bias import campaign_bias
    from judgepanel.store.campaigns import campaign_judge_names

    engine = state(ctx).engine()
    result = campaign_bias(engine, campaign)
    names = campaign_judge_names(engine, campaign)
    sim = simulated(engine, [campaign])
    # a judge with no pair answered in both orders has no test at all: p_value null and
    # `no verdicts yet`, never the p = 1 of a judge whose swapped pairs showed no bias
    none_yet = {spec for spec, b in result.items() if b.pairs == 0}

    def row(spec: str) -> dict[str, Any]:
        d = result[spec].as_dict()
        return {**d, "p_value": None, "note": NO_VERDICTS} if spec in none_yet else d

    if json_:
        # keyed by the judge's short name (`--judge NAME=SPEC` or derived), its full spec inside
        shown = {names.get(spec, spec): {**row(spec), "spec": spec} for spec in result}
        emit_json({"judges": shown, "simulated": sim})
        return
    if result and len(none_yet) == len(result):
        typer.echo(
            f"{campaign}: no verdicts yet for any of its {len(result)} judge(s) (no pair answered in "
            f"both orders): run `judgepanel campaign run {campaign}` first"
        )
        return
    # the columns are the JSON keys, in their order, so the table and `--json` read alike
    keys = list(next(iter(result.values())).as_dict()) if result else []
    table(
        sim_title(f"position bias in {campaign} (swapped pairs; p_value: exact sign test)", sim),
        ["judge", *keys],
        [
            [names.get(n, n), *(NO_VERDICTS if k == "p_value" else v for k, v in row(n).items() if k in keys)]
            if n in none_yet
            else [names.get(n, n), *b.as_dict().values()]
            for n, b in result.items()
        ],
    )


@app.command("joint")
def joint_cmd(
    ctx: typer.Context,
    campaign: str = typer.Option(..., "--campaign", help="A pairwise campaign (asked in AB and BA order)."),
    confidence: float = typer.Option(
        0.95, "--confidence", help="Coverage of the profile-likelihood interval."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed for tie-breaking."),
    json_: bool = JSON,
) -> None:
    """Joint human + judge Dawid–Skene with a position bias per judge, fitted bias with its interval."""
    import numpy as np

    from judgepanel.metrics.summary import position_bias_report
    from judgepanel.store.pair_scores import campaign_joint_inputs

    if not 0 < confidence < 1:
        raise BadInput(f"--confidence must lie between 0 and 1, got {confidence}")
    engine = state(ctx).engine()
    inputs = campaign_joint_inputs(engine, campaign)
    if not inputs.judge_names or np.isnan(inputs.judges_ab).all():
        raise BadInput(f"campaign {campaign!r} has no pair judged in both orders yet; run it first")
    rep = position_bias_report(
        inputs.humans,
        inputs.judges_ab,
        inputs.judges_ba,
        judge_names=inputs.judge_names,
        confidence=confidence,
        seed=seed,
    )
    from judgepanel.store.campaigns import campaign_judge_names

    names = campaign_judge_names(engine, campaign)
    d = rep.as_dict()
    # keyed by the judge's short name, its full spec inside, as `metrics bias` (issue 19 §3)
    d["judges"] = {names.get(spec, spec): {**j, "spec": spec} for spec, j in d["judges"].items()}
    out: dict[str, Any] = {
        "campaign": campaign,
        "pairs": inputs.pairs,
        "units": len(inputs.pair_ids),
        "humans": list(inputs.human_names),
        **d,
        "simulated": simulated(engine, [campaign]),
    }
    if json_:
        emit_json(out)
        return
    table(
        sim_title(
            f"position bias in {campaign}: joint model, {d['interval']} interval (+ back slot, − front slot)",
            out["simulated"],
        ),
        ["judge", "bias", "interval", "back wins", "front wins", "back verdicts", "front verdicts"],
        [
            [
                name,
                _fmt(j["bias"]),
                f"[{_fmt(j['interval'][0])}, {_fmt(j['interval'][1])}]",
                j["back_wins"],
                j["front_wins"],
                j["back_verdicts"],
                j["front_verdicts"],
            ]
            for name, j in d["judges"].items()
        ],
    )
    t = d["truth"]
    console.print(
        f"joint truth vs order-blind Dawid–Skene: {_fmt(t['agreement_with_order_blind']['agreement'])} agreement; "
        f"vs human majority: {_fmt(t['agreement_with_human_majority']['agreement'])} "
        f"(order-blind {_fmt(t['order_blind_agreement_with_human_majority']['agreement'])})"
    )


# `metrics conditions` lives in its own module (it and the rater-selection options here change
# independently); registered last so it is listed after the other metrics commands
app.command("conditions")(conditions)

# `metrics prevalence` and `metrics votes` live in their own modules (prevalence_cmd, votes_cmd)
from judgepanel.cli.prevalence_cmd import prevalence  # noqa: E402
from judgepanel.cli.votes_cmd import votes  # noqa: E402

app.command("prevalence")(prevalence)
app.command("votes")(votes)
