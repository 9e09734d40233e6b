"""`judgepanel metrics conditions`: the rubric-condition study (registered on the metrics app).

Kept out of `metrics_cmd.py` so the command and the rater-selection options there can change
independently."""

from __future__ import annotations

import math
from typing import Any

import typer

from judgepanel.cli.context import state
from judgepanel.cli.options import JSON
from judgepanel.cli.render import SIMULATED_WORD, emit_json, simulated


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
    bootstrap: int = typer.Option(1000, "--bootstrap", help="Bootstrap replicates."),
    seed: int = typer.Option(0, "--seed"),
    resample: str | None = typer.Option(
        None,
        "--resample",
        help="What a replicate draws: groups (articles; the default where items share groups) or items.",
    ),
    json_: bool = JSON,
) -> None:
    """Judge-vs-human agreement per prompt condition (none / criteria / rubric): exact, Cohen κ,
    quadratic-weighted κ and Spearman with item-bootstrap CIs, and paired differences against none."""
    from judgepanel.analysis.conditions import condition_report
    from judgepanel.metrics.conditions import STATISTICS

    engine = state(ctx).engine()
    report = condition_report(
        engine,
        campaign,
        human_group,
        dimension=dimension,
        judge=judge,
        per_human=per_human,
        cases=cases,
        n_boot=bootstrap,
        seed=seed,
        resample=resample,
    )
    from judgepanel.store.campaigns import campaign_judge_names

    out = {**report.as_dict(), "simulated": simulated(engine, [campaign])}
    # issue 19 §3: `judge` = the short name, `spec` = the full spec (`--judge` takes either);
    # `judge_name` (the name, added before `judge` changed) stays for scripts that read it
    spec = out["judge"]
    name = campaign_judge_names(engine, campaign).get(spec, spec)
    out = {**out, "judge": name, "spec": spec, "judge_name": name}
    if json_:
        emit_json(out)
        return

    def num(x: float) -> str:
        shown = f"{x:.3f}"
        return "0.000" if shown == "-0.000" else shown

    def cell(e: dict[str, Any]) -> str:
        v, ci = e["value"], e["ci"]
        if not isinstance(v, float) or math.isnan(v):
            return "n/a"
        if any(not isinstance(x, float) or math.isnan(x) for x in ci):
            return num(v)
        return f"{num(v)} [{num(ci[0])}, {num(ci[1])}]"

    where = f"{out['campaign']} / {out['dimension'] or '(no dimension)'} / {out['judge_name']}"
    if out["simulated"]:
        where = f"{SIMULATED_WORD} · {where}"
    typer.echo(f"{where} vs {out['human_group']} ({out['reference']}), {_scale_and_ci(out)}")
    for w in out["warnings"]:
        typer.echo(f"warning: {w}", err=True)
    # plain fixed-width lines rather than a rich table: four "value [lo, hi]" cells do not fit 80
    # columns, and wrapped cells are hard to read or paste
    head = f"{'':<18}{'n':>6}  " + "  ".join(f"{s:<24}" for s in STATISTICS)
    typer.echo(head.rstrip())
    for name, c in out["conditions"].items():
        typer.echo((f"{name:<18}{c['n']:>6}  " + "  ".join(f"{cell(c[s]):<24}" for s in STATISTICS)).rstrip())
    for key, d in out["deltas"].items():
        label = key.replace("_vs_", " − ")
        typer.echo(
            (f"{label:<18}{d['items']:>6}  " + "  ".join(f"{cell(d[s]):<24}" for s in STATISTICS)).rstrip()
        )
    for case in out["cases"]:
        each = ", ".join(f"{h['annotator']} {h['value']:g}" for h in case["human_ratings"])
        typer.echo(
            f"\n[{case['condition']}] {case['item_label']}: judge {case['judge']:g}, "
            f"humans {case['human']:g} ({each})"
        )
        typer.echo(f"  judge: {case['judge_rationale'] or '(no rationale)'}")
        for h in case["human_ratings"]:
            if h["rationale"]:
                typer.echo(f"  {h['annotator']}: {h['rationale']}")


def _scale_and_ci(out: dict[str, Any]) -> str:
    """`scale 1..5; 95 % CI over 1000 resamples of 100 groups (seed 0)`, or for fewer than 20
    resampled units the t interval that replaces the percentile one (issue 30 §1)."""
    scale = f"scale {out['scale'][0]:g}..{out['scale'][1]:g}"
    methods = {
        e["ci_method"] for c in out["conditions"].values() for k, e in c.items() if isinstance(e, dict)
    }
    units = f"{out['n_groups']} groups" if out["resample"] == "groups" else "items"
    if methods <= {"percentile"}:
        return f"{scale}; 95 % CI over {out['bootstrap']} resamples of {units} (seed {out['seed']})"
    g = (
        out["n_groups"]
        if out["resample"] == "groups"
        else max(c["items"] for c in out["conditions"].values())
    )
    if g is not None and g < 2:
        return f"{scale}; no interval: the items come from {g} group (its spread cannot be estimated)"
    return (
        f"{scale}; 95 % CI estimate ± t({g - 1})·SE over {units} (exact: CR1 cluster-robust SE; "
        "κ, QWK, ρ: group jackknife SE)"
    )
