"""`judgepanel worker`: work on campaigns alongside other workers sharing a PostgreSQL database."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from judgepanel.cli.campaign_cmd import CONCURRENCY, MAX_ATTEMPTS, RPM, TIMEOUT, TPM, _split, end_of_run
from judgepanel.cli.context import held_signals, interrupt_on_signals, state
from judgepanel.cli.options import JSON
from judgepanel.cli.render import err_console
from judgepanel.errors import BadInput

if TYPE_CHECKING:  # the runner is imported inside the command, so `--help` stays fast
    from judgepanel.runner.worker import WorkerSummary


def worker(
    ctx: typer.Context,
    campaign: list[str] | None = typer.Option(
        None, "--campaign", help="Only these campaigns (comma-separated or repeated; default all)."
    ),
    concurrency: int = CONCURRENCY,
    rpm: float | None = RPM,
    tpm: float | None = TPM,
    timeout: float = TIMEOUT,
    max_attempts: int = MAX_ATTEMPTS,
    follow: bool = typer.Option(False, "--follow", help="Keep polling for new work instead of exiting."),
    lease_seconds: float = typer.Option(
        120.0, "--lease-seconds", help="How long a leased job stays ours without a renewal."
    ),
    poll_seconds: float = typer.Option(
        1.0, "--poll-seconds", help="Seconds between looks for work while other workers hold it."
    ),
    json_: bool = JSON,
) -> None:
    """Lease and run campaign jobs alongside other workers on a shared PostgreSQL database.

    Every campaign with work left (or the named ones); RPM/TPM limits are shared through the
    database.

    Exit 0 when every job of its campaigns has a verdict; 3 when jobs are left failed; 130 on
    Ctrl-C or SIGTERM (leases are handed back); 2 on bad input (or a second worker on SQLite)."""
    from judgepanel.runner.options import RetryPolicy, RunOptions
    from judgepanel.runner.worker import Worker, single_worker_on_sqlite

    if max_attempts < 1:
        raise BadInput(f"--max-attempts must be at least 1, got {max_attempts}")
    opts = RunOptions(
        concurrency=concurrency,
        rpm=rpm,
        tpm=tpm,
        timeout=timeout,
        retry=RetryPolicy(max_attempts=max_attempts),
        lease_seconds=lease_seconds,
    )
    engine = state(ctx).engine(wait=True)  # a server still starting is waited for, as an outage is
    w = Worker(engine, opts, campaigns=_split(campaign), follow=follow, poll_seconds=poll_seconds)

    # from before the lock file names this process until the end: a SIGTERM at any moment is exit 130
    with held_signals() as held, single_worker_on_sqlite(engine):

        async def main() -> WorkerSummary:
            with interrupt_on_signals(w.interrupt, held):
                return await w.run()

        import asyncio  # the event loop is for running only, not for `worker --help`

        summary = asyncio.run(main())

    def line(errs: str) -> str:
        return (
            f"worker: {summary.status}; {len(summary.campaigns)} campaign(s), {summary.done}/{summary.jobs} "
            f"done, {summary.failed} failed, {summary.pending} pending; {summary.calls} calls, "
            f"{summary.cached} from cache, errors: {errs}; {summary.passes} pass(es) in {summary.elapsed_s:.1f} s"
        )

    end_of_run(summary, json_, line, "interrupted; finished calls are stored and unfinished jobs handed back")
    if summary.exit_code != 0:
        err_console.print(
            f"worker: {summary.done} of {summary.jobs} jobs have a verdict; {summary.failed} failed, "
            f"{summary.pending} pending (exit {summary.exit_code})",
            soft_wrap=True,
        )
        raise typer.Exit(summary.exit_code)
