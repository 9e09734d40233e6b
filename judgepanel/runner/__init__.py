"""Campaign runner: deterministic planning, the async executor, the request cache and budgets.

Public entry points (the CLI calls nothing else)::

    create(engine, name, dataset=…, protocol=…, judges=[…], …) -> CampaignInfo
    estimate(engine, name) -> Estimate          # `campaign plan`
    run(engine, name, RunOptions(…)) -> RunSummary
    Runner(engine, name, options)               # the async executor, for embedding in a loop
"""

from __future__ import annotations

from judgepanel.protocol.plan import CampaignSpec, job_key, plan_jobs
from judgepanel.runner.campaign import Estimate, create, estimate, run
from judgepanel.runner.executor import RetryPolicy, Runner, RunOptions, RunStats, RunSummary

__all__ = [
    "CampaignSpec",
    "Estimate",
    "RetryPolicy",
    "RunOptions",
    "RunStats",
    "RunSummary",
    "Runner",
    "create",
    "estimate",
    "job_key",
    "plan_jobs",
    "run",
]
