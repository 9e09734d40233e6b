"""`judgepanel simulate …`: design studies run on simulated panels."""

from __future__ import annotations

import typer

from judgepanel.cli.render import console, emit_json, table
from judgepanel.metrics.design import DESIGNS
from judgepanel.metrics.simulate import SimConfig, parse_floats, parse_names, simulate_designs

app = typer.Typer(help="Simulate re-annotation designs before paying for them.", no_args_is_help=True)


@app.command("designs")
def designs(
    n: int = typer.Option(500, "--n", help="Items."),
    humans: int = typer.Option(
        5, "--humans", help="Humans K: one primary (all items) and K − 1 secondaries."
    ),
    accuracy: float = typer.Option(0.85, "--accuracy", help="Accuracy p of every human."),
    classes: int = typer.Option(2, "--classes", help="Number of classes L (e.g. 2 or 5)."),
    judges: str = typer.Option("0.8,0.85,0.9", "--judges", help="Candidate judges' accuracies."),
    coverage: str = typer.Option("0.05,0.25,0.5", "--coverage", help="Coverages ρ of each secondary."),
    design: str = typer.Option(",".join(DESIGNS), "--designs", help="Allocation designs to compare."),
    replications: int = typer.Option(300, "--replications", help="Replications R per cell."),
    seed: int = typer.Option(0, "--seed"),
    epsilon: float = typer.Option(0.05, "--epsilon", help="ε of the leave-one-annotator-out rule."),
    agreement: str = typer.Option("observed", "--agreement", help="observed | cohen"),
    prevalence: str | None = typer.Option(
        None, "--prevalence", help="Class shares, comma-separated (default uniform)."
    ),
    json_: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Sparse-overlap decisions against full-matrix decisions: FR, FA, WDR, ranking errors, α error."""
    cfg = SimConfig(
        n=n,
        humans=humans,
        accuracy=accuracy,
        classes=classes,
        judges=parse_floats(judges, "--judges"),
        coverages=parse_floats(coverage, "--coverage"),
        designs=parse_names(design, DESIGNS, "--designs"),
        replications=replications,
        seed=seed,
        epsilon=epsilon,
        prevalence=parse_floats(prevalence, "--prevalence") if prevalence else None,
        agreement=agreement,
    )
    res = simulate_designs(cfg)
    if json_:
        emit_json(res.as_dict())
        return
    table(
        f"{replications} replications, n = {n}, K = {humans} humans at p = {accuracy}, L = {classes}, "
        f"judges {judges}, ε = {epsilon} ({agreement})",
        ["ρ", "design", "FR", "FA", "WDR", "top-1 err", "pair err", "α bias", "α SD", "α reliable"],
        [
            [
                c.coverage,
                c.design,
                c.fr,
                c.fa,
                c.wdr,
                c.top1_error,
                c.pairwise_rank_error,
                c.alpha_bias,
                c.alpha_sd,
                c.alpha_reliability,
            ]
            for c in res.cells
        ],
    )
    console.print(f"mean full-matrix α = {res.alpha_full_mean:.3f}; {res.seconds:.1f} s")
