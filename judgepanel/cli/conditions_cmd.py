"""`judgepanel metrics conditions`: the rubric-condition study (registered on the metrics app).

Kept out of `metrics_cmd.py` so the command and the rater-selection options there can change
independently."""

from __future__ import annotations

import math
from typing import Any

import typer

from judgepanel.cli.context import state
from judgepanel.cli.render import emit_json, table
from judgepanel.metrics.conditions import STATISTICS
from judgepanel.store.conditions import condition_report


def conditions(
    ctx: typer.Context,
    campaign: str = typer.Option(
        ..., "--campaign", help="A pointwise campaign run under several conditions."
    ),
    human_group: str = typer.Option(..., "--human-group", help="Human annotator group (e.g. expert)."),
    dimension: str | None = typer.Option(
        None, "--dimension", help="Dimension (default: the campaign's only one)."
    ),
    judge: str | None = typer.Option(
        None, "--judge", help="Judge spec (default: the campaign's only judge)."
    ),
    per_human: bool = typer.Option(
        False, "--per-human", help="Compare with each human's rating instead of the group's rounded mean."
    ),
    cases: int = typer.Option(0, "--cases", help="List up to N disagreement cases per condition."),
    bootstrap: int = typer.Option(1000, "--bootstrap", help="Bootstrap replicates (items resampled)."),
    seed: int = typer.Option(0, "--seed"),
    json_: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Judge-vs-human agreement per prompt condition (none / criteria / rubric): exact, Cohen κ,
    quadratic-weighted κ and Spearman with item-bootstrap CIs, and paired differences against none."""
    report = condition_report(
        state(ctx).engine(),
        campaign,
        human_group,
        dimension=dimension,
        judge=judge,
        per_human=per_human,
        cases=cases,
        n_boot=bootstrap,
        seed=seed,
    )
    out = report.as_dict()
    if json_:
        emit_json(out)
        return

    def cell(e: dict[str, Any]) -> str:
        v, ci = e["value"], e["ci"]
        if not isinstance(v, float) or math.isnan(v):
            return "n/a"
        if any(not isinstance(x, float) or math.isnan(x) for x in ci):
            return f"{v:.3f}"
        return f"{v:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"

    where = f"{out['campaign']} / {out['dimension'] or '(no dimension)'} / {out['judge']}"
    ref = f"{out['human_group']} ({out['reference']}), scale {out['scale'][0]:g}..{out['scale'][1]:g}"
    table(
        f"{where} vs {ref}",
        ["condition", "n", *STATISTICS],
        [[name, c["n"], *(cell(c[s]) for s in STATISTICS)] for name, c in out["conditions"].items()],
    )
    if out["deltas"]:
        table(
            f"paired differences, 95 % CI over {out['bootstrap']} item resamples",
            ["difference", "items", *STATISTICS],
            [
                [k.replace("_vs_", " − "), d["items"], *(cell(d[s]) for s in STATISTICS)]
                for k, d in out["deltas"].items()
            ],
        )
    for case in out["cases"]:
        each = ", ".join(f"{h['annotator']} {h['value']:g}" for h in case["human_ratings"])
        typer.echo(
            f"\n[{case['condition']}] {case['item']}: judge {case['judge']:g}, "
            f"humans {case['human']:g} ({each})"
        )
        typer.echo(f"  judge: {case['judge_rationale'] or '(no rationale)'}")
        for h in case["human_ratings"]:
            if h["rationale"]:
                typer.echo(f"  {h['annotator']}: {h['rationale']}")
