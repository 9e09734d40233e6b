"""Reading datasets, and the pair sets and duplicate flags derived from them."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, delete, func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from judgepanel.datasets.pairs import identical_vectors, preference, sample_pairs
from judgepanel.errors import BadInput, NotFound
from judgepanel.store import lookups
from judgepanel.store.engine import session_scope
from judgepanel.store.lookups import LABELS
from judgepanel.store.models import Annotator, Dataset, Item, Label, Pair, PairLabel, PairSet, table_of


def dataset_by_name(s: Session, name: str) -> Dataset:
    ds = s.scalar(select(Dataset).where(Dataset.name == name))
    if ds is None:
        known = ", ".join(s.scalars(select(Dataset.name).order_by(Dataset.name)).all()) or "none"
        raise NotFound(f"no dataset named {name!r} (known: {known})")
    return ds


def pair_set_by_name(s: Session, name: str) -> PairSet:
    ps = s.scalar(select(PairSet).where(PairSet.name == name))
    if ps is None:
        raise NotFound(
            f"no pair set named {name!r}: create it with `judgepanel data pairs DATASET --name {name}`"
        )
    return ps


# one home for the dimension and pair-set look-ups: `store.lookups` (Core; an ORM session and row
# serve as well, and a session's pending changes are flushed first, as for an ORM query)
label_dimensions = lookups.label_dimensions
resolve_dimension = lookups.resolve_dimension
scored_annotators = lookups.scored_annotators
stale_annotators = lookups.stale_annotators
check_pair_set_current = lookups.check_pair_set_current


def list_datasets(engine: Engine) -> list[dict[str, Any]]:
    with session_scope(engine) as s:
        out = []
        for ds in s.scalars(select(Dataset).order_by(Dataset.id)):
            n_items = s.query(Item).filter(Item.dataset_id == ds.id).count()
            n_labels = (
                s.query(Label).join(Item, Label.item_id == Item.id).filter(Item.dataset_id == ds.id).count()
            )
            out.append({"name": ds.name, "kind": ds.kind, "items": n_items, "labels": n_labels})
        return out


def list_pair_sets(engine: Engine, dataset: str | None = None) -> list[dict[str, Any]]:
    """Every pair set (of `dataset`, if given: `NotFound` when there is no such dataset): its
    dataset, how many pairs it holds of how many within-group pairs, how it was drawn (seed,
    sample) and how many pair labels it carries."""
    with session_scope(engine) as s:
        only = dataset_by_name(s, dataset).id if dataset is not None else None
        n_pairs = (
            select(func.count()).select_from(Pair).where(Pair.pair_set_id == PairSet.id).scalar_subquery()
        )
        n_labels = (
            select(func.count())
            .select_from(PairLabel)
            .join(Pair, Pair.id == PairLabel.pair_id)
            .where(Pair.pair_set_id == PairSet.id)
            .scalar_subquery()
        )
        query = (
            select(
                PairSet.name,
                Dataset.name,
                n_pairs,
                PairSet.pairs_total,
                PairSet.seed,
                PairSet.sample,
                n_labels,
            )
            .join(Dataset, Dataset.id == PairSet.dataset_id)
            .order_by(Dataset.id, PairSet.id)
        )
        rows = s.execute(query if only is None else query.where(Dataset.id == only))
        return [
            {
                "name": name,
                "dataset": dataset,
                "pairs": int(pairs),
                "pairs_total": int(total),
                "seed": seed,
                "sample": sample,
                "labels": int(labels),
            }
            for name, dataset, pairs, total, seed, sample, labels in rows
        ]


def _scores(s: Session, dataset_id: int) -> dict[int, dict[int, dict[str, float]]]:
    """annotator id -> item id -> dimension -> numeric score."""
    rows = s.execute(
        select(Label.annotator_id, Label.item_id, Label.dimension, Label.value_num)
        .join(Item, Label.item_id == Item.id)
        .where(Item.dataset_id == dataset_id, Label.value_num.is_not(None))
    )
    out: dict[int, dict[int, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for ann, item, dim, value in rows:
        assert value is not None
        out[ann][item][dim] = value
    return out


# ---------------------------------------------------------------- pair sets
#
# A pair set's labels are derived once, from the annotators that had scores at that moment. Each
# pair set records those annotators in its dataset's ``meta["pair_sets"]`` ({pair set id: [annotator
# ids]}); when annotators are attached later (`data import-alttest --into`), reading the pair set is
# refused until it is re-derived, so old and new raters are never silently mixed.


def record_pair_set(ds: Dataset, pair_set_id: int, annotator_ids: list[int]) -> None:
    """Note which annotators a pair set's labels were derived from (reassigns the JSON column)."""
    records = dict(ds.meta.get("pair_sets", {}))
    records[str(pair_set_id)] = sorted(annotator_ids)
    ds.meta = {**ds.meta, "pair_sets": records}


@dataclass(frozen=True)
class PairSetSummary:
    name: str
    pairs_total: int
    sampled: int
    labels: dict[str, int]
    labels_by_group: dict[str, dict[str, int]]
    unchanged: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "pairs_total": self.pairs_total,
            "sampled": self.sampled,
            "labels": self.labels,
            "labels_by_group": self.labels_by_group,
        }


def _summarise(s: Session, ps: PairSet, unchanged: bool) -> PairSetSummary:
    rows = s.execute(
        select(PairLabel.value, Annotator.group)
        .join(Pair, PairLabel.pair_id == Pair.id)
        .join(Annotator, PairLabel.annotator_id == Annotator.id)
        .where(Pair.pair_set_id == ps.id)
    )
    total: Counter[str] = Counter()
    by_group: dict[str, Counter[str]] = defaultdict(Counter)
    for value, group in rows:
        total[value] += 1
        by_group[group or "(none)"][value] += 1
    sampled = s.query(Pair).filter(Pair.pair_set_id == ps.id).count()
    return PairSetSummary(
        ps.name,
        ps.pairs_total,
        sampled,
        {k: total[k] for k in LABELS},
        {g: {k: c[k] for k in LABELS} for g, c in sorted(by_group.items())},
        unchanged,
    )


def create_pair_set(
    engine: Engine,
    dataset: str,
    name: str,
    *,
    seed: int = 42,
    sample: int | None = 1000,
    tie_eps: float = 1e-6,
    replace: bool = False,
) -> PairSetSummary:
    if not name.strip():
        raise BadInput("a pair set name must not be empty")
    if sample is not None and sample < 1:
        raise BadInput(f"--sample must be at least 1, got {sample}")
    if not math.isfinite(tie_eps):
        raise BadInput(f"--tie-eps must be a finite number, got {tie_eps}")
    if tie_eps < 0:
        raise BadInput(f"--tie-eps must not be negative, got {tie_eps}")
    try:
        with session_scope(engine) as s:
            ds = dataset_by_name(s, dataset)
            prev = s.scalar(select(PairSet).where(PairSet.name == name))
            if prev is not None:
                same = (prev.dataset_id, prev.seed, prev.sample, prev.tie_eps) == (
                    ds.id,
                    seed,
                    sample,
                    tie_eps,
                )
                stale = stale_annotators(s, prev)
                if same and not stale:
                    return _summarise(s, prev, unchanged=True)
                if same and replace:
                    # same pairs (campaigns may point at them), labels re-derived from every annotator
                    return _summarise(s, _derive_labels(s, ds, prev), unchanged=False)
                if stale and not replace:
                    check_pair_set_current(s, prev)
                if not replace:
                    raise BadInput(
                        f"pair set {name!r} exists with other parameters; pass --replace or choose another name"
                    )
                s.execute(delete(PairSet).where(PairSet.id == prev.id))
                s.flush()
            items = s.execute(
                select(Item.id, Item.group_key).where(Item.dataset_id == ds.id).order_by(Item.position)
            ).all()
            drawn = sample_pairs(list(items), seed=seed, sample=sample)
            ps = PairSet(
                name=name,
                dataset_id=ds.id,
                seed=seed,
                sample=sample,
                tie_eps=tie_eps,
                pairs_total=drawn.pairs_total,
            )
            s.add(ps)
            s.flush()
            if drawn.pairs:
                s.execute(
                    insert(table_of(Pair)),
                    [
                        {"pair_set_id": ps.id, "position": i, "item_a_id": a, "item_b_id": b}
                        for i, (a, b) in enumerate(drawn.pairs)
                    ],
                )
            return _summarise(s, _derive_labels(s, ds, ps), unchanged=False)
    except IntegrityError as exc:
        raise BadInput(f"pair set {name!r} is used by a campaign and cannot be replaced") from exc


def _derive_labels(s: Session, ds: Dataset, ps: PairSet) -> PairSet:
    """(Re-)derive every scored annotator's A/B/T on the pairs of ``ps`` and record who they were."""
    s.execute(
        delete(PairLabel).where(PairLabel.pair_id.in_(select(Pair.id).where(Pair.pair_set_id == ps.id)))
    )
    pairs = s.execute(
        select(Pair.id, Pair.item_a_id, Pair.item_b_id)
        .where(Pair.pair_set_id == ps.id)
        .order_by(Pair.position)
    ).all()
    scores = _scores(s, ds.id)
    rows = []
    for ann_id, by_item in scores.items():
        for pair_id, a, b in pairs:
            if a in by_item and b in by_item:
                pref = preference(by_item[a], by_item[b], ps.tie_eps)
                if pref is not None:
                    rows.append({"pair_id": pair_id, "annotator_id": ann_id, "value": pref})
    for i in range(0, len(rows), 5000):
        s.execute(insert(table_of(PairLabel)), rows[i : i + 5000])
    record_pair_set(ds, ps.id, sorted(scores))
    s.flush()
    return ps


# ---------------------------------------------------------------- duplicated annotation rows


@dataclass(frozen=True)
class Duplicates:
    by_group: dict[str, int]
    items_checked: dict[str, int]
    flagged: dict[str, list[int]]  # group -> item ids, for recomputing metrics without them

    def as_dict(self) -> dict[str, Any]:
        return {"by_group": self.by_group, "items_checked": self.items_checked}


def find_duplicates(engine: Engine, dataset: str) -> Duplicates:
    """Items where every annotator of a group who rated the item (at least two) gave the identical
    full score vector over the dataset's dimensions."""
    with session_scope(engine) as s:
        ds = dataset_by_name(s, dataset)
        dims = label_dimensions(s, ds)
        groups: dict[str, list[int]] = defaultdict(list)
        for a in s.scalars(select(Annotator).where(Annotator.dataset_id == ds.id).order_by(Annotator.id)):
            groups[a.group or "(none)"].append(a.id)
        scores = _scores(s, ds.id)
        item_ids = s.scalars(select(Item.id).where(Item.dataset_id == ds.id).order_by(Item.position)).all()
        by_group: dict[str, int] = {}
        checked: dict[str, int] = {}
        flagged: dict[str, list[int]] = {}
        for group, members in sorted(groups.items()):
            n_checked, hits = 0, []
            for item in item_ids:
                vectors = [scores[a][item] for a in members if item in scores.get(a, {})]
                same = identical_vectors(vectors, dims)
                if same is None:
                    continue
                n_checked += 1
                if same:
                    hits.append(item)
            by_group[group], checked[group], flagged[group] = len(hits), n_checked, hits
        return Duplicates(by_group, checked, flagged)
