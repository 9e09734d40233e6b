"""`judgepanel campaign …`: plan, estimate, run and follow judge campaigns."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import TYPE_CHECKING

import typer

from judgepanel.cli.context import state
from judgepanel.cli.render import emit_json, err_console, table, warn
from judgepanel.errors import BadInput, Interrupted

if TYPE_CHECKING:  # imported inside the commands that use them, so that `--help` stays fast
    from judgepanel.runner.executor import RunOptions


app = typer.Typer(help="Plan, estimate, run and follow judge campaigns.", no_args_is_help=True)

JSON = typer.Option(False, "--json", help="Print one JSON object.")


def _split(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out += [p.strip() for p in v.split(",") if p.strip()]
    return out


@app.command("create")
def create(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Campaign name."),
    dataset: str = typer.Option(..., "--dataset", help="Dataset whose items are judged."),
    pairs: str | None = typer.Option(None, "--pairs", help="Pair set (pairwise campaigns)."),
    protocol: str = typer.Option(..., "--protocol", help="pairwise, pointwise or clauses."),
    judge: list[str] = typer.Option(
        ..., "--judge", help="PROVIDER:MODEL[?param=value&…]; repeat for a panel."
    ),
    rubric: str | None = typer.Option(None, "--rubric", help="NAME[@VERSION] of a stored rubric."),
    condition: list[str] | None = typer.Option(
        None, "--condition", help="none, criteria, rubric (comma-separated or repeated; default none)."
    ),
    dimension: list[str] | None = typer.Option(
        None, "--dimension", help="Dimension(s) to judge (comma-separated or repeated)."
    ),
    repeats: int = typer.Option(1, "--repeats", help="Ask every job N times (separate samples)."),
    split: str | None = typer.Option(None, "--split", help="Only items (or pairs) of this split."),
    limit: int | None = typer.Option(None, "--limit", help="Only the first N items or pairs."),
    json_: bool = JSON,
) -> None:
    """Plan a campaign: every item|pair × judge × order × condition × dimension × repeat is a job."""
    from judgepanel.runner import campaign as api

    info = api.create(
        state(ctx).engine(),
        name,
        dataset=dataset,
        protocol=protocol,
        judges=judge,
        pairs=pairs,
        rubric=rubric,
        conditions=_split(condition) or ["none"],
        dimensions=_split(dimension),
        repeats=repeats,
        split=split,
        limit=limit,
    )
    if json_:
        emit_json(info.as_dict())
        return
    verb = "planned" if info.added == info.jobs else ("added" if info.added else "unchanged")
    typer.echo(
        f"campaign {info.name}: {info.jobs} jobs ({verb}{f', {info.added} new' if 0 < info.added < info.jobs else ''}), "
        f"{info.protocol}, judges: {', '.join(j.name for j in info.judges)}"
    )


@app.command("plan")
def plan(ctx: typer.Context, name: str = typer.Argument(...), json_: bool = JSON) -> None:
    """Estimate what running the rest of a campaign takes: calls, tokens and cost."""
    from judgepanel.runner import campaign as api

    est = api.estimate(state(ctx).engine(), name)
    if json_:
        emit_json(est.as_dict())
        return
    rows = [
        [n, d["calls"], d["cached"], d["input_tokens"], d["output_tokens"], _usd(d["cost_usd"])]
        for n, d in est.by_judge.items()
    ]
    rows.append(["total", est.calls, est.cached, est.input_tokens, est.output_tokens, _usd(est.cost_usd)])
    table(
        f"campaign {name}: {est.jobs} jobs",
        ["judge", "calls", "cached", "input tokens (est.)", "output tokens (est.)", "cost USD"],
        rows,
    )


def _usd(v: float | None) -> str:
    return "unknown" if v is None else f"{v:.4f}"


def _options(
    concurrency: int,
    rpm: float | None,
    tpm: float | None,
    max_cost: float | None,
    no_cache: bool,
    timeout: float,
    max_attempts: int,
    retry_failed: bool,
) -> RunOptions:
    from judgepanel.runner.executor import RunOptions

    if max_attempts < 1:
        raise BadInput(f"--max-attempts must be at least 1, got {max_attempts}")
    from judgepanel.runner.executor import RetryPolicy

    return RunOptions(
        concurrency=concurrency,
        rpm=rpm,
        tpm=tpm,
        max_cost=max_cost,
        no_cache=no_cache,
        timeout=timeout,
        retry=RetryPolicy(max_attempts=max_attempts),
        retry_failed=retry_failed,
    )


def _execute(ctx: typer.Context, name: str, options: RunOptions, json_: bool, *, reask: bool) -> None:
    from judgepanel.runner.executor import Runner, RunSummary
    from judgepanel.runner.progress import enabled, live_progress

    engine = state(ctx).engine()

    async def main() -> RunSummary:
        runner = Runner(engine, name, options, reask_parse_failures=reask)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):  # not the main thread
                loop.add_signal_handler(sig, runner.interrupt)
        try:
            async with live_progress(runner.stats, show=enabled(json_)):
                return await runner.run()
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(sig)

    summary = asyncio.run(main())
    if json_:
        emit_json(summary.as_dict())
    else:
        errs = ", ".join(f"{k} {v}" for k, v in summary.errors.items()) or "none"
        cap = "" if summary.max_cost_usd is None else f" of --max-cost {summary.max_cost_usd:g}"
        typer.echo(
            f"campaign {name}: {summary.status}; {summary.done}/{summary.jobs} done, {summary.failed} failed, "
            f"{summary.pending} pending; {summary.calls} calls, {summary.cached} from cache, "
            f"errors: {errs}; spent {_usd(summary.spent_usd)}{cap} USD in {summary.elapsed_s:.1f} s"
        )
    for warning in summary.warnings:
        warn(warning)
    if summary.status == "interrupted":
        raise Interrupted("interrupted; finished calls are stored, run again to resume")
    if summary.status == "budget":
        err_console.print(
            f"stopped by --max-cost {summary.max_cost_usd:g}: spent {_usd(summary.spent_usd)} USD, "
            f"and the next call did not fit under the cap; {summary.unscheduled} job(s) unscheduled "
            "(run again with a larger --max-cost to continue)",
            soft_wrap=True,
        )
    if summary.exit_code != 0:
        left = []
        if summary.failed:
            kinds = f" (partial clause replies: {summary.partial})" if summary.partial else ""
            left.append(f"{summary.failed} failed{kinds}")
        if summary.unscheduled:
            left.append(f"{summary.unscheduled} unscheduled by --max-cost")
        other = summary.pending - summary.unscheduled
        if other > 0:
            left.append(f"{other} pending")
        err_console.print(
            f"campaign {name}: {summary.done} of {summary.jobs} jobs have a verdict; "
            f"{', '.join(left) or 'some left'} (exit {summary.exit_code})",
            soft_wrap=True,
        )
        raise typer.Exit(summary.exit_code)


CONCURRENCY = typer.Option(16, "--concurrency", help="Calls in flight per judge.")
RPM = typer.Option(None, "--rpm", help="Requests per minute per judge (client-side limit).")
TPM = typer.Option(None, "--tpm", help="Tokens per minute per judge (client-side limit).")
MAX_COST = typer.Option(None, "--max-cost", help="Stop scheduling before this many USD would be spent.")
NO_CACHE = typer.Option(
    False, "--no-cache", help="Call the judge even when the store has the identical request."
)
TIMEOUT = typer.Option(120.0, "--timeout", help="Seconds per call.")
MAX_ATTEMPTS = typer.Option(
    6, "--max-attempts", help="Attempts per job for rate limits and transient errors."
)


@app.command("run")
def run(
    ctx: typer.Context,
    name: str = typer.Argument(...),
    concurrency: int = CONCURRENCY,
    rpm: float | None = RPM,
    tpm: float | None = TPM,
    max_cost: float | None = MAX_COST,
    no_cache: bool = NO_CACHE,
    timeout: float = TIMEOUT,
    max_attempts: int = MAX_ATTEMPTS,
    retry_failed: bool = typer.Option(
        False, "--retry-failed", help="Also retry jobs that failed on rate limits or transient errors."
    ),
    json_: bool = JSON,
) -> None:
    """Execute what is not yet done; safe to re-run and to interrupt.

    Exit 0 when every job has a verdict; 3 when the run ended with jobs failed or unscheduled by
    --max-cost; 130 on Ctrl-C; 2 on bad input; 1 otherwise."""
    opts = _options(concurrency, rpm, tpm, max_cost, no_cache, timeout, max_attempts, retry_failed)
    _execute(ctx, name, opts, json_, reask=False)


@app.command("retry-parse-failures")
def retry_parse_failures(
    ctx: typer.Context,
    name: str = typer.Argument(...),
    concurrency: int = CONCURRENCY,
    rpm: float | None = RPM,
    tpm: float | None = TPM,
    max_cost: float | None = MAX_COST,
    timeout: float = TIMEOUT,
    max_attempts: int = MAX_ATTEMPTS,
    json_: bool = JSON,
) -> None:
    """Re-ask the jobs whose reply could not be read or left clauses unanswered (with a note
    asking for the full JSON answer). Exit codes as for `campaign run`."""
    opts = _options(concurrency, rpm, tpm, max_cost, False, timeout, max_attempts, False)
    _execute(ctx, name, opts, json_, reask=True)


@app.command("status")
def status(ctx: typer.Context, name: str = typer.Argument(...), json_: bool = JSON) -> None:
    """Jobs done, failed and pending; calls made and money spent."""
    from judgepanel.store import campaigns as store

    st = store.campaign_status(state(ctx).engine(), name)
    if json_:
        emit_json(st.as_dict())
        return
    typer.echo(
        f"campaign {name}: {st.status}; {st.done}/{st.jobs} done, {st.failed} failed, {st.pending} pending; "
        f"{st.calls} calls ({st.cached} from cache), {st.input_tokens} in / {st.output_tokens} out tokens, "
        f"spent {_usd(st.cost_usd)} USD"
    )
    if st.errors:
        typer.echo("attempt errors: " + ", ".join(f"{k} {v}" for k, v in st.errors.items()))
    if st.failed_by_class:
        typer.echo("failed jobs by class: " + ", ".join(f"{k} {v}" for k, v in st.failed_by_class.items()))
    if st.partial:
        typer.echo(
            f"{st.partial} job(s) answered only some clauses; `campaign retry-parse-failures {name}` re-asks them"
        )
    table(
        None,
        ["judge", "jobs", "done", "failed", "pending", "calls", "cached", "cost USD"],
        [
            [n, d["jobs"], d["done"], d["failed"], d["pending"], d["calls"], d["cached"], _usd(d["cost_usd"])]
            for n, d in st.by_judge.items()
        ],
    )


@app.command("list")
def list_(ctx: typer.Context, json_: bool = JSON) -> None:
    """The campaigns in the database."""
    from judgepanel.store import campaigns as store

    rows = store.list_campaigns(state(ctx).engine())
    if json_:
        emit_json({"campaigns": rows})
        return
    table(
        "campaigns",
        ["name", "dataset", "protocol", "judges", "jobs", "done", "failed", "pending", "status"],
        [
            [
                r["name"],
                r["dataset"],
                r["protocol"],
                len(r["judges"]),
                r["jobs"],
                r["done"],
                r["failed"],
                r["pending"],
                r["status"],
            ]
            for r in rows
        ],
    )
