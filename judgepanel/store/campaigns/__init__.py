"""Campaigns, jobs, attempts and verdicts: every SQL statement the runner needs.

One module per concern: `records` (the rows exchanged with the runner), `planning` (campaigns and
their jobs), `leases` (who works on what), `results` (writing attempts and verdicts; the request
cache) and `readers` (status, listings, verdicts out, judges as rater columns).

Invariants kept here, on SQLite and PostgreSQL alike:

- **Deterministic jobs.** Jobs are inserted by `job_key` (see `protocol.plan`); planning again inserts
  only the keys that are missing, so a campaign never holds the same work twice.
- **Leases.** A worker takes jobs with one `UPDATE … WHERE id IN (SELECT … LIMIT n) RETURNING`
  (PostgreSQL adds `FOR UPDATE SKIP LOCKED`, so several workers or machines share a campaign
  without taking the same job; SQLite's single writer lock gives the same guarantee). A lease has
  an expiry renewed by a heartbeat; a lease held by a dead process on this host is taken back at
  once, so a run resumed after `kill -9` does not wait for the expiry.
- **Exactly once.** A job's final status, its attempts (request + response rows) and its verdict are
  written in ONE transaction, and the status update is guarded by `lease_owner = me AND status =
  'running'`: a result is accepted only from the worker that holds the job, so a verdict is stored
  once even when a lease expired under a slow worker. `UNIQUE(job_id, attempt)` on request and
  verdict backs this up in the schema.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judgepanel.store.campaigns.leases import (
        PendingShape,
        job_counts,
        judges_with_requests,
        last_parse_errors,
        lease_jobs,
        lease_owner_id,
        pending_jobs,
        pending_shapes,
        reclaim_dead_leases,
        release_leases,
        renew_leases,
        requeue,
        work_left,
    )
    from judgepanel.store.campaigns.planning import (
        CHUNK,
        campaign_by_name,
        campaign_clauses,
        campaign_judges,
        campaign_spec,
        create_campaign,
        learnt_refusals,
        learnt_served_models,
        remember_refusals,
        remember_served_models,
        rubric_doc,
        set_campaign_status,
    )
    from judgepanel.store.campaigns.readers import (
        CampaignStatus,
        JudgeRatings,
        SwappedVerdicts,
        campaign_id,
        campaign_judge_names,
        campaign_spend,
        campaign_status,
        failed_by_class,
        judge_rater_columns,
        judge_specs_in,
        judge_verdict_rows,
        last_failures,
        list_campaigns,
        mean_output_tokens,
        output_token_samples,
        partial_jobs,
        swapped_verdicts,
    )
    from judgepanel.store.campaigns.records import (
        AttemptRow,
        Batch,
        BatchResult,
        CacheHit,
        CampaignInfo,
        ClauseRow,
        ItemText,
        JobOutcome,
        JudgeRecord,
        LeasedJob,
        VerdictRow,
    )
    from judgepanel.store.campaigns.results import (
        cache_lookup,
        write_batch,
    )

# Imported on first use, so `campaign status` loads the readers and not the planning of jobs, the
# leases or the writers (nor, through them, numpy and the template engine).
_HOME: dict[str, str] = {
    **dict.fromkeys(
        (
            "PendingShape",
            "job_counts",
            "last_parse_errors",
            "lease_jobs",
            "lease_owner_id",
            "judges_with_requests",
            "pending_jobs",
            "pending_shapes",
            "reclaim_dead_leases",
            "release_leases",
            "renew_leases",
            "requeue",
            "work_left",
        ),
        "leases",
    ),
    **dict.fromkeys(
        (
            "CHUNK",
            "campaign_by_name",
            "campaign_clauses",
            "campaign_judges",
            "campaign_spec",
            "create_campaign",
            "learnt_refusals",
            "learnt_served_models",
            "remember_refusals",
            "remember_served_models",
            "rubric_doc",
            "set_campaign_status",
        ),
        "planning",
    ),
    **dict.fromkeys(
        (
            "CampaignStatus",
            "JudgeRatings",
            "SwappedVerdicts",
            "campaign_id",
            "campaign_spend",
            "campaign_judge_names",
            "campaign_status",
            "checker_job_rows",
            "failed_by_class",
            "judge_rater_columns",
            "judge_specs_in",
            "judge_verdict_rows",
            "last_failures",
            "list_campaigns",
            "mean_output_tokens",
            "output_token_samples",
            "partial_jobs",
            "swapped_verdicts",
        ),
        "readers",
    ),
    **dict.fromkeys(
        (
            "AttemptRow",
            "Batch",
            "BatchResult",
            "CacheHit",
            "CampaignInfo",
            "ClauseRow",
            "ItemText",
            "JobOutcome",
            "JudgeRecord",
            "LeasedJob",
            "VerdictRow",
        ),
        "records",
    ),
    **dict.fromkeys(("cache_lookup", "write_batch"), "results"),
}


# A deliberate mirror (issue 31 §4): the lazy packages (`protocol`, `providers`, `store.campaigns`)
# each resolve a public name through their `_HOME` table here, so `--help` imports no submodule.
def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f"judgepanel.store.campaigns.{_HOME[name]}"), name)
    raise AttributeError(f"module 'judgepanel.store.campaigns' has no attribute {name!r}")


__all__ = [
    "CHUNK",
    "AttemptRow",
    "Batch",
    "BatchResult",
    "CacheHit",
    "CampaignInfo",
    "CampaignStatus",
    "ClauseRow",
    "ItemText",
    "JobOutcome",
    "JudgeRatings",
    "JudgeRecord",
    "LeasedJob",
    "PendingShape",
    "SwappedVerdicts",
    "VerdictRow",
    "cache_lookup",
    "campaign_by_name",
    "campaign_clauses",
    "campaign_id",
    "campaign_judge_names",
    "campaign_judges",
    "campaign_spec",
    "campaign_spend",
    "campaign_status",
    "checker_job_rows",
    "create_campaign",
    "failed_by_class",
    "job_counts",
    "judge_rater_columns",
    "judge_specs_in",
    "judge_verdict_rows",
    "judges_with_requests",
    "last_failures",
    "last_parse_errors",
    "learnt_refusals",
    "learnt_served_models",
    "lease_jobs",
    "lease_owner_id",
    "list_campaigns",
    "mean_output_tokens",
    "output_token_samples",
    "partial_jobs",
    "pending_jobs",
    "pending_shapes",
    "reclaim_dead_leases",
    "release_leases",
    "remember_refusals",
    "remember_served_models",
    "renew_leases",
    "requeue",
    "rubric_doc",
    "set_campaign_status",
    "swapped_verdicts",
    "work_left",
    "write_batch",
]
