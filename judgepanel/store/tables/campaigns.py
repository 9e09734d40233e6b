"""Campaigns and everything a campaign run stores: judges, the campaign and its judges, jobs, the
requests sent, the replies received, and the verdicts (and clause verdicts) read from them.
Declared once here; `store.models` maps its ORM classes onto these tables."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)

from judgepanel.store.tables.base import metadata, utcnow

# A deliberate mirror (issue 31 §4): each table is spelt out column by column, as the migrations
# check it, so these declarations share their shape (and their `sqlalchemy` imports) with those of
# the other table modules (`store.tables.*`, `store.annotation_tables`); a column helper would hide
# from a reader what the schema is.
judge = Table(
    "judge",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column(
        "name",
        String(500),
        nullable=False,
        unique=True,
        doc="the judge spec, provider:model?params, with secrets refused (unique)",
    ),
    Column("provider", String(40), nullable=False, doc="provider family: openai, anthropic, sim"),
    Column("model", String(200), nullable=False, doc="model name as requested"),
    Column(
        "params",
        JSON,
        nullable=False,
        default=dict,
        doc="request parameters from the spec (temperature, base_url, …) as JSON",
    ),
)


campaign = Table(
    "campaign",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column("name", String(200), nullable=False, unique=True, doc="campaign name (unique)"),
    Column(
        "dataset_id",
        Integer,
        ForeignKey("dataset.id"),
        doc="the dataset judged; null only for an editor campaign that reads none (`rubric split`)",
    ),
    Column(
        "pair_set_id",
        Integer,
        ForeignKey("pair_set.id"),
        doc="the pair set of a pairwise campaign",
    ),
    Column(
        "rubric_version_id",
        Integer,
        ForeignKey("rubric_version.id"),
        doc="the rubric version the prompts show, if any",
    ),
    Column("protocol", String(20), nullable=False, doc="pairwise, pointwise, clauses or editor"),
    Column(
        "condition",
        String(20),
        doc="none, criteria or rubric: how much of the rubric the prompt shows",
    ),
    Column("dimension", String(100), doc="the dimension judged, if one"),
    Column("repeats", Integer, nullable=False, default=1, doc="samples per job (repeat 0, 1, …)"),
    Column("split", String(40), doc="the item split the campaign is restricted to, if any"),
    Column("limit", Integer, doc="at most this many items or pairs, if set"),
    Column(
        "status",
        String(20),
        nullable=False,
        default="planned",
        doc="planned, running, done, incomplete, or why the last run stopped",
    ),
    Column(
        "spec",
        JSON,
        nullable=False,
        default=dict,
        doc="the campaign as created (judges, templates, options) as JSON",
    ),
    Column("created_at", DateTime, nullable=False, default=utcnow, doc="when the campaign was created (UTC)"),
    Column(
        "max_cost_usd",
        Float,
        doc="the cap on the campaign's total spend (every run, worker and batch) in USD; null = no cap",
    ),
    CheckConstraint("protocol IN ('pairwise', 'pointwise', 'clauses', 'editor')", name="protocol"),
)


campaign_judge = Table(
    "campaign_judge",
    metadata,
    Column(
        "campaign_id",
        Integer,
        ForeignKey("campaign.id", ondelete="CASCADE"),
        primary_key=True,
        doc="the campaign",
    ),
    Column("judge_id", Integer, ForeignKey("judge.id"), primary_key=True, doc="one of its judges"),
)


job = Table(
    "job",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column(
        "campaign_id",
        Integer,
        ForeignKey("campaign.id", ondelete="CASCADE"),
        nullable=False,
        doc="the campaign",
    ),
    Column(
        "job_key",
        String(64),
        nullable=False,
        doc="sha256 of what the job asks; a re-planned campaign finds its jobs by it",
    ),
    Column("judge_id", Integer, ForeignKey("judge.id"), nullable=False, doc="the judge asked"),
    Column(
        "item_id",
        Integer,
        ForeignKey("item.id"),
        doc="the item judged (pointwise and clause jobs)",
    ),
    Column("pair_id", Integer, ForeignKey("pair.id"), doc="the pair judged (pairwise jobs)"),
    Column(
        "order",
        String(2),
        doc="AB or BA: the order the pair was shown in (pairwise jobs)",
    ),
    Column("condition", String(20), doc="none, criteria or rubric"),
    Column(
        "dimension",
        String(100),
        doc="the dimension judged (for editor jobs: the task key)",
    ),
    Column("repeat", Integer, nullable=False, default=0, doc="sample number, from 0"),
    Column(
        "status",
        String(10),
        nullable=False,
        default="pending",
        doc="pending, running (leased), done or failed",
    ),
    Column("attempts", Integer, nullable=False, default=0, doc="requests sent for this job so far"),
    Column(
        "error_class",
        String(20),
        doc="error class of the last failed attempt: rate_limit, transient, fatal or parse",
    ),
    Column(
        "lease_owner",
        String(100),
        doc="the process holding the job while it runs (host:pid …)",
    ),
    Column(
        "lease_expires",
        DateTime,
        doc="when the lease runs out and another worker may take the job (UTC)",
    ),
    Column("updated_at", DateTime, nullable=False, default=utcnow, doc="last change of status (UTC)"),
    Column(
        "prompt_chars",
        Integer,
        doc="characters of the job's rendered prompt (all messages), stored at create for `campaign plan`",
    ),
    Column("prompt_messages", Integer, doc="messages of the job's rendered prompt"),
    Column(
        "prompt_prefix_tokens",
        Integer,
        doc="estimated tokens of the prompt's longest stable prefix (prompt caching); 0 with none",
    ),
    Column(
        "prompt_sig",
        String(16),
        doc="what the stored prompt figures were rendered with (templates, code, checkers); plan re-renders on a mismatch",
    ),
    Column(
        "prompt_prefixes",
        Text,
        doc="the prompt's stable prefixes as digest:tokens;… (prompt-cache forecast of `campaign plan`)",
    ),
    CheckConstraint("status IN ('pending', 'running', 'done', 'failed')", name="status"),
    UniqueConstraint("campaign_id", "job_key"),
    Index("ix_job_campaign_status", "campaign_id", "status"),
    # `campaign plan` asks whether a judge's provider and model were ever sent a request
    Index("ix_job_judge", "judge_id"),
    # the viewer's cache key reads the newest change of any job (store.fingerprint)
    Index("ix_job_updated_at", "updated_at"),
    # the viewer's search finds the jobs of the items (pairs) whose texts hold a word (store.find)
    Index("ix_job_item", "item_id"),
    Index("ix_job_pair", "pair_id"),
)


request = Table(
    "request",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column("job_id", Integer, ForeignKey("job.id", ondelete="CASCADE"), nullable=False, doc="the job"),
    Column("attempt", Integer, nullable=False, doc="attempt number, from 1"),
    Column(
        "request_hash",
        String(64),
        nullable=False,
        doc="sha256 of model, output-relevant parameters, messages and schema; the cache key",
    ),
    Column("template_name", String(200), nullable=False, doc="the prompt template"),
    Column("template_hash", String(64), nullable=False, doc="sha256 of the template file(s)"),
    Column("messages", JSON, nullable=False, doc="the rendered messages sent, as JSON"),
    Column(
        "params",
        JSON,
        nullable=False,
        default=dict,
        doc="the request parameters sent (temperature, max_tokens, seed …), as JSON",
    ),
    # SQL NULL (not JSON null) when the reply is free text, so `output_schema IS NULL` finds those
    Column(
        "output_schema",
        JSON(none_as_null=True),
        doc="the JSON schema / tool definition sent for structured output; SQL NULL for free text",
    ),
    Column("created_at", DateTime, nullable=False, default=utcnow, doc="when the request was sent (UTC)"),
    UniqueConstraint("job_id", "attempt"),
    Index("ix_request_hash", "request_hash"),
)


response = Table(
    "response",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column(
        "request_id",
        Integer,
        ForeignKey("request.id", ondelete="CASCADE"),
        nullable=False,
        unique=True,
        doc="the request answered",
    ),
    Column("ok", Boolean, nullable=False, doc="true when the call returned a usable reply"),
    Column(
        "error_class",
        String(20),
        doc="rate_limit, transient, fatal or parse; null when ok",
    ),
    Column("http_status", Integer, doc="HTTP status of the reply"),
    Column("error_message", Text, doc="the error as reported (keys redacted)"),
    Column("raw_body", Text, doc="the reply body as received (keys redacted)"),
    Column("text", Text, doc="the model's text"),
    Column("model_returned", String(200), doc="model name as the provider returned it"),
    Column(
        "system_fingerprint",
        String(200),
        doc="the provider's system fingerprint, if sent",
    ),
    Column("finish_reason", String(40), doc="finish_reason / stop_reason as returned"),
    Column("input_tokens", Integer, doc="prompt tokens as reported"),
    Column("output_tokens", Integer, doc="completion tokens as reported"),
    Column("latency_ms", Float, doc="milliseconds from the request leaving to the whole answer"),
    Column(
        "queued_ms",
        Float,
        doc="milliseconds from the start of the attempt until its request left (waiting inside the provider, e.g. behind a probing first call); null when the provider does not say",
    ),
    Column("cost_usd", Float, doc="cost of this call in USD; null when the price is unknown"),
    Column(
        "cached_from",
        Integer,
        ForeignKey("response.id"),
        doc="the stored response this one was copied from (answered from the store's cache)",
    ),
    Column("cache_read_tokens", Integer, doc="prompt-cache hits, as reported"),
    Column("cache_write_tokens", Integer, doc="prompt-cache writes, as reported (Anthropic)"),
    Column("created_at", DateTime, nullable=False, default=utcnow, doc="when the reply was stored (UTC)"),
)


verdict = Table(
    "verdict",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column("job_id", Integer, ForeignKey("job.id", ondelete="CASCADE"), nullable=False, doc="the job"),
    Column("attempt", Integer, nullable=False, doc="the attempt the verdict was read from"),
    Column(
        "request_id",
        Integer,
        ForeignKey("request.id", ondelete="CASCADE"),
        nullable=False,
        doc="the request whose reply was read",
    ),
    Column("parse_status", String(10), nullable=False, doc="ok, partial or failed"),
    Column(
        "parse_method",
        String(30),
        doc="structured, json_tail or line_tail: how the answer was found",
    ),
    Column(
        "failure_kind",
        String(30),
        doc="why a parse failed or was partial: unreadable, truncated, missing_clauses or ambiguous; null when ok",
    ),
    Column("value_presented", String(20), doc="A/B/tie as the judge gave it, or the score"),
    Column(
        "value_canonical",
        String(20),
        doc="the verdict mapped back to the pair's canonical order",
    ),
    Column("score", Float, doc="numeric score for pointwise jobs"),
    Column("rationale", Text, doc="the judge's rationale (for editor jobs: the proposal as JSON)"),
    Column("created_at", DateTime, nullable=False, default=utcnow, doc="when the verdict was stored (UTC)"),
    CheckConstraint("parse_status IN ('ok', 'partial', 'failed')", name="parse_status"),
    UniqueConstraint("job_id", "attempt"),
)


clause_verdict = Table(
    "clause_verdict",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column(
        "verdict_id", Integer, ForeignKey("verdict.id", ondelete="CASCADE"), nullable=False, doc="the verdict"
    ),
    Column("clause_id", Integer, ForeignKey("clause.id"), nullable=False, doc="the clause"),
    Column("met", Boolean, doc="true or false; null when the judge gave no answer"),
    Column("rationale", Text, doc="the judge's rationale for the clause"),
    Column(
        "by_checker",
        Boolean,
        nullable=False,
        default=False,
        server_default=false(),
        doc="answered by a kept clause checker (clause_checker), not by the model: the clause was left out of the request",
    ),
    UniqueConstraint("verdict_id", "clause_id"),
)
