"""The results database's tables in SQLAlchemy Core, without the ORM (issue 20).

Importing `sqlalchemy.orm` and mapping the models of `store.models` costs about 0.45 s of CPU at
every start; the commands that only read (`campaign list`, `campaign status`, `metrics agreement`
and the readers they use) select from these `Table` objects instead, and never load the ORM.
`store.models` stays the description the migrations are checked against; these tables mirror it
column for column, constraint for constraint, and `tests/store/test_tables.py` fails when the two
differ (the CREATE TABLE and CREATE INDEX statements of both, on SQLite and PostgreSQL): a column
added to a model must be added here too.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

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
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)

# Deterministic constraint names, so migrations can address them on every backend.
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING)


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


dataset = Table(
    "dataset",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(length=200), nullable=False, unique=True),
    Column("kind", String(length=40), nullable=False),
    Column("source_hash", String(length=64), nullable=False),
    Column("meta", JSON, nullable=False, default=dict),
    Column("created_at", DateTime, nullable=False, default=utcnow),
)

judge = Table(
    "judge",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(length=500), nullable=False, unique=True),
    Column("provider", String(length=40), nullable=False),
    Column("model", String(length=200), nullable=False),
    Column("params", JSON, nullable=False, default=dict),
)

rate_bucket = Table(
    "rate_bucket",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("key", String(length=600), nullable=False, unique=True),
    Column("capacity", Float, nullable=False),
    Column("refill_per_s", Float, nullable=False),
    Column("tokens", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
)

rubric = Table(
    "rubric",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(length=200), nullable=False, unique=True),
    Column("created_at", DateTime, nullable=False, default=utcnow),
)

allocation = Table(
    "allocation",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(length=200), nullable=False, unique=True),
    Column("dataset_id", Integer, ForeignKey("dataset.id", ondelete="CASCADE"), nullable=False),
    Column("design", String(length=40), nullable=False),
    Column("coverage", Float, nullable=False),
    Column("seed", Integer, nullable=False),
    Column("params", JSON, nullable=False, default=dict),
    Column("created_at", DateTime, nullable=False, default=utcnow),
)

annotator = Table(
    "annotator",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("dataset_id", Integer, ForeignKey("dataset.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(length=200), nullable=False),
    Column("kind", String(length=10), nullable=False, default="human"),
    Column("group", String(length=100), nullable=True),
    CheckConstraint("kind IN ('human', 'llm')", name="kind"),
    UniqueConstraint("dataset_id", "name"),
)

item = Table(
    "item",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("dataset_id", Integer, ForeignKey("dataset.id", ondelete="CASCADE"), nullable=False),
    Column("external_id", String(length=300), nullable=False),
    Column("position", Integer, nullable=False),
    Column("group_key", String(length=300), nullable=True),
    Column("input", Text, nullable=True),
    Column("output", Text, nullable=True),
    Column("system", String(length=200), nullable=True),
    Column("split", String(length=40), nullable=True),
    Column("meta", JSON, nullable=False, default=dict),
    UniqueConstraint("dataset_id", "external_id"),
    Index("ix_item_dataset_position", "dataset_id", "position"),
)

pair_set = Table(
    "pair_set",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(length=200), nullable=False, unique=True),
    Column("dataset_id", Integer, ForeignKey("dataset.id", ondelete="CASCADE"), nullable=False),
    Column("seed", Integer, nullable=False),
    Column("sample", Integer, nullable=True),
    Column("tie_eps", Float, nullable=False),
    Column("pairs_total", Integer, nullable=False),
    Column("created_at", DateTime, nullable=False, default=utcnow),
)

rubric_version = Table(
    "rubric_version",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("rubric_id", Integer, ForeignKey("rubric.id", ondelete="CASCADE"), nullable=False),
    Column("version", Integer, nullable=False),
    Column("parent_id", Integer, ForeignKey("rubric_version.id"), nullable=True),
    Column("author", String(length=20), nullable=False, default="manual"),
    Column("editor", String(length=500), nullable=True),
    Column("change_note", Text, nullable=True),
    Column("content_hash", String(length=64), nullable=False),
    Column("body", JSON, nullable=False),
    Column("created_at", DateTime, nullable=False, default=utcnow),
    UniqueConstraint("rubric_id", "version"),
    CheckConstraint("author IN ('manual', 'editor')", name="author"),
)

allocation_item = Table(
    "allocation_item",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("allocation_id", Integer, ForeignKey("allocation.id", ondelete="CASCADE"), nullable=False),
    Column("annotator", String(length=200), nullable=False),
    Column("item_id", Integer, ForeignKey("item.id", ondelete="CASCADE"), nullable=False),
    Column("position", Integer, nullable=False),
    UniqueConstraint("allocation_id", "annotator", "item_id"),
)

campaign = Table(
    "campaign",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(length=200), nullable=False, unique=True),
    Column("dataset_id", Integer, ForeignKey("dataset.id"), nullable=True),
    Column("pair_set_id", Integer, ForeignKey("pair_set.id"), nullable=True),
    Column("rubric_version_id", Integer, ForeignKey("rubric_version.id"), nullable=True),
    Column("protocol", String(length=20), nullable=False),
    Column("condition", String(length=20), nullable=True),
    Column("dimension", String(length=100), nullable=True),
    Column("repeats", Integer, nullable=False, default=1),
    Column("split", String(length=40), nullable=True),
    Column("limit", Integer, nullable=True),
    Column("status", String(length=20), nullable=False, default="planned"),
    Column("spec", JSON, nullable=False, default=dict),
    Column("created_at", DateTime, nullable=False, default=utcnow),
    Column("max_cost_usd", Float, nullable=True),
    CheckConstraint("protocol IN ('pairwise', 'pointwise', 'clauses', 'editor')", name="protocol"),
)

clause = Table(
    "clause",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("rubric_version_id", Integer, ForeignKey("rubric_version.id", ondelete="CASCADE"), nullable=False),
    Column("clause_key", String(length=100), nullable=False),
    Column("dimension", String(length=100), nullable=False),
    Column("position", Integer, nullable=False),
    Column("text", Text, nullable=False),
    UniqueConstraint("rubric_version_id", "clause_key"),
)

label = Table(
    "label",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("item_id", Integer, ForeignKey("item.id", ondelete="CASCADE"), nullable=False),
    Column("annotator_id", Integer, ForeignKey("annotator.id", ondelete="CASCADE"), nullable=False),
    Column("dimension", String(length=100), nullable=False, default=""),
    Column("value_num", Float, nullable=True),
    Column("value_text", Text, nullable=True),
    Column("rationale", Text, nullable=True),
    UniqueConstraint("item_id", "annotator_id", "dimension"),
    Index("ix_label_annotator", "annotator_id"),
)

pair = Table(
    "pair",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("pair_set_id", Integer, ForeignKey("pair_set.id", ondelete="CASCADE"), nullable=False),
    Column("position", Integer, nullable=False),
    Column("item_a_id", Integer, ForeignKey("item.id", ondelete="CASCADE"), nullable=False),
    Column("item_b_id", Integer, ForeignKey("item.id", ondelete="CASCADE"), nullable=False),
    UniqueConstraint("pair_set_id", "position"),
    UniqueConstraint("pair_set_id", "item_a_id", "item_b_id"),
)

repair_iteration = Table(
    "repair_iteration",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(length=200), nullable=False, unique=True),
    Column("dataset_id", Integer, ForeignKey("dataset.id"), nullable=False),
    Column("inputs", JSON, nullable=False),
    Column("criterion", String(length=500), nullable=True),
    Column("criterion_at", DateTime, nullable=True),
    Column("steps", JSON, nullable=False, default=dict),
    Column("campaigns", JSON, nullable=False, default=dict),
    Column("original_version_id", Integer, ForeignKey("rubric_version.id"), nullable=False),
    Column("contested_version_id", Integer, ForeignKey("rubric_version.id"), nullable=True),
    Column("control_version_id", Integer, ForeignKey("rubric_version.id"), nullable=True),
    Column("control_seed", Integer, nullable=False),
    Column("selection", JSON, nullable=True),
    Column("rewrites", JSON, nullable=True),
    Column("comparison", JSON, nullable=True),
    Column("created_at", DateTime, nullable=False, default=utcnow),
    Column("updated_at", DateTime, nullable=False, default=utcnow),
)

alignment = Table(
    "alignment",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column("name", String(length=200), nullable=False, unique=True, doc="alignment name (unique)"),
    Column("dataset_id", Integer, ForeignKey("dataset.id"), nullable=False, doc="the dataset aligned on"),
    Column("method", String(length=20), nullable=False, doc="fewshot | instructions | grid"),
    Column("inputs", JSON, nullable=False, doc="the alignment's inputs as JSON"),
    Column("steps", JSON, nullable=False, default=dict, doc="each step's state as JSON"),
    Column("campaigns", JSON, nullable=False, default=dict, doc="the campaigns it made, by role, as JSON"),
    Column("choices", JSON, nullable=True, doc="the choices made on development items, as JSON"),
    Column("templates", JSON, nullable=True, doc="the original and aligned judge templates, as JSON"),
    Column("comparison", JSON, nullable=True, doc="the comparison on evaluation items, as JSON"),
    Column("created_at", DateTime, nullable=False, default=utcnow, doc="when the alignment started (UTC)"),
    Column("updated_at", DateTime, nullable=False, default=utcnow, doc="last change (UTC)"),
)

budget_hold = Table(
    "budget_hold",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("campaign_id", Integer, ForeignKey("campaign.id", ondelete="CASCADE"), nullable=False),
    Column("owner", String(length=300), nullable=False),
    Column("amount_usd", Float, nullable=False),
    Column("expires", DateTime, nullable=True),
    UniqueConstraint("campaign_id", "owner"),
)

campaign_judge = Table(
    "campaign_judge",
    metadata,
    Column("campaign_id", Integer, ForeignKey("campaign.id", ondelete="CASCADE"), primary_key=True),
    Column("judge_id", Integer, ForeignKey("judge.id"), primary_key=True),
)

job = Table(
    "job",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("campaign_id", Integer, ForeignKey("campaign.id", ondelete="CASCADE"), nullable=False),
    Column("job_key", String(length=64), nullable=False),
    Column("judge_id", Integer, ForeignKey("judge.id"), nullable=False),
    Column("item_id", Integer, ForeignKey("item.id"), nullable=True),
    Column("pair_id", Integer, ForeignKey("pair.id"), nullable=True),
    Column("order", String(length=2), nullable=True),
    Column("condition", String(length=20), nullable=True),
    Column("dimension", String(length=100), nullable=True),
    Column("repeat", Integer, nullable=False, default=0),
    Column("status", String(length=10), nullable=False, default="pending"),
    Column("attempts", Integer, nullable=False, default=0),
    Column("error_class", String(length=20), nullable=True),
    Column("lease_owner", String(length=100), nullable=True),
    Column("lease_expires", DateTime, nullable=True),
    Column("updated_at", DateTime, nullable=False, default=utcnow),
    Column(
        "prompt_chars", Integer, nullable=True, doc="characters of the job's rendered prompt (all messages)"
    ),
    Column("prompt_messages", Integer, nullable=True, doc="messages of the job's rendered prompt"),
    Column(
        "prompt_prefix_tokens", Integer, nullable=True, doc="estimated tokens of the longest stable prefix"
    ),
    Column("prompt_sig", String(length=16), nullable=True, doc="what the prompt figures were rendered with"),
    CheckConstraint("status IN ('pending', 'running', 'done', 'failed')", name="status"),
    UniqueConstraint("campaign_id", "job_key"),
    Index("ix_job_campaign_status", "campaign_id", "status"),
    Index("ix_job_judge", "judge_id"),
)

pair_label = Table(
    "pair_label",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("pair_id", Integer, ForeignKey("pair.id", ondelete="CASCADE"), nullable=False),
    Column("annotator_id", Integer, ForeignKey("annotator.id", ondelete="CASCADE"), nullable=False),
    Column("value", String(length=1), nullable=False),
    UniqueConstraint("pair_id", "annotator_id"),
    CheckConstraint("value IN ('A', 'B', 'T')", name="value"),
)

provider_batch = Table(
    "provider_batch",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("campaign_id", Integer, ForeignKey("campaign.id", ondelete="CASCADE"), nullable=False),
    Column("judge_id", Integer, ForeignKey("judge.id"), nullable=False),
    Column("provider", String(length=40), nullable=False),
    Column("batch_id", String(length=200), nullable=True),
    Column("input_file_id", String(length=200), nullable=True),
    Column("output_file_id", String(length=200), nullable=True),
    Column("status", String(length=30), nullable=False),
    Column("request_counts", JSON, nullable=False, default=dict),
    Column("error", Text, nullable=True),
    Column("submitted_at", DateTime, nullable=True),
    Column("finished_at", DateTime, nullable=True),
    Column("created_at", DateTime, nullable=False, default=utcnow),
    Index("ix_provider_batch_campaign_status", "campaign_id", "status"),
)

provider_batch_job = Table(
    "provider_batch_job",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("batch_pk", Integer, ForeignKey("provider_batch.id", ondelete="CASCADE"), nullable=False),
    Column("job_id", Integer, ForeignKey("job.id", ondelete="CASCADE"), nullable=False),
    Column("custom_id", String(length=100), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("request_hash", String(length=64), nullable=False),
    Column("state", String(length=20), nullable=False),
    UniqueConstraint("batch_pk", "job_id"),
    UniqueConstraint("batch_pk", "custom_id"),
)

request = Table(
    "request",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("job_id", Integer, ForeignKey("job.id", ondelete="CASCADE"), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("request_hash", String(length=64), nullable=False),
    Column("template_name", String(length=200), nullable=False),
    Column("template_hash", String(length=64), nullable=False),
    Column("messages", JSON, nullable=False),
    Column("params", JSON, nullable=False, default=dict),
    Column("output_schema", JSON(none_as_null=True), nullable=True),
    Column("created_at", DateTime, nullable=False, default=utcnow),
    UniqueConstraint("job_id", "attempt"),
    Index("ix_request_hash", "request_hash"),
)

response = Table(
    "response",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("request_id", Integer, ForeignKey("request.id", ondelete="CASCADE"), nullable=False, unique=True),
    Column("ok", Boolean, nullable=False),
    Column("error_class", String(length=20), nullable=True),
    Column("http_status", Integer, nullable=True),
    Column("error_message", Text, nullable=True),
    Column("raw_body", Text, nullable=True),
    Column("text", Text, nullable=True),
    Column("model_returned", String(length=200), nullable=True),
    Column("system_fingerprint", String(length=200), nullable=True),
    Column("finish_reason", String(length=40), nullable=True),
    Column("input_tokens", Integer, nullable=True),
    Column("output_tokens", Integer, nullable=True),
    Column("latency_ms", Float, nullable=True),
    Column("queued_ms", Float, nullable=True),
    Column("cost_usd", Float, nullable=True),
    Column("cached_from", Integer, ForeignKey("response.id"), nullable=True),
    Column("cache_read_tokens", Integer, nullable=True),
    Column("cache_write_tokens", Integer, nullable=True),
    Column("created_at", DateTime, nullable=False, default=utcnow),
)

verdict = Table(
    "verdict",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("job_id", Integer, ForeignKey("job.id", ondelete="CASCADE"), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("request_id", Integer, ForeignKey("request.id", ondelete="CASCADE"), nullable=False),
    Column("parse_status", String(length=10), nullable=False),
    Column("parse_method", String(length=30), nullable=True),
    Column("failure_kind", String(length=30), nullable=True),
    Column("value_presented", String(length=20), nullable=True),
    Column("value_canonical", String(length=20), nullable=True),
    Column("score", Float, nullable=True),
    Column("rationale", Text, nullable=True),
    Column("created_at", DateTime, nullable=False, default=utcnow),
    CheckConstraint("parse_status IN ('ok', 'partial', 'failed')", name="parse_status"),
    UniqueConstraint("job_id", "attempt"),
)

clause_verdict = Table(
    "clause_verdict",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("verdict_id", Integer, ForeignKey("verdict.id", ondelete="CASCADE"), nullable=False),
    Column("clause_id", Integer, ForeignKey("clause.id"), nullable=False),
    Column("met", Boolean, nullable=True),
    Column("rationale", Text, nullable=True),
    Column("by_checker", Boolean, nullable=False, default=False, server_default=false()),
    UniqueConstraint("verdict_id", "clause_id"),
)

clause_checker = Table(
    "clause_checker",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("iteration", String(length=200), nullable=False),
    Column("rubric_version_id", Integer, ForeignKey("rubric_version.id", ondelete="CASCADE"), nullable=False),
    Column("clause_key", String(length=200), nullable=False),
    Column("kind", String(length=20), nullable=True),
    Column("params", JSON, nullable=False, default=dict),
    Column("reason", Text, nullable=True),
    Column("error", Text, nullable=True),
    Column("agreement", Float, nullable=True),
    Column("n_items", Integer, nullable=False, default=0),
    Column("threshold", Float, nullable=False),
    Column("kept", Boolean, nullable=False, default=False),
    Column("created_at", DateTime, nullable=False, default=utcnow),
    UniqueConstraint("iteration", "clause_key"),
)

request_claim = Table(
    "request_claim",
    metadata,
    Column("request_hash", String(length=64), primary_key=True),
    Column("owner", String(length=300), nullable=False),
    Column("expires", DateTime, nullable=False),
    Column("created_at", DateTime, nullable=False, default=utcnow),
    Index("ix_request_claim_owner", "owner"),
)

# as in `store.models`: SQLite never hands a deleted row's id to a new one (migration 0010_trust)
for _t in metadata.tables.values():
    _pk = list(_t.primary_key.columns)
    if len(_pk) == 1 and _pk[0].name == "id" and isinstance(_pk[0].type, Integer):
        _t.dialect_options["sqlite"]["autoincrement"] = True


class Columns:
    """A table whose columns read as attributes (`Job.status`), usable where a query names the table
    (`select_from(Job)`, `.join(Judge, …)`): Core queries over `store.tables` keep the shape of the
    ORM queries they replace, without loading the ORM."""

    def __init__(self, table: Table) -> None:
        self.__table__ = table

    def __getattr__(self, name: str) -> Column[Any]:
        try:
            return self.__table__.c[name]
        except KeyError:
            raise AttributeError(f"table {self.__table__.name} has no column {name!r}") from None

    def __clause_element__(self) -> Any:  # the table (typed Any: SQLAlchemy's protocol wants an expression)
        return self.__table__


BudgetHold = Columns(budget_hold)
Campaign = Columns(campaign)
CampaignJudge = Columns(campaign_judge)
ClauseVerdict = Columns(clause_verdict)
Dataset = Columns(dataset)
Item = Columns(item)
Job = Columns(job)
Judge = Columns(judge)
Label = Columns(label)
Annotator = Columns(annotator)
Pair = Columns(pair)
PairLabel = Columns(pair_label)
PairSet = Columns(pair_set)
ProviderBatchJob = Columns(provider_batch_job)
Request = Columns(request)
RequestClaim = Columns(request_claim)
Response = Columns(response)
Verdict = Columns(verdict)
