"""Token buckets shared through the database (`rate_bucket`), so several worker processes on any
number of machines keep one judge's RPM/TPM budget together.

A take is one atomic `UPDATE … RETURNING`: the refill since the row's last update is computed in
SQL from the database's clock (never the workers' clocks, which may disagree), `want` tokens are
taken, and the new level is returned. The level may go below zero: a debt, which the caller pays
by waiting `-level / refill_per_s` seconds before using what it took (the distributed form of the
GCRA in `runner.limits`). Every taker waits for its own slice, so the calls of all workers together
stay at the refill rate, and a worker that dies holding tokens only leaves the budget unused.
"""

from __future__ import annotations

from sqlalchemy import Engine, text

# Seconds since the epoch on the database server's clock.
_CLOCK = {
    "postgresql": "extract(epoch from clock_timestamp())",
    "sqlite": "((julianday('now') - 2440587.5) * 86400.0)",
}


def _clock(engine: Engine) -> str:
    try:
        return _CLOCK[engine.dialect.name]
    except KeyError:
        raise NotImplementedError(f"shared rate buckets on {engine.dialect.name}") from None


def ensure_bucket(engine: Engine, key: str, capacity: float, refill_per_s: float) -> None:
    """Create the bucket (full) unless it exists; an existing one takes the new capacity and rate."""
    now = _clock(engine)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO rate_bucket (key, capacity, refill_per_s, tokens, updated_at) "
                f"VALUES (:key, :cap, :rate, :cap, {now}) ON CONFLICT (key) DO UPDATE "
                "SET capacity = excluded.capacity, refill_per_s = excluded.refill_per_s"
            ),
            {"key": key, "cap": float(capacity), "rate": float(refill_per_s)},
        )


def take(engine: Engine, key: str, want: float) -> float:
    """Take `want` tokens from the bucket `key` (made with `ensure_bucket`); return the seconds
    to wait before using them (0 when the bucket had them)."""
    now = _clock(engine)
    level = (
        f"min(capacity, tokens + max(0.0, {now} - updated_at) * refill_per_s)"
        if engine.dialect.name == "sqlite"
        else f"least(capacity, tokens + greatest(0.0, {now} - updated_at) * refill_per_s)"
    )
    with engine.begin() as conn:
        row = conn.execute(
            text(
                f"UPDATE rate_bucket SET tokens = {level} - :want, updated_at = {now} "
                "WHERE key = :key RETURNING tokens, refill_per_s"
            ),
            {"key": key, "want": float(want)},
        ).one_or_none()
    if row is None:
        raise LookupError(f"no rate bucket {key!r}")
    tokens, rate = float(row[0]), float(row[1])
    return 0.0 if tokens >= 0 else -tokens / rate
