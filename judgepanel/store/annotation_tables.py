"""The annotation queues' tables (issue 32), declared once in SQLAlchemy Core.

Boundary: table definitions only; the queries that read and write them live in
`store.annotation`. The tables sit on their own `MetaData` (with the naming convention of
`store.tables`) and point at the results database's tables through their Core `Column` objects,
so they need neither the ORM nor a change to `store.models`; `store.migrate` checks them against
the migrations together with the models, `store.schema_doc` describes them, and `db upgrade`
grants the annotation role (`ANNOTATOR_ROLE`) its writes on `WRITABLE` only.

A label given in a queue is an ordinary `label` (pointwise) or `pair_label` (pairwise) row of the
annotator; these tables hold what is specific to a queue: its options, its units in the order it
hands them out, the invited annotators (a token's SHA-256, never the token), the seats each unit
has (`per_item` of them; a seat is what an annotator reserves, the `slot` of the JSON API) and the
history of every label, edit and skip (`annotation_event`), so earlier values stay queryable.
"""

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
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)

from judgepanel.store import tables as base
from judgepanel.store.tables import NAMING, utcnow

metadata = MetaData(naming_convention=NAMING)

# the PostgreSQL role `annotate serve` works as: SELECT everywhere, the writes of WRITABLE only
ANNOTATOR_ROLE = "judgepanel_annotator"

# A deliberate mirror (issue 31 §4): each table is spelt out column by column, as the migrations
# check it, so these declarations share their shape (and their `sqlalchemy` imports) with those of
# the other table modules (`store.tables.*`, `store.annotation_tables`); a column helper would hide
# from a reader what the schema is.
annotation_queue = Table(
    "annotation_queue",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column("name", String(200), nullable=False, unique=True, doc="queue name (unique)"),
    Column(
        "dataset_id",
        ForeignKey(base.dataset.c.id, ondelete="CASCADE"),
        nullable=False,
        doc="the dataset whose items are labelled",
    ),
    Column("kind", String(10), nullable=False, doc="pointwise (a score per item) or pairwise (A, B or tie)"),
    Column(
        "dimension",
        String(100),
        nullable=False,
        default="",
        doc="the dimension labelled; '' when it has none",
    ),
    Column("scale", JSON, nullable=False, doc="the values an annotator may give, as a JSON list of texts"),
    Column(
        "rubric_version_id",
        ForeignKey(base.rubric_version.c.id, ondelete="SET NULL"),
        doc="the rubric version whose clauses the page shows as a checklist, if any",
    ),
    Column("instructions", Text, doc="the instructions shown above every item"),
    Column("source", String(20), nullable=False, doc="where the units came from: allocation, items or pairs"),
    Column(
        "item_order",
        String(20),
        nullable=False,
        doc="random, stratified, disagreement (judges disagreeing most first) or allocation",
    ),
    Column(
        "allocation_id",
        ForeignKey(base.allocation.c.id, ondelete="SET NULL"),
        doc="the `plan allocate` allocation the units and assignments came from",
    ),
    Column(
        "pair_set_id",
        ForeignKey(base.pair_set.c.id, ondelete="CASCADE"),
        doc="the pair set of a pairwise queue",
    ),
    Column("seed", Integer, nullable=False, doc="seed of the order and of the left/right sides shown"),
    Column("per_item", Integer, nullable=False, doc="distinct annotators each unit needs"),
    Column("reserve_minutes", Float, nullable=False, doc="how long an opened unit stays reserved"),
    Column("access", String(10), nullable=False, doc="any (every invited annotator) or assigned"),
    Column("group_name", String(100), nullable=False, doc="the annotator group the queue's annotators form"),
    Column("epsilon", Float, nullable=False, doc="the alt-test margin the certification state uses"),
    Column("q", Float, nullable=False, doc="the false discovery rate of the certification state"),
    Column("scorer", String(20), nullable=False, doc="the alt-test scorer: accuracy or neg-rmse"),
    Column(
        "stop_when_decided",
        Boolean,
        nullable=False,
        default=False,
        server_default=false(),
        doc="stop handing out units once every judge is decided",
    ),
    Column("status", String(10), nullable=False, default="open", doc="open, or closed (no more labels)"),
    Column(
        "decided_at",
        DateTime,
        doc="when the certification state first had every judge decided (UTC), for --stop-when-decided",
    ),
    Column("created_at", DateTime, nullable=False, default=utcnow, doc="when the queue was created (UTC)"),
    CheckConstraint("kind IN ('pointwise', 'pairwise')", name="kind"),
    CheckConstraint("access IN ('any', 'assigned')", name="access"),
    CheckConstraint("status IN ('open', 'closed')", name="status"),
    CheckConstraint("per_item >= 1", name="per_item"),
    info={
        "doc": "An annotation queue (`annotate create`): which items, who labels them, how many "
        "labels each needs, and the certification it feeds."
    },
)

annotation_unit = Table(
    "annotation_unit",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column(
        "queue_id", ForeignKey(annotation_queue.c.id, ondelete="CASCADE"), nullable=False, doc="the queue"
    ),
    Column("position", Integer, nullable=False, doc="order in which the queue hands the unit out"),
    Column("item_id", ForeignKey(base.item.c.id, ondelete="CASCADE"), doc="the item (pointwise queues)"),
    Column("pair_id", ForeignKey(base.pair.c.id, ondelete="CASCADE"), doc="the pair (pairwise queues)"),
    UniqueConstraint("queue_id", "position"),
    info={"doc": "One thing to label in a queue (an item or a pair), in the queue's order."},
)

annotation_member = Table(
    "annotation_member",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column(
        "queue_id", ForeignKey(annotation_queue.c.id, ondelete="CASCADE"), nullable=False, doc="the queue"
    ),
    Column(
        "annotator_id",
        ForeignKey(base.annotator.c.id, ondelete="CASCADE"),
        nullable=False,
        doc="the annotator (kind human, the queue's group) whose labels the member gives",
    ),
    Column("name", String(200), nullable=False, doc="the annotator's name as invited"),
    Column(
        "token_hash",
        String(64),
        nullable=False,
        unique=True,
        doc="SHA-256 of the member's current token (the token itself is never stored)",
    ),
    Column("revoked_at", DateTime, doc="when the token was revoked (UTC); null while it works"),
    Column("created_at", DateTime, nullable=False, default=utcnow, doc="when first invited (UTC)"),
    Column(
        "invited_at", DateTime, nullable=False, default=utcnow, doc="when the current token was made (UTC)"
    ),
    UniqueConstraint("queue_id", "name"),
    info={"doc": "An annotator invited to a queue, with the hash of their link's token."},
)

annotation_slot = Table(
    "annotation_slot",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id: the `slot` of the JSON API"),
    Column(
        "queue_id", ForeignKey(annotation_queue.c.id, ondelete="CASCADE"), nullable=False, doc="the queue"
    ),
    Column("unit_id", ForeignKey(annotation_unit.c.id, ondelete="CASCADE"), nullable=False, doc="the unit"),
    Column("position", Integer, nullable=False, doc="the unit's position (the order seats are handed out)"),
    Column("seat", Integer, nullable=False, doc="0 … per_item − 1: which of the unit's labels this is"),
    Column("assignee", String(200), doc="with access assigned: the only annotator who may take the seat"),
    Column(
        "member_id",
        ForeignKey(annotation_member.c.id, ondelete="CASCADE"),
        doc="who holds the seat (reserved or done); null while free",
    ),
    Column("state", String(10), nullable=False, default="free", doc="free, reserved or done"),
    Column("shown_order", String(2), doc="pairs: AB or BA, the left/right order the holder was shown"),
    Column("reserved_at", DateTime, doc="when the holder opened the unit (UTC)"),
    Column("reserved_until", DateTime, doc="when the reservation lapses and the seat goes back (UTC)"),
    Column("done_at", DateTime, doc="when the holder's label arrived (UTC)"),
    UniqueConstraint("unit_id", "seat"),
    UniqueConstraint("unit_id", "member_id"),
    CheckConstraint("state IN ('free', 'reserved', 'done')", name="state"),
    Index("ix_annotation_slot_queue_id_state", "queue_id", "state", "position"),
    Index("ix_annotation_slot_member_id", "member_id", "state"),
    info={
        "doc": "One of the labels a unit needs (`per_item` seats per unit): free, reserved by an "
        "annotator until a time, or done. Two annotators never hold one seat, nor one annotator two "
        "seats of a unit."
    },
)

annotation_event = Table(
    "annotation_event",
    metadata,
    Column("id", Integer, primary_key=True, doc="row id"),
    Column(
        "queue_id", ForeignKey(annotation_queue.c.id, ondelete="CASCADE"), nullable=False, doc="the queue"
    ),
    Column("unit_id", ForeignKey(annotation_unit.c.id, ondelete="CASCADE"), nullable=False, doc="the unit"),
    Column("slot_id", ForeignKey(annotation_slot.c.id, ondelete="CASCADE"), doc="the seat labelled"),
    Column(
        "member_id",
        ForeignKey(annotation_member.c.id, ondelete="CASCADE"),
        nullable=False,
        doc="the annotator",
    ),
    Column("kind", String(10), nullable=False, doc="label (first), edit (a change) or skip"),
    Column("value", String(20), doc="the label in canonical order (pairs: A, B or T); null for a skip"),
    Column("presented", String(20), doc="pairs: the side picked as shown (A = left, B = right, T)"),
    Column("shown_order", String(2), doc="pairs: AB or BA, the order shown"),
    Column("comment", Text, doc="the annotator's optional comment"),
    Column("skip_reason", Text, doc="why the annotator skipped the unit"),
    Column("seconds", Float, doc="seconds from opening the unit to this label"),
    Column("created_at", DateTime, nullable=False, default=utcnow, doc="when it arrived (UTC)"),
    CheckConstraint("kind IN ('label', 'edit', 'skip')", name="kind"),
    Index("ix_annotation_event_member_id", "member_id", "unit_id"),
    Index("ix_annotation_event_queue_id", "queue_id", "created_at"),
    info={
        "doc": "Every label, edit and skip given in a queue, in arrival order: the `label` / "
        "`pair_label` row holds the latest value, this table every earlier one."
    },
)

# What the annotation role may write, besides reading everything: table -> (may insert, the
# columns it may update). No DELETE anywhere, no other table, no other column.
WRITABLE: dict[str, tuple[bool, tuple[str, ...]]] = {
    "label": (True, ("value_num", "value_text", "rationale")),
    "pair_label": (True, ("value",)),
    "annotation_slot": (
        False,
        ("member_id", "state", "shown_order", "reserved_at", "reserved_until", "done_at"),
    ),
    "annotation_event": (True, ()),
    "annotation_queue": (False, ("decided_at",)),
}
