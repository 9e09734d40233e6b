"""Rating matrices from the store: units × raters, NaN where a rater gave no rating.

The matrix type and how raters are chosen live in ``metrics.matrix`` (plain data the statistics
read; re-exported here). Two shapes feed every metric:

- :func:`item_matrix`: the labels of one dimension of a dataset; rows are items (file order),
  columns the dataset's annotators (import order). Numbers stay numbers; when any label of the
  dimension is not a number, every label is treated as text and coded 0..q−1 in sorted order of the
  text (``category_labels`` keeps the code → label map), which suits nominal metrics only.
- :func:`pair_matrix`: the A/B/T preferences of a pair set; rows are pairs in sampled order,
  codes A = 0, B = 1, T = 2 (``category_labels`` = ("A", "B", "T"), a declared scale).

Raters: the humans unless ``raters``, ``group`` (built in: ``human``, ``judge``) or ``with_judges``
say otherwise (``RatingMatrix.select``). Rows where none of the chosen raters gave a rating are
left out (they carry no information and would only dilute a bootstrap); ``unit_ids`` holds the
item or pair id of each row.

Categories of a numeric dimension are explicit: when every score of the chosen raters is an
integer, every integer from the lowest to the highest score observed, so unused levels inside the
scale are kept (a 1–5 scale stays 1–5 when a subset never uses 2); otherwise the distinct observed
values. A dataset declares its scale in ``meta["scale"]`` (a list of categories, or
``{dimension: list}``); then the categories are those, whoever is selected.

Extension point for other raters (campaign judges): a function registered with
:func:`register_rater_source` is called while a matrix is built and returns extra
:class:`RaterColumn` s (name, group, kind, unit id → value); they are merged by
:func:`merge_rater_columns` before the raters are chosen, so judges and humans can be selected,
compared and clustered together. :func:`merge_rater_columns` can also be called directly on a
built matrix. Sources add machine raters (a column's ``kind`` is never ``human``): a selection of
the humans alone does not ask them (:func:`humans_only`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Connection, Engine, select

from judgepanel.errors import BadInput
from judgepanel.metrics.matrix import (
    HUMAN,
    FloatArray,
    MatrixKind,
    RaterColumn,
    RatingMatrix,
    merge_rater_columns,
    number_label,
    numeric_scale,
    with_categories,
)

# Core tables and look-ups, not the ORM: `metrics …` commands read without loading `sqlalchemy.orm`
from judgepanel.store.lookups import (
    LABELS,
    check_pair_set_current,
    dataset_row,
    pair_set_row,
    resolve_dimension,
)
from judgepanel.store.rater_sources import (
    RATER_SOURCES,
    MatrixScope,
    RaterSource,
    register_rater_source,
    unregister_rater_source,
)
from judgepanel.store.tables import Annotator, Dataset, Item, Label, Pair, PairLabel

PAIR_CODES: dict[str, float] = {label: float(i) for i, label in enumerate(LABELS)}  # A 0, B 1, T 2


# The registry lives in a numpy-free module (see there); these are the same objects.
_RATER_SOURCES = RATER_SOURCES

__all__ = [
    "PAIR_CODES",
    "FloatArray",
    "MatrixKind",
    "MatrixRequest",
    "MatrixScope",
    "RaterColumn",
    "RaterSource",
    "RatingMatrix",
    "SelectedMatrix",
    "declared_scale",
    "item_matrix",
    "merge_rater_columns",
    "pair_matrix",
    "pair_set_dataset",
    "register_rater_source",
    "select_matrix",
    "unregister_rater_source",
]


def declared_scale(meta: Any, dimension: str | None) -> list[object] | None:
    """The categories a dataset declares in ``meta["scale"]`` for ``dimension``, if any."""
    scale = meta.get("scale") if isinstance(meta, dict) else None
    if isinstance(scale, dict):
        scale = scale.get(dimension or "")
    if scale is None:
        return None
    if not isinstance(scale, list) or not scale:
        raise BadInput('a dataset\'s meta["scale"] must be a non-empty list (or {dimension: list})')
    return list(scale)


def _finish(
    s: Connection,
    base: RatingMatrix,
    scope: MatrixScope,
    raters: Sequence[str] | None,
    group: str | None,
    with_judges: Sequence[str] | None,
    scale: list[object] | None = None,
) -> RatingMatrix:
    merged = base
    if not humans_only(raters, group, with_judges):
        # The campaign judges' source registers itself when its module is imported; the CLI
        # imports lazily, so a fresh `metrics agreement` process may not have imported it yet.
        import judgepanel.store.campaigns.readers  # noqa: F401

        extra: list[RaterColumn] = []
        for source in list(_RATER_SOURCES):
            extra.extend(source(s, scope))
        merged = merge_rater_columns(base, extra)
    selected = merged.select(raters, group, with_judges=with_judges)
    return selected if scale is None else with_categories(selected, scale)


def humans_only(raters: Sequence[str] | None, group: str | None, with_judges: Sequence[str] | None) -> bool:
    """Whether a selection can hold no machine rater (no ``raters`` named, no group but the
    humans, no ``with_judges``). Rater sources add machine raters only, so such a selection does
    not ask them: `metrics agreement` over the humans then neither imports the campaign readers
    nor reads the verdicts of every campaign over the units (issue 20 §2)."""
    return raters is None and group in (None, HUMAN) and not with_judges


def item_matrix(
    engine: Engine,
    dataset: str,
    dimension: str | None = None,
    raters: Sequence[str] | None = None,
    group: str | None = None,
    exclude_items: Iterable[int] | None = None,
    *,
    with_judges: Sequence[str] | None = None,
) -> RatingMatrix:
    """The labels of one dimension of ``dataset`` (see the module docstring); ``dimension`` may be
    omitted when the dataset has only one. ``exclude_items`` drops those item ids."""
    excluded = set(exclude_items or ())
    with engine.connect() as s:
        ds = dataset_row(s, dataset)
        dim = resolve_dimension(s, ds, dimension)
        scale = declared_scale(ds.meta, dim)
        annotators = s.execute(
            select(Annotator.id, Annotator.name, Annotator.group, Annotator.kind)
            .where(Annotator.dataset_id == ds.id)
            .order_by(Annotator.id)
        ).all()
        items = [
            i
            for (i,) in s.execute(
                select(Item.id).where(Item.dataset_id == ds.id).order_by(Item.position, Item.id)
            )
            if i not in excluded
        ]
        rows = s.execute(
            select(Label.item_id, Label.annotator_id, Label.value_num, Label.value_text)
            .join(Item, Label.item_id == Item.id)
            .where(Item.dataset_id == ds.id, Label.dimension == dim)
        ).all()
        numeric = all(r.value_num is not None and math.isfinite(r.value_num) for r in rows)
        if numeric:
            categories = numeric_scale(float(r.value_num) for r in rows)
            labels = tuple(number_label(v) for v in categories)
        else:
            labels = tuple(sorted({r.value_text or "" for r in rows}))
            categories = np.arange(float(len(labels)))
        code_of = {label: float(i) for i, label in enumerate(labels)}
        row_of = {item: i for i, item in enumerate(items)}
        col_of = {a.id: j for j, a in enumerate(annotators)}
        values = np.full((len(items), len(annotators)), np.nan)
        for r in rows:
            i = row_of.get(r.item_id)
            if i is None:
                continue
            values[i, col_of[r.annotator_id]] = float(r.value_num) if numeric else code_of[r.value_text or ""]
        base = RatingMatrix(
            values=values,
            unit_ids=tuple(items),
            rater_names=tuple(a.name for a in annotators),
            rater_groups=tuple(a.group for a in annotators),
            categories=categories,
            numeric=numeric,
            category_labels=labels,
            rater_kinds=tuple(a.kind for a in annotators),
            kind="item",
            dimension=dim,
        )
        scope = MatrixScope("item", ds.id, None, dim, base.unit_ids)
        return _finish(s, base, scope, raters, group, with_judges, scale)


def pair_matrix(
    engine: Engine,
    pair_set: str,
    raters: Sequence[str] | None = None,
    group: str | None = None,
    *,
    exclude_items: Iterable[int] | None = None,
    with_judges: Sequence[str] | None = None,
) -> RatingMatrix:
    """The A/B/T preferences over a pair set (see the module docstring). ``exclude_items`` drops
    every pair that involves one of those item ids."""
    excluded = set(exclude_items or ())
    with engine.connect() as s:
        ps = pair_set_row(s, pair_set)
        check_pair_set_current(s, ps)
        pairs = [
            p.id
            for p in s.execute(
                select(Pair.id, Pair.item_a_id, Pair.item_b_id)
                .where(Pair.pair_set_id == ps.id)
                .order_by(Pair.position)
            )
            if p.item_a_id not in excluded and p.item_b_id not in excluded
        ]
        annotators = s.execute(
            select(Annotator.id, Annotator.name, Annotator.group, Annotator.kind)
            .where(Annotator.dataset_id == ps.dataset_id)
            .order_by(Annotator.id)
        ).all()
        rows = s.execute(
            select(PairLabel.pair_id, PairLabel.annotator_id, PairLabel.value)
            .join(Pair, PairLabel.pair_id == Pair.id)
            .where(Pair.pair_set_id == ps.id)
        ).all()
        row_of = {p: i for i, p in enumerate(pairs)}
        col_of = {a.id: j for j, a in enumerate(annotators)}
        values = np.full((len(pairs), len(annotators)), np.nan)
        for r in rows:
            i = row_of.get(r.pair_id)
            if i is not None:
                values[i, col_of[r.annotator_id]] = PAIR_CODES[r.value]
        base = RatingMatrix(
            values=values,
            unit_ids=tuple(pairs),
            rater_names=tuple(a.name for a in annotators),
            rater_groups=tuple(a.group for a in annotators),
            categories=np.array(list(PAIR_CODES.values())),
            numeric=False,
            category_labels=tuple(PAIR_CODES),
            rater_kinds=tuple(a.kind for a in annotators),
            kind="pair",
            scale_declared=True,
        )
        scope = MatrixScope("pair", ps.dataset_id, ps.id, None, base.unit_ids)
        return _finish(s, base, scope, raters, group, with_judges)


def flagged_duplicates(engine: Engine, dataset: str, group: str) -> list[int]:
    """Item ids that ``data duplicates`` flags for ``group`` (every annotator of the group gave the
    identical full score vector)."""
    from judgepanel.store.queries import find_duplicates  # the ORM: only with --exclude-duplicates

    d = find_duplicates(engine, dataset)
    if group not in d.flagged:
        raise BadInput(
            f"no annotator group {group!r} in {dataset!r} (known: {', '.join(d.flagged) or 'none'})"
        )
    return list(d.flagged[group])


def pair_set_dataset(engine: Engine, pair_set: str) -> str:
    with engine.connect() as s:
        ps = pair_set_row(s, pair_set)
        name = s.scalar(select(Dataset.name).where(Dataset.id == ps.dataset_id))
        assert name is not None
        return str(name)


@dataclass(frozen=True)
class MatrixRequest:
    """What the CLI asks for: an item matrix (``dataset`` + ``dimension``) or a pair matrix
    (``pairs``), some raters (the humans by default), optionally without the items flagged as
    duplicates for a group, optionally over an explicit category set."""

    dataset: str | None = None
    pairs: str | None = None
    dimension: str | None = None
    raters: tuple[str, ...] | None = None
    group: str | None = None
    exclude_duplicates: str | None = None
    with_judges: tuple[str, ...] | None = None  # judges added to the selection; ("all",) for all
    categories: tuple[str, ...] | None = None  # an explicit category set (`--categories`)


@dataclass(frozen=True)
class SelectedMatrix:
    matrix: RatingMatrix
    dataset: str
    excluded_items: int | None  # how many flagged items were excluded, None when not asked


def select_matrix(engine: Engine, request: MatrixRequest) -> SelectedMatrix:
    """Build the matrix a ``metrics`` command asks for."""
    if request.pairs is None and request.dataset is None:
        raise BadInput("give --dataset (item labels) or --pairs (a pair set)")
    dataset = request.dataset
    if request.pairs is not None:
        owner = pair_set_dataset(engine, request.pairs)
        if dataset is not None and dataset != owner:
            raise BadInput(f"pair set {request.pairs!r} belongs to dataset {owner!r}, not {dataset!r}")
        if request.dimension is not None:
            raise BadInput("--dimension applies to item labels; pair labels come from all dimensions")
        dataset = owner
    assert dataset is not None
    excluded = (
        flagged_duplicates(engine, dataset, request.exclude_duplicates)
        if request.exclude_duplicates
        else None
    )
    if request.pairs is not None:
        matrix = pair_matrix(
            engine,
            request.pairs,
            request.raters,
            request.group,
            exclude_items=excluded,
            with_judges=request.with_judges,
        )
    else:
        matrix = item_matrix(
            engine,
            dataset,
            request.dimension,
            request.raters,
            request.group,
            excluded,
            with_judges=request.with_judges,
        )
    if request.categories is not None:
        matrix = with_categories(matrix, request.categories)
    return SelectedMatrix(matrix, dataset, None if excluded is None else len(excluded))


def unit_groups(engine: Engine, matrix: RatingMatrix) -> list[str | None]:
    """The group key (an item's ``group_key``, e.g. the SummEval article) of every row of
    ``matrix``: a pair's is its items' shared key (both keys, joined, when they differ); None
    where an item has none."""
    ids = list(matrix.unit_ids)
    with engine.connect() as s:
        if matrix.kind == "pair":
            pairs = {
                p: (a, b)
                for p, a, b in s.execute(
                    select(Pair.id, Pair.item_a_id, Pair.item_b_id).where(Pair.id.in_(ids))
                )
            }
            items = {i for ab in pairs.values() for i in ab}
        else:
            items = set(ids)
        keys = dict(s.execute(select(Item.id, Item.group_key).where(Item.id.in_(items))).all())
    if matrix.kind != "pair":
        return [keys.get(u) for u in ids]
    out: list[str | None] = []
    for u in ids:
        a, b = (keys.get(i) for i in pairs[u])
        out.append(a if a == b else "|".join(sorted(str(x) for x in (a, b))))
    return out
