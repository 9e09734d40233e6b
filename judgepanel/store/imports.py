"""Writing parsed datasets: one transaction per import, so a failure leaves the database as it was.

Rules (all checked inside the transaction):
- the same file(s) imported again under the same name change nothing;
- a different import under an existing dataset name is refused unless `replace=True`;
- label files may be added to a dataset that so far holds only items (`import-items`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, delete, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from judgepanel.datasets.alttest import LLMAnnotations
from judgepanel.datasets.records import LabelRecord, ParsedDataset, check_parsed, check_text
from judgepanel.errors import BadInput
from judgepanel.store import tables as t
from judgepanel.store.engine import session_scope
from judgepanel.store.models import Annotator, Dataset, Item, Label, PairSet, table_of, utcnow
from judgepanel.store.queries import (
    dataset_by_name,
    label_dimensions,
    record_pair_set,
    scored_annotators,
    stale_annotators,
)
from judgepanel.store.widths import check_widths

CHUNK = 5_000
# imports whose dataset a label file may join (`data import-items`, `import-inspect`, `import-promptfoo`)
LABELLABLE = ("items", "inspect", "promptfoo")


@dataclass(frozen=True)
class ImportResult:
    dataset: str
    unchanged: bool
    items_added: int
    labels_added: int
    annotators: int
    skipped: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "unchanged": self.unchanged,
            "items_added": self.items_added,
            "labels_added": self.labels_added,
            "annotators": self.annotators,
            "skipped": self.skipped,
        }


def _record(parsed: ParsedDataset) -> dict[str, Any]:
    return {
        "kind": parsed.kind,
        "sha256": parsed.source_hash,
        "files": parsed.meta.get("files", []),
        "at": utcnow().isoformat(timespec="seconds"),
        "skipped": parsed.skipped,
    }


def _chunks(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return [rows[i : i + CHUNK] for i in range(0, len(rows), CHUNK)]


def import_parsed(engine: Engine, name: str, parsed: ParsedDataset, *, replace: bool = False) -> ImportResult:
    if not name.strip():
        raise BadInput("a dataset name must not be empty")
    check_text("the dataset name", name)
    check_parsed(parsed)  # refused before the transaction starts: the database stays as it was
    _check_widths(name, parsed)
    try:
        with session_scope(engine) as s:
            return _import(s, name, parsed, replace)
    except IntegrityError as exc:
        raise BadInput(
            f"cannot import into {name!r}: it conflicts with stored rows ({exc.orig.__class__.__name__}); "
            "a dataset used by a campaign cannot be replaced"
        ) from exc


def _check_widths(name: str, parsed: ParsedDataset) -> None:
    """The column widths the schema documents, on SQLite too (`store.widths`)."""
    check_widths(t.dataset, [{"name": name}], "the dataset name")
    check_widths(
        t.item,
        (
            {"external_id": i.external_id, "group_key": i.group_key, "system": i.system, "split": i.split}
            for i in parsed.items
        ),
        "an item",
    )
    check_widths(t.annotator, ({"name": a.name, "group": a.group} for a in parsed.annotators), "an annotator")
    check_widths(t.label, ({"dimension": lb.dimension} for lb in parsed.labels), "a label")


def _import(s: Session, name: str, parsed: ParsedDataset, replace: bool) -> ImportResult:
    ds = s.scalar(select(Dataset).where(Dataset.name == name))
    if ds is not None:
        imports: list[dict[str, Any]] = list(ds.meta.get("imports", []))
        if any(i["sha256"] == parsed.source_hash for i in imports):
            return ImportResult(name, True, 0, 0, 0, parsed.skipped)
        # label files may join a dataset of items alone, or of items an imported grader judged
        adding_labels = parsed.items_optional and all(i["kind"] in LABELLABLE for i in imports)
        if adding_labels:
            pass
        elif not replace:
            last = imports[-1] if imports else {"kind": ds.kind, "files": []}
            raise BadInput(
                f"dataset {name!r} already holds a different {last['kind']} import "
                f"({', '.join(last.get('files', [])) or 'unknown file'}); pass --replace to replace it"
            )
        elif parsed.items_optional:
            # replace the labels, keep the items (campaigns may point at them)
            s.execute(delete(Annotator).where(Annotator.dataset_id == ds.id))
            imports = [i for i in imports if i["kind"] in LABELLABLE]
        else:
            s.delete(ds)
            s.flush()
            ds = None
            imports = []
    else:
        imports = []
    if ds is None:
        ds = Dataset(name=name, kind=parsed.kind, source_hash=parsed.source_hash, meta={})
        s.add(ds)
        s.flush()
    ds.meta = {
        **{k: v for k, v in parsed.meta.items() if k != "files"},
        **{k: v for k, v in ds.meta.items() if k not in ("imports",)},
        "imports": [*imports, _record(parsed)],
    }
    ds.source_hash = parsed.source_hash

    existing = dict(s.execute(select(Item.external_id, Item.id).where(Item.dataset_id == ds.id)).all())
    if existing and not parsed.items_optional:
        raise BadInput(f"dataset {name!r} already has items; pass --replace")
    next_pos = len(existing)
    new_items: list[dict[str, Any]] = []
    for it in parsed.items:
        if it.external_id in existing:
            continue
        new_items.append(
            {
                "dataset_id": ds.id,
                "external_id": it.external_id,
                "position": next_pos + len(new_items),
                "group_key": it.group_key,
                "input": it.input,
                "output": it.output,
                "system": it.system,
                "split": it.split,
                "meta": it.meta,
            }
        )
    for chunk in _chunks(new_items):
        s.execute(insert(table_of(Item)), chunk)
    item_ids = dict(s.execute(select(Item.external_id, Item.id).where(Item.dataset_id == ds.id)).all())

    annotator_ids: dict[str, int] = {}
    stored = {a.name: a for a in s.scalars(select(Annotator).where(Annotator.dataset_id == ds.id))}
    for a in parsed.annotators:
        prev = stored.get(a.name)
        if prev is None:
            prev = Annotator(dataset_id=ds.id, name=a.name, kind=a.kind, group=a.group)
            s.add(prev)
            s.flush()
        elif (prev.kind, prev.group) != (a.kind, a.group):
            raise BadInput(
                f"annotator {a.name!r} of {name!r} is {prev.kind}/{prev.group}, the file says {a.kind}/{a.group}"
            )
        annotator_ids[a.name] = prev.id

    n_labels = _insert_labels(s, parsed.labels, item_ids, annotator_ids, rationales=True)
    return ImportResult(name, False, len(new_items), n_labels, len(annotator_ids), parsed.skipped)


def _insert_labels(
    s: Session,
    labels: Sequence[LabelRecord],
    item_ids: Mapping[str, int],
    annotator_ids: Mapping[str, int],
    *,
    rationales: bool,
) -> int:
    """Insert `labels` (their items and annotators by external id and name) in chunks; without
    their rationales unless `rationales`. The number inserted."""
    rows = [
        {
            "item_id": item_ids[lb.item_external_id],
            "annotator_id": annotator_ids[lb.annotator],
            "dimension": lb.dimension,
            "value_num": lb.value_num,
            "value_text": lb.value_text,
            "rationale": lb.rationale if rationales else None,
        }
        for lb in labels
    ]
    for chunk in _chunks(rows):
        s.execute(insert(table_of(Label)), chunk)
    return len(rows)


# ---------------------------------------------------------------- LLM annotations attached to a dataset


@dataclass(frozen=True)
class AttachResult:
    dataset: str
    unchanged: bool
    annotators: int
    labels_added: int
    stale_pair_sets: list[str]  # pair sets to re-derive with `data pairs … --replace`

    def as_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "unchanged": self.unchanged,
            "items_added": 0,
            "labels_added": self.labels_added,
            "annotators": self.annotators,
            "skipped": {},
            "stale_pair_sets": self.stale_pair_sets,
        }


def attach_llm_annotations(engine: Engine, dataset: str, panel: LLMAnnotations) -> AttachResult:
    """Add a panel's LLMs to ``dataset`` as annotators of kind llm (group llm), their labels on
    the items the instance ids name. All or nothing: an unknown item or dimension, or an LLM name
    the dataset already has, refuses the whole file. Pair sets of the dataset made before are
    recorded with the annotators they were derived from, so reading them is refused until re-derived."""
    check_widths(t.annotator, ({"name": a.name, "group": a.group} for a in panel.annotators), panel.file)
    check_widths(t.label, ({"dimension": lb.dimension} for lb in panel.labels), panel.file)
    with session_scope(engine) as s:
        ds = dataset_by_name(s, dataset)
        imports: list[dict[str, Any]] = list(ds.meta.get("imports", []))
        if any(i["sha256"] == panel.source_hash for i in imports):
            return AttachResult(dataset, True, 0, 0, [])
        taken = set(s.scalars(select(Annotator.name).where(Annotator.dataset_id == ds.id)))
        clash = sorted(taken & {a.name for a in panel.annotators})
        if clash:
            raise BadInput(f"{panel.file}: {dataset!r} already has annotators {', '.join(clash)}")
        item_ids = dict(s.execute(select(Item.external_id, Item.id).where(Item.dataset_id == ds.id)).all())
        unknown = [ext for ext in panel.instances if ext not in item_ids]
        if unknown:
            raise BadInput(
                f"{panel.file}: {len(unknown)} item(s) named by instance ids are not in {dataset!r}, "
                f"e.g. {panel.instances[unknown[0]]!r} (item {unknown[0]!r})"
            )
        dims = set(label_dimensions(s, ds))
        odd = sorted({lb.dimension for lb in panel.labels} - dims) if dims else []
        if odd:
            raise BadInput(
                f"{panel.file}: dimension(s) {', '.join(map(repr, odd))} not in {dataset!r} "
                f"(known: {', '.join(sorted(dims))})"
            )
        before = scored_annotators(s, ds.id)
        sets = s.scalars(select(PairSet).where(PairSet.dataset_id == ds.id).order_by(PairSet.id)).all()
        for ps in sets:
            if str(ps.id) not in ds.meta.get("pair_sets", {}):
                record_pair_set(ds, ps.id, before)
        ids: dict[str, int] = {}
        for a in panel.annotators:
            row = Annotator(dataset_id=ds.id, name=a.name, kind=a.kind, group=a.group)
            s.add(row)
            s.flush()
            ids[a.name] = row.id
        n_labels = _insert_labels(s, panel.labels, item_ids, ids, rationales=False)
        ds.meta = {
            **ds.meta,
            "imports": [
                *imports,
                {
                    "kind": "alttest-llm",
                    "sha256": panel.source_hash,
                    "files": [panel.file],
                    "at": utcnow().isoformat(timespec="seconds"),
                    "skipped": {},
                },
            ],
        }
        s.flush()
        stale = [ps.name for ps in sets if stale_annotators(s, ps)]
        return AttachResult(dataset, False, len(ids), n_labels, stale)
