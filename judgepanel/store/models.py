"""The results database, as SQLAlchemy 2 typed models.

Tables are created only by the Alembic migrations in `migrations/`; a test checks that these
models and the migrations agree. Human labels and LLM verdicts end up in the same shape of rating
matrix (see `store.queries`), so every metric reads both.

Naming: `item` is one thing to judge (a summary, an answer); `pair` is two items of the same group
in a named `pair_set`; `label` is an imported annotation of an item; `pair_label` a derived A/B/T
preference of one annotator over a pair; `job` the unit of campaign work, with a deterministic key.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
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
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Deterministic constraint names, so migrations can address them on every backend.
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def table_of(model: type[Base]) -> Table:
    """The Core table of a model, for bulk inserts that skip the ORM's per-row bookkeeping."""
    return Base.metadata.tables[model.__tablename__]


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[Any]: JSON}


# ---------------------------------------------------------------- data


class Dataset(Base):
    __tablename__ = "dataset"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    kind: Mapped[str] = mapped_column(String(40))
    # sha256 of the imported file(s): importing the same file again is a no-op, another one is refused
    source_hash: Mapped[str] = mapped_column(String(64))
    meta: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Item(Base):
    __tablename__ = "item"
    __table_args__ = (
        UniqueConstraint("dataset_id", "external_id"),
        Index("ix_item_dataset_position", "dataset_id", "position"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("dataset.id", ondelete="CASCADE"))
    external_id: Mapped[str] = mapped_column(String(300))
    position: Mapped[int] = mapped_column(Integer)  # file order, for reproducible pairs and splits
    group_key: Mapped[str | None] = mapped_column(String(300))  # e.g. the source article
    input: Mapped[str | None] = mapped_column(Text)  # the context the candidate answers
    output: Mapped[str | None] = mapped_column(Text)  # the candidate being judged
    system: Mapped[str | None] = mapped_column(String(200))
    split: Mapped[str | None] = mapped_column(String(40))
    meta: Mapped[dict[str, Any]] = mapped_column(default=dict)


class Annotator(Base):
    """A human or an external LLM whose labels were imported into one dataset (names such as `w2`
    mean different people in different datasets). Campaign judges live in `judge`."""

    __tablename__ = "annotator"
    __table_args__ = (
        CheckConstraint("kind IN ('human', 'llm')", name="kind"),
        UniqueConstraint("dataset_id", "name"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("dataset.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(10), default="human")
    group: Mapped[str | None] = mapped_column(String(100))


class Label(Base):
    __tablename__ = "label"
    __table_args__ = (
        UniqueConstraint("item_id", "annotator_id", "dimension"),
        Index("ix_label_annotator", "annotator_id"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("item.id", ondelete="CASCADE"))
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotator.id", ondelete="CASCADE"))
    dimension: Mapped[str] = mapped_column(String(100), default="")  # "" when the task has one
    value_num: Mapped[float | None] = mapped_column(Float)  # set when the label is a number
    value_text: Mapped[str | None] = mapped_column(Text)  # the label as given, always
    rationale: Mapped[str | None] = mapped_column(Text)


class PairSet(Base):
    __tablename__ = "pair_set"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("dataset.id", ondelete="CASCADE"))
    seed: Mapped[int] = mapped_column(Integer)
    sample: Mapped[int | None] = mapped_column(Integer)
    tie_eps: Mapped[float] = mapped_column(Float)
    pairs_total: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Pair(Base):
    __tablename__ = "pair"
    __table_args__ = (
        UniqueConstraint("pair_set_id", "item_a_id", "item_b_id"),
        UniqueConstraint("pair_set_id", "position"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    pair_set_id: Mapped[int] = mapped_column(ForeignKey("pair_set.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)  # order in the seeded sample
    item_a_id: Mapped[int] = mapped_column(ForeignKey("item.id", ondelete="CASCADE"))
    item_b_id: Mapped[int] = mapped_column(ForeignKey("item.id", ondelete="CASCADE"))


class PairLabel(Base):
    """One annotator's preference over a pair, derived from its item labels: A, B or T (tie)."""

    __tablename__ = "pair_label"
    __table_args__ = (
        UniqueConstraint("pair_id", "annotator_id"),
        CheckConstraint("value IN ('A', 'B', 'T')", name="value"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    pair_id: Mapped[int] = mapped_column(ForeignKey("pair.id", ondelete="CASCADE"))
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotator.id", ondelete="CASCADE"))
    value: Mapped[str] = mapped_column(String(1))


# ---------------------------------------------------------------- rubrics


class Rubric(Base):
    __tablename__ = "rubric"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class RubricVersion(Base):
    __tablename__ = "rubric_version"
    __table_args__ = (
        UniqueConstraint("rubric_id", "version"),
        CheckConstraint("author IN ('manual', 'editor')", name="author"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    rubric_id: Mapped[int] = mapped_column(ForeignKey("rubric.id", ondelete="CASCADE"))
    version: Mapped[int] = mapped_column(Integer)
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("rubric_version.id"))
    author: Mapped[str] = mapped_column(String(20), default="manual")
    # author 'editor': the editor model's spec (never a key), e.g. "openai:gpt-4o?temperature=0"
    editor: Mapped[str | None] = mapped_column(String(500))
    change_note: Mapped[str | None] = mapped_column(Text)
    content_hash: Mapped[str] = mapped_column(String(64))
    body: Mapped[dict[str, Any]] = mapped_column()  # the whole rubric document
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Clause(Base):
    __tablename__ = "clause"
    __table_args__ = (UniqueConstraint("rubric_version_id", "clause_key"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    rubric_version_id: Mapped[int] = mapped_column(ForeignKey("rubric_version.id", ondelete="CASCADE"))
    clause_key: Mapped[str] = mapped_column(String(100))  # stable id such as "coherence.3"
    dimension: Mapped[str] = mapped_column(String(100))
    position: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)


# ---------------------------------------------------------------- campaigns


class Judge(Base):
    """A model with its parameters. Never a key: `name` is the spec with secrets refused."""

    __tablename__ = "judge"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(500), unique=True)
    provider: Mapped[str] = mapped_column(String(40))
    model: Mapped[str] = mapped_column(String(200))
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)


class Campaign(Base):
    __tablename__ = "campaign"
    __table_args__ = (
        CheckConstraint("protocol IN ('pairwise', 'pointwise', 'clauses', 'editor')", name="protocol"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    # None only for an editor campaign that reads no dataset (`rubric split`)
    dataset_id: Mapped[int | None] = mapped_column(ForeignKey("dataset.id"))
    pair_set_id: Mapped[int | None] = mapped_column(ForeignKey("pair_set.id"))
    rubric_version_id: Mapped[int | None] = mapped_column(ForeignKey("rubric_version.id"))
    protocol: Mapped[str] = mapped_column(String(20))
    condition: Mapped[str | None] = mapped_column(String(20))  # none | criteria | rubric
    dimension: Mapped[str | None] = mapped_column(String(100))
    repeats: Mapped[int] = mapped_column(Integer, default=1)
    split: Mapped[str | None] = mapped_column(String(40))
    limit: Mapped[int | None] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(20), default="planned")
    spec: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class CampaignJudge(Base):
    __tablename__ = "campaign_judge"
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaign.id", ondelete="CASCADE"), primary_key=True)
    judge_id: Mapped[int] = mapped_column(ForeignKey("judge.id"), primary_key=True)


class Job(Base):
    __tablename__ = "job"
    __table_args__ = (
        UniqueConstraint("campaign_id", "job_key"),
        Index("ix_job_campaign_status", "campaign_id", "status"),
        CheckConstraint("status IN ('pending', 'running', 'done', 'failed')", name="status"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaign.id", ondelete="CASCADE"))
    job_key: Mapped[str] = mapped_column(String(64))  # sha256 of what the job asks; see protocol.plan
    judge_id: Mapped[int] = mapped_column(ForeignKey("judge.id"))
    item_id: Mapped[int | None] = mapped_column(ForeignKey("item.id"))
    pair_id: Mapped[int | None] = mapped_column(ForeignKey("pair.id"))
    order: Mapped[str | None] = mapped_column(String(2))  # AB | BA for pairwise jobs
    condition: Mapped[str | None] = mapped_column(String(20))
    dimension: Mapped[str | None] = mapped_column(String(100))
    repeat: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(10), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error_class: Mapped[str | None] = mapped_column(String(20))  # of the last failed attempt
    lease_owner: Mapped[str | None] = mapped_column(String(100))
    lease_expires: Mapped[datetime | None] = mapped_column(DateTime)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Request(Base):
    """One attempt at a job: exactly what was sent (never headers, never a key)."""

    __tablename__ = "request"
    __table_args__ = (UniqueConstraint("job_id", "attempt"), Index("ix_request_hash", "request_hash"))
    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("job.id", ondelete="CASCADE"))
    attempt: Mapped[int] = mapped_column(Integer)
    request_hash: Mapped[str] = mapped_column(String(64))  # model + output-relevant params + messages
    template_name: Mapped[str] = mapped_column(String(200))
    template_hash: Mapped[str] = mapped_column(String(64))
    messages: Mapped[list[Any]] = mapped_column()
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # the JSON schema / tool definition sent for structured output; SQL NULL (not JSON null) when the
    # reply is free text, so `output_schema IS NULL` finds those requests
    output_schema: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Response(Base):
    __tablename__ = "response"
    id: Mapped[int] = mapped_column(primary_key=True)
    request_id: Mapped[int] = mapped_column(ForeignKey("request.id", ondelete="CASCADE"), unique=True)
    ok: Mapped[bool] = mapped_column(Boolean)
    error_class: Mapped[str | None] = mapped_column(String(20))  # rate_limit | transient | fatal | parse
    http_status: Mapped[int | None] = mapped_column(Integer)
    error_message: Mapped[str | None] = mapped_column(Text)
    raw_body: Mapped[str | None] = mapped_column(Text)
    text: Mapped[str | None] = mapped_column(Text)
    model_returned: Mapped[str | None] = mapped_column(String(200))
    system_fingerprint: Mapped[str | None] = mapped_column(String(200))
    finish_reason: Mapped[str | None] = mapped_column(String(40))  # finish_reason / stop_reason as returned
    input_tokens: Mapped[int | None] = mapped_column(Integer)
    output_tokens: Mapped[int | None] = mapped_column(Integer)
    latency_ms: Mapped[float | None] = mapped_column(Float)  # from the request leaving to the whole answer
    # from the start of the attempt until its request left (waiting inside the provider, e.g. behind an
    # OpenAI-compatible judge's probing first call); None when the provider does not say
    queued_ms: Mapped[float | None] = mapped_column(Float)
    cost_usd: Mapped[float | None] = mapped_column(Float)
    cached_from: Mapped[int | None] = mapped_column(ForeignKey("response.id"))  # answered from the store
    cache_read_tokens: Mapped[int | None] = mapped_column(Integer)  # prompt-cache hits, as reported
    cache_write_tokens: Mapped[int | None] = mapped_column(Integer)  # prompt-cache writes (Anthropic)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Verdict(Base):
    __tablename__ = "verdict"
    __table_args__ = (
        UniqueConstraint("job_id", "attempt"),
        CheckConstraint("parse_status IN ('ok', 'partial', 'failed')", name="parse_status"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("job.id", ondelete="CASCADE"))
    attempt: Mapped[int] = mapped_column(Integer)
    request_id: Mapped[int] = mapped_column(ForeignKey("request.id", ondelete="CASCADE"))
    parse_status: Mapped[str] = mapped_column(String(10))
    parse_method: Mapped[str | None] = mapped_column(String(30))  # structured | json_tail | line_tail
    # why a parse failed or was partial: unreadable | truncated | missing_clauses (None when ok)
    failure_kind: Mapped[str | None] = mapped_column(String(30))
    value_presented: Mapped[str | None] = mapped_column(String(20))  # A/B/tie as shown, or the score
    value_canonical: Mapped[str | None] = mapped_column(String(20))  # mapped back to the pair's order
    score: Mapped[float | None] = mapped_column(Float)
    rationale: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class ClauseVerdict(Base):
    __tablename__ = "clause_verdict"
    __table_args__ = (UniqueConstraint("verdict_id", "clause_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    verdict_id: Mapped[int] = mapped_column(ForeignKey("verdict.id", ondelete="CASCADE"))
    clause_id: Mapped[int] = mapped_column(ForeignKey("clause.id"))
    met: Mapped[bool | None] = mapped_column(Boolean)
    rationale: Mapped[str | None] = mapped_column(Text)
    # answered by a kept clause checker (`ClauseChecker`), not by the model: removed from the request
    by_checker: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


# ---------------------------------------------------------------- rubric repair


class ClauseChecker(Base):
    """One editor proposal of a deterministic checker for one clause (`repair checkers`): the
    checker and its parameters (kind None: the editor said "none"), its agreement with the judge
    majority on the iteration's development items, the threshold, and whether it was kept. A kept
    checker answers its clause in later clause campaigns on `rubric_version_id`."""

    __tablename__ = "clause_checker"
    __table_args__ = (UniqueConstraint("iteration", "clause_key"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    iteration: Mapped[str] = mapped_column(String(200))
    rubric_version_id: Mapped[int] = mapped_column(ForeignKey("rubric_version.id", ondelete="CASCADE"))
    clause_key: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str | None] = mapped_column(String(20))
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    reason: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)  # why the proposal is unusable (invalid parameters)
    agreement: Mapped[float | None] = mapped_column(Float)
    n_items: Mapped[int] = mapped_column(Integer, default=0)
    threshold: Mapped[float] = mapped_column(Float)
    kept: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class RepairIteration(Base):
    """One rubric-repair iteration (`judgepanel repair run`): its inputs, the criterion declared
    before any evaluation call, each step's state, the campaigns and rubric versions it made, and
    the selection, rewrites and comparison as JSON. Editor calls are jobs of an `editor` campaign,
    stored (request, response, verdict) like judge calls."""

    __tablename__ = "repair_iteration"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("dataset.id"))
    inputs: Mapped[dict[str, Any]] = mapped_column()
    criterion: Mapped[str | None] = mapped_column(String(500))
    criterion_at: Mapped[datetime | None] = mapped_column(DateTime)
    steps: Mapped[dict[str, Any]] = mapped_column(default=dict)  # step -> done | pending
    campaigns: Mapped[dict[str, Any]] = mapped_column(default=dict)  # dev, editor, original, …
    original_version_id: Mapped[int] = mapped_column(ForeignKey("rubric_version.id"))
    contested_version_id: Mapped[int | None] = mapped_column(ForeignKey("rubric_version.id"))
    control_version_id: Mapped[int | None] = mapped_column(ForeignKey("rubric_version.id"))
    control_seed: Mapped[int] = mapped_column(Integer)
    selection: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    rewrites: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    comparison: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


# ---------------------------------------------------------------- re-annotation planning


class Allocation(Base):
    """A seeded assignment of items to secondary annotators (`plan allocate`)."""

    __tablename__ = "allocation"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("dataset.id", ondelete="CASCADE"))
    design: Mapped[str] = mapped_column(String(40))
    coverage: Mapped[float] = mapped_column(Float)
    seed: Mapped[int] = mapped_column(Integer)
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class AllocationItem(Base):
    __tablename__ = "allocation_item"
    __table_args__ = (UniqueConstraint("allocation_id", "annotator", "item_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    allocation_id: Mapped[int] = mapped_column(ForeignKey("allocation.id", ondelete="CASCADE"))
    annotator: Mapped[str] = mapped_column(String(200))
    item_id: Mapped[int] = mapped_column(ForeignKey("item.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)


# ---------------------------------------------------------------- scale and cost


class RateBucket(Base):
    """A token bucket shared through the database by every worker of a judge (one row per judge and
    limit kind, e.g. `rpm:openai:gpt-4o-mini`): `tokens` left at `updated_at` (epoch seconds)."""

    __tablename__ = "rate_bucket"
    id: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(String(600), unique=True)
    capacity: Mapped[float] = mapped_column(Float)
    refill_per_s: Mapped[float] = mapped_column(Float)
    tokens: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)


class ProviderBatch(Base):
    """One submission to a provider's batch API; polling resumes from this row."""

    __tablename__ = "provider_batch"
    __table_args__ = (Index("ix_provider_batch_campaign_status", "campaign_id", "status"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaign.id", ondelete="CASCADE"))
    judge_id: Mapped[int] = mapped_column(ForeignKey("judge.id"))
    provider: Mapped[str] = mapped_column(String(40))
    batch_id: Mapped[str | None] = mapped_column(String(200))  # the provider's id, once submitted
    input_file_id: Mapped[str | None] = mapped_column(String(200))
    output_file_id: Mapped[str | None] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(30))  # preparing | submitted | in_progress | ended | …
    request_counts: Mapped[dict[str, Any]] = mapped_column(default=dict)
    error: Mapped[str | None] = mapped_column(Text)
    submitted_at: Mapped[datetime | None] = mapped_column(DateTime)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class ProviderBatchJob(Base):
    """A job carried by a batch, under the `custom_id` the provider echoes back."""

    __tablename__ = "provider_batch_job"
    __table_args__ = (UniqueConstraint("batch_pk", "job_id"), UniqueConstraint("batch_pk", "custom_id"))
    id: Mapped[int] = mapped_column(primary_key=True)
    batch_pk: Mapped[int] = mapped_column(ForeignKey("provider_batch.id", ondelete="CASCADE"))
    job_id: Mapped[int] = mapped_column(ForeignKey("job.id", ondelete="CASCADE"))
    custom_id: Mapped[str] = mapped_column(String(100))
    attempt: Mapped[int] = mapped_column(Integer)
    request_hash: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(20))  # submitted | done | failed
