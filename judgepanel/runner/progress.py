"""A live progress line for `campaign run`: done/total, calls/s, errors by class, spend, ETA.

Drawn on stderr with rich, and only for people: silent with `--json` or when stderr is not a
terminal, so scripted output stays one clean JSON object.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator

from rich.console import Console
from rich.live import Live
from rich.text import Text

from judgepanel.analysis.pace import pace, rate_number
from judgepanel.runner.options import RunStats


def render(stats: RunStats) -> Text:
    finished = stats.done + stats.failed
    total = max(stats.total, 1)
    width = 28
    filled = int(width * finished / total)
    elapsed = max(stats.elapsed, 1e-9)
    rate: float | None = stats.calls / elapsed
    done_now = finished - stats.done_at_start
    remaining = stats.total - finished
    eta = remaining * elapsed / done_now if done_now > 0 else None
    if stats.recent:
        # the calls' own times: a window that scales with their latency, the ETA from latency and
        # concurrency (`analysis.pace`, as the viewer and `campaign status` compute it)
        p = pace(
            stats.recent,
            time.monotonic(),
            remaining,
            live_leases=max(stats.in_flight, 1),  # the run is alive: between two calls too
            concurrency=stats.concurrency or None,
            started=stats.started,
        )
        rate, eta = p.calls_per_s, p.eta_s
    line = Text()
    line.append("[" + "#" * filled + "-" * (width - filled) + "] ", style="cyan")
    line.append(f"{finished}/{stats.total} jobs ", style="bold")
    line.append(f"({stats.done} done, {stats.failed} failed)  ")
    line.append(f"{rate_number(rate)} calls/s  in flight {stats.in_flight}  ")
    if stats.cached:
        line.append(f"cached {stats.cached}  ")
    if stats.errors:
        errs = ", ".join(f"{k} {v}" for k, v in sorted(stats.errors.items()))
        line.append(f"errors: {errs}  ", style="yellow")
    spend = "unknown" if stats.spent_unknown else f"${stats.spent:.4f}"
    line.append(f"spent {spend}  ")
    line.append(f"ETA {_fmt(eta)}" if eta is not None else "ETA –")
    return line


def _fmt(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def enabled(json_output: bool) -> bool:
    return not json_output and sys.stderr.isatty()


@contextlib.asynccontextmanager
async def live_progress(stats: RunStats, *, show: bool) -> AsyncIterator[None]:
    if not show:
        yield
        return
    console = Console(stderr=True)
    with Live(render(stats), console=console, refresh_per_second=4, transient=False) as live:

        async def tick() -> None:
            while True:
                await asyncio.sleep(0.25)
                live.update(render(stats))

        task = asyncio.create_task(tick())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            live.update(render(stats))
