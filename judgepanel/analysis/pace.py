"""How fast a campaign goes and when it will end: one computation for the live progress line of
`campaign run`, `campaign status --json` and the viewer (issue 34).

A fixed 30 s window measured a local judge whose calls take 1-4 minutes as 0.0 calls/s, gave no
ETA while four calls were in flight, and an ETA of 14 s right after a burst of answers. So:

    mean latency  L   over the newest `LATENCY_SAMPLES` calls (cached answers are no calls)
    window        W = clamp(WINDOW_LATENCIES x L, MIN_WINDOW_S, MAX_WINDOW_S)
    rate          r = calls finished in the window / the window's span (W, or less when the run
                      began inside it)
    concurrency   c = the run's own (the CLI knows it), else what the window shows: the summed
                      time its calls were in flight inside it / its span (Little's law), at most
                      the live leases
    ETA             = max(ceil(pending / c) x L, pending / r): no run ends before its waves of
                      calls have taken their latency, and one held back by something else
                      (rate limits, a busy client) takes as long as its measured rate says
    active          = a lease is live (a job is held by a running process), not "a call ended
                      in the last 10 s"

Undefined values are None: no rate before a call finished in the window, no ETA without a rate
or a latency, none when nothing is pending, and neither rate nor ETA (nor concurrency) while no
lease is live — no run is going, and a rate decaying with the clock would describe none. Times are seconds on one clock (the CLI's monotonic
clock, or seconds before "now" for stored rows).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy import Engine

MIN_WINDOW_S = 30.0
MAX_WINDOW_S = 3600.0
WINDOW_LATENCIES = 4.0
LATENCY_SAMPLES = 50


@dataclass(frozen=True)
class Pace:
    calls_per_s: float | None
    eta_s: float | None
    active: bool
    window_s: float
    mean_latency_s: float | None
    concurrency: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def pace(
    calls: Sequence[tuple[float, float | None]],
    now: float,
    pending: int,
    *,
    live_leases: int,
    concurrency: float | None = None,
    started: float | None = None,
) -> Pace:
    """`calls`: (finished at, latency in seconds or None) of recent calls, any order; `started`:
    when the run began, if known; `live_leases`: jobs held by a live process right now."""
    ordered = sorted(calls, key=lambda c: c[0])
    lat = [x for _t, x in ordered[-LATENCY_SAMPLES:] if x is not None and x >= 0]
    mean = sum(lat) / len(lat) if lat else None
    window = min(MAX_WINDOW_S, max(MIN_WINDOW_S, WINDOW_LATENCIES * (mean or 0.0)))
    inside = [(t, x) for t, x in ordered if now - window <= t <= now]
    begin = now - window
    if started is not None:
        begin = max(begin, started)
    elif inside:
        begin = max(begin, min(t - (x or 0.0) for t, x in inside))
    span = max(now - begin, 1.0)
    rate = len(inside) / span if inside else None
    conc = concurrency
    if conc is None and inside:
        busy = sum(max(0.0, t - max(t - (x or 0.0), now - span)) for t, x in inside)
        conc = max(1.0, busy / span)
        if live_leases:
            conc = min(conc, float(live_leases))
    eta = None
    if pending > 0:
        options = []
        if mean is not None and conc:
            options.append(math.ceil(pending / conc) * mean)
        if rate:
            options.append(pending / rate)
        eta = max(options) if options else None
    if not live_leases:
        rate = eta = conc = None
    return Pace(
        None if rate is None else round(rate, 6),
        None if eta is None else round(eta, 1),
        live_leases > 0,
        window,
        None if mean is None else round(mean, 3),
        None if conc is None else round(conc, 2),
    )


def stored_paces(engine: Engine, pending: Mapping[int, int]) -> dict[int, Pace]:
    """`pace` of each campaign (id -> its pending jobs) from what the store holds: the newest calls'
    times and latencies, and the live leases. What the viewer and `campaign status` show."""
    from judgepanel.store.campaigns.readers import live_leases, recent_call_latencies
    from judgepanel.store.tables import utcnow

    now = utcnow()
    calls: dict[int, list[tuple[float, float | None]]] = {}
    for cid, at, ms in recent_call_latencies(engine):
        if at is not None:
            calls.setdefault(cid, []).append((-(now - at).total_seconds(), None if ms is None else ms / 1000))
    leases = live_leases(engine)
    return {
        cid: pace(calls.get(cid, []), 0.0, n, live_leases=leases.get(cid, 0)) for cid, n in pending.items()
    }


def campaign_pace(engine: Engine, name: str, pending: int) -> Pace:
    """`stored_paces` of one campaign (`campaign status`)."""
    from judgepanel.store.campaigns import campaign_id

    cid = campaign_id(engine, name)
    return stored_paces(engine, {cid: pending})[cid]


def rate_number(calls_per_s: float | None) -> str:
    """Calls per second as people read them at any speed: `12.3`, `0.017` (two significant
    digits below 1, so a judge answering once a minute does not read 0.0), `—` when unknown."""
    if calls_per_s is None:
        return "—"
    return f"{calls_per_s:.1f}" if calls_per_s >= 1 else f"{calls_per_s:.2g}"
