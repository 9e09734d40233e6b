"""Settings shared by the CLI and the library."""

from __future__ import annotations

import os

DEFAULT_DB_URL = "sqlite:///judgepanel.db"
DB_ENV = "JUDGEPANEL_DB"

# The simulated judge's `system_fingerprint` on every reply (`judgepanel.simjudge`), kept here so the
# store can recognise simulated rows without importing the simulator.
SIM_FINGERPRINT = "judgepanel-sim-v1"


def database_url(explicit: str | None = None) -> str:
    """`--db` wins, then $JUDGEPANEL_DB, then a SQLite file in the working directory."""
    return explicit or os.environ.get(DB_ENV) or DEFAULT_DB_URL
