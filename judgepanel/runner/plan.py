"""Planning moved down to `judgepanel.protocol.plan` (the store plans jobs and must not import the
runner); these names stay importable from here."""

from __future__ import annotations

from judgepanel.protocol.plan import (
    CONDITIONS,
    KEY_VERSION,
    ORDERS,
    PROTOCOLS,
    CampaignSpec,
    PlannedJob,
    Unit,
    job_key,
    plan_jobs,
)

__all__ = [
    "CONDITIONS",
    "KEY_VERSION",
    "ORDERS",
    "PROTOCOLS",
    "CampaignSpec",
    "PlannedJob",
    "Unit",
    "job_key",
    "plan_jobs",
]
