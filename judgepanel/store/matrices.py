"""Rating matrices from the store: units × raters, NaN where a rater gave no rating.

Two shapes feed every metric:

- :func:`item_matrix`: the labels of one dimension of a dataset; rows are items (file order),
  columns the dataset's annotators (import order). Numbers stay numbers; when any label of the
  dimension is not a number, every label is treated as text and coded 0..q−1 in sorted order of the
  text (``category_labels`` keeps the code → label map), which suits nominal metrics only.
- :func:`pair_matrix`: the A/B/T preferences of a pair set; rows are pairs in sampled order,
  codes A = 0, B = 1, T = 2 (``category_labels`` = ("A", "B", "T")).

Rows where none of the chosen raters gave a rating are left out (they carry no information and
would only dilute a bootstrap); ``unit_ids`` holds the item or pair id of each row.

Categories of a numeric dimension are explicit: when every score of the dimension (any annotator)
is an integer, every integer from the lowest to the highest score observed, so unused levels
inside the scale are kept (a 1–5 scale stays 1–5 when a subset never uses 2); otherwise the
distinct observed values.

Extension point for other raters (campaign judges): a function registered with
:func:`register_rater_source` is called while a matrix is built and returns extra
:class:`RaterColumn` s (name, group, kind, unit id → value); they are merged by
:func:`merge_rater_columns` before ``raters``/``group`` are applied, so judges and humans can be
selected, compared and clustered together. :func:`merge_rater_columns` can also be called directly
on a built matrix.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from judgepanel.errors import BadInput, NotFound
from judgepanel.store.engine import session_scope
from judgepanel.store.models import Annotator, Dataset, Item, Label, Pair, PairLabel
from judgepanel.store.queries import (
    LABELS,
    dataset_by_name,
    find_duplicates,
    pair_set_by_name,
    resolve_dimension,
)

FloatArray = NDArray[np.float64]
MatrixKind = Literal["item", "pair"]
PAIR_CODES: dict[str, float] = {label: float(i) for i, label in enumerate(LABELS)}  # A 0, B 1, T 2


@dataclass(frozen=True)
class RatingMatrix:
    """``values[u, r]``: rater r's rating of unit u (a category value or code), NaN if missing."""

    values: FloatArray
    unit_ids: tuple[int, ...]  # item ids (kind "item") or pair ids (kind "pair"), one per row
    rater_names: tuple[str, ...]
    rater_groups: tuple[str | None, ...]
    categories: FloatArray
    numeric: bool  # True when values are scores on an ordered scale; False for codes of labels
    category_labels: tuple[str, ...]  # the label of each category, in `categories` order
    rater_kinds: tuple[str, ...] = ()  # human | llm | judge, one per rater
    kind: MatrixKind = "item"
    dimension: str | None = None

    @property
    def n_units(self) -> int:
        return int(self.values.shape[0])

    @property
    def n_raters(self) -> int:
        return int(self.values.shape[1])

    def label(self, value: float) -> str:
        """The label of a category value or code."""
        idx = int(np.searchsorted(self.categories, value))
        if idx < self.categories.size and self.categories[idx] == value:
            return self.category_labels[idx]
        raise BadInput(f"{value:g} is not a category of this matrix")

    def column(self, name: str) -> FloatArray:
        return self.values[:, self._index(name)]

    def _index(self, name: str) -> int:
        try:
            return self.rater_names.index(name)
        except ValueError:
            known = ", ".join(self.rater_names) or "none"
            raise NotFound(f"no rater named {name!r} here (known: {known})") from None

    def select(self, raters: Sequence[str] | None = None, group: str | None = None) -> RatingMatrix:
        """Keep the named raters (in the order given) and/or the raters of one group; rows left
        without any rating are dropped."""
        idx = list(range(self.n_raters))
        if group is not None:
            groups = sorted({g for g in self.rater_groups if g is not None})
            if group not in groups:
                raise NotFound(f"no rater group {group!r} here (known: {', '.join(groups) or 'none'})")
            idx = [i for i in idx if self.rater_groups[i] == group]
        if raters is not None:
            wanted = [self._index(name) for name in raters]
            if len(set(wanted)) != len(wanted):
                raise BadInput("a rater is named twice in --raters")
            outside = [self.rater_names[i] for i in wanted if i not in idx]
            if outside:
                raise BadInput(f"rater(s) {', '.join(outside)} are not in group {group!r}")
            idx = wanted
        kinds = self.rater_kinds or ("human",) * self.n_raters
        sub = replace(
            self,
            values=self.values[:, idx],
            rater_names=tuple(self.rater_names[i] for i in idx),
            rater_groups=tuple(self.rater_groups[i] for i in idx),
            rater_kinds=tuple(kinds[i] for i in idx),
        )
        return sub.drop_empty_units()

    def drop_units(self, unit_ids: Iterable[int]) -> RatingMatrix:
        gone = set(unit_ids)
        keep = np.array([u not in gone for u in self.unit_ids], dtype=bool)
        return self._rows(keep)

    def drop_empty_units(self) -> RatingMatrix:
        return self._rows((~np.isnan(self.values)).any(axis=1))

    def head(self, n: int) -> RatingMatrix:
        """The first ``n`` units (e.g. a training split)."""
        if n < 1:
            raise BadInput(f"--first must be at least 1, got {n}")
        keep = np.zeros(self.n_units, dtype=bool)
        keep[:n] = True
        return self._rows(keep)

    def _rows(self, keep: NDArray[np.bool_]) -> RatingMatrix:
        ids = tuple(u for u, k in zip(self.unit_ids, keep.tolist(), strict=True) if k)
        return replace(self, values=self.values[keep], unit_ids=ids)


@dataclass(frozen=True)
class RaterColumn:
    """One extra rater to merge into a matrix: ``values`` maps a unit id (item or pair id) to a
    number (numeric matrices) or a label (text and pair matrices, e.g. "A"/"B"/"T")."""

    name: str
    values: Mapping[int, float | str]
    group: str | None = None
    kind: str = "judge"


@dataclass(frozen=True)
class MatrixScope:
    """What a matrix is being built over, for rater sources."""

    kind: MatrixKind
    dataset_id: int
    pair_set_id: int | None
    dimension: str | None
    unit_ids: tuple[int, ...]


RaterSource = Callable[[Session, MatrixScope], Sequence[RaterColumn]]
_RATER_SOURCES: list[RaterSource] = []


def register_rater_source(source: RaterSource) -> RaterSource:
    """Register a function that contributes extra rater columns (e.g. campaign judges' verdicts)
    to every matrix built from the store; usable as a decorator. Registering twice is a no-op."""
    if source not in _RATER_SOURCES:
        _RATER_SOURCES.append(source)
    return source


def unregister_rater_source(source: RaterSource) -> None:
    if source in _RATER_SOURCES:
        _RATER_SOURCES.remove(source)


def merge_rater_columns(matrix: RatingMatrix, columns: Sequence[RaterColumn]) -> RatingMatrix:
    """Append rater columns. Values for units outside the matrix are ignored; units a column
    does not cover are NaN. Numeric matrices take numbers (new values extend the categories);
    label matrices take labels, which must be among ``category_labels``."""
    if not columns:
        return matrix
    names = list(matrix.rater_names)
    for col in columns:
        if col.name in names:
            raise BadInput(f"rater {col.name!r} is already in the matrix")
        names.append(col.name)
    row = {u: i for i, u in enumerate(matrix.unit_ids)}
    extra = np.full((matrix.n_units, len(columns)), np.nan)
    codes = {label: matrix.categories[i] for i, label in enumerate(matrix.category_labels)}
    for j, col in enumerate(columns):
        for unit, value in col.values.items():
            i = row.get(unit)
            if i is None:
                continue
            if matrix.numeric:
                if isinstance(value, str):
                    raise BadInput(f"rater {col.name!r}: {value!r} is not a number")
                extra[i, j] = float(value)
            else:
                label = str(value)
                if label not in codes:
                    raise BadInput(
                        f"rater {col.name!r}: {label!r} is not one of {', '.join(matrix.category_labels)}"
                    )
                extra[i, j] = codes[label]
    values = np.hstack([matrix.values, extra])
    categories, labels = matrix.categories, matrix.category_labels
    if matrix.numeric:
        new = np.setdiff1d(extra[~np.isnan(extra)], categories)
        if new.size:
            categories = np.union1d(categories, new)
            labels = tuple(_number_label(v) for v in categories)
    kinds = matrix.rater_kinds or ("human",) * matrix.n_raters
    return replace(
        matrix,
        values=values,
        rater_names=tuple(names),
        rater_groups=(*matrix.rater_groups, *(c.group for c in columns)),
        rater_kinds=(*kinds, *(c.kind for c in columns)),
        categories=categories,
        category_labels=labels,
    )


def _number_label(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def _scale(values: Sequence[float]) -> FloatArray:
    uniq = np.unique(np.asarray(values, dtype=np.float64))
    if uniq.size and all(float(v).is_integer() for v in uniq) and uniq[-1] - uniq[0] <= 1000:
        return np.arange(uniq[0], uniq[-1] + 1.0)
    return uniq


def _finish(
    s: Session,
    base: RatingMatrix,
    scope: MatrixScope,
    raters: Sequence[str] | None,
    group: str | None,
) -> RatingMatrix:
    extra: list[RaterColumn] = []
    for source in list(_RATER_SOURCES):
        extra.extend(source(s, scope))
    merged = merge_rater_columns(base, extra)
    selected = merged.select(raters, group)
    if selected.n_raters == 0:
        raise BadInput("no raters selected")
    return selected


def item_matrix(
    engine: Engine,
    dataset: str,
    dimension: str | None = None,
    raters: Sequence[str] | None = None,
    group: str | None = None,
    exclude_items: Iterable[int] | None = None,
) -> RatingMatrix:
    """The labels of one dimension of ``dataset`` (see the module docstring); ``dimension`` may be
    omitted when the dataset has only one. ``exclude_items`` drops those item ids."""
    excluded = set(exclude_items or ())
    with session_scope(engine) as s:
        ds = dataset_by_name(s, dataset)
        dim = resolve_dimension(s, ds, dimension)
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
            categories = _scale([float(r.value_num) for r in rows])
            labels = tuple(_number_label(v) for v in categories)
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
        return _finish(s, base, scope, raters, group)


def pair_matrix(
    engine: Engine,
    pair_set: str,
    raters: Sequence[str] | None = None,
    group: str | None = None,
    *,
    exclude_items: Iterable[int] | None = None,
) -> RatingMatrix:
    """The A/B/T preferences over a pair set (see the module docstring). ``exclude_items`` drops
    every pair that involves one of those item ids."""
    excluded = set(exclude_items or ())
    with session_scope(engine) as s:
        ps = pair_set_by_name(s, pair_set)
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
        )
        scope = MatrixScope("pair", ps.dataset_id, ps.id, None, base.unit_ids)
        return _finish(s, base, scope, raters, group)


def flagged_duplicates(engine: Engine, dataset: str, group: str) -> list[int]:
    """Item ids that ``data duplicates`` flags for ``group`` (every annotator of the group gave the
    identical full score vector)."""
    d = find_duplicates(engine, dataset)
    if group not in d.flagged:
        raise BadInput(
            f"no annotator group {group!r} in {dataset!r} (known: {', '.join(d.flagged) or 'none'})"
        )
    return list(d.flagged[group])


def pair_set_dataset(engine: Engine, pair_set: str) -> str:
    with session_scope(engine) as s:
        ps = pair_set_by_name(s, pair_set)
        name = s.scalar(select(Dataset.name).where(Dataset.id == ps.dataset_id))
        assert name is not None
        return name


@dataclass(frozen=True)
class MatrixRequest:
    """What the CLI asks for: an item matrix (``dataset`` + ``dimension``) or a pair matrix
    (``pairs``), some raters, optionally without the items flagged as duplicates for a group."""

    dataset: str | None = None
    pairs: str | None = None
    dimension: str | None = None
    raters: tuple[str, ...] | None = None
    group: str | None = None
    exclude_duplicates: str | None = None


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
        matrix = pair_matrix(engine, request.pairs, request.raters, request.group, exclude_items=excluded)
    else:
        matrix = item_matrix(engine, dataset, request.dimension, request.raters, request.group, excluded)
    return SelectedMatrix(matrix, dataset, None if excluded is None else len(excluded))
