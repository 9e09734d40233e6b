"""The stored studies built on campaigns: rubric repair (iterations and clause checkers),
human-supervised alignment, and re-annotation planning (allocations and their items).
Declared once here; `store.models` maps its ORM classes onto these tables."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from judgepanel.store.tables.base import metadata, utcnow

# A deliberate mirror (issue 31 §4): each table is spelt out column by column, as the migrations
# check it, so these declarations share their shape (and their `sqlalchemy` imports) with those of
# the other table modules (`store.tables.*`, `store.annotation_tables`); a column helper would hide
# from a reader what the schema is.
clause_checker = Table(
    "clause_checker",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column("iteration", String(200), nullable=False, doc="the repair iteration that proposed it"),
    Column(
        "rubric_version_id",
        Integer,
        ForeignKey("rubric_version.id", ondelete="CASCADE"),
        nullable=False,
        doc="the rubric version whose clause it answers",
    ),
    Column("clause_key", String(200), nullable=False, doc="the clause id, e.g. format.1"),
    Column(
        "kind",
        String(20),
        doc="word_count | phrase | regex | language; null when the editor proposed none",
    ),
    Column("params", JSON, nullable=False, default=dict, doc="the checker's parameters"),
    Column("reason", Text, doc="the editor's reason"),
    Column("error", Text, doc="why the proposal is unusable (invalid parameters)"),
    Column(
        "agreement",
        Float,
        doc="share of development items with a judge majority where the checker says the same",
    ),
    Column("n_items", Integer, nullable=False, default=0, doc="development items with a judge majority"),
    Column("threshold", Float, nullable=False, doc="the agreement a proposal needed to be kept"),
    Column("kept", Boolean, nullable=False, default=False, doc="decision == kept"),
    Column(
        "created_at",
        DateTime,
        nullable=False,
        default=utcnow,
        doc="when decided; campaigns created later use a kept checker",
    ),
    # the keep rule's figures (issue 30 §3, migration 0011_checker_rule)
    Column("kappa", Float, doc="Cohen's κ between checker and judge majority"),
    Column("lower_bound", Float, doc="one-sided 95 % Clopper–Pearson lower bound of the agreement"),
    Column("n_met", Integer, doc="development items whose judge majority says met"),
    Column("n_not_met", Integer, doc="… says not met"),
    Column("sensitivity", Float, doc="checker met among majority met"),
    Column("specificity", Float, doc="checker not met among majority not met"),
    Column(
        "decision",
        String(40),
        doc="kept | refused | cannot be validated | unusable; null: decided by the old rule (recheck)",
    ),
    Column("decision_reason", Text, doc="the decision in words"),
    Column("warning", Text, doc="the checker's kind does not fit the clause's wording"),
    Column("rule", JSON, doc="the rule's settings: min_kappa, min_per_class, confidence"),
    UniqueConstraint("iteration", "clause_key"),
)


repair_iteration = Table(
    "repair_iteration",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column("name", String(200), nullable=False, unique=True, doc="iteration name (unique)"),
    Column("dataset_id", Integer, ForeignKey("dataset.id"), nullable=False, doc="the dataset repaired on"),
    Column(
        "inputs",
        JSON,
        nullable=False,
        doc="the iteration's inputs (judges, editor, splits, limits …) as JSON",
    ),
    Column(
        "criterion",
        String(500),
        doc="the success criterion, declared before any evaluation call",
    ),
    Column("criterion_at", DateTime, doc="when the criterion was declared (UTC)"),
    Column(
        "steps",
        JSON,
        nullable=False,
        default=dict,
        doc="each step's state (dev, select, rewrite, evaluate, compare) as JSON: done or pending",
    ),
    Column(
        "campaigns",
        JSON,
        nullable=False,
        default=dict,
        doc="the campaigns the iteration made, by role (dev, editor, original, …), as JSON",
    ),
    Column(
        "original_version_id",
        Integer,
        ForeignKey("rubric_version.id"),
        nullable=False,
        doc="the rubric version repaired",
    ),
    Column(
        "contested_version_id",
        Integer,
        ForeignKey("rubric_version.id"),
        doc="the version with the contested clauses rewritten",
    ),
    Column(
        "control_version_id",
        Integer,
        ForeignKey("rubric_version.id"),
        doc="the version with randomly drawn control clauses rewritten",
    ),
    Column("control_seed", Integer, nullable=False, doc="seed of the control draw"),
    Column("selection", JSON, doc="the contested and control clauses selected, as JSON"),
    Column("rewrites", JSON, doc="the editor's rewrites (old, new, reason), as JSON"),
    Column("comparison", JSON, doc="the before/after comparison, as JSON"),
    Column("created_at", DateTime, nullable=False, default=utcnow, doc="when the iteration started (UTC)"),
    Column("updated_at", DateTime, nullable=False, default=utcnow, doc="last change (UTC)"),
)


alignment = Table(
    "alignment",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column("name", String(200), nullable=False, unique=True, doc="alignment name (unique)"),
    Column("dataset_id", Integer, ForeignKey("dataset.id"), nullable=False, doc="the dataset aligned on"),
    Column("method", String(20), nullable=False, doc="fewshot | instructions | grid"),
    Column(
        "inputs",
        JSON,
        nullable=False,
        doc="the alignment's inputs (judge, human group, splits, method options, seed) as JSON",
    ),
    Column(
        "steps",
        JSON,
        nullable=False,
        default=dict,
        doc="each step's state (dev, align, evaluate, compare) as JSON: done or pending",
    ),
    Column(
        "campaigns",
        JSON,
        nullable=False,
        default=dict,
        doc="the campaigns the alignment made, by role (dev-original, eval-aligned, …), as JSON",
    ),
    Column(
        "choices",
        JSON,
        doc="what was chosen on development items (example ids, rounds, configurations, scores), as JSON",
    ),
    Column(
        "templates",
        JSON,
        doc="the original and aligned judge templates (instructions, examples, sha256), as JSON",
    ),
    Column("comparison", JSON, doc="the comparison on evaluation items (`align compare`), as JSON"),
    Column("created_at", DateTime, nullable=False, default=utcnow, doc="when the alignment started (UTC)"),
    Column("updated_at", DateTime, nullable=False, default=utcnow, doc="last change (UTC)"),
)


allocation = Table(
    "allocation",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column("name", String(200), nullable=False, unique=True, doc="allocation name (unique)"),
    Column(
        "dataset_id",
        Integer,
        ForeignKey("dataset.id", ondelete="CASCADE"),
        nullable=False,
        doc="the dataset whose items are assigned",
    ),
    Column("design", String(40), nullable=False, doc="the overlap design used"),
    Column("coverage", Float, nullable=False, doc="share of items given a secondary annotation"),
    Column("seed", Integer, nullable=False, doc="seed of the assignment"),
    Column("params", JSON, nullable=False, default=dict, doc="the design's parameters as JSON"),
    Column("created_at", DateTime, nullable=False, default=utcnow, doc="when the allocation was made (UTC)"),
)


allocation_item = Table(
    "allocation_item",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column(
        "allocation_id",
        Integer,
        ForeignKey("allocation.id", ondelete="CASCADE"),
        nullable=False,
        doc="the allocation",
    ),
    Column("annotator", String(200), nullable=False, doc="the annotator the item is assigned to"),
    Column("item_id", Integer, ForeignKey("item.id", ondelete="CASCADE"), nullable=False, doc="the item"),
    Column("position", Integer, nullable=False, doc="order in the annotator's list"),
    UniqueConstraint("allocation_id", "annotator", "item_id"),
)
