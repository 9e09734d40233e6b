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
    """One imported dataset: items with their human (or external LLM) labels."""

    __tablename__ = "dataset"
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    name: Mapped[str] = mapped_column(
        String(200), unique=True, doc="dataset name, as given to `data import-*` (unique)"
    )
    kind: Mapped[str] = mapped_column(
        String(40), doc="what the importer read: summeval, mtbench, alttest, labels, items …"
    )
    source_hash: Mapped[str] = mapped_column(
        String(64),
        doc="sha256 of the imported file(s): the same file again is a no-op, another one is refused",
    )
    meta: Mapped[dict[str, Any]] = mapped_column(
        default=dict, doc="importer details as JSON (files, counts, options)"
    )
    created_at: Mapped[datetime] = mapped_column(
        DateTime, default=utcnow, doc="when the dataset was imported (UTC)"
    )


class Item(Base):
    """One thing to judge (a summary, an answer) in a dataset, with its context."""

    __tablename__ = "item"
    __table_args__ = (
        UniqueConstraint("dataset_id", "external_id"),
        Index("ix_item_dataset_position", "dataset_id", "position"),
    )
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    dataset_id: Mapped[int] = mapped_column(
        ForeignKey("dataset.id", ondelete="CASCADE"), doc="the dataset the item belongs to"
    )
    external_id: Mapped[str] = mapped_column(
        String(300), doc="the item's id in the imported file (unique within its dataset)"
    )
    position: Mapped[int] = mapped_column(Integer, doc="file order, for reproducible pairs and splits")
    group_key: Mapped[str | None] = mapped_column(
        String(300),
        doc="the group the item belongs to, e.g. its source article or question; pairs are drawn within a group",
    )
    input: Mapped[str | None] = mapped_column(
        Text, doc="the context the candidate answers (source article, question)"
    )
    output: Mapped[str | None] = mapped_column(Text, doc="the candidate text being judged")
    system: Mapped[str | None] = mapped_column(
        String(200), doc="the system (model) that produced the candidate"
    )
    split: Mapped[str | None] = mapped_column(
        String(40), doc="split name assigned by `data split` (e.g. dev, eval), or null"
    )
    meta: Mapped[dict[str, Any]] = mapped_column(default=dict, doc="anything else the importer kept, as JSON")


class Annotator(Base):
    """A human or an external LLM whose labels were imported into one dataset (names such as `w2`
    mean different people in different datasets). Campaign judges live in `judge`."""

    __tablename__ = "annotator"
    __table_args__ = (
        CheckConstraint("kind IN ('human', 'llm')", name="kind"),
        UniqueConstraint("dataset_id", "name"),
    )
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    dataset_id: Mapped[int] = mapped_column(
        ForeignKey("dataset.id", ondelete="CASCADE"), doc="the dataset whose labels this annotator gave"
    )
    name: Mapped[str] = mapped_column(String(200), doc="annotator name (unique within its dataset)")
    kind: Mapped[str] = mapped_column(String(10), default="human", doc="human or llm")
    group: Mapped[str | None] = mapped_column(String(100), doc="annotator group such as expert or crowd")


class Label(Base):
    """One imported annotation: an annotator's value for an item on one dimension."""

    __tablename__ = "label"
    __table_args__ = (
        UniqueConstraint("item_id", "annotator_id", "dimension"),
        Index("ix_label_annotator", "annotator_id"),
    )
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    item_id: Mapped[int] = mapped_column(ForeignKey("item.id", ondelete="CASCADE"), doc="the item labelled")
    annotator_id: Mapped[int] = mapped_column(
        ForeignKey("annotator.id", ondelete="CASCADE"), doc="who gave the label"
    )
    dimension: Mapped[str] = mapped_column(
        String(100), default="", doc="rubric dimension; '' when the task has one"
    )
    value_num: Mapped[float | None] = mapped_column(Float, doc="the label as a number, where it is one")
    value_text: Mapped[str | None] = mapped_column(Text, doc="the label exactly as given")
    rationale: Mapped[str | None] = mapped_column(
        Text, doc="the annotator's rationale, if the dataset has one"
    )


class PairSet(Base):
    """A named, seeded sample of within-group item pairs (`data pairs`)."""

    __tablename__ = "pair_set"
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    name: Mapped[str] = mapped_column(String(200), unique=True, doc="pair set name (unique)")
    dataset_id: Mapped[int] = mapped_column(
        ForeignKey("dataset.id", ondelete="CASCADE"), doc="the dataset the pairs are drawn from"
    )
    seed: Mapped[int] = mapped_column(Integer, doc="seed of the sample")
    sample: Mapped[int | None] = mapped_column(Integer, doc="how many pairs were asked for; null for all")
    tie_eps: Mapped[float] = mapped_column(
        Float, doc="score difference below which a human preference counts as a tie"
    )
    pairs_total: Mapped[int] = mapped_column(Integer, doc="within-group pairs before sampling")
    created_at: Mapped[datetime] = mapped_column(
        DateTime, default=utcnow, doc="when the pair set was made (UTC)"
    )


class Pair(Base):
    """Two items of the same group, in a pair set, in canonical order (a, b)."""

    __tablename__ = "pair"
    __table_args__ = (
        UniqueConstraint("pair_set_id", "item_a_id", "item_b_id"),
        UniqueConstraint("pair_set_id", "position"),
    )
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    pair_set_id: Mapped[int] = mapped_column(
        ForeignKey("pair_set.id", ondelete="CASCADE"), doc="the pair set"
    )
    position: Mapped[int] = mapped_column(Integer, doc="order in the seeded sample")
    item_a_id: Mapped[int] = mapped_column(
        ForeignKey("item.id", ondelete="CASCADE"), doc="the first item (A) in canonical order"
    )
    item_b_id: Mapped[int] = mapped_column(
        ForeignKey("item.id", ondelete="CASCADE"), doc="the second item (B) in canonical order"
    )


class PairLabel(Base):
    """One annotator's preference over a pair, derived from its item labels: A, B or T (tie)."""

    __tablename__ = "pair_label"
    __table_args__ = (
        UniqueConstraint("pair_id", "annotator_id"),
        CheckConstraint("value IN ('A', 'B', 'T')", name="value"),
    )
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    pair_id: Mapped[int] = mapped_column(ForeignKey("pair.id", ondelete="CASCADE"), doc="the pair")
    annotator_id: Mapped[int] = mapped_column(
        ForeignKey("annotator.id", ondelete="CASCADE"),
        doc="the annotator whose item labels gave this preference",
    )
    value: Mapped[str] = mapped_column(String(1), doc="A, B or T (tie), in the pair's canonical order")


# ---------------------------------------------------------------- rubrics


class Rubric(Base):
    """A named rubric; its content lives in versions."""

    __tablename__ = "rubric"
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    name: Mapped[str] = mapped_column(String(200), unique=True, doc="rubric name (unique)")
    created_at: Mapped[datetime] = mapped_column(
        DateTime, default=utcnow, doc="when the first version was added (UTC)"
    )


class RubricVersion(Base):
    """One immutable version of a rubric, written by hand or by an editor model."""

    __tablename__ = "rubric_version"
    __table_args__ = (
        UniqueConstraint("rubric_id", "version"),
        CheckConstraint("author IN ('manual', 'editor')", name="author"),
    )
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    rubric_id: Mapped[int] = mapped_column(ForeignKey("rubric.id", ondelete="CASCADE"), doc="the rubric")
    version: Mapped[int] = mapped_column(Integer, doc="version number, 1, 2, … within the rubric")
    parent_id: Mapped[int | None] = mapped_column(
        ForeignKey("rubric_version.id"), doc="the version this one was derived from"
    )
    author: Mapped[str] = mapped_column(
        String(20), default="manual", doc="manual (added from a file) or editor (proposed by an editor model)"
    )
    editor: Mapped[str | None] = mapped_column(
        String(500), doc="for author editor: the editor model's spec (never a key)"
    )
    change_note: Mapped[str | None] = mapped_column(Text, doc="what changed and why")
    content_hash: Mapped[str] = mapped_column(
        String(64), doc="sha256 of the rubric document: adding identical content finds this version"
    )
    body: Mapped[dict[str, Any]] = mapped_column(
        doc="the whole rubric document as JSON (dimensions, criteria, anchors, clauses)"
    )
    created_at: Mapped[datetime] = mapped_column(
        DateTime, default=utcnow, doc="when the version was stored (UTC)"
    )


class Clause(Base):
    """An atomic rubric clause with a stable id, in one rubric version."""

    __tablename__ = "clause"
    __table_args__ = (UniqueConstraint("rubric_version_id", "clause_key"),)
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    rubric_version_id: Mapped[int] = mapped_column(
        ForeignKey("rubric_version.id", ondelete="CASCADE"), doc="the rubric version"
    )
    clause_key: Mapped[str] = mapped_column(
        String(100), doc="stable clause id such as coherence.3, kept across versions when the text is kept"
    )
    dimension: Mapped[str] = mapped_column(String(100), doc="the rubric dimension the clause belongs to")
    position: Mapped[int] = mapped_column(Integer, doc="order within its dimension")
    text: Mapped[str] = mapped_column(Text, doc="the clause as the judge sees it")


# ---------------------------------------------------------------- campaigns


class Judge(Base):
    """A model with its parameters. Never a key: `name` is the spec with secrets refused."""

    __tablename__ = "judge"
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    name: Mapped[str] = mapped_column(
        String(500), unique=True, doc="the judge spec, provider:model?params, with secrets refused (unique)"
    )
    provider: Mapped[str] = mapped_column(String(40), doc="provider family: openai, anthropic, sim")
    model: Mapped[str] = mapped_column(String(200), doc="model name as requested")
    params: Mapped[dict[str, Any]] = mapped_column(
        default=dict, doc="request parameters from the spec (temperature, base_url, …) as JSON"
    )


class Campaign(Base):
    """A planned set of judge calls over a dataset or pair set (`campaign create`)."""

    __tablename__ = "campaign"
    __table_args__ = (
        CheckConstraint("protocol IN ('pairwise', 'pointwise', 'clauses', 'editor')", name="protocol"),
    )
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    name: Mapped[str] = mapped_column(String(200), unique=True, doc="campaign name (unique)")
    dataset_id: Mapped[int | None] = mapped_column(
        ForeignKey("dataset.id"),
        doc="the dataset judged; null only for an editor campaign that reads none (`rubric split`)",
    )
    pair_set_id: Mapped[int | None] = mapped_column(
        ForeignKey("pair_set.id"), doc="the pair set of a pairwise campaign"
    )
    rubric_version_id: Mapped[int | None] = mapped_column(
        ForeignKey("rubric_version.id"), doc="the rubric version the prompts show, if any"
    )
    protocol: Mapped[str] = mapped_column(String(20), doc="pairwise, pointwise, clauses or editor")
    condition: Mapped[str | None] = mapped_column(
        String(20), doc="none, criteria or rubric: how much of the rubric the prompt shows"
    )
    dimension: Mapped[str | None] = mapped_column(String(100), doc="the dimension judged, if one")
    repeats: Mapped[int] = mapped_column(Integer, default=1, doc="samples per job (repeat 0, 1, …)")
    split: Mapped[str | None] = mapped_column(
        String(40), doc="the item split the campaign is restricted to, if any"
    )
    limit: Mapped[int | None] = mapped_column(Integer, doc="at most this many items or pairs, if set")
    status: Mapped[str] = mapped_column(
        String(20), default="planned", doc="planned, running, done, incomplete, or why the last run stopped"
    )
    spec: Mapped[dict[str, Any]] = mapped_column(
        default=dict, doc="the campaign as created (judges, templates, options) as JSON"
    )
    created_at: Mapped[datetime] = mapped_column(
        DateTime, default=utcnow, doc="when the campaign was created (UTC)"
    )
    max_cost_usd: Mapped[float | None] = mapped_column(
        Float, doc="the cap on the campaign's total spend (every run, worker and batch) in USD; null = no cap"
    )


class CampaignJudge(Base):
    """Which judges a campaign uses."""

    __tablename__ = "campaign_judge"
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaign.id", ondelete="CASCADE"), primary_key=True, doc="the campaign"
    )
    judge_id: Mapped[int] = mapped_column(ForeignKey("judge.id"), primary_key=True, doc="one of its judges")


class Job(Base):
    """One unit of campaign work: a judge asked about one item or pair, in one order, condition and repeat."""

    __tablename__ = "job"
    __table_args__ = (
        UniqueConstraint("campaign_id", "job_key"),
        Index("ix_job_campaign_status", "campaign_id", "status"),
        # `campaign plan` asks whether a judge's provider and model were ever sent a request
        Index("ix_job_judge", "judge_id"),
        CheckConstraint("status IN ('pending', 'running', 'done', 'failed')", name="status"),
    )
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaign.id", ondelete="CASCADE"), doc="the campaign"
    )
    job_key: Mapped[str] = mapped_column(
        String(64), doc="sha256 of what the job asks; a re-planned campaign finds its jobs by it"
    )
    judge_id: Mapped[int] = mapped_column(ForeignKey("judge.id"), doc="the judge asked")
    item_id: Mapped[int | None] = mapped_column(
        ForeignKey("item.id"), doc="the item judged (pointwise and clause jobs)"
    )
    pair_id: Mapped[int | None] = mapped_column(ForeignKey("pair.id"), doc="the pair judged (pairwise jobs)")
    order: Mapped[str | None] = mapped_column(
        String(2), doc="AB or BA: the order the pair was shown in (pairwise jobs)"
    )
    condition: Mapped[str | None] = mapped_column(String(20), doc="none, criteria or rubric")
    dimension: Mapped[str | None] = mapped_column(
        String(100), doc="the dimension judged (for editor jobs: the task key)"
    )
    repeat: Mapped[int] = mapped_column(Integer, default=0, doc="sample number, from 0")
    status: Mapped[str] = mapped_column(
        String(10), default="pending", doc="pending, running (leased), done or failed"
    )
    attempts: Mapped[int] = mapped_column(Integer, default=0, doc="requests sent for this job so far")
    error_class: Mapped[str | None] = mapped_column(
        String(20), doc="error class of the last failed attempt: rate_limit, transient, fatal or parse"
    )
    lease_owner: Mapped[str | None] = mapped_column(
        String(100), doc="the process holding the job while it runs (host:pid …)"
    )
    lease_expires: Mapped[datetime | None] = mapped_column(
        DateTime, doc="when the lease runs out and another worker may take the job (UTC)"
    )
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, doc="last change of status (UTC)")
    prompt_chars: Mapped[int | None] = mapped_column(
        Integer,
        doc="characters of the job's rendered prompt (all messages), stored at create for `campaign plan`",
    )
    prompt_messages: Mapped[int | None] = mapped_column(Integer, doc="messages of the job's rendered prompt")
    prompt_prefix_tokens: Mapped[int | None] = mapped_column(
        Integer, doc="estimated tokens of the prompt's longest stable prefix (prompt caching); 0 with none"
    )
    prompt_sig: Mapped[str | None] = mapped_column(
        String(16),
        doc="what the stored prompt figures were rendered with (templates, code, checkers); plan re-renders on a mismatch",
    )


class Request(Base):
    """One attempt at a job: exactly what was sent (never headers, never a key)."""

    __tablename__ = "request"
    __table_args__ = (UniqueConstraint("job_id", "attempt"), Index("ix_request_hash", "request_hash"))
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    job_id: Mapped[int] = mapped_column(ForeignKey("job.id", ondelete="CASCADE"), doc="the job")
    attempt: Mapped[int] = mapped_column(Integer, doc="attempt number, from 1")
    request_hash: Mapped[str] = mapped_column(
        String(64), doc="sha256 of model, output-relevant parameters, messages and schema; the cache key"
    )
    template_name: Mapped[str] = mapped_column(String(200), doc="the prompt template")
    template_hash: Mapped[str] = mapped_column(String(64), doc="sha256 of the template file(s)")
    messages: Mapped[list[Any]] = mapped_column(doc="the rendered messages sent, as JSON")
    params: Mapped[dict[str, Any]] = mapped_column(
        default=dict, doc="the request parameters sent (temperature, max_tokens, seed …), as JSON"
    )
    # SQL NULL (not JSON null) when the reply is free text, so `output_schema IS NULL` finds those
    output_schema: Mapped[dict[str, Any] | None] = mapped_column(
        JSON(none_as_null=True),
        doc="the JSON schema / tool definition sent for structured output; SQL NULL for free text",
    )
    created_at: Mapped[datetime] = mapped_column(
        DateTime, default=utcnow, doc="when the request was sent (UTC)"
    )


class Response(Base):
    """What came back for one request: the raw reply or the error, tokens, latency and cost."""

    __tablename__ = "response"
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    request_id: Mapped[int] = mapped_column(
        ForeignKey("request.id", ondelete="CASCADE"), unique=True, doc="the request answered"
    )
    ok: Mapped[bool] = mapped_column(Boolean, doc="true when the call returned a usable reply")
    error_class: Mapped[str | None] = mapped_column(
        String(20), doc="rate_limit, transient, fatal or parse; null when ok"
    )
    http_status: Mapped[int | None] = mapped_column(Integer, doc="HTTP status of the reply")
    error_message: Mapped[str | None] = mapped_column(Text, doc="the error as reported (keys redacted)")
    raw_body: Mapped[str | None] = mapped_column(Text, doc="the reply body as received (keys redacted)")
    text: Mapped[str | None] = mapped_column(Text, doc="the model's text")
    model_returned: Mapped[str | None] = mapped_column(
        String(200), doc="model name as the provider returned it"
    )
    system_fingerprint: Mapped[str | None] = mapped_column(
        String(200), doc="the provider's system fingerprint, if sent"
    )
    finish_reason: Mapped[str | None] = mapped_column(
        String(40), doc="finish_reason / stop_reason as returned"
    )
    input_tokens: Mapped[int | None] = mapped_column(Integer, doc="prompt tokens as reported")
    output_tokens: Mapped[int | None] = mapped_column(Integer, doc="completion tokens as reported")
    latency_ms: Mapped[float | None] = mapped_column(
        Float, doc="milliseconds from the request leaving to the whole answer"
    )
    queued_ms: Mapped[float | None] = mapped_column(
        Float,
        doc="milliseconds from the start of the attempt until its request left (waiting inside the "
        "provider, e.g. behind a probing first call); null when the provider does not say",
    )
    cost_usd: Mapped[float | None] = mapped_column(
        Float, doc="cost of this call in USD; null when the price is unknown"
    )
    cached_from: Mapped[int | None] = mapped_column(
        ForeignKey("response.id"),
        doc="the stored response this one was copied from (answered from the store's cache)",
    )
    cache_read_tokens: Mapped[int | None] = mapped_column(Integer, doc="prompt-cache hits, as reported")
    cache_write_tokens: Mapped[int | None] = mapped_column(
        Integer, doc="prompt-cache writes, as reported (Anthropic)"
    )
    created_at: Mapped[datetime] = mapped_column(
        DateTime, default=utcnow, doc="when the reply was stored (UTC)"
    )


class Verdict(Base):
    """The parsed reading of one reply: the judge's answer in presented and canonical order."""

    __tablename__ = "verdict"
    __table_args__ = (
        UniqueConstraint("job_id", "attempt"),
        CheckConstraint("parse_status IN ('ok', 'partial', 'failed')", name="parse_status"),
    )
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    job_id: Mapped[int] = mapped_column(ForeignKey("job.id", ondelete="CASCADE"), doc="the job")
    attempt: Mapped[int] = mapped_column(Integer, doc="the attempt the verdict was read from")
    request_id: Mapped[int] = mapped_column(
        ForeignKey("request.id", ondelete="CASCADE"), doc="the request whose reply was read"
    )
    parse_status: Mapped[str] = mapped_column(String(10), doc="ok, partial or failed")
    parse_method: Mapped[str | None] = mapped_column(
        String(30), doc="structured, json_tail or line_tail: how the answer was found"
    )
    failure_kind: Mapped[str | None] = mapped_column(
        String(30),
        doc="why a parse failed or was partial: unreadable, truncated or missing_clauses; null when ok",
    )
    value_presented: Mapped[str | None] = mapped_column(
        String(20), doc="A/B/tie as the judge gave it, or the score"
    )
    value_canonical: Mapped[str | None] = mapped_column(
        String(20), doc="the verdict mapped back to the pair's canonical order"
    )
    score: Mapped[float | None] = mapped_column(Float, doc="numeric score for pointwise jobs")
    rationale: Mapped[str | None] = mapped_column(
        Text, doc="the judge's rationale (for editor jobs: the proposal as JSON)"
    )
    created_at: Mapped[datetime] = mapped_column(
        DateTime, default=utcnow, doc="when the verdict was stored (UTC)"
    )


class ClauseVerdict(Base):
    """A judge's verdict on one rubric clause, within a clause-protocol verdict."""

    __tablename__ = "clause_verdict"
    __table_args__ = (UniqueConstraint("verdict_id", "clause_id"),)
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    verdict_id: Mapped[int] = mapped_column(ForeignKey("verdict.id", ondelete="CASCADE"), doc="the verdict")
    clause_id: Mapped[int] = mapped_column(ForeignKey("clause.id"), doc="the clause")
    met: Mapped[bool | None] = mapped_column(Boolean, doc="true or false; null when the judge gave no answer")
    rationale: Mapped[str | None] = mapped_column(Text, doc="the judge's rationale for the clause")
    by_checker: Mapped[bool] = mapped_column(
        Boolean,
        default=False,
        server_default=false(),
        doc="answered by a kept clause checker (clause_checker), not by the model: the clause was left out of the request",
    )


# ---------------------------------------------------------------- rubric repair


class ClauseChecker(Base):
    """One editor proposal of a deterministic checker for one clause (`repair checkers`): the
    checker and its parameters (kind None: the editor said "none"), its agreement with the judge
    majority on the iteration's development items, the threshold, and whether it was kept. A kept
    checker answers its clause in clause campaigns on `rubric_version_id` created after it was kept."""

    __tablename__ = "clause_checker"
    __table_args__ = (UniqueConstraint("iteration", "clause_key"),)
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    iteration: Mapped[str] = mapped_column(String(200), doc="the repair iteration that proposed it")
    rubric_version_id: Mapped[int] = mapped_column(
        ForeignKey("rubric_version.id", ondelete="CASCADE"), doc="the rubric version whose clause it answers"
    )
    clause_key: Mapped[str] = mapped_column(String(200), doc="the clause id, e.g. format.1")
    kind: Mapped[str | None] = mapped_column(
        String(20), doc="word_count | phrase | regex | language; null when the editor proposed none"
    )
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, doc="the checker's parameters")
    reason: Mapped[str | None] = mapped_column(Text, doc="the editor's reason")
    error: Mapped[str | None] = mapped_column(Text, doc="why the proposal is unusable (invalid parameters)")
    agreement: Mapped[float | None] = mapped_column(
        Float, doc="share of development items with a judge majority where the checker says the same"
    )
    n_items: Mapped[int] = mapped_column(Integer, default=0, doc="development items with a judge majority")
    threshold: Mapped[float] = mapped_column(Float, doc="the agreement a proposal needed to be kept")
    kept: Mapped[bool] = mapped_column(Boolean, default=False, doc="agreement >= threshold")
    created_at: Mapped[datetime] = mapped_column(
        DateTime, default=utcnow, doc="when decided; campaigns created later use a kept checker"
    )


class RepairIteration(Base):
    """One rubric-repair iteration (`judgepanel repair run`): its inputs, the criterion declared
    before any evaluation call, each step's state, the campaigns and rubric versions it made, and
    the selection, rewrites and comparison as JSON. Editor calls are jobs of an `editor` campaign,
    stored (request, response, verdict) like judge calls."""

    __tablename__ = "repair_iteration"
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    name: Mapped[str] = mapped_column(String(200), unique=True, doc="iteration name (unique)")
    dataset_id: Mapped[int] = mapped_column(ForeignKey("dataset.id"), doc="the dataset repaired on")
    inputs: Mapped[dict[str, Any]] = mapped_column(
        doc="the iteration's inputs (judges, editor, splits, limits …) as JSON"
    )
    criterion: Mapped[str | None] = mapped_column(
        String(500), doc="the success criterion, declared before any evaluation call"
    )
    criterion_at: Mapped[datetime | None] = mapped_column(
        DateTime, doc="when the criterion was declared (UTC)"
    )
    steps: Mapped[dict[str, Any]] = mapped_column(
        default=dict,
        doc="each step's state (dev, select, rewrite, evaluate, compare) as JSON: done or pending",
    )
    campaigns: Mapped[dict[str, Any]] = mapped_column(
        default=dict, doc="the campaigns the iteration made, by role (dev, editor, original, …), as JSON"
    )
    original_version_id: Mapped[int] = mapped_column(
        ForeignKey("rubric_version.id"), doc="the rubric version repaired"
    )
    contested_version_id: Mapped[int | None] = mapped_column(
        ForeignKey("rubric_version.id"), doc="the version with the contested clauses rewritten"
    )
    control_version_id: Mapped[int | None] = mapped_column(
        ForeignKey("rubric_version.id"), doc="the version with randomly drawn control clauses rewritten"
    )
    control_seed: Mapped[int] = mapped_column(Integer, doc="seed of the control draw")
    selection: Mapped[dict[str, Any] | None] = mapped_column(
        JSON, doc="the contested and control clauses selected, as JSON"
    )
    rewrites: Mapped[dict[str, Any] | None] = mapped_column(
        JSON, doc="the editor's rewrites (old, new, reason), as JSON"
    )
    comparison: Mapped[dict[str, Any] | None] = mapped_column(
        JSON, doc="the before/after comparison, as JSON"
    )
    created_at: Mapped[datetime] = mapped_column(
        DateTime, default=utcnow, doc="when the iteration started (UTC)"
    )
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, doc="last change (UTC)")


class Alignment(Base):
    """One human-supervised judge alignment (`judgepanel align run`): few-shot examples, revised
    instructions or a configuration grid, every choice made on development items only. Its calls
    are jobs of ordinary campaigns (named in `campaigns`); the row keeps the inputs, each step's
    state, the choices with their development scores, the judge templates and the comparison."""

    __tablename__ = "alignment"
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    name: Mapped[str] = mapped_column(String(200), unique=True, doc="alignment name (unique)")
    dataset_id: Mapped[int] = mapped_column(ForeignKey("dataset.id"), doc="the dataset aligned on")
    method: Mapped[str] = mapped_column(String(20), doc="fewshot | instructions | grid")
    inputs: Mapped[dict[str, Any]] = mapped_column(
        doc="the alignment's inputs (judge, human group, splits, method options, seed) as JSON"
    )
    steps: Mapped[dict[str, Any]] = mapped_column(
        default=dict, doc="each step's state (dev, align, evaluate, compare) as JSON: done or pending"
    )
    campaigns: Mapped[dict[str, Any]] = mapped_column(
        default=dict, doc="the campaigns the alignment made, by role (dev-original, eval-aligned, …), as JSON"
    )
    choices: Mapped[dict[str, Any] | None] = mapped_column(
        JSON,
        doc="what was chosen on development items (example ids, rounds, configurations, scores), as JSON",
    )
    templates: Mapped[dict[str, Any] | None] = mapped_column(
        JSON, doc="the original and aligned judge templates (instructions, examples, sha256), as JSON"
    )
    comparison: Mapped[dict[str, Any] | None] = mapped_column(
        JSON, doc="the comparison on evaluation items (`align compare`), as JSON"
    )
    created_at: Mapped[datetime] = mapped_column(
        DateTime, default=utcnow, doc="when the alignment started (UTC)"
    )
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, doc="last change (UTC)")


# ---------------------------------------------------------------- re-annotation planning


class Allocation(Base):
    """A seeded assignment of items to secondary annotators (`plan allocate`)."""

    __tablename__ = "allocation"
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    name: Mapped[str] = mapped_column(String(200), unique=True, doc="allocation name (unique)")
    dataset_id: Mapped[int] = mapped_column(
        ForeignKey("dataset.id", ondelete="CASCADE"), doc="the dataset whose items are assigned"
    )
    design: Mapped[str] = mapped_column(String(40), doc="the overlap design used")
    coverage: Mapped[float] = mapped_column(Float, doc="share of items given a secondary annotation")
    seed: Mapped[int] = mapped_column(Integer, doc="seed of the assignment")
    params: Mapped[dict[str, Any]] = mapped_column(default=dict, doc="the design's parameters as JSON")
    created_at: Mapped[datetime] = mapped_column(
        DateTime, default=utcnow, doc="when the allocation was made (UTC)"
    )


class AllocationItem(Base):
    """One item assigned to one secondary annotator in an allocation."""

    __tablename__ = "allocation_item"
    __table_args__ = (UniqueConstraint("allocation_id", "annotator", "item_id"),)
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    allocation_id: Mapped[int] = mapped_column(
        ForeignKey("allocation.id", ondelete="CASCADE"), doc="the allocation"
    )
    annotator: Mapped[str] = mapped_column(String(200), doc="the annotator the item is assigned to")
    item_id: Mapped[int] = mapped_column(ForeignKey("item.id", ondelete="CASCADE"), doc="the item")
    position: Mapped[int] = mapped_column(Integer, doc="order in the annotator's list")


# ---------------------------------------------------------------- scale and cost


class RateBucket(Base):
    """A token bucket shared through the database by every worker of a judge (one row per judge and
    limit kind, e.g. `rpm:openai:gpt-4o-mini`): `tokens` left at `updated_at` (epoch seconds)."""

    __tablename__ = "rate_bucket"
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    key: Mapped[str] = mapped_column(
        String(600), unique=True, doc="limit kind and judge, e.g. rpm:openai:gpt-4o-mini (unique)"
    )
    capacity: Mapped[float] = mapped_column(Float, doc="most tokens the bucket holds")
    refill_per_s: Mapped[float] = mapped_column(Float, doc="tokens added per second")
    tokens: Mapped[float] = mapped_column(Float, doc="tokens left at updated_at")
    updated_at: Mapped[float] = mapped_column(Float, doc="when tokens was last computed (epoch seconds)")


class BudgetHold(Base):
    """Money one lease owner (a run or a worker) has reserved under its campaign's cap for calls in
    flight or replies not yet stored; `expires` is renewed with the owner's leases."""

    __tablename__ = "budget_hold"
    __table_args__ = (UniqueConstraint("campaign_id", "owner"),)
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaign.id", ondelete="CASCADE"), doc="the campaign whose cap the money is held under"
    )
    owner: Mapped[str] = mapped_column(String(300), doc="the lease owner (run or worker) holding it")
    amount_usd: Mapped[float] = mapped_column(
        Float, doc="USD reserved for calls in flight or replies not yet stored"
    )
    expires: Mapped[datetime | None] = mapped_column(
        DateTime, doc="when the hold lapses unless renewed with the owner's leases (UTC)"
    )


class ProviderBatch(Base):
    """One submission to a provider's batch API; polling resumes from this row."""

    __tablename__ = "provider_batch"
    __table_args__ = (Index("ix_provider_batch_campaign_status", "campaign_id", "status"),)
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaign.id", ondelete="CASCADE"), doc="the campaign"
    )
    judge_id: Mapped[int] = mapped_column(
        ForeignKey("judge.id"), doc="the judge whose jobs the batch carries"
    )
    provider: Mapped[str] = mapped_column(String(40), doc="openai or anthropic")
    batch_id: Mapped[str | None] = mapped_column(String(200), doc="the provider's batch id, once submitted")
    input_file_id: Mapped[str | None] = mapped_column(
        String(200), doc="the provider's id of the uploaded input file (OpenAI)"
    )
    output_file_id: Mapped[str | None] = mapped_column(
        String(200), doc="the provider's id of the results file (OpenAI)"
    )
    status: Mapped[str] = mapped_column(
        String(30), doc="preparing, submitted, in_progress, ended, … as last seen"
    )
    request_counts: Mapped[dict[str, Any]] = mapped_column(
        default=dict, doc="the provider's counts of succeeded / errored / … requests, as JSON"
    )
    error: Mapped[str | None] = mapped_column(Text, doc="why the batch failed, if it did")
    submitted_at: Mapped[datetime | None] = mapped_column(DateTime, doc="when the batch was submitted (UTC)")
    finished_at: Mapped[datetime | None] = mapped_column(DateTime, doc="when the batch ended (UTC)")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, doc="when the row was made (UTC)")


class ProviderBatchJob(Base):
    """A job carried by a batch, under the `custom_id` the provider echoes back."""

    __tablename__ = "provider_batch_job"
    __table_args__ = (UniqueConstraint("batch_pk", "job_id"), UniqueConstraint("batch_pk", "custom_id"))
    id: Mapped[int] = mapped_column(primary_key=True, doc="row id")
    batch_pk: Mapped[int] = mapped_column(
        ForeignKey("provider_batch.id", ondelete="CASCADE"), doc="the provider batch row"
    )
    job_id: Mapped[int] = mapped_column(ForeignKey("job.id", ondelete="CASCADE"), doc="the job carried")
    custom_id: Mapped[str] = mapped_column(String(100), doc="the id the provider echoes back for this job")
    attempt: Mapped[int] = mapped_column(Integer, doc="the job attempt the batch request is")
    request_hash: Mapped[str] = mapped_column(
        String(64), doc="sha256 of the request, as in request.request_hash"
    )
    state: Mapped[str] = mapped_column(String(20), doc="submitted, done or failed")


class RequestClaim(Base):
    """A request hash being asked right now (issue 28 §2): identical requests of the same run or of
    a concurrent one wait for this owner's answer instead of paying for it again. Dropped with the
    answer (or when the owner gives up the job); taken over once `expires` passes or the owner is
    dead (`store.liveness`)."""

    __tablename__ = "request_claim"
    __table_args__ = (Index("ix_request_claim_owner", "owner"),)
    request_hash: Mapped[str] = mapped_column(
        String(64), primary_key=True, doc="sha256 of the request being asked, as in request.request_hash"
    )
    owner: Mapped[str] = mapped_column(String(300), doc="the lease owner (run or worker) asking it")
    expires: Mapped[datetime] = mapped_column(
        DateTime, doc="when the claim lapses unless renewed with the owner's leases (UTC)"
    )
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, doc="when it was claimed (UTC)")


def _never_reuse_ids(metadata: MetaData) -> None:
    """`id INTEGER PRIMARY KEY AUTOINCREMENT` on SQLite for every table keyed by an integer `id`
    (migration 0010_trust): a deleted row's id is never handed to a new one, so nothing that
    remembered an id (a running viewer's cache, a script) can mistake a new campaign for a deleted
    one. PostgreSQL's sequences never reuse ids anyway."""
    for t in metadata.tables.values():
        pk = list(t.primary_key.columns)
        if len(pk) == 1 and pk[0].name == "id" and isinstance(pk[0].type, Integer):
            t.dialect_options["sqlite"]["autoincrement"] = True


_never_reuse_ids(Base.metadata)
