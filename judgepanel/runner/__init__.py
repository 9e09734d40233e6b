"""Campaign runner: deterministic planning, the async executor, the request cache and budgets.

Public entry points (the CLI calls nothing else)::

    create(engine, name, dataset=…, protocol=…, judges=[…], …) -> CampaignInfo
    estimate(engine, name) -> Estimate          # `campaign plan`
    run(engine, name, RunOptions(…)) -> RunSummary
    Runner(engine, name, options)               # the async executor, for embedding in a loop
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judgepanel.protocol.plan import CampaignSpec, job_key, plan_jobs
    from judgepanel.runner.campaign import Estimate, create, estimate, run
    from judgepanel.runner.executor import Runner, RunSummary
    from judgepanel.runner.options import RetryPolicy, RunOptions, RunStats

# Imported on first use: `import judgepanel.runner.bias` (or `.plan`) must not pull in the
# executor, the SDKs and the template engine (start-up time, and no import cycle with the store).
_HOME = {
    **dict.fromkeys(("Estimate", "create", "estimate", "run"), "campaign"),
    **dict.fromkeys(("Runner", "RunSummary"), "executor"),
    **dict.fromkeys(("RetryPolicy", "RunOptions", "RunStats"), "options"),
    **dict.fromkeys(("CampaignSpec", "job_key", "plan_jobs"), "plan"),
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        home = _HOME[name]
        module = "judgepanel.protocol.plan" if home == "plan" else f"judgepanel.runner.{home}"
        return getattr(importlib.import_module(module), name)
    raise AttributeError(f"module 'judgepanel.runner' has no attribute {name!r}")


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
