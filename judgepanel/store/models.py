"""The results database as SQLAlchemy 2 ORM classes, mapped onto the Core tables of `store.tables`.

Each table is declared once, in `store.tables` (columns, types, defaults, constraints, indexes and
each column's line of meaning); a class here maps onto that very `Table` (`__table__`), so a new
column is written there and is mapped here without another line. The `Mapped[...]` annotations
below only give the columns their Python types for mypy; `tests/store/test_tables.py` checks that
each names a column of its table with the matching type and nullability. Each class's docstring is
its table's line in `judgepanel query --schema`.

Tables are created only by the Alembic migrations in `migrations/`; a test checks that these
tables and the migrations agree. Human labels and LLM verdicts end up in the same shape of rating
matrix (see `store.queries`), so every metric reads both.

Naming: `item` is one thing to judge (a summary, an answer); `pair` is two items of the same group
in a named `pair_set`; `label` is an imported annotation of an item; `pair_label` a derived A/B/T
preference of one annotator over a pair; `job` the unit of campaign work, with a deterministic key.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Table
from sqlalchemy.orm import DeclarativeBase, Mapped

from judgepanel.store import tables
from judgepanel.store.tables import NAMING, utcnow

__all__ = [
    "NAMING",
    "Alignment",
    "Allocation",
    "AllocationItem",
    "Annotator",
    "Base",
    "BudgetHold",
    "Campaign",
    "CampaignJudge",
    "Clause",
    "ClauseChecker",
    "ClauseVerdict",
    "Dataset",
    "Item",
    "Job",
    "Judge",
    "Label",
    "Pair",
    "PairLabel",
    "PairSet",
    "ProviderBatch",
    "ProviderBatchJob",
    "RateBucket",
    "RepairIteration",
    "Request",
    "RequestClaim",
    "Response",
    "Rubric",
    "RubricVersion",
    "Verdict",
    "table_of",
    "utcnow",
]


def table_of(model: type[Base]) -> Table:
    """The Core table of a model, for bulk inserts that skip the ORM's per-row bookkeeping."""
    table = model.__table__
    assert isinstance(table, Table)
    return table


class Base(DeclarativeBase):
    metadata = tables.metadata


# ---------------------------------------------------------------- data


class Dataset(Base):
    """One imported dataset: items with their human (or external LLM) labels."""

    __table__ = tables.dataset
    id: Mapped[int]
    name: Mapped[str]
    kind: Mapped[str]
    source_hash: Mapped[str]
    meta: Mapped[dict[str, Any]]
    created_at: Mapped[datetime]


class Item(Base):
    """One thing to judge (a summary, an answer) in a dataset, with its context."""

    __table__ = tables.item
    id: Mapped[int]
    dataset_id: Mapped[int]
    external_id: Mapped[str]
    position: Mapped[int]
    group_key: Mapped[str | None]
    input: Mapped[str | None]
    output: Mapped[str | None]
    system: Mapped[str | None]
    split: Mapped[str | None]
    meta: Mapped[dict[str, Any]]


class Annotator(Base):
    """A human or an external LLM whose labels were imported into one dataset (names such as `w2`
    mean different people in different datasets). Campaign judges live in `judge`."""

    __table__ = tables.annotator
    id: Mapped[int]
    dataset_id: Mapped[int]
    name: Mapped[str]
    kind: Mapped[str]
    group: Mapped[str | None]


class Label(Base):
    """One imported annotation: an annotator's value for an item on one dimension."""

    __table__ = tables.label
    id: Mapped[int]
    item_id: Mapped[int]
    annotator_id: Mapped[int]
    dimension: Mapped[str]
    value_num: Mapped[float | None]
    value_text: Mapped[str | None]
    rationale: Mapped[str | None]


class PairSet(Base):
    """A named, seeded sample of within-group item pairs (`data pairs`)."""

    __table__ = tables.pair_set
    id: Mapped[int]
    name: Mapped[str]
    dataset_id: Mapped[int]
    seed: Mapped[int]
    sample: Mapped[int | None]
    tie_eps: Mapped[float]
    pairs_total: Mapped[int]
    created_at: Mapped[datetime]


class Pair(Base):
    """Two items of the same group, in a pair set, in canonical order (a, b)."""

    __table__ = tables.pair
    id: Mapped[int]
    pair_set_id: Mapped[int]
    position: Mapped[int]
    item_a_id: Mapped[int]
    item_b_id: Mapped[int]


class PairLabel(Base):
    """One annotator's preference over a pair, derived from its item labels: A, B or T (tie)."""

    __table__ = tables.pair_label
    id: Mapped[int]
    pair_id: Mapped[int]
    annotator_id: Mapped[int]
    value: Mapped[str]


# ---------------------------------------------------------------- rubrics


class Rubric(Base):
    """A named rubric; its content lives in versions."""

    __table__ = tables.rubric
    id: Mapped[int]
    name: Mapped[str]
    created_at: Mapped[datetime]


class RubricVersion(Base):
    """One immutable version of a rubric, written by hand or by an editor model."""

    __table__ = tables.rubric_version
    id: Mapped[int]
    rubric_id: Mapped[int]
    version: Mapped[int]
    parent_id: Mapped[int | None]
    author: Mapped[str]
    editor: Mapped[str | None]
    change_note: Mapped[str | None]
    content_hash: Mapped[str]
    body: Mapped[dict[str, Any]]
    created_at: Mapped[datetime]


class Clause(Base):
    """An atomic rubric clause with a stable id, in one rubric version."""

    __table__ = tables.clause
    id: Mapped[int]
    rubric_version_id: Mapped[int]
    clause_key: Mapped[str]
    dimension: Mapped[str]
    position: Mapped[int]
    text: Mapped[str]


# ---------------------------------------------------------------- campaigns


class Judge(Base):
    """A model with its parameters. Never a key: `name` is the spec with secrets refused."""

    __table__ = tables.judge
    id: Mapped[int]
    name: Mapped[str]
    provider: Mapped[str]
    model: Mapped[str]
    params: Mapped[dict[str, Any]]


class Campaign(Base):
    """A planned set of judge calls over a dataset or pair set (`campaign create`)."""

    __table__ = tables.campaign
    id: Mapped[int]
    name: Mapped[str]
    dataset_id: Mapped[int | None]
    pair_set_id: Mapped[int | None]
    rubric_version_id: Mapped[int | None]
    protocol: Mapped[str]
    condition: Mapped[str | None]
    dimension: Mapped[str | None]
    repeats: Mapped[int]
    split: Mapped[str | None]
    limit: Mapped[int | None]
    status: Mapped[str]
    spec: Mapped[dict[str, Any]]
    created_at: Mapped[datetime]
    max_cost_usd: Mapped[float | None]


class CampaignJudge(Base):
    """Which judges a campaign uses."""

    __table__ = tables.campaign_judge
    campaign_id: Mapped[int]
    judge_id: Mapped[int]


class Job(Base):
    """One unit of campaign work: a judge asked about one item or pair, in one order, condition and repeat."""

    __table__ = tables.job
    id: Mapped[int]
    campaign_id: Mapped[int]
    job_key: Mapped[str]
    judge_id: Mapped[int]
    item_id: Mapped[int | None]
    pair_id: Mapped[int | None]
    order: Mapped[str | None]
    condition: Mapped[str | None]
    dimension: Mapped[str | None]
    repeat: Mapped[int]
    status: Mapped[str]
    attempts: Mapped[int]
    error_class: Mapped[str | None]
    lease_owner: Mapped[str | None]
    lease_expires: Mapped[datetime | None]
    updated_at: Mapped[datetime]
    prompt_chars: Mapped[int | None]
    prompt_messages: Mapped[int | None]
    prompt_prefix_tokens: Mapped[int | None]
    prompt_sig: Mapped[str | None]
    prompt_prefixes: Mapped[str | None]


class Request(Base):
    """One attempt at a job: exactly what was sent (never headers, never a key)."""

    __table__ = tables.request
    id: Mapped[int]
    job_id: Mapped[int]
    attempt: Mapped[int]
    request_hash: Mapped[str]
    template_name: Mapped[str]
    template_hash: Mapped[str]
    messages: Mapped[list[Any]]
    params: Mapped[dict[str, Any]]
    output_schema: Mapped[dict[str, Any] | None]
    created_at: Mapped[datetime]


class Response(Base):
    """What came back for one request: the raw reply or the error, tokens, latency and cost."""

    __table__ = tables.response
    id: Mapped[int]
    request_id: Mapped[int]
    ok: Mapped[bool]
    error_class: Mapped[str | None]
    http_status: Mapped[int | None]
    error_message: Mapped[str | None]
    raw_body: Mapped[str | None]
    text: Mapped[str | None]
    model_returned: Mapped[str | None]
    system_fingerprint: Mapped[str | None]
    finish_reason: Mapped[str | None]
    input_tokens: Mapped[int | None]
    output_tokens: Mapped[int | None]
    latency_ms: Mapped[float | None]
    queued_ms: Mapped[float | None]
    cost_usd: Mapped[float | None]
    cached_from: Mapped[int | None]
    cache_read_tokens: Mapped[int | None]
    cache_write_tokens: Mapped[int | None]
    created_at: Mapped[datetime]


class Verdict(Base):
    """The parsed reading of one reply: the judge's answer in presented and canonical order."""

    __table__ = tables.verdict
    id: Mapped[int]
    job_id: Mapped[int]
    attempt: Mapped[int]
    request_id: Mapped[int]
    parse_status: Mapped[str]
    parse_method: Mapped[str | None]
    failure_kind: Mapped[str | None]
    value_presented: Mapped[str | None]
    value_canonical: Mapped[str | None]
    score: Mapped[float | None]
    rationale: Mapped[str | None]
    created_at: Mapped[datetime]


class ClauseVerdict(Base):
    """A judge's verdict on one rubric clause, within a clause-protocol verdict."""

    __table__ = tables.clause_verdict
    id: Mapped[int]
    verdict_id: Mapped[int]
    clause_id: Mapped[int]
    met: Mapped[bool | None]
    rationale: Mapped[str | None]
    by_checker: Mapped[bool]


# ---------------------------------------------------------------- rubric repair


class ClauseChecker(Base):
    """One editor proposal of a deterministic checker for one clause (`repair checkers`): the
    checker and its parameters (kind None: the editor said "none"), its agreement with the judge
    majority on the iteration's development items, the threshold, and whether it was kept. A kept
    checker answers its clause in clause campaigns on `rubric_version_id` created after it was kept."""

    __table__ = tables.clause_checker
    id: Mapped[int]
    iteration: Mapped[str]
    rubric_version_id: Mapped[int]
    clause_key: Mapped[str]
    kind: Mapped[str | None]
    params: Mapped[dict[str, Any]]
    reason: Mapped[str | None]
    error: Mapped[str | None]
    agreement: Mapped[float | None]
    n_items: Mapped[int]
    threshold: Mapped[float]
    kept: Mapped[bool]
    created_at: Mapped[datetime]
    kappa: Mapped[float | None]
    lower_bound: Mapped[float | None]
    n_met: Mapped[int | None]
    n_not_met: Mapped[int | None]
    sensitivity: Mapped[float | None]
    specificity: Mapped[float | None]
    decision: Mapped[str | None]
    decision_reason: Mapped[str | None]
    warning: Mapped[str | None]
    rule: Mapped[dict[str, Any] | None]


class RepairIteration(Base):
    """One rubric-repair iteration (`judgepanel repair run`): its inputs, the criterion declared
    before any evaluation call, each step's state, the campaigns and rubric versions it made, and
    the selection, rewrites and comparison as JSON. Editor calls are jobs of an `editor` campaign,
    stored (request, response, verdict) like judge calls."""

    __table__ = tables.repair_iteration
    id: Mapped[int]
    name: Mapped[str]
    dataset_id: Mapped[int]
    inputs: Mapped[dict[str, Any]]
    criterion: Mapped[str | None]
    criterion_at: Mapped[datetime | None]
    steps: Mapped[dict[str, Any]]
    campaigns: Mapped[dict[str, Any]]
    original_version_id: Mapped[int]
    contested_version_id: Mapped[int | None]
    control_version_id: Mapped[int | None]
    control_seed: Mapped[int]
    selection: Mapped[dict[str, Any] | None]
    rewrites: Mapped[dict[str, Any] | None]
    comparison: Mapped[dict[str, Any] | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class Alignment(Base):
    """One human-supervised judge alignment (`judgepanel align run`): few-shot examples, revised
    instructions or a configuration grid, every choice made on development items only. Its calls
    are jobs of ordinary campaigns (named in `campaigns`); the row keeps the inputs, each step's
    state, the choices with their development scores, the judge templates and the comparison."""

    __table__ = tables.alignment
    id: Mapped[int]
    name: Mapped[str]
    dataset_id: Mapped[int]
    method: Mapped[str]
    inputs: Mapped[dict[str, Any]]
    steps: Mapped[dict[str, Any]]
    campaigns: Mapped[dict[str, Any]]
    choices: Mapped[dict[str, Any] | None]
    templates: Mapped[dict[str, Any] | None]
    comparison: Mapped[dict[str, Any] | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


# ---------------------------------------------------------------- re-annotation planning


class Allocation(Base):
    """A seeded assignment of items to secondary annotators (`plan allocate`)."""

    __table__ = tables.allocation
    id: Mapped[int]
    name: Mapped[str]
    dataset_id: Mapped[int]
    design: Mapped[str]
    coverage: Mapped[float]
    seed: Mapped[int]
    params: Mapped[dict[str, Any]]
    created_at: Mapped[datetime]


class AllocationItem(Base):
    """One item assigned to one secondary annotator in an allocation."""

    __table__ = tables.allocation_item
    id: Mapped[int]
    allocation_id: Mapped[int]
    annotator: Mapped[str]
    item_id: Mapped[int]
    position: Mapped[int]


# ---------------------------------------------------------------- scale and cost


class RateBucket(Base):
    """A token bucket shared through the database by every worker of a judge (one row per judge and
    limit kind, e.g. `rpm:openai:gpt-4o-mini`): `tokens` left at `updated_at` (epoch seconds)."""

    __table__ = tables.rate_bucket
    id: Mapped[int]
    key: Mapped[str]
    capacity: Mapped[float]
    refill_per_s: Mapped[float]
    tokens: Mapped[float]
    updated_at: Mapped[float]


class BudgetHold(Base):
    """Money one lease owner (a run or a worker) has reserved under its campaign's cap for calls in
    flight or replies not yet stored; `expires` is renewed with the owner's leases."""

    __table__ = tables.budget_hold
    id: Mapped[int]
    campaign_id: Mapped[int]
    owner: Mapped[str]
    amount_usd: Mapped[float]
    expires: Mapped[datetime | None]


class ProviderBatch(Base):
    """One submission to a provider's batch API; polling resumes from this row."""

    __table__ = tables.provider_batch
    id: Mapped[int]
    campaign_id: Mapped[int]
    judge_id: Mapped[int]
    provider: Mapped[str]
    batch_id: Mapped[str | None]
    input_file_id: Mapped[str | None]
    output_file_id: Mapped[str | None]
    status: Mapped[str]
    request_counts: Mapped[dict[str, Any]]
    error: Mapped[str | None]
    submitted_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    created_at: Mapped[datetime]


class ProviderBatchJob(Base):
    """A job carried by a batch, under the `custom_id` the provider echoes back."""

    __table__ = tables.provider_batch_job
    id: Mapped[int]
    batch_pk: Mapped[int]
    job_id: Mapped[int]
    custom_id: Mapped[str]
    attempt: Mapped[int]
    request_hash: Mapped[str]
    state: Mapped[str]


class RequestClaim(Base):
    """A request hash being asked right now (issue 28 §2): identical requests of the same run or of
    a concurrent one wait for this owner's answer instead of paying for it again. Dropped with the
    answer (or when the owner gives up the job); taken over once `expires` passes or the owner is
    dead (`store.liveness`)."""

    __table__ = tables.request_claim
    request_hash: Mapped[str]
    owner: Mapped[str]
    expires: Mapped[datetime]
    created_at: Mapped[datetime]
