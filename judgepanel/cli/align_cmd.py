"""`judgepanel align …`: human-supervised judge alignment and its comparison with the original
judge (and a repair iteration) on evaluation items."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from judgepanel.cli.context import state
from judgepanel.cli.options import BOOTSTRAP, JSON, RESAMPLE
from judgepanel.cli.render import emit_json, err_console, table
from judgepanel.cli.repair_cmd import run_options, step_printer
from judgepanel.errors import BadInput
from judgepanel.metrics.names import TOO_FEW_GROUPS as TOO_FEW

app = typer.Typer(
    help="Human-supervised judge alignment (few-shot, instructions, grid), compared with repair.",
    no_args_is_help=True,
)

SIM_NOTE = "SIMULATED: these figures rest on simulated judges or a simulated editor, not real models"


def _read(path: str) -> str:
    from judgepanel.inputs import read_text

    return read_text(Path(path), "--grid-instructions: file")


@app.command("run")
def run(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The alignment's name; alone, resumes a stored alignment."),
    dataset: str | None = typer.Option(None, "--dataset"),
    judge: str | None = typer.Option(None, "--judge", help="The judge to align (its spec)."),
    human_group: str | None = typer.Option(None, "--human-group", help="The human group whose labels teach."),
    dev_split: str = typer.Option("dev", "--dev-split", help="Every choice is made on this split only."),
    eval_split: str = typer.Option("eval", "--eval-split", help="The split the comparison is made on."),
    method: str | None = typer.Option(None, "--method", help="fewshot, instructions or grid."),
    dimension: str | None = typer.Option(None, "--dimension", help="The dimension (default: the one rated)."),
    rubric: str | None = typer.Option(
        None, "--rubric", help="NAME[@V]: the judge's starting instructions are its dimension's definition."
    ),
    rounds: int = typer.Option(3, "--rounds", help="instructions: at most N editor rounds."),
    k: int = typer.Option(4, "--k", help="fewshot: K worked examples."),
    editor: str | None = typer.Option(None, "--editor", help="instructions: the editor model's spec."),
    grid_judge: list[str] = typer.Option([], "--grid-judge", help="grid: another judge spec (repeat)."),
    grid_instructions: list[str] = typer.Option(
        [], "--grid-instructions", help="grid: a file of alternative instructions (repeat)."
    ),
    limit: int | None = typer.Option(
        None, "--limit", help="At most N items per split (seeded, spread over groups)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the item samples, example choice and bootstrap."),
    bootstrap: int = BOOTSTRAP,
    resample: str | None = RESAMPLE,
    epsilon: float = typer.Option(0.2, "--epsilon", help="The alt-test's ε."),
    margin: float = typer.Option(0.05, "--margin", help="TOST margin on the exact-agreement difference."),
    stop_after: str | None = typer.Option(
        None, "--stop-after", help="Stop after this step: dev, align, evaluate."
    ),
    concurrency: int = typer.Option(16, "--concurrency", help="Calls in flight per judge."),
    max_cost: float | None = typer.Option(
        None, "--max-cost", help="Each campaign's cap on its total spend, USD (the runner's campaign cap)."
    ),
    retry_failed: bool = typer.Option(
        False,
        "--retry-failed",
        help="Ask again the calls that failed: an editor round (its step is still pending), and "
        "judge jobs of steps not yet decided and of the evaluation (whose comparison is recomputed).",
    ),
    json_: bool = JSON,
) -> None:
    """Run (or resume) an alignment: the original judge on development items, the method's choices
    (development items only), both judges on evaluation items, and the comparison."""
    from judgepanel.align.common import AlignInputs
    from judgepanel.align.run import run_alignment

    engine = state(ctx).engine()
    inputs = None
    given = [dataset, judge, human_group, method]
    if any(x is not None for x in given) or editor or grid_judge or grid_instructions:
        if None in given:
            raise BadInput(
                "a new alignment needs --dataset, --judge, --human-group and --method (or give NAME alone to resume)"
            )
        assert dataset is not None and judge is not None and human_group is not None and method is not None
        inputs = AlignInputs(
            dataset=dataset,
            judge=judge,
            human_group=human_group,
            dev_split=dev_split,
            eval_split=eval_split,
            method=method,
            dimension=dimension,
            rubric=rubric,
            rounds=rounds,
            k=k,
            editor=editor,
            grid_judges=tuple(grid_judge),
            grid_instructions=tuple(_read(p) for p in grid_instructions),
            limit=limit,
            seed=seed,
            n_boot=bootstrap,
            resample=resample,
            epsilon=epsilon,
            margin=margin,
        )
        inputs.validate()
    rec = run_alignment(
        engine,
        name,
        inputs,
        run_options(concurrency, max_cost),
        stop_after=stop_after,
        say=step_printer(json_),
        retry_failed=retry_failed,
    )
    from judgepanel.align.common import failed_judge_jobs_message, is_simulated, judge_failures

    failed = judge_failures(engine, rec)
    out = {**rec.status_dict(), "comparison": rec.comparison, "failed_jobs": failed}
    simulated = is_simulated(engine, rec)
    if json_:
        emit_json({**out, "simulated": simulated})
    else:
        if simulated:
            typer.echo(SIM_NOTE)
        typer.echo("steps: " + ", ".join(f"{s} {v}" for s, v in rec.steps.items()))
        print_choices(rec.choices)
        if rec.comparison is not None:
            print_comparison(rec.comparison)
    if failed:
        # the figures stand on the items every version answered; the run is not complete: exit 3
        err_console.print(
            failed_judge_jobs_message(rec, failed), soft_wrap=True, markup=False, highlight=False
        )
        raise typer.Exit(3)


@app.command("compare")
def compare_cmd(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The alignment."),
    repair: str | None = typer.Option(
        None,
        "--repair",
        help="A repair iteration: its rubric versions judged by this judge on the same items.",
    ),
    resample: str | None = typer.Option(None, "--resample", help="groups or items (recomputed, not stored)."),
    concurrency: int = typer.Option(16, "--concurrency"),
    max_cost: float | None = typer.Option(None, "--max-cost", help="Cap of each --repair campaign, USD."),
    json_: bool = JSON,
) -> None:
    """Agreement with the humans on the evaluation items per version, CIs, deltas, the overfitting
    gap, TOST and cost."""
    from judgepanel.align.compare import compare

    out = compare(
        state(ctx).engine(),
        name,
        repair=repair,
        options=run_options(concurrency, max_cost),
        resample=resample,
    )
    if json_:
        emit_json(out)
        return
    if out["simulated"]:
        typer.echo(SIM_NOTE)
    print_comparison(out)


@app.command("status")
def status(ctx: typer.Context, name: str = typer.Argument(...), json_: bool = JSON) -> None:
    """The alignment's steps, campaigns and choices."""
    from judgepanel.align.common import is_simulated
    from judgepanel.store.align import get_alignment

    engine = state(ctx).engine()
    rec = get_alignment(engine, name)
    if json_:
        emit_json({**rec.status_dict(), "simulated": is_simulated(engine, rec)})
        return
    table(None, ["step", "state"], [[s, v] for s, v in rec.steps.items()])
    table(None, ["role", "campaign"], [[k, v] for k, v in rec.campaigns.items()])


def _f(x: Any) -> str:
    return "-" if x is None else f"{x:.3f}"


def _pct(x: Any) -> str:
    return "-" if x is None else f"{100 * x:+.0f}%"


def _ci(x: Any) -> str:
    return "-" if not x or x[0] is None else f"{x[0]:+.3f}..{x[1]:+.3f}"


def print_choices(choices: dict[str, Any] | None) -> None:
    """What the alignment chose on development items, with the development QWK behind it."""
    if not choices:
        return
    dev = choices.get("dev_agreement") or {}
    got = f"development QWK {_f((dev.get('original') or {}).get('qwk'))} -> {_f((dev.get('aligned') or {}).get('qwk'))}"
    if choices["method"] == "fewshot":
        ex = choices["examples"]
        strata = ", ".join(f"{n} at human score {lv}" for lv, n in ex["strata"].items())
        typer.echo(
            f"chose {len(ex['items'])} of {ex['disagreeing']} disagreeing development items (seed {choices['seed']}): "
            f"{strata}; {got}"
        )
    elif choices["method"] == "instructions":
        for r in choices["rounds"]:
            qwk = (r.get("dev_agreement") or {}).get("qwk")
            note = "unchanged" if r.get("unchanged") else f"development QWK {_f(qwk)}"
            typer.echo(f"round {r['round']}: {note}")
        typer.echo(
            f"kept round {choices['best_round']}"
            + (f"; stopped: {choices['stopped']}" if choices.get("stopped") else "")
        )
    else:
        for c in choices["configs"]:
            typer.echo(
                f"config {c['config']}: {c['judge']}, instructions {c['instructions_index']}: "
                f"development QWK {_f(c['dev_agreement'].get('qwk'))}"
            )
        typer.echo(f"kept config {choices['best_config']}")
    if choices.get("dev_left_out"):
        typer.echo(
            f"{choices['dev_left_out']} development item(s) left out of the choice: not answered by every candidate"
        )


def print_comparison(c: dict[str, Any]) -> None:
    rows = []
    for v, d in c["versions"].items():
        a = d["agreement"]
        rows.append([v, _f(a["exact"]), _f(a["kappa"]), _f(a["qwk"]), _ci(a["ci"]["qwk"]), _f(a["spearman"])])
    left = (c.get("left_out") or {}).get("eval")
    table(
        f"{c['method']}: {c['units']['eval']} evaluation items"
        + (f" ({left} left out: not answered by every version)" if left else ""),
        ["version", "exact", "κ", "QWK", "QWK 95% CI", "Spearman"],
        rows,
    )
    drows = [
        [k, _f(d["qwk"]["value"]), _ci(d["qwk"]["ci"]), _f(d["exact"]["value"]), _ci(d["exact"]["ci"])]
        for k, d in c["delta"].items()
    ]
    table("paired deltas", ["delta", "QWK", "95% CI", "exact", "95% CI"], drows)
    g = c["overfit_gap"]["qwk"]
    typer.echo(
        f"overfitting gap (QWK): development gain {_f(g['dev_gain']['value'])} − evaluation gain "
        f"{_f(g['eval_gain']['value'])} = {_f(g['value'])} [{_ci(g['ci'])}]"
    )
    g_ = c.get("gain") or {"statistic": "qwk", "verdict": None}
    words = {
        "survives": "survives its interval (the 95 % CI lies above 0)",
        "does not survive": "does not survive its interval (the 95 % CI reaches 0 or below)",
        "loss": "is a loss (the 95 % CI lies below 0)",
        "no interval": "has no interval",
        TOO_FEW: f"gets no verdict: {TOO_FEW} ({g_.get('n_groups')} evaluation groups, fewer than 5)",
    }
    name = {"qwk": "QWK", "kappa": "κ", "exact": "exact-agreement", "spearman": "Spearman"}
    if c["versions"]["aligned"]["campaign"] == c["versions"]["original"]["campaign"]:
        typer.echo("the alignment kept the original judge: there is no gain on new items to test")
    else:
        typer.echo(
            f"the aligned judge's {name.get(g_['statistic'], g_['statistic'])} gain on new items "
            f"{words.get(g_['verdict'] or '', 'has no verdict')} (the pre-declared choice statistic; "
            "the other three are secondary)"
        )
    for w in c.get("warnings") or []:
        typer.echo(f"warning: {w}", err=True)
    b = c["binary"]["versions"]
    typer.echo(
        "pass at >= 4: "
        + "; ".join(f"{v} {x['fp']} false positives, {x['fn']} false negatives" for v, x in b.items())
        + f" (of {b['original']['negatives']} human fails, {b['original']['positives']} passes)"
    )
    for v, p in (c["binary"].get("paired") or {}).items():
        typer.echo(
            f"  {v} vs original: "
            + "; ".join(
                f"{what} {_pct(p[k]['change'])} [{_pct(p[k]['ci'][0])}, {_pct(p[k]['ci'][1])}] "
                f"(McNemar exact p = {p[k]['p_exact']:.3g})"
                for k, what in (("fp", "false positives"), ("fn", "false negatives"))
            )
        )
    typer.echo(
        "bought: "
        + ", ".join(
            f"{k} {c['calls'][k]} calls"
            + ("" if c["cost_usd"][k] is None else f" {c['cost_usd'][k]:.4f} USD")
            for k in c["calls"]
        )
        + _intervals(c)
    )


def _intervals(c: dict[str, Any]) -> str:
    units = c["n_groups"] or c["units"]["eval"]
    method = (c["versions"]["original"]["agreement"].get("ci_method") or {}).get("qwk", "percentile")
    if method == "percentile":
        return f"; {c['bootstrap']} {c['resample']} resamples over {units} groups"
    # issue 30 §1: fewer than 20 groups, the t interval
    return (
        f"; 95% CIs: estimate ± t({units - 1})·SE over {units} {c['resample']} "
        "(CR1 for exact, jackknife otherwise)"
    )
