"""`judgepanel repair …`: one rubric-repair iteration, as a whole or step by step."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from judgepanel.cli.context import state
from judgepanel.cli.options import BOOTSTRAP, JSON, RESAMPLE
from judgepanel.cli.render import console, emit_json, table, warn
from judgepanel.errors import BadInput

if TYPE_CHECKING:  # the library is imported inside the commands, so that `--help` stays fast
    from judgepanel.runner import RunOptions
    from judgepanel.store.repair import IterationRecord

# judgepanel.repair.compare.DEFAULT_CRITERION, repeated so the help text needs no numpy
# (tests/cli/test_help.py checks that the two agree)
DEFAULT_CRITERION = "delta>=0.03,ci_low>0"

app = typer.Typer(
    help="Rubric repair: contested clauses, editor rewrites, a before/after comparison.", no_args_is_help=True
)

CONCURRENCY = typer.Option(16, "--concurrency", help="Calls in flight per judge (and for the editor).")
MAX_COST = typer.Option(None, "--max-cost", help="Stop scheduling a step's calls before this many USD.")
CRITERION = typer.Option(
    None,
    "--criterion",
    help=f'Pre-declared success criterion, stored before any evaluation call (default for `run`: "{DEFAULT_CRITERION}"); '
    'add ";human_margin=0.05" to declare the equivalence margin of the TOST on the human-ρ difference.',
)
RETRY_FAILED = typer.Option(
    False,
    "--retry-failed",
    help="Ask again the calls that failed (an editor reply that was truncated or unreadable).",
)


def run_options(concurrency: int, max_cost: float | None) -> RunOptions:
    """The run options of `repair run` and `align run` (both drive campaigns step by step)."""
    from judgepanel.runner import RunOptions

    if max_cost is not None and max_cost < 0:
        raise BadInput(f"--max-cost must not be negative, got {max_cost}")
    return RunOptions(concurrency=concurrency, max_cost=max_cost)


def step_printer(json_: bool) -> Any:
    """A step's progress line on the console, or nothing under `--json`."""
    return (lambda _m: None) if json_ else (lambda m: console.print(f"• {m}"))


def _simulated(engine: Any, rec: IterationRecord) -> bool:
    from judgepanel.store.simulated import iteration_simulated

    return iteration_simulated(engine, rec.inputs, rec.campaigns)


SIM_NOTE = "SIMULATED: these figures rest on simulated judges or a simulated editor, not real models"


def _status_out(
    rec: IterationRecord, json_: bool, simulated: bool, chain: list[dict[str, Any]] | None = None
) -> None:
    if json_:
        from judgepanel.repair.iteration import judges_named

        emit_json(
            {
                **rec.status_dict(),
                **judges_named(rec),  # specs and short names, parallel lists (issue 19 §3)
                "simulated": simulated,
                **({"chain": chain} if chain is not None else {}),
            }
        )
        return
    if simulated:
        typer.echo(SIM_NOTE)
    typer.echo(f"iteration {rec.name} on {rec.dataset}; criterion: {rec.criterion or '(not declared)'}")
    if chain is not None and len(chain) > 1:
        links = []
        for c in chain:
            v = c["verdict"] or {}
            state = (
                f"stopped: {c['stopped']}"
                if c["stopped"]
                else (
                    f"inter-judge {v.get('inter_judge')}, human {v.get('human')}"
                    if v
                    else f"next {c['next']}"
                )
            )
            links.append(f"{c['iteration']} ({c['rubric']} -> {c['contested'] or '-'}; {state})")
        typer.echo("chain: " + "  =>  ".join(links))
    stopped = (rec.selection or {}).get("stopped")
    if stopped:
        typer.echo(f"stopped by the chain's stopping rule: {stopped}")
    table(
        None,
        ["step", "state", "campaign / rubric"],
        [
            ["dev", rec.steps["dev"], rec.campaigns.get("dev")],
            ["select", rec.steps["select"], ""],
            [
                "rewrite",
                rec.steps["rewrite"],
                f"{rec.rubrics['contested'] or '-'} / {rec.rubrics['control'] or '-'}",
            ],
            [
                "evaluate",
                rec.steps["evaluate"],
                ", ".join(str(rec.campaigns.get(k)) for k in ("original", "contested", "control")),
            ],
            ["compare", rec.steps["compare"], ""],
        ],
    )


def print_comparison(c: dict[str, Any], title: str) -> None:
    def ci(x: Any) -> str:
        return f"{x[0]:+.2f}..{x[1]:+.2f}" if x else "-"

    def num(x: Any) -> str:
        return "-" if x is None else f"{x:+.2f}"

    rows = []
    for v in ("original", "contested", "control"):
        a, h = c["alpha"][v], c["human"][v]
        rows.append(
            [v, num(a["value"]), ci(a["ci"]), num(h["spearman"]), ci(h["ci"]["spearman"]), num(h["alpha"])]
        )
    for k, label in (
        ("contested_vs_original", "Δ vs original"),
        ("contested_vs_control", "Δ vs control"),
    ):
        d, hd = c["delta"][k], c["human_delta"][k]
        rows.append(
            [
                label,
                num(d["value"]),
                ci(d["ci"]),
                num(hd["spearman"]["value"]),
                ci(hd["spearman"]["ci"]),
                num(hd["alpha"]["value"]),
            ]
        )
    table(title, ["version", "judges α", "95% CI", "ρ humans", "95% CI", "α humans"], rows)
    too_small = c["human"]["original"].get("note")
    if too_small:
        console.print(
            f"humans: {too_small} ({c['n_human_items']} rated items per dimension; ρ and α not shown)"
        )
    dims = list(c["human"]["original"].get("by_dimension", {}))
    if len(dims) > 1 and not too_small:  # one dimension: the pooled rows above say it all
        drows = []
        for d in dims:
            row = [d]
            for v in ("original", "contested", "control"):
                x = c["human"][v]["by_dimension"][d]
                row += [num(x["spearman"]), ci(x["ci"]["spearman"])]
            drows.append(row)
        table(
            "ρ with humans per dimension",
            ["dimension", "original", "95% CI", "contested", "95% CI", "control", "95% CI"],
            drows,
        )
    console.print(
        "Δ: contested-edited minus that version, paired over the same bootstrap replicates"
        + (
            " (and the same left-out groups)."
            if (c["alpha"]["original"].get("ci_method") or "percentile") != "percentile"
            else "."
        )
    )
    eq = c.get("human_equivalence")
    if eq and eq.get("p") is not None:
        console.print(
            f"equivalence (TOST) of Δρ with humans within ±{eq['margin']:g}: 90% CI {ci(eq['ci90'])}, p = {eq['p']:.3g}"
            + (
                f"; power {eq['power']:.3g} at a true Δ of 0, smallest margin this design shows ±{eq['detectable_margin']:.2g}"
                if eq.get("power") is not None and eq.get("detectable_margin") is not None
                else ""
            ),
            soft_wrap=True,
        )
    console.print(c["summary"], soft_wrap=True)
    unchanged = c.get("clauses_unchanged", {})
    if any(unchanged.values()):
        console.print(
            "returned unchanged by the editor: "
            + "; ".join(f"{k} {', '.join(v)}" for k, v in unchanged.items() if v),
            soft_wrap=True,
        )
    for v in c.get("same_as_original", []):
        console.print(f"{v}-edited equals the original rubric: evaluated once, Δ is 0 by construction")
    resample = c.get("resample", "items")
    over = f"{c['n_groups']} groups" if resample == "groups" and c.get("n_groups") else "items"
    how = f"bootstrap {c['n_boot']} over {over}"
    if (c["alpha"]["original"].get("ci_method") or "percentile") != "percentile":
        # issue 30 §1: fewer than 20 resampled units, the t interval with the jackknife SE
        units = c["n_groups"] if resample == "groups" and c.get("n_groups") else c["units"]["eval"]
        how = f"95% CIs: estimate ± t({units - 1})·SE, group-jackknife SE over {over}"
    console.print(
        f"clauses edited: contested {c['clauses_edited']['contested']}, control {c['clauses_edited']['control']}; "
        f"items: dev {c['units']['dev']}, eval {c['units']['eval']}; {how}",
        soft_wrap=True,
    )
    for w in c.get("warnings") or []:
        console.print(f"warning: {w}", soft_wrap=True)
    shared = c.get("editor_shares_family_with") or {}
    if shared:
        from judgepanel.providers.spec import names_beside

        names = names_beside(c.get("judges") or [], c.get("judge_names"))
        shown = sorted((names.get(j, j), w) for j, w in shared.items())
        console.print(
            "editor not isolated: shares " + "; ".join(f"{', '.join(w)} with {j}" for j, w in shown),
            soft_wrap=True,
        )


@app.command("run")
def run(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The iteration's name; alone, resumes a stored iteration."),
    dataset: str | None = typer.Option(None, "--dataset"),
    rubric: str | None = typer.Option(None, "--rubric", help="NAME[@VERSION] to repair."),
    judge: list[str] = typer.Option([], "--judge", help="A judge of the panel (repeat the option)."),
    editor: str | None = typer.Option(None, "--editor", help="The editor model's spec."),
    dev_split: str = typer.Option("dev", "--dev-split"),
    eval_split: str = typer.Option("eval", "--eval-split"),
    dimension: list[str] = typer.Option([], "--dimension", help="Dimensions to repair (default: all)."),
    limit: int | None = typer.Option(None, "--limit", help="At most N items per split."),
    control_seed: int = typer.Option(0, "--control-seed"),
    criterion: str | None = CRITERION,
    human_group: str | None = typer.Option(
        None, "--human-group", help="Human annotator group to compare with (default: all humans)."
    ),
    bootstrap: int = BOOTSTRAP,
    resample: str | None = RESAMPLE,
    from_: str | None = typer.Option(
        None,
        "--from",
        help="Continue this iteration: its contested-edited rubric on fresh development items, its other inputs.",
    ),
    stop_after: str | None = typer.Option(
        None, "--stop-after", help="Stop after this step: dev, select, rewrite, evaluate."
    ),
    retry_failed: bool = RETRY_FAILED,
    concurrency: int = CONCURRENCY,
    max_cost: float | None = MAX_COST,
    json_: bool = JSON,
) -> None:
    """Run (or resume) a whole iteration: dev campaign, selection, rewrites, evaluation, comparison."""
    from judgepanel.repair import iteration as rep

    engine = state(ctx).engine()
    given = [dataset, rubric, editor]
    inputs = None
    if from_ is not None:
        if any(x is not None for x in given) or judge:
            raise BadInput("--from takes the earlier iteration's inputs; give NAME and --from alone")
        inputs = rep.chained_inputs(engine, from_)
        if criterion is None:
            criterion = store_criterion(engine, from_)
    elif any(x is not None for x in given) or judge:
        if None in given or not judge:
            raise BadInput(
                "a new iteration needs --dataset, --rubric, --judge … and --editor (or give NAME alone to resume)"
            )
        assert dataset is not None and rubric is not None and editor is not None
        inputs = rep.RepairInputs(
            dataset,
            rubric,
            tuple(judge),
            editor,
            dev_split,
            eval_split,
            tuple(dimension),
            limit,
            control_seed,
            human_group,
            bootstrap,
            resample,
        )
        if criterion is None:
            criterion = DEFAULT_CRITERION
    elif resample is not None:
        raise BadInput(
            "--resample belongs to a new iteration; for a stored one use `repair compare NAME --resample`"
        )
    if criterion is not None and criterion.strip().lower() == "later":
        criterion = None
    rec = rep.run_iteration(
        engine,
        name,
        inputs,
        run_options(concurrency, max_cost),
        criterion=criterion,
        stop_after=stop_after,
        say=step_printer(json_),
        retry_failed=retry_failed,
        warn=warn,
    )
    simulated = _simulated(engine, rec)
    if json_:
        out = {**rec.status_dict(), "simulated": simulated}
        if rec.comparison is not None:
            out["comparison"] = {
                **rec.comparison,
                "checkers": rep.checker_rows(engine, name),
                "simulated": simulated,
            }
        emit_json(out)
        return
    if rec.comparison is not None:
        if simulated:
            typer.echo(SIM_NOTE)
        print_comparison(rec.comparison, f"repair {name}: before/after on the evaluation split")
    else:
        _status_out(rec, False, simulated, rep.chain(engine, name))


def store_criterion(engine: Any, name: str) -> str | None:
    """The criterion an earlier iteration declared: a chain keeps its pre-declared criterion."""
    from judgepanel.store import repair as store

    return store.get_iteration(engine, name).criterion


@app.command("select")
def select(ctx: typer.Context, name: str = typer.Argument(...), json_: bool = JSON) -> None:
    """Disagreement rate per clause on the dev campaign; the contested clauses and the control."""
    from judgepanel.repair import iteration as rep

    sel = rep.select(state(ctx).engine(), name)
    if json_:
        emit_json(sel)
        return
    table(
        f"{name}: clause disagreement on the development split",
        ["clause", "rate", "comparisons", "selected", "control"],
        [
            [
                cid,
                "-" if r is None else f"{r:.3f}",
                sel["comparisons"][cid],
                "yes" if any(cid in v for v in sel["selected"].values()) else "",
                "yes" if any(cid in v for v in sel["control"].values()) else "",
            ]
            for cid, r in sel["rates"].items()
        ],
    )


@app.command("rewrite")
def rewrite(
    ctx: typer.Context,
    name: str = typer.Argument(...),
    concurrency: int = CONCURRENCY,
    max_cost: float | None = MAX_COST,
    retry_failed: bool = RETRY_FAILED,
    json_: bool = JSON,
) -> None:
    """Ask the editor to rewrite the selected and control clauses; store both edited versions."""
    from judgepanel.repair import iteration as rep

    out = rep.rewrite(
        state(ctx).engine(), name, run_options(concurrency, max_cost), retry_failed=retry_failed
    )
    if json_:
        emit_json(out)
        return
    typer.echo(
        f"original {out['original']}; contested-edited {out['contested']}; control-edited {out['control']}"
    )
    table(
        None,
        ["clause", "sets", "old", "new"],
        [
            [c, ",".join(r["sets"]), r["old"], "(unchanged)" if r.get("unchanged") else r["new"]]
            for c, r in out["rewrites"].items()
        ],
    )


@app.command("checkers")
def checkers(
    ctx: typer.Context,
    name: str | None = typer.Argument(
        None, help="The iteration (with --recheck: all iterations when left out)."
    ),
    threshold: float | None = typer.Option(
        None,
        "--threshold",
        help="Keep a checker when the 95% lower bound of its agreement with the judge majority is at least this (default 0.9; --recheck: each proposal's own).",
    ),
    min_kappa: float = typer.Option(
        0.6, "--min-kappa", help="… and its Cohen κ against the majority at least this."
    ),
    min_per_class: int = typer.Option(
        10,
        "--min-per-class",
        help="Development items needed in each class of the judge majority (met, not met).",
    ),
    recheck: bool = typer.Option(
        False, "--recheck", help="Re-decide the stored proposals by the current rule; no editor call."
    ),
    concurrency: int = CONCURRENCY,
    max_cost: float | None = MAX_COST,
    retry_failed: bool = RETRY_FAILED,
    json_: bool = JSON,
) -> None:
    """Ask the editor for a deterministic checker per clause; keep those validated against the judges."""
    from judgepanel.repair.checkers import DEFAULT_THRESHOLD, propose_checkers, recheck_checkers
    from judgepanel.store import repair as store

    engine = state(ctx).engine()
    if recheck:
        out = recheck_checkers(
            engine, name, threshold=threshold, min_kappa=min_kappa, min_per_class=min_per_class
        )
        sims = {
            r["iteration"]: _simulated(engine, store.get_iteration(engine, r["iteration"]))
            for r in out["rechecked"]
        }
        if json_:
            emit_json({**out, "simulated": any(sims.values())})
            return
        for r in out["rechecked"]:
            if sims[r["iteration"]]:
                typer.echo(SIM_NOTE)
            typer.echo(
                f"repair {r['iteration']}: rechecked {r['proposed']} checker(s), {r['kept']} kept"
                + (f"; no longer kept: {', '.join(r['dropped'])}" if r["dropped"] else "")
                + f"; rubric {r['rubric']}"
            )
            print_checkers(r["checkers"])
        return
    if name is None:
        raise BadInput("repair checkers needs the iteration's NAME (or --recheck for every iteration)")
    out = propose_checkers(
        engine,
        name,
        threshold=DEFAULT_THRESHOLD if threshold is None else threshold,
        min_kappa=min_kappa,
        min_per_class=min_per_class,
        options=run_options(concurrency, max_cost),
        retry_failed=retry_failed,
    )
    simulated = _simulated(engine, store.get_iteration(engine, name))
    if json_:
        emit_json({**out, "simulated": simulated})
        return
    if simulated:
        typer.echo(SIM_NOTE)
    rule = out["rule"] or {}
    typer.echo(
        f"repair {name}: {out['proposed']} checker(s) proposed, {out['kept']} kept (both classes of the "
        f"judge majority >= {rule.get('min_per_class')} items, κ >= {rule.get('min_kappa'):g}, 95% lower "
        f"bound of agreement >= {out['threshold']:g} on development items); rubric {out['rubric']}"
    )
    print_checkers(out["checkers"])


def print_checkers(rows: list[dict[str, Any]]) -> None:
    def f3(x: Any) -> str:
        return "-" if x is None else f"{x:.3f}"

    table(
        None,
        ["clause", "checker", "params", "agreement", "95% low", "κ", "met/not", "decision"],
        [
            [
                r["clause"],
                r["checker"],
                ", ".join(f"{k}={v}" for k, v in r["params"].items() if v is not None) or "-",
                f3(r["agreement"]),
                f3(r.get("lower_bound")),
                f3(r.get("kappa")),
                "-" if r.get("n_met") is None else f"{r['n_met']}/{r['n_not_met']}",
                "-"
                if r["checker"] == "none"
                else (r.get("decision") or ("kept" if r["kept"] else "refused")),
            ]
            for r in rows
        ],
    )
    for r in rows:
        if r["checker"] != "none" and (r.get("decision_reason") or r.get("error")):
            typer.echo(f"  {r['clause']}: {r.get('decision_reason') or r['error']}")
        if r.get("warning"):
            typer.echo(f"  warning: {r['clause']}: {r['warning']}")


@app.command("evaluate")
def evaluate(
    ctx: typer.Context,
    name: str = typer.Argument(...),
    criterion: str | None = CRITERION,
    concurrency: int = CONCURRENCY,
    max_cost: float | None = MAX_COST,
    json_: bool = JSON,
) -> None:
    """The panel under the original and both edited versions, on the evaluation split only."""
    from judgepanel.repair import iteration as rep

    engine = state(ctx).engine()
    rec = rep.evaluate(engine, name, run_options(concurrency, max_cost), criterion=criterion)
    _status_out(rec, json_, _simulated(engine, rec))


@app.command("compare")
def compare(
    ctx: typer.Context, name: str = typer.Argument(...), resample: str | None = RESAMPLE, json_: bool = JSON
) -> None:
    """Inter-judge α and agreement with humans per version, paired CIs, the criterion's verdict."""
    from judgepanel.repair import iteration as rep
    from judgepanel.store import repair as store

    engine = state(ctx).engine()
    c = rep.compare(engine, name, resample=resample)
    simulated = _simulated(engine, store.get_iteration(engine, name))
    if json_:
        emit_json({**c, "simulated": simulated})
        return
    if simulated:
        typer.echo(SIM_NOTE)
    print_comparison(c, f"repair {name}: before/after on the evaluation split")
    if c.get("checkers"):
        typer.echo("clause checkers (`repair checkers`):")
        print_checkers(c["checkers"])


@app.command("status")
def status(ctx: typer.Context, name: str = typer.Argument(...), json_: bool = JSON) -> None:
    """Steps done / pending, the campaigns and rubric versions of an iteration, its criterion."""
    from judgepanel.repair import iteration as rep
    from judgepanel.store import repair as store

    engine = state(ctx).engine()
    rec = store.get_iteration(engine, name)
    _status_out(rec, json_, _simulated(engine, rec), rep.chain(engine, name))


@app.command("list")
def list_(ctx: typer.Context, json_: bool = JSON) -> None:
    """The stored repair iterations."""
    from judgepanel.store import repair as store

    rows = store.list_iterations(state(ctx).engine())
    if json_:
        emit_json({"iterations": rows})
        return
    # the verdict is a mapping (inter_judge, human, …): one column per key, not a Python dict
    keys = list(dict.fromkeys(k for r in rows if isinstance(r["verdict"], dict) for k in r["verdict"]))
    table(
        "repair iterations",
        ["name", "dataset", "rubric", "steps done", "next", *(k.replace("_", "-") for k in keys)],
        [
            [
                r["name"] + (" (simulated)" if r["simulated"] else ""),
                r["dataset"],
                r["rubric"],
                r["steps_done"],
                r["next"] or "-",
                *(str((r["verdict"] or {}).get(k) or "-") for k in keys),
            ]
            for r in rows
        ],
    )
