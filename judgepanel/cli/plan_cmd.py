"""`judgepanel plan …`: how much human overlap validation needs, and who annotates what."""

from __future__ import annotations

import math
from pathlib import Path

import typer

from judgepanel.cli.context import state
from judgepanel.cli.options import JSON
from judgepanel.cli.render import console, emit_json, table
from judgepanel.errors import BadInput

app = typer.Typer(help="Plan the human re-annotation that judge validation needs.", no_args_is_help=True)


@app.command("overlap")
def overlap(
    ctx: typer.Context,
    sigma0: float | None = typer.Option(None, "--sigma0", help="Per-item SD of the judge's advantage d."),
    mu_d: float | None = typer.Option(None, "--mu-d", help="Mean per-item advantage of the judge."),
    delta_min: float | None = typer.Option(
        None, "--delta-min", help="Smallest gap between judges to resolve."
    ),
    judges: int | None = typer.Option(None, "--judges", help="Number of judges J to choose among."),
    dataset: str | None = typer.Option(None, "--dataset", help="Estimate σ0, μ_d, Δ_min from this dataset."),
    judge: list[str] | None = typer.Option(None, "--judge", help="Judge(s) to estimate from (repeatable)."),
    scorer: str = typer.Option("accuracy", "--scorer", help="accuracy | neg-rmse | trigram-cosine"),
    epsilon: float = typer.Option(0.05, "--epsilon"),
    alpha: float = typer.Option(0.05, "--alpha"),
    n: int | None = typer.Option(None, "--n", help="Items in the study (default: the dataset's)."),
    coverage: float | None = typer.Option(None, "--coverage", help="Share ρ of items each secondary labels."),
    dimension: str | None = typer.Option(None, "--dimension"),
    json_: bool = JSON,
) -> None:
    """m*_cert and m*_rank, and the pairwise overlaps a coverage ρ yields (ρ²n, ρn)."""
    from judgepanel.metrics.design import plan_overlap

    given = {"--sigma0": sigma0, "--mu-d": mu_d, "--delta-min": delta_min, "--epsilon": epsilon}
    for option, value in given.items():
        if value is not None and not math.isfinite(value):
            raise BadInput(f"{option} must be a finite number, got {value}")
    if not 0.0 <= epsilon <= 1.0:
        raise BadInput(f"--epsilon must be in [0, 1], got {epsilon}")
    if delta_min is not None and delta_min < 0:
        raise BadInput(f"--delta-min is a gap between judges and must not be negative, got {delta_min}")
    if judges is not None and judges < (2 if delta_min is not None else 1):
        raise BadInput(f"--judges must be at least {2 if delta_min is not None else 1}, got {judges}")
    if dataset is not None:
        if sigma0 is not None or mu_d is not None or delta_min is not None:
            raise BadInput("give either --sigma0/--mu-d/--delta-min or --dataset with --judge, not both")
        from judgepanel.analysis.validation import estimate_overlap_plan  # the store: only with --dataset

        plan = estimate_overlap_plan(
            state(ctx).engine(),
            dataset,
            judge or [],
            epsilon=epsilon,
            scorer=scorer.replace("_", "-"),
            alpha=alpha,
            coverage=coverage,
            n_items=n,
            dimension=dimension,
        )
    else:
        if sigma0 is None or mu_d is None:
            raise BadInput("give --sigma0 and --mu-d (and --delta-min to rank), or --dataset with --judge")
        if judge:
            raise BadInput("--judge needs --dataset")
        plan = plan_overlap(
            sigma0=sigma0,
            mu_d={"judge": mu_d},
            epsilon=epsilon,
            delta_min=delta_min,
            n_judges=judges if judges is not None else (2 if delta_min is not None else 1),
            alpha=alpha,
            n_items=n,
            coverage=coverage,
        )
    if json_:
        emit_json(plan.as_dict())
        return
    table(
        f"overlap needed ({plan.source}; σ0 = {plan.sigma0:.3f}, ε = {epsilon}, α = {alpha})",
        ["judge", "μ_d", "m*_cert"],
        [[name, plan.mu_d[name], _cert(plan.m_cert[name], plan.mu_d[name], epsilon)] for name in plan.mu_d],
    )
    for name, why in plan.reason.items():
        if why is not None:
            console.print(f"{name}: no m*_cert — {why}")
    if plan.delta_min is not None:
        console.print(f"m*_rank = {plan.m_rank or '∞'} (J = {plan.n_judges}, Δ_min = {plan.delta_min:.3f})")
    if plan.overlap_secondary_pair is not None:
        console.print(
            f"coverage ρ = {plan.coverage}: two secondaries share ρ²n = {plan.overlap_secondary_pair:.1f} "
            f"items; each shares ρn = {plan.overlap_with_primary:.1f} with the primary"
        )


def _cert(m: int | None, mu_d: float, epsilon: float) -> str | int:
    if m is not None:
        return m
    return "none (μ_d = −ε)" if mu_d + epsilon == 0.0 else "none (μ_d < −ε)"


@app.command("allocate")
def allocate(
    ctx: typer.Context,
    dataset: str = typer.Option(..., "--dataset"),
    primary: str = typer.Option(..., "--primary", help="Annotator whose labels cover every item."),
    annotators: str = typer.Option(..., "--annotators", help="Secondary annotators, comma-separated."),
    coverage: float = typer.Option(..., "--coverage", help="Share ρ of the items each secondary gets."),
    design: str = typer.Option("random", "--design", help="random | strat | seq-refined | seq-coverage"),
    seed: int = typer.Option(0, "--seed"),
    out: Path = typer.Option(..., "--out", help="Folder for one CSV per secondary annotator."),
    name: str = typer.Option(..., "--name", help="Name under which the allocation is stored."),
    dimension: str | None = typer.Option(None, "--dimension"),
    replace: bool = typer.Option(False, "--replace", help="Replace an allocation of this name."),
    json_: bool = JSON,
) -> None:
    """Assign items to secondary annotators at coverage ρ; write CSVs and record the assignment."""
    from judgepanel.analysis.allocation import create_allocation

    summary = create_allocation(
        state(ctx).engine(),
        dataset=dataset,
        name=name,
        primary=primary,
        annotators=annotators.split(","),
        coverage=coverage,
        design=design,
        seed=seed,
        out_dir=out,
        dimension=dimension,
        replace=replace,
    )
    if json_:
        emit_json(summary.as_dict())
        return
    names = list(summary.assigned)
    table(
        f"allocation {summary.name}: {summary.design}, ρ = {summary.coverage}, seed {summary.seed} "
        f"({summary.n_items} items, primary {summary.primary})",
        ["annotator", "items", "coverage", *names],
        [
            [a, summary.assigned[a], summary.assigned[a] / summary.n_items]
            + [summary.overlaps[a].get(b, "—") for b in names]
            for a in names
        ],
    )
    console.print(f"files: {', '.join(summary.files)}" + (" (unchanged)" if summary.unchanged else ""))
