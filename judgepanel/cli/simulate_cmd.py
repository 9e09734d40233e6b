"""`judgepanel simulate …`: design studies run on simulated panels."""

from __future__ import annotations

import math

import typer

from judgepanel.cli.options import JSON
from judgepanel.cli.render import console, emit_json, table

# judgepanel.metrics.design.DESIGNS, written out so that `--help` imports no numpy (checked in
# tests/cli/test_help.py)
DESIGNS = ("random", "strat", "seq-refined", "seq-coverage")

app = typer.Typer(help="Simulate re-annotation designs before paying for them.", no_args_is_help=True)


def _pm(value: float, se: float) -> str:
    """``0.215 ± 0.004``; the SE is left out when undefined (one replication)."""
    return f"{value:.3f}" if not math.isfinite(se) else f"{value:.3f} ± {se:.3f}"


def _signed(value: float, se: float) -> str:
    return f"{value:+.3f}" if not math.isfinite(se) else f"{value:+.3f} ± {se:.3f}"


@app.command("designs")
def designs(
    n: int = typer.Option(500, "--n", help="Items."),
    humans: int = typer.Option(
        5, "--humans", help="Humans K: one primary (all items) and K − 1 secondaries."
    ),
    accuracy: str = typer.Option(
        "0.85",
        "--accuracy",
        help="Accuracy of every human, or one per true class separated by '/' (e.g. 0.9/0.7).",
    ),
    classes: int = typer.Option(2, "--classes", help="Number of classes L (e.g. 2 or 5)."),
    judges: str = typer.Option(
        "0.8,0.85,0.9",
        "--judges",
        help="Candidate judges, comma-separated: an accuracy each, or one per true class separated "
        "by '/' (0.92/0.45: right on 92%% of class-0 items and 45%% of class-1 items).",
    ),
    coverage: str = typer.Option("0.05,0.25,0.5", "--coverage", help="Coverages ρ of each secondary."),
    design: str = typer.Option(",".join(DESIGNS), "--designs", help="Allocation designs to compare."),
    replications: int = typer.Option(300, "--replications", help="Replications R per cell."),
    seed: int = typer.Option(0, "--seed"),
    epsilon: float = typer.Option(0.05, "--epsilon", help="ε of the leave-one-annotator-out rule."),
    agreement: str = typer.Option("observed", "--agreement", help="observed | cohen"),
    prevalence: str | None = typer.Option(
        None,
        "--prevalence",
        "--class-shares",
        help="Class shares, comma-separated (default uniform), e.g. 0.8,0.2.",
    ),
    hard_share: float = typer.Option(
        0.0, "--hard-share", help="Share of hard items (drawn independently of the class)."
    ),
    hard_accuracy: float = typer.Option(
        0.6, "--hard-accuracy", help="Every human's accuracy on a hard item."
    ),
    hard_judges: str | None = typer.Option(
        None,
        "--hard-judges",
        help="Each judge's accuracy on a hard item, comma-separated (default --hard-accuracy).",
    ),
    json_: bool = JSON,
) -> None:
    """Sparse-overlap decisions against full-matrix decisions: FR, FA, WDR (± Monte Carlo SE, and
    each design's paired difference from Random), ranking errors, α error."""
    from judgepanel.metrics.simulate import (
        SimConfig,
        parse_floats,
        parse_names,
        parse_profile,
        parse_profiles,
        simulate_designs,
    )

    cfg = SimConfig(
        n=n,
        humans=humans,
        accuracy=parse_profile(accuracy, "--accuracy"),
        classes=classes,
        judges=parse_profiles(judges, "--judges"),
        coverages=parse_floats(coverage, "--coverage"),
        designs=parse_names(design, DESIGNS, "--designs"),
        replications=replications,
        seed=seed,
        epsilon=epsilon,
        prevalence=parse_floats(prevalence, "--prevalence") if prevalence else None,
        agreement=agreement,
        hard_share=hard_share,
        hard_accuracy=hard_accuracy,
        hard_judges=parse_floats(hard_judges, "--hard-judges") if hard_judges else None,
    )
    res = simulate_designs(cfg)
    if json_:
        emit_json(res.as_dict())
        return
    table(
        f"{replications} replications, n = {n}, K = {humans} humans at p = {accuracy}, L = {classes}, "
        f"judges {judges}, ε = {epsilon} ({agreement}): decisions against the full matrix (± SE)",
        ["ρ", "design", "FR", "FA", "WDR", "ΔFR vs random", "ΔFA vs random"],
        [
            [
                c.coverage,
                c.design,
                _pm(c.fr, c.fr_se),
                _pm(c.fa, c.fa_se),
                _pm(c.wdr, c.wdr_se),
                _signed(c.vs_random.fr, c.vs_random.fr_se) if c.vs_random else "",
                _signed(c.vs_random.fa, c.vs_random.fa_se) if c.vs_random else "",
            ]
            for c in res.cells
        ],
    )
    table(
        "ranking and the human-pool α",
        ["ρ", "design", "top-1 err", "pair err", "α bias", "α SD", "α reliable"],
        [
            [
                c.coverage,
                c.design,
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
