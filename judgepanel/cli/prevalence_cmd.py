"""`judgepanel metrics prevalence`: a judge's pass rate corrected by its sensitivity and specificity."""

from __future__ import annotations

import typer

from judgepanel.cli.context import state
from judgepanel.cli.options import JSON
from judgepanel.cli.render import emit_json, sim_title, simulated, table, warn


def prevalence(
    ctx: typer.Context,
    campaign: str = typer.Option(..., "--campaign", help="A pointwise campaign."),
    human_group: str = typer.Option(..., "--human-group", help="The human group whose labels are the truth."),
    dimension: str | None = typer.Option(
        None, "--dimension", help="Needed when the campaign judged several."
    ),
    threshold: float = typer.Option(4.0, "--threshold", help="A pass is a score of at least this."),
    judge: str | None = typer.Option(None, "--judge", help="Needed when the campaign has several judges."),
    condition: str | None = typer.Option(None, "--condition", help="Needed when the campaign ran several."),
    bootstrap: int = typer.Option(2000, "--bootstrap", help="Bootstrap replicates for the CI."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
    json_: bool = JSON,
) -> None:
    """The judge's raw pass rate and the rate corrected for its errors on human-labelled items."""
    from judgepanel.analysis.outcomes import pass_fail
    from judgepanel.metrics.prevalence import corrected_prevalence
    from judgepanel.runner.logprob_scores import logprob_withheld

    engine = state(ctx).engine()
    pf = pass_fail(
        engine,
        campaign,
        human_group=human_group,
        threshold=threshold,
        judge=judge,
        condition=condition,
        dimension=dimension,
    )
    est = corrected_prevalence(pf.human, pf.judge_labelled, pf.judge_unlabelled, n_boot=bootstrap, seed=seed)
    # a `scoring=logprobs` judge passes on its expectation; where that was withheld (below the
    # probability-mass floor, no logprobs) the argmax stands, and the share is reported (issue 30 §4)
    withheld = logprob_withheld(
        engine, campaign, judges=[pf.judge], dimension=pf.dimension, condition=pf.condition
    ).get(pf.judge)
    out = {
        **est.as_dict(),
        # issue 19 §3: `judge` = the short name, `spec` = the full spec (`--judge` takes either)
        "judge": pf.name,
        "spec": pf.judge,
        "condition": pf.condition,
        "dimension": pf.dimension,
        "threshold": pf.threshold,
        "human_group": pf.human_group,
        "score_source": pf.score_source,
        "logprob_withheld": None if withheld is None else {pf.name: withheld.as_dict()},
        "simulated": simulated(engine, [campaign]),
    }
    if json_:
        emit_json(out)
        return
    if est.warning:
        warn(est.warning)
    if withheld is not None and (line := withheld.words(pf.name)):
        warn(line)
    d = est.as_dict()

    def f(x: float | None) -> str:
        return "—" if x is None else f"{x:.3f}"

    ci = "—" if d["ci"] is None else f"[{d['ci'][0]:.3f}, {d['ci'][1]:.3f}]"
    table(
        sim_title(
            f"{pf.name}: pass = score ≥ {threshold:g} on {pf.dimension or 'the task'}, truth = {human_group} mean",
            bool(out["simulated"]),
        ),
        ["raw rate", "corrected rate", "95 % CI", "TPR", "TNR", "labelled", "unlabelled"],
        [
            [
                f(d["raw_rate"]),
                f(d["corrected_rate"]),
                ci,
                f(d["tpr"]),
                f(d["tnr"]),
                est.n_labelled,
                est.n_unlabelled,
            ]
        ],
    )
