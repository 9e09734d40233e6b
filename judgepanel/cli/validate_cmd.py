"""`judgepanel validate …`: may a judge replace a human annotator?"""

from __future__ import annotations

from typing import Any, TypedDict

import typer

from judgepanel.cli.context import state
from judgepanel.cli.options import JSON
from judgepanel.cli.render import console, emit_json, table, warn
from judgepanel.errors import BadInput

app = typer.Typer(
    help="Leave-one-annotator-out tests of a judge against a human panel.", no_args_is_help=True
)

DATASET = typer.Option(
    None,
    "--dataset",
    help="Dataset holding the human labels and the imported judge's (with --campaign: optional, checked).",
)
CAMPAIGN = typer.Option(
    None,
    "--campaign",
    help="Validate this campaign's own judges against the humans: pointwise scores, or pairwise "
    "combined AB/BA verdicts against the pair set's human labels.",
)
CONDITION = typer.Option(
    None, "--condition", help="Pointwise campaign condition to read (needed when it asked several)."
)
DIMENSION = typer.Option(
    None, "--dimension", help="Label dimension (needed when the dataset or campaign has several)."
)
JUDGE = typer.Option(
    ..., "--judge", help="An annotator of kind llm in the dataset, or with --campaign a judge spec of it."
)
MAP = typer.Option(
    None,
    "--map",
    help="FROM=TO: treat label FROM as TO before comparing (repeatable), e.g. 'Ignore=No response'.",
)
SCORER = typer.Option(
    "accuracy",
    "--scorer",
    help="accuracy | neg-rmse | trigram-cosine (a lexical proxy for embedding similarity on free text).",
)


def _scorer(name: str) -> str:
    return name.replace("_", "-")


class _Labels(TypedDict):
    dimension: str | None
    label_map: dict[str, str]
    campaign: str | None
    condition: str | None


def _labels(
    dimension: str | None, map_: list[str] | None, campaign: str | None, condition: str | None
) -> _Labels:
    """Which labels every validation command reads: the options it shares, as the library's keywords."""
    from judgepanel.analysis.validation import parse_label_map

    return {
        "dimension": dimension,
        "label_map": parse_label_map(map_ or []),
        "campaign": campaign,
        "condition": condition,
    }


def _warn(warnings: list[str], source: dict[str, Any] | None = None) -> None:
    for w in warnings:
        warn(w)
    withheld = (source or {}).get("logprob_withheld") or {}
    if withheld:
        from judgepanel.runner.logprob_scores import withheld_words

        for name, coverage in withheld.items():
            if line := withheld_words(name, coverage):
                warn(line)


def _fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}"


def _where(source: dict[str, Any]) -> str:
    """Where the labels came from, for table titles."""
    if source["campaign"] is None:
        return str(source["dataset"])
    parts = [p for p in (source["dimension"], source["condition"]) if p]
    return f"campaign {source['campaign']}" + (f" ({', '.join(parts)})" if parts else "")


@app.command("loo")
def loo(
    ctx: typer.Context,
    dataset: str | None = DATASET,
    judge: str = JUDGE,
    campaign: str | None = CAMPAIGN,
    condition: str | None = CONDITION,
    epsilon: float = typer.Option(0.05, "--epsilon", help="Tolerated agreement deficit ε."),
    agreement: str = typer.Option("observed", "--agreement", help="observed | cohen | alpha | ac1"),
    level: str | None = typer.Option(
        None, "--level", help="Level of measurement for alpha (default nominal)."
    ),
    dimension: str | None = DIMENSION,
    map_: list[str] | None = MAP,
    json_: bool = JSON,
) -> None:
    """The leave-one-annotator-out rule: accept iff d_k ≥ −ε for at least half the humans."""
    from judgepanel.analysis.validation import loo_dataset

    if level is not None and agreement != "alpha":
        raise BadInput(f"--level applies to --agreement alpha, not {agreement}")
    out = loo_dataset(
        state(ctx).engine(),
        dataset,
        judge,
        epsilon=epsilon,
        agreement=agreement,
        level=level or "nominal",
        **_labels(dimension, map_, campaign, condition),
    )
    # issue 19 §3: `judge` = the name shown, `spec` = a campaign judge's full spec (null: imported)
    name = out.names[0]
    if json_:
        emit_json({"judge": name, "spec": out.specs[0], **out.as_dict()})
        return
    res = out.result
    table(
        f"{name} on {_where(out.source)}: leave-one-annotator-out ({agreement}, ε = {epsilon})",
        ["held out", "units", "pairs", "S judge", "S human", "d", "d ≥ −ε", "m*_cert"],
        [
            [h.name, h.n_units, h.n_pairs, h.s_judge, h.s_human, h.d, h.passed, h.m_required]
            for h in res.humans
        ],
    )
    console.print(f"ω = {_fmt(res.omega)} → {'ACCEPTED' if res.accepted else 'REJECTED'}")
    _warn(list(res.warnings))


@app.command("alt-test")
def alt_test(
    ctx: typer.Context,
    dataset: str | None = DATASET,
    judge: str = JUDGE,
    campaign: str | None = CAMPAIGN,
    condition: str | None = CONDITION,
    epsilon: float = typer.Option(
        ..., "--epsilon", help="Cost-benefit margin ε (0.2 experts, 0.15 skilled, 0.1 crowd)."
    ),
    scorer: str = SCORER,
    q: float = typer.Option(0.05, "--q", help="Benjamini–Yekutieli FDR level."),
    min_instances: int = typer.Option(30, "--min-instances", help="Fewer eligible instances: untested."),
    min_humans: int = typer.Option(
        2, "--min-humans", help="Humans an instance needs, the held-out one counted."
    ),
    dimension: str | None = DIMENSION,
    map_: list[str] | None = MAP,
    json_: bool = JSON,
) -> None:
    """The alternative annotator test (Calderon, Reichart & Dror, ACL 2025)."""
    from judgepanel.analysis.validation import alt_test_dataset

    # a deliberate mirror (issue 31 §4): `rank` hands the alt-test's settings on the same way, as
    # `analysis.validation`'s mirrored keywords take them
    out = alt_test_dataset(
        state(ctx).engine(),
        dataset,
        judge,
        epsilon=epsilon,
        scorer=_scorer(scorer),
        q=q,
        min_instances=min_instances,
        min_humans=min_humans,
        **_labels(dimension, map_, campaign, condition),
    )
    # issue 19 §3: `judge` = the name shown, `spec` = a campaign judge's full spec (null: imported)
    name = out.names[0]
    if json_:
        emit_json({"judge": name, "spec": out.specs[0], **out.as_dict()})
        return
    res = out.result
    proxy = " — a lexical proxy" if res.scorer_is_proxy else ""
    table(
        f"{name} on {_where(out.source)}: alt-test ({res.scorer}{proxy}, ε = {epsilon}, q = {q})",
        ["held out", "n", "pairs", "W judge", "W human", "t", "p", "p BY", "rejected", "m*_cert"],
        [
            [
                h.name,
                h.n,
                h.n_pairs,
                h.w_judge,
                h.w_human,
                h.t,
                h.p_value,
                h.p_adjusted,
                h.rejected if h.tested else "untested",
                h.m_required,
            ]
            for h in res.humans
        ],
    )
    console.print(
        f"ω = {_fmt(res.omega)} ({res.rejected}/{res.tested}), ρ = {_fmt(res.rho)} → "
        f"{'PASSED' if res.passed else 'FAILED'}"
    )
    _warn(list(res.warnings), out.source)


@app.command("rank")
def rank(
    ctx: typer.Context,
    dataset: str | None = DATASET,
    judge: list[str] | None = typer.Option(
        None,
        "--judge",
        help="Judges to rank (default: every llm annotator, or with --campaign every judge of it).",
    ),
    campaign: str | None = CAMPAIGN,
    condition: str | None = CONDITION,
    by: str = typer.Option("rho", "--by", help="rho (alt-test advantage probability) | loo (mean d_k)."),
    scorer: str = SCORER,
    epsilon: float = typer.Option(0.1, "--epsilon", help="ε for the pass/fail column."),
    q: float = typer.Option(0.05, "--q"),
    min_instances: int = typer.Option(30, "--min-instances"),
    min_humans: int = typer.Option(2, "--min-humans"),
    bootstrap: int = typer.Option(1000, "--bootstrap", help="Unit resamples."),
    seed: int = typer.Option(0, "--seed"),
    dimension: str | None = DIMENSION,
    map_: list[str] | None = MAP,
    json_: bool = JSON,
) -> None:
    """Rank judges by the same score, with bootstrap top-1 and pairwise order probabilities."""
    from judgepanel.analysis.validation import rank_dataset

    # a deliberate mirror (issue 31 §4): the alt-test's settings handed on as `alt-test` does
    out = rank_dataset(
        state(ctx).engine(),
        dataset,
        judge or None,
        by=by,
        scorer=_scorer(scorer),
        epsilon=epsilon,
        q=q,
        min_instances=min_instances,
        min_humans=min_humans,
        n_boot=bootstrap,
        seed=seed,
        **_labels(dimension, map_, campaign, condition),
    )
    if json_:
        emit_json(out.as_dict())
        return
    res = out.result
    table(
        f"judges on {_where(out.source)} by {by} ({bootstrap} bootstrap resamples)",
        ["rank", "judge", "score", "95% CI", "P(top-1)", "ω", "pass"],
        [
            [
                j.rank,
                j.name,
                j.score,
                f"[{j.ci[0]:.3f}, {j.ci[1]:.3f}]" if j.ci else "—",
                j.p_top1,
                j.omega,
                j.passed,
            ]
            for j in res.judges
        ],
    )
    _warn([], out.source)
