"""`judgepanel campaign …`: plan, estimate, run and follow judge campaigns."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from judgepanel.cli.context import held_signals, interrupt_on_signals, state
from judgepanel.cli.option_group import option_group
from judgepanel.cli.options import JSON
from judgepanel.cli.render import SIMULATED_WORD, emit_json, err_console, printable, simulated, table, warn
from judgepanel.errors import RETRY_FAILED, BadInput, Interrupted

if TYPE_CHECKING:  # imported inside the commands that use them, so that `--help` stays fast
    from judgepanel.runner.options import RunOptions


app = typer.Typer(help="Plan, estimate, run and follow judge campaigns.", no_args_is_help=True)


def _split(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out += [p.strip() for p in v.split(",") if p.strip()]
    return out


@app.command("create")
def create(
    ctx: typer.Context,
    name: str | None = typer.Argument(None, help="Campaign name (or `name:` in the --from file)."),
    from_: Path | None = typer.Option(
        None, "--from", help="A campaign file (YAML) with these options; flags given here override it."
    ),
    dataset: str | None = typer.Option(None, "--dataset", help="Dataset whose items are judged."),
    pairs: str | None = typer.Option(None, "--pairs", help="Pair set (pairwise campaigns)."),
    protocol: str | None = typer.Option(None, "--protocol", help="pairwise, pointwise or clauses."),
    judge: list[str] | None = typer.Option(
        None, "--judge", help="PROVIDER:MODEL[?param=value&…]; repeat for a panel."
    ),
    rubric: str | None = typer.Option(None, "--rubric", help="NAME[@VERSION] of a stored rubric."),
    condition: list[str] | None = typer.Option(
        None, "--condition", help="none, criteria, rubric (comma-separated or repeated; default none)."
    ),
    dimension: list[str] | None = typer.Option(
        None, "--dimension", help="Dimension(s) to judge (comma-separated or repeated)."
    ),
    repeats: int | None = typer.Option(None, "--repeats", help="Ask every job N times (default 1)."),
    split: str | None = typer.Option(None, "--split", help="Only items (or pairs) of this split."),
    limit: int | None = typer.Option(None, "--limit", help="Only the first N items or pairs."),
    template: list[str] | None = typer.Option(
        None,
        "--template",
        help="PROTOCOL=FILE (a Jinja template) or PROTOCOL=@classic-pairwise, @classic-pairwise-ref, "
        "@classic-single, @classic-single-ref: the judge prompt to use instead of the bundled one; "
        "reference=FILE|@NAME: the reference-guided one for --reference-categories.",
    ),
    turn: int | None = typer.Option(
        None,
        "--turn",
        help="Judge the assistant reply at turn N of each item's conversation, the earlier turns "
        "shown as context (needs a --template that shows conversations, e.g. @classic-pairwise).",
    ),
    reference_categories: list[str] | None = typer.Option(
        None,
        "--reference-categories",
        help="Item categories (meta.category; comma-separated or repeated) judged with the "
        "reference-guided template, e.g. math,reasoning,coding; other items use the plain one.",
    ),
    max_cost: float | None = typer.Option(
        None, "--max-cost", help="Default budget in USD of `campaign run` for this campaign."
    ),
    allow_identical_conditions: bool = typer.Option(
        False,
        "--allow-identical-conditions",
        help="Create a condition study even when two conditions render the same prompt for every unit.",
    ),
    json_: bool = JSON,
) -> None:
    """Plan a campaign: every item|pair × judge × order × condition × dimension × repeat is a job."""
    from judgepanel.protocol.custom import parse_template_option
    from judgepanel.runner import campaign as api

    info = api.create_from(
        state(ctx).engine(),
        from_,
        {
            "name": name,
            "dataset": dataset,
            "pairs": pairs,
            "protocol": protocol,
            "judges": judge,
            "rubric": rubric,
            "conditions": _split(condition),
            "dimensions": _split(dimension),
            "repeats": repeats,
            "split": split,
            "limit": limit,
            "templates": dict(parse_template_option(t) for t in template or []),
            "max_cost": max_cost,
            "turn": turn,
            "reference_categories": _split(reference_categories),
            "allow_identical_conditions": allow_identical_conditions or None,
        },
    )
    for line in info.warnings:
        warn(line)
    if json_:
        emit_json({**info.as_dict(), "warnings": list(info.warnings)})
        return
    verb = "planned" if info.added == info.jobs else ("added" if info.added else "unchanged")
    typer.echo(
        f"campaign {info.name}: {info.jobs} jobs ({verb}{f', {info.added} new' if 0 < info.added < info.jobs else ''}), "
        f"{info.protocol}{', rubric ' + str(info.spec['rubric']) if info.spec.get('rubric') else ''}, "
        f"judges: {', '.join(info.judge_names().values())}"
    )
    _echo_keys(info.judge_keys)
    if info.skipped_no_turn:
        typer.echo(
            f"{info.skipped_no_turn} unit(s) left out: an item has no assistant reply at turn "
            f"{info.spec.get('turn')}",
            err=True,
        )


@app.command("plan")
def plan(
    ctx: typer.Context,
    name: str = typer.Argument(...),
    probe: bool = typer.Option(
        False,
        "--probe",
        help="Ask each base_url judge's server which model it runs (GET /v1/models) instead of "
        "using the one the campaign's last run recorded; the only network call plan makes.",
    ),
    json_: bool = JSON,
) -> None:
    """Estimate what running the rest of a campaign takes: calls, tokens and cost (offline unless --probe)."""
    from judgepanel.runner import campaign as api

    est = api.estimate(state(ctx).engine(), name, probe=probe)
    if json_:
        emit_json(est.as_dict())
        return
    for judge in est.unprobed:
        warn(
            f"judge {judge}: no run has recorded which model its server runs, so its cached count "
            "assumes the spec's key; --probe asks the server"
        )
    costs = ("cost_usd", "cost_cached_usd", "cost_batch_usd", "cost_batch_cached_usd")
    rows = [
        [
            d["name"],
            d["calls"],
            d["cached"],
            d["input_tokens"],
            d["output_tokens"],
            *(_usd(d[k]) for k in costs),
        ]
        for d in est.by_judge.values()
    ]
    total = est.as_dict()
    rows.append(
        [
            "total",
            est.calls,
            est.cached,
            est.input_tokens,
            est.output_tokens,
            *(_usd(total[k]) for k in costs),
        ]
    )
    table(
        f"campaign {name}: {est.jobs} jobs",
        [
            "judge",
            "calls",
            "cached",
            "input tokens (est.)",
            "output tokens (est.)",
            "cost USD",
            "prompt-cached",
            "batch",
            "batch + prompt-cached",
        ],
        rows,
    )
    _echo_keys(est.judge_keys)


def _echo_keys(keys: Any) -> None:
    """Each networked judge's key source (a variable's name, never its value) and destination host
    (simulated judges send nothing anywhere; `--json` lists them too)."""
    for k in keys:
        if str(k["judge"]).startswith("sim:"):
            continue
        source = f"key from ${k['key_env']}" if k["key_env"] else "no key"
        typer.echo(f"  {k['judge']}: {source} -> {k['host']}")


def _usd(v: float | None) -> str:
    return "unknown" if v is None else f"{v:.4f}"


@dataclass(frozen=True)
class CallLimits:
    """The options `campaign run` and `campaign retry-parse-failures` share (`CALL_LIMITS`)."""

    concurrency: int
    rpm: float | None
    tpm: float | None
    max_cost: float | None
    timeout: float
    max_attempts: int


def _options(limits: CallLimits, no_cache: bool, retry_failed: bool) -> RunOptions:
    from judgepanel.runner.options import RunOptions

    if limits.max_attempts < 1:
        raise BadInput(f"--max-attempts must be at least 1, got {limits.max_attempts}")
    from judgepanel.runner.options import RetryPolicy

    return RunOptions(
        concurrency=limits.concurrency,
        rpm=limits.rpm,
        tpm=limits.tpm,
        max_cost=limits.max_cost,
        no_cache=no_cache,
        timeout=limits.timeout,
        retry=RetryPolicy(max_attempts=limits.max_attempts),
        retry_failed=retry_failed,
    )


def reask_advice(
    name: str, failed: Mapping[str, int], last: Mapping[str, str] | None = None, *, batch: bool = False
) -> list[str]:
    """What re-asks the campaign's failed jobs (`failed`: by the class of their last failure), one
    line per command; a plain `campaign run` re-asks none of them. `last`: by class, the latest
    such failure's stored message, quoted (shortened, terminal controls escaped) for `fatal`.
    `batch`: the `campaign run` lines say `--batch`, for a batch run's advice."""
    run = f"campaign run {name}{' --batch' if batch else ''}"

    def some(classes: tuple[str, ...]) -> tuple[int, str]:
        hit = {k: n for k, n in failed.items() if k in classes and n}
        return sum(hit.values()), ", ".join(hit)

    lines = []
    n, classes = some(RETRY_FAILED)
    if n:
        lines.append(f"`{run} --retry-failed` re-asks the {n} failed on {classes}")
    n, _ = some(("parse",))
    if n:
        lines.append(f"`campaign retry-parse-failures {name}` re-asks the {n} whose reply could not be read")
    n, _ = some(("truncated",))
    if n:
        lines.append(
            f"`campaign retry-parse-failures {name} --truncated` re-asks the {n} cut at the output cap "
            "(raise the judge's max_tokens first)"
        )
    n, _ = some(("fatal",))
    if n:
        said = (last or {}).get("fatal")
        quoted = (
            "" if not said else f' (the last: "{printable(said if len(said) <= 160 else said[:159] + "…")}")'
        )
        lines.append(
            f"`{run} --retry-fatal` re-asks the {n} refused as fatal{quoted}, once what their "
            "error names is fixed (the key, the model, the request)"
        )
    return lines


def end_of_run(summary: Any, json_: bool, line: Callable[[str], str], interrupted: str) -> None:
    """How every run ends (`campaign run`, with `--batch`, `worker`): its summary as one JSON object,
    or `line(errors)` (the errors by class in words, `none`); its warnings; and on Ctrl-C or SIGTERM
    exit 130 with `interrupted`, which says what was kept. The caller then says what is left."""
    if json_:
        emit_json(summary.as_dict())
    else:
        typer.echo(line(", ".join(f"{k} {v}" for k, v in summary.errors.items()) or "none"))
    for warning in summary.warnings:
        warn(warning)
    if summary.status == "interrupted":
        raise Interrupted(interrupted)


def _execute(
    ctx: typer.Context,
    name: str,
    options: RunOptions,
    json_: bool,
    *,
    reask: bool,
    truncated: bool = False,
    fatal: bool = False,
) -> None:
    from judgepanel.runner.executor import Runner, RunSummary
    from judgepanel.runner.progress import enabled, live_progress

    engine = state(ctx).engine(wait=True)  # a server still starting is waited for, as an outage is

    async def main() -> RunSummary:
        runner = Runner(
            engine, name, options, reask_parse_failures=reask, reask_truncated=truncated, reask_fatal=fatal
        )
        with interrupt_on_signals(runner.interrupt, held):
            async with live_progress(runner.stats, show=enabled(json_)):
                return await runner.run()

    import asyncio  # the event loop is for the commands that run; SQLAlchemy loads it for the others

    with held_signals() as held:  # a signal before the loop takes over still ends the run with exit 130
        summary = asyncio.run(main())

    def line(errs: str) -> str:
        cap = (
            ""
            if summary.max_cost_usd is None
            else f" (campaign total {_usd(summary.campaign_spent_usd)} of its cap {summary.max_cost_usd:g})"
        )
        return (
            f"campaign {name}: {summary.status}; {summary.done}/{summary.jobs} done, {summary.failed} failed, "
            f"{summary.pending} pending; {summary.calls} calls, {summary.cached} from cache, "
            f"errors: {errs}; spent {_usd(summary.spent_usd)} USD{cap} in {summary.elapsed_s:.1f} s"
        )

    end_of_run(summary, json_, line, "interrupted; finished calls are stored, run again to resume")
    if summary.status == "unreadable" and summary.stopped:
        err_console.print(summary.stopped, soft_wrap=True, markup=False, highlight=False)
    if summary.status == "budget":
        limit = summary.max_cost_usd or 0.0
        err_console.print(
            f"stopped by the campaign's cap of {limit:g} USD (max_cost, across all its runs): it has spent "
            f"{_usd(summary.campaign_spent_usd)} USD ({_usd(summary.spent_usd)} in this run) and the next "
            f"call did not fit; {summary.unscheduled} job(s) unscheduled. Running again does not help: "
            f"raise the cap with `campaign run {name} --max-cost USD` (a total above {limit:g})",
            soft_wrap=True,
        )
    if summary.exit_code != 0:
        left = []
        if summary.failed:
            kinds = f" (partial clause replies: {summary.partial})" if summary.partial else ""
            left.append(f"{summary.failed} failed{kinds}")
        if summary.unscheduled:
            left.append(f"{summary.unscheduled} unscheduled by the campaign's max_cost")
        other = summary.pending - summary.unscheduled
        if other > 0:
            left.append(f"{other} pending")
        err_console.print(
            f"campaign {name}: {summary.done} of {summary.jobs} jobs have a verdict; "
            f"{', '.join(left) or 'some left'} (exit {summary.exit_code})",
            soft_wrap=True,
        )
        if summary.failed:
            _print_reask_advice(engine, name)
        raise typer.Exit(summary.exit_code)


def _print_reask_advice(engine: Any, name: str, *, batch: bool = False) -> None:
    """After a run that left failed jobs: `reask_advice` on stderr, from the store's counts."""
    from judgepanel.store import campaigns as store

    for advice in reask_advice(name, *store.failed_by_class(engine, name), batch=batch):
        err_console.print(advice, soft_wrap=True, markup=False, highlight=False)


CONCURRENCY = typer.Option(16, "--concurrency", help="Calls in flight per judge.")
RPM = typer.Option(None, "--rpm", help="Requests per minute per judge (client-side limit).")
TPM = typer.Option(None, "--tpm", help="Tokens per minute per judge (client-side limit).")
MAX_COST = typer.Option(
    None,
    "--max-cost",
    help="Cap on the campaign's TOTAL spend in USD (every run, worker and batch), recorded on the "
    "campaign for later runs; stop scheduling before it would be exceeded.",
)
NO_CACHE = typer.Option(
    False, "--no-cache", help="Call the judge even when the store has the identical request."
)
TIMEOUT = typer.Option(120.0, "--timeout", help="Seconds per call.")
MAX_ATTEMPTS = typer.Option(
    6, "--max-attempts", help="Attempts per job for rate limits and transient errors."
)
CALL_LIMITS = {
    "concurrency": CONCURRENCY,
    "rpm": RPM,
    "tpm": TPM,
    "max_cost": MAX_COST,
    "timeout": TIMEOUT,
    "max_attempts": MAX_ATTEMPTS,
}


@app.command("run")
@option_group(CallLimits, CALL_LIMITS, after=2)
def run(
    ctx: typer.Context,
    name: str = typer.Argument(...),
    no_cache: bool = NO_CACHE,
    retry_failed: bool = typer.Option(
        False,
        "--retry-failed",
        help="Also retry jobs that failed on rate limits, transient errors, an oversize reply, a "
        "prompt over the server's context window (after raising it) or a server certificate TLS "
        "refused (after trusting its CA).",
    ),
    retry_fatal: bool = typer.Option(
        False,
        "--retry-fatal",
        help="Also re-ask jobs refused as fatal (401/403 a key, 404 a model, 400 a request, an "
        "exhausted quota), after fixing what their error names.",
    ),
    batch: bool = typer.Option(
        False,
        "--batch",
        help="Submit through the providers' batch APIs (OpenAI Batch, Anthropic Message Batches) "
        "at the batch discount, poll until they end and store the results; resumes open batches.",
    ),
    poll_interval: float = typer.Option(
        30.0, "--poll-interval", help="With --batch: seconds before the first poll (backs off ×1.5)."
    ),
    batch_size: int = typer.Option(10_000, "--batch-size", help="With --batch: most jobs per batch."),
    no_wait: bool = typer.Option(
        False, "--no-wait", help="With --batch: submit, poll once and return (run again to collect)."
    ),
    json_: bool = JSON,
    *,
    options: CallLimits,
) -> None:
    """Execute what is not yet done; safe to re-run and to interrupt.

    Exit 0 when every job has a verdict; 3 when the run ended with jobs failed or unscheduled by
    --max-cost (or, with --batch, still waiting in open batches); 130 on Ctrl-C; 2 on bad input;
    1 otherwise."""
    max_cost = options.max_cost
    if batch:
        if max_cost is not None and not (max_cost >= 0 and math.isfinite(max_cost)):
            raise BadInput(f"--max-cost must be a non-negative number of USD, got {max_cost}")
        from judgepanel.runner.batch import BatchOptions

        bopts = BatchOptions(
            poll_interval=poll_interval,
            max_jobs=batch_size,
            no_cache=no_cache,
            wait=not no_wait,
            retry_failed=retry_failed,
            retry_fatal=retry_fatal,
            max_cost=max_cost,
        )
        bopts.validate()
        _execute_batch(ctx, name, bopts, json_)
        return
    opts = _options(options, no_cache, retry_failed)
    _execute(ctx, name, opts, json_, reask=False, fatal=retry_fatal)


def _execute_batch(ctx: typer.Context, name: str, options: Any, json_: bool) -> None:
    from judgepanel.runner.batch import BatchRunner, BatchSummary

    engine = state(ctx).engine(wait=True)

    async def main() -> BatchSummary:
        runner = BatchRunner(engine, name, options)
        with interrupt_on_signals(runner.interrupt, held):
            return await runner.run()

    import asyncio  # the event loop is for the commands that run; SQLAlchemy loads it for the others

    with held_signals() as held:  # a signal before the loop takes over still ends the run with exit 130
        summary = asyncio.run(main())

    def line(errs: str) -> str:
        return "\n".join(
            [
                f"campaign {name} (batch): {summary.status}; {summary.done}/{summary.jobs} done, "
                f"{summary.failed} failed, {summary.in_batches} in open batches, {summary.pending} pending; "
                f"{summary.submitted} submitted, {summary.collected} collected, {summary.cached} from cache, "
                f"errors: {errs}; spent {_usd(summary.cost_usd)} USD in {summary.elapsed_s:.1f} s",
                *(
                    f"  batch {b['id']}: {b['provider']} {b.get('batch_id')} {b.get('status')}"
                    for b in summary.batches
                ),
            ]
        )

    end_of_run(
        summary, json_, line, "interrupted; submitted batches stay open, run again with --batch to collect"
    )
    if summary.failed:
        _print_reask_advice(engine, name, batch=True)
    if summary.exit_code != 0:
        raise typer.Exit(summary.exit_code)


@app.command("retry-parse-failures")
@option_group(CallLimits, CALL_LIMITS, after=2)
def retry_parse_failures(
    ctx: typer.Context,
    name: str = typer.Argument(...),
    truncated: bool = typer.Option(
        False,
        "--truncated",
        help="Also re-ask replies cut at the output cap (each re-ask pays for the whole cap again).",
    ),
    json_: bool = JSON,
    *,
    options: CallLimits,
) -> None:
    """Re-ask the jobs whose reply could not be read or left clauses unanswered (with a note
    asking for the full JSON answer); replies cut at the output cap only with --truncated.
    Exit codes as for `campaign run`."""
    opts = _options(options, False, False)
    _execute(ctx, name, opts, json_, reask=True, truncated=truncated)


@app.command("status")
def status(ctx: typer.Context, name: str = typer.Argument(...), json_: bool = JSON) -> None:
    """Jobs done, failed and pending; calls made and money spent; clause verdicts answered by checkers."""
    from judgepanel.analysis.checkers import checker_use
    from judgepanel.analysis.pace import campaign_pace, rate_number
    from judgepanel.store import campaigns as store

    engine = state(ctx).engine()
    st = store.campaign_status(engine, name)
    sim = simulated(engine, [name])
    use = checker_use(engine, name)
    pace = campaign_pace(engine, name, st.pending)
    if json_:
        emit_json({**st.as_dict(), **use.as_dict(), "progress": pace.as_dict(), "simulated": sim})
        return
    typer.echo(
        f"campaign {name}{' (' + SIMULATED_WORD + ')' if sim else ''}: {st.status}; {st.done}/{st.jobs} done, {st.failed} failed, {st.pending} pending; "
        f"{st.calls} calls ({st.cached} from cache), {st.input_tokens} in / {st.output_tokens} out tokens, "
        f"spent {_usd(st.cost_usd)} USD"
    )
    unpriced = [str(d.get("name") or j) for j, d in st.by_judge.items() if d.get("cost_usd") is None]
    if unpriced:  # "unknown" never without what would make it known
        typer.echo(
            f"cost unknown for {', '.join(unpriced)}: give price_in=…&price_out=… (USD per million "
            "tokens) in the judge spec, and price_cache_read=…&price_cache_write=… where calls used "
            "the prompt cache at a rate nobody gave"
        )
    if pace.active:
        eta = "unknown" if pace.eta_s is None else f"{pace.eta_s:.0f} s"
        latency = "" if pace.mean_latency_s is None else f", mean latency {pace.mean_latency_s:.1f} s"
        typer.echo(
            f"progress: active (a lease is live); {rate_number(pace.calls_per_s)} calls/s over the last "
            f"{pace.window_s:.0f} s{latency}; ETA {eta}"
        )
    if st.max_cost_usd is not None:
        held = f", {_usd(st.reserved_usd)} reserved by runs in progress" if st.reserved_usd else ""
        typer.echo(
            f"budget: {_usd(st.spent_usd)} of max_cost {st.max_cost_usd:g} USD spent{held}; "
            f"{_usd(st.left_usd)} left"
        )
    if st.cache_read_tokens or st.cache_write_tokens:
        typer.echo(
            f"prompt cache: {st.cache_read_tokens} tokens read, {st.cache_write_tokens} written, "
            f"saved {_usd(st.saved_by_cache_usd)} USD"
        )
    if st.batch_calls or st.in_batches:
        typer.echo(
            f"batch APIs: {st.batch_calls} calls answered, {st.in_batches} jobs waiting in open batches, "
            f"saved {_usd(st.saved_by_batch_usd)} USD"
        )
    if st.cache_read_tokens or st.cache_write_tokens or st.batch_calls:
        typer.echo(f"the same calls one by one without the prompt cache: {_usd(st.cost_list_usd)} USD")
    if use.checker_verdicts:
        typer.echo(
            f"clause checkers: {use.checker_verdicts} clause verdicts answered without a model call, "
            f"saved about {_usd(use.cost_saved_usd)} USD (each reply's cost × checker-answered / asked clauses)"
        )
    if st.errors:
        typer.echo("attempt errors: " + ", ".join(f"{k} {v}" for k, v in st.errors.items()))
    if st.failed_by_class:
        typer.echo("failed jobs by class: " + ", ".join(f"{k} {v}" for k, v in st.failed_by_class.items()))
        for advice in reask_advice(name, st.failed_by_class, store.last_failures(engine, name)):
            typer.echo(f"  {advice}")
    if st.partial:
        typer.echo(
            f"{st.partial} job(s) answered only some clauses; `campaign retry-parse-failures {name}` re-asks them"
        )
    table(
        None,
        ["judge", "jobs", "done", "failed", "pending", "calls", "cached", "cost USD"],
        [
            [
                d["name"],
                d["jobs"],
                d["done"],
                d["failed"],
                d["pending"],
                d["calls"],
                d["cached"],
                _usd(d["cost_usd"]),
            ]
            for d in st.by_judge.values()
        ],
    )


@app.command("show")
def show(
    ctx: typer.Context,
    name: str = typer.Argument(...),
    yaml_: bool = typer.Option(False, "--yaml", help="Print a campaign file that re-creates it."),
    json_: bool = JSON,
) -> None:
    """The options a campaign was created with (as a campaign file with --yaml)."""
    from judgepanel.runner import campaign as api

    spec = api.stored_spec(state(ctx).engine(), name)
    if yaml_:
        typer.echo(api.spec_yaml(spec, name), nl=False)
        return
    shown = {k: v for k, v in spec.items() if k != "templates"}
    shown["templates"] = {
        p: {k: d[k] for k in ("name", "path", "sha256")} for p, d in (spec.get("templates") or {}).items()
    }
    if json_:
        emit_json({"campaign": name, **shown})
        return
    for k, v in shown.items():
        typer.echo(f"{k}: {v}")


@app.command("list")
def list_(ctx: typer.Context, json_: bool = JSON) -> None:
    """The campaigns in the database."""
    from judgepanel.store import campaigns as store

    engine = state(ctx).engine()
    rows = store.list_campaigns(engine)
    from judgepanel.store.simulated import simulated_campaigns

    sims = simulated_campaigns(engine, [r["name"] for r in rows])
    rows = [{**r, "simulated": sims.get(r["name"], False)} for r in rows]
    if json_:
        emit_json({"campaigns": rows})
        return
    table(
        "campaigns",
        ["name", "dataset", "protocol", "judges", "jobs", "done", "failed", "pending", "status"],
        [
            [
                r["name"] + (" (simulated)" if r["simulated"] else ""),
                r["dataset"],
                r["protocol"],
                ", ".join(r["judge_names"]),
                r["jobs"],
                r["done"],
                r["failed"],
                r["pending"],
                r["status"],
            ]
            for r in rows
        ],
    )


@app.command("delete")
def delete(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Campaign name."),
    force: bool = typer.Option(
        False, "--force", help="Delete the repair iterations and alignments that use it too."
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation on a terminal."),
    json_: bool = JSON,
) -> None:
    """Delete a campaign and its jobs, attempts and verdicts in one transaction (refused while
    jobs are leased, while another campaign reuses its answers, or while a repair iteration or an
    alignment uses it, unless --force). Asks first when run on a terminal (--yes: do not ask)."""
    import sys

    from judgepanel.store import campaigns as store
    from judgepanel.store.campaigns.deletion import campaign_dependants, delete_campaign

    engine = state(ctx).engine()
    if not yes and sys.stdin.isatty():
        users = campaign_dependants(engine, name)
        jobs = sum(store.job_counts(engine, store.campaign_id(engine, name)).values())
        also = f", and {users.describe()} that use it" if users else ""
        if (force or not users) and not typer.confirm(
            f"delete campaign {name}: {jobs} job(s) with their requests, responses and verdicts{also}?",
            default=False,
        ):
            err_console.print(f"nothing deleted: campaign {name} is kept", soft_wrap=True)
            raise typer.Exit(1)
    done = delete_campaign(engine, name, force=force)
    if json_:
        emit_json(done.as_dict())
        return
    rows = ", ".join(f"{n} {t}" for t, n in done.rows.items() if n and t != "campaign")
    typer.echo(f"deleted campaign {name}" + (f": {rows} rows" if rows else ""))
