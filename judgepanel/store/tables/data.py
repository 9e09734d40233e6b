"""What was imported and what judges are asked about: datasets, items, annotators and their labels,
pair sets with their pairs and derived pair labels, and rubrics with their versions and clauses.
Declared once here; `store.models` maps its ORM classes onto these tables."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
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
)

from judgepanel.store.tables.base import metadata, utcnow

# A deliberate mirror (issue 31 §4): each table is spelt out column by column, as the migrations
# check it, so these declarations share their shape (and their `sqlalchemy` imports) with those of
# the other table modules (`store.tables.*`, `store.annotation_tables`); a column helper would hide
# from a reader what the schema is.
dataset = Table(
    "dataset",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column(
        "name",
        String(200),
        nullable=False,
        unique=True,
        doc="dataset name, as given to `data import-*` (unique)",
    ),
    Column(
        "kind",
        String(40),
        nullable=False,
        doc="what the importer read: summeval, mtbench, alttest, labels, items …",
    ),
    Column(
        "source_hash",
        String(64),
        nullable=False,
        doc="sha256 of the imported file(s): the same file again is a no-op, another one is refused",
    ),
    Column(
        "meta", JSON, nullable=False, default=dict, doc="importer details as JSON (files, counts, options)"
    ),
    Column("created_at", DateTime, nullable=False, default=utcnow, doc="when the dataset was imported (UTC)"),
)


item = Table(
    "item",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column(
        "dataset_id",
        Integer,
        ForeignKey("dataset.id", ondelete="CASCADE"),
        nullable=False,
        doc="the dataset the item belongs to",
    ),
    Column(
        "external_id",
        String(300),
        nullable=False,
        doc="the item's id in the imported file (unique within its dataset)",
    ),
    Column("position", Integer, nullable=False, doc="file order, for reproducible pairs and splits"),
    Column(
        "group_key",
        String(300),
        doc="the group the item belongs to, e.g. its source article or question; pairs are drawn within a group",
    ),
    Column("input", Text, doc="the context the candidate answers (source article, question)"),
    Column("output", Text, doc="the candidate text being judged"),
    Column("system", String(200), doc="the system (model) that produced the candidate"),
    Column(
        "split",
        String(40),
        doc="split name assigned by `data split` (e.g. dev, eval), or null",
    ),
    Column("meta", JSON, nullable=False, default=dict, doc="anything else the importer kept, as JSON"),
    UniqueConstraint("dataset_id", "external_id"),
    Index("ix_item_dataset_position", "dataset_id", "position"),
)


annotator = Table(
    "annotator",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column(
        "dataset_id",
        Integer,
        ForeignKey("dataset.id", ondelete="CASCADE"),
        nullable=False,
        doc="the dataset whose labels this annotator gave",
    ),
    Column("name", String(200), nullable=False, doc="annotator name (unique within its dataset)"),
    Column("kind", String(10), nullable=False, default="human", doc="human or llm"),
    Column("group", String(100), doc="annotator group such as expert or crowd"),
    CheckConstraint("kind IN ('human', 'llm')", name="kind"),
    UniqueConstraint("dataset_id", "name"),
)


label = Table(
    "label",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column(
        "item_id", Integer, ForeignKey("item.id", ondelete="CASCADE"), nullable=False, doc="the item labelled"
    ),
    Column(
        "annotator_id",
        Integer,
        ForeignKey("annotator.id", ondelete="CASCADE"),
        nullable=False,
        doc="who gave the label",
    ),
    Column(
        "dimension",
        String(100),
        nullable=False,
        default="",
        doc="rubric dimension; '' when the task has one",
    ),
    Column("value_num", Float, doc="the label as a number, where it is one"),
    Column("value_text", Text, doc="the label exactly as given"),
    Column("rationale", Text, doc="the annotator's rationale, if the dataset has one"),
    UniqueConstraint("item_id", "annotator_id", "dimension"),
    Index("ix_label_annotator", "annotator_id"),
)


pair_set = Table(
    "pair_set",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column("name", String(200), nullable=False, unique=True, doc="pair set name (unique)"),
    Column(
        "dataset_id",
        Integer,
        ForeignKey("dataset.id", ondelete="CASCADE"),
        nullable=False,
        doc="the dataset the pairs are drawn from",
    ),
    Column("seed", Integer, nullable=False, doc="seed of the sample"),
    Column("sample", Integer, doc="how many pairs were asked for; null for all"),
    Column(
        "tie_eps",
        Float,
        nullable=False,
        doc="score difference below which a human preference counts as a tie",
    ),
    Column("pairs_total", Integer, nullable=False, doc="within-group pairs before sampling"),
    Column("created_at", DateTime, nullable=False, default=utcnow, doc="when the pair set was made (UTC)"),
)


pair = Table(
    "pair",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column(
        "pair_set_id",
        Integer,
        ForeignKey("pair_set.id", ondelete="CASCADE"),
        nullable=False,
        doc="the pair set",
    ),
    Column("position", Integer, nullable=False, doc="order in the seeded sample"),
    Column(
        "item_a_id",
        Integer,
        ForeignKey("item.id", ondelete="CASCADE"),
        nullable=False,
        doc="the first item (A) in canonical order",
    ),
    Column(
        "item_b_id",
        Integer,
        ForeignKey("item.id", ondelete="CASCADE"),
        nullable=False,
        doc="the second item (B) in canonical order",
    ),
    UniqueConstraint("pair_set_id", "position"),
    UniqueConstraint("pair_set_id", "item_a_id", "item_b_id"),
)


pair_label = Table(
    "pair_label",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column("pair_id", Integer, ForeignKey("pair.id", ondelete="CASCADE"), nullable=False, doc="the pair"),
    Column(
        "annotator_id",
        Integer,
        ForeignKey("annotator.id", ondelete="CASCADE"),
        nullable=False,
        doc="the annotator whose item labels gave this preference",
    ),
    Column("value", String(1), nullable=False, doc="A, B or T (tie), in the pair's canonical order"),
    UniqueConstraint("pair_id", "annotator_id"),
    CheckConstraint("value IN ('A', 'B', 'T')", name="value"),
)


rubric = Table(
    "rubric",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column("name", String(200), nullable=False, unique=True, doc="rubric name (unique)"),
    Column(
        "created_at", DateTime, nullable=False, default=utcnow, doc="when the first version was added (UTC)"
    ),
)


rubric_version = Table(
    "rubric_version",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column(
        "rubric_id", Integer, ForeignKey("rubric.id", ondelete="CASCADE"), nullable=False, doc="the rubric"
    ),
    Column("version", Integer, nullable=False, doc="version number, 1, 2, … within the rubric"),
    Column(
        "parent_id",
        Integer,
        ForeignKey("rubric_version.id"),
        doc="the version this one was derived from",
    ),
    Column(
        "author",
        String(20),
        nullable=False,
        default="manual",
        doc="manual (added from a file) or editor (proposed by an editor model)",
    ),
    Column(
        "editor",
        String(500),
        doc="for author editor: the editor model's spec (never a key)",
    ),
    Column("change_note", Text, doc="what changed and why"),
    Column(
        "content_hash",
        String(64),
        nullable=False,
        doc="sha256 of the rubric document: adding identical content finds this version",
    ),
    Column(
        "body",
        JSON,
        nullable=False,
        doc="the whole rubric document as JSON (dimensions, criteria, anchors, clauses)",
    ),
    Column("created_at", DateTime, nullable=False, default=utcnow, doc="when the version was stored (UTC)"),
    UniqueConstraint("rubric_id", "version"),
    CheckConstraint("author IN ('manual', 'editor')", name="author"),
)


clause = Table(
    "clause",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column(
        "rubric_version_id",
        Integer,
        ForeignKey("rubric_version.id", ondelete="CASCADE"),
        nullable=False,
        doc="the rubric version",
    ),
    Column(
        "clause_key",
        String(100),
        nullable=False,
        doc="stable clause id such as coherence.3, kept across versions when the text is kept",
    ),
    Column("dimension", String(100), nullable=False, doc="the rubric dimension the clause belongs to"),
    Column("position", Integer, nullable=False, doc="order within its dimension"),
    Column("text", Text, nullable=False, doc="the clause as the judge sees it"),
    UniqueConstraint("rubric_version_id", "clause_key"),
)
