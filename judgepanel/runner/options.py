"""What a run is told and what it counts: `RunOptions` (with its `RetryPolicy`), checked before
a run starts, and `RunStats`, the live counters the progress display reads.

Boundary: plain settings and counters shared by the executor (`runner.executor`, its calls in
`runner.calling`), the batch runner, the worker and the CLI; no behaviour beyond validating the
options.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass, field

from judgepanel.errors import BadInput

RECENT_CALLS = 400  # calls kept for the progress line's rate and latency (`analysis.pace`)
UNREADABLE_STOP = 20  # a run whose first this-many answers all fail to parse stops (runner.executor)


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 6
    initial_wait: float = 1.0  # seconds, first exponential back-off step
    max_wait: float = 60.0
    jitter: float = 1.0
    max_retry_after: float = 300.0  # never sleep (or pause a judge) longer than this on a server's word
    timeout_retries: int = 1  # a job whose call timed out is retried at most this often for timeouts


@dataclass(frozen=True)
class RunOptions:
    concurrency: int = 16  # per judge, unless the judge spec says `concurrency=`
    rpm: float | None = None  # per judge, unless the spec says `rpm=`
    tpm: float | None = None
    max_cost: float | None = None  # USD: sets the campaign's cap on its total spend (kept for later runs)
    no_cache: bool = False
    timeout: float = 120.0  # per call, unless the spec says `timeout=`
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    retry_failed: bool = False  # put jobs that failed rate_limit/transient/oversize back first
    batch_size: int = 500
    flush_ms: float = 100.0
    lease_seconds: float = 120.0
    lease_chunk: int | None = None  # jobs leased at a time per judge (default: 4 × concurrency, ≥ 128)
    shared_limits: bool = False  # RPM/TPM budgets shared with other workers through the database
    # stop when the first this-many answers of the run all fail to parse (None: never)
    unreadable_stop: int | None = UNREADABLE_STOP

    def validate(self) -> None:
        if self.lease_seconds <= 0:
            raise BadInput(f"--lease-seconds must be positive, got {self.lease_seconds}")
        self._validate()

    def _validate(self) -> None:
        if self.concurrency < 1:
            raise BadInput(f"--concurrency must be at least 1, got {self.concurrency}")
        for name, v in (("--rpm", self.rpm), ("--tpm", self.tpm)):
            if v is not None and v <= 0:
                raise BadInput(f"{name} must be positive, got {v}")
        if self.timeout <= 0:
            raise BadInput(f"--timeout must be positive, got {self.timeout}")
        if self.unreadable_stop is not None and self.unreadable_stop < 1:
            raise BadInput(f"unreadable_stop must be at least 1 (or None), got {self.unreadable_stop}")


@dataclass
class RunStats:
    """Live counters, read by the progress display."""

    total: int = 0
    done: int = 0
    failed: int = 0
    calls: int = 0
    cached: int = 0
    in_flight: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    parse_failures: Counter[str] = field(default_factory=Counter)  # by failure kind, this run
    spent: float = 0.0
    spent_unknown: bool = False
    # replies that did not say what they cost (no usage, counts out of range or contradicting
    # each other), charged at their reservation instead: "unknown" never counts as free
    charged_reserved: int = 0
    started: float = field(default_factory=time.monotonic)
    done_at_start: int = 0
    committed: int = 0
    # (monotonic time a call ended, its latency in s) of the newest calls, and the calls the run
    # may have in flight: what `analysis.pace` reads for the rate, the ETA and the window
    recent: deque[tuple[float, float | None]] = field(default_factory=lambda: deque(maxlen=RECENT_CALLS))
    concurrency: int = 0

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started
