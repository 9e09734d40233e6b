"""Rating matrices: units × raters, NaN where a rater gave no rating — the one input shape of the
statistics, and how a command chooses its raters.

A :class:`RatingMatrix` is plain data (the store builds it, ``store.matrices``; the statistics only
read it). Each rater has a name, a group (imported, e.g. ``expert`` / ``crowd``) and a kind:
``human``, or ``llm`` / ``judge`` for machine raters (LLM labels imported with a dataset, and
campaign judges).

Rater selection (:meth:`RatingMatrix.select`), the same for every command:

- nothing named: the **human** raters only, so a human statistic never changes meaning because a
  campaign ran over the same data;
- ``raters``: exactly those raters, in the order given (humans and judges alike);
- ``group``: the raters of one group. Two groups are built in and go by kind: ``human`` (kind
  ``human``) and ``judge`` (every machine rater, kind ``llm`` or ``judge``); any other name is an
  imported group;
- ``with_judges``: machine raters added to the selection above (``("all",)`` for all of them).

Categories: unless the scale is declared (``scale_declared``: a pair matrix's A/B/T, a dataset's
``meta["scale"]``, or :func:`with_categories`), a selection's categories are those its own raters
used — for numbers every integer from the lowest to the highest score when all scores are
integers (an unused level inside the scale is kept), otherwise the distinct values — so a
coefficient whose value depends on the category count (AC1, weighted κ) does not change because a
rater outside the selection used another label.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from judgepanel.errors import BadInput, NotFound

FloatArray = NDArray[np.float64]
MatrixKind = Literal["item", "pair"]

HUMAN = "human"
JUDGE = "judge"
BUILTIN_GROUPS: tuple[str, ...] = (HUMAN, JUDGE)
ALL_JUDGES = "all"


class NoRaters(BadInput):
    """The selection left no rater (exit 2, like any bad option)."""


def is_machine(kind: str) -> bool:
    """A machine rater (an LLM annotator or a campaign judge) rather than a person."""
    return kind != HUMAN


def number_label(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def numeric_scale(values: Iterable[float]) -> FloatArray:
    """Every integer from the lowest to the highest value when all are integers (a span of at
    most 1,000), otherwise the distinct values, sorted."""
    uniq = np.unique(np.asarray(list(values), dtype=np.float64))
    if uniq.size and all(float(v).is_integer() for v in uniq) and uniq[-1] - uniq[0] <= 1000:
        return np.arange(uniq[0], uniq[-1] + 1.0)
    return uniq


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
    scale_declared: bool = False  # categories fixed in advance, not taken from the raters selected
    # other names a rater answers to (a campaign judge's `SPEC@CAMPAIGN` beside its `NAME@CAMPAIGN`)
    rater_aliases: Mapping[str, str] = field(default_factory=dict)

    @property
    def n_units(self) -> int:
        return int(self.values.shape[0])

    @property
    def n_raters(self) -> int:
        return int(self.values.shape[1])

    @property
    def kinds(self) -> tuple[str, ...]:
        return self.rater_kinds or (HUMAN,) * self.n_raters

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
            return self.rater_names.index(self.rater_aliases.get(name, name))
        except ValueError:
            known = ", ".join(self.rater_names) or "none"
            raise NotFound(f"no rater named {name!r} here (known: {known})") from None

    def _group(self, group: str) -> list[int]:
        kinds = self.kinds
        if group == HUMAN:
            return [i for i, k in enumerate(kinds) if not is_machine(k)]
        if group == JUDGE:
            return [i for i, k in enumerate(kinds) if is_machine(k)]
        groups = sorted({g for g in self.rater_groups if g is not None} | set(BUILTIN_GROUPS))
        if group not in groups:
            raise NotFound(f"no rater group {group!r} here (known: {', '.join(groups)})")
        return [i for i, g in enumerate(self.rater_groups) if g == group]

    def select(
        self,
        raters: Sequence[str] | None = None,
        group: str | None = None,
        *,
        with_judges: Sequence[str] | None = None,
    ) -> RatingMatrix:
        """The raters a command works on (see the module docstring): the humans unless
        ``raters`` or ``group`` name others, plus ``with_judges``. Rows left without any rating
        are dropped; categories follow the raters kept unless the scale is declared."""
        idx = self._group(group) if group is not None else list(range(self.n_raters))
        if raters is not None:
            wanted = [self._index(name) for name in raters]
            if len(set(wanted)) != len(wanted):
                raise BadInput("a rater is named twice in --raters")
            outside = [self.rater_names[i] for i in wanted if i not in idx]
            if outside:
                raise BadInput(f"rater(s) {', '.join(outside)} are not in group {group!r}")
            idx = wanted
        elif group is None:
            idx = self._group(HUMAN)
        if with_judges:
            idx += [i for i in self._judges(with_judges) if i not in idx]
        if not idx:
            raise NoRaters(self._nobody(raters, group))
        kinds = self.kinds
        sub = replace(
            self,
            values=self.values[:, idx],
            rater_names=tuple(self.rater_names[i] for i in idx),
            rater_groups=tuple(self.rater_groups[i] for i in idx),
            rater_kinds=tuple(kinds[i] for i in idx),
        )
        return sub.drop_empty_units()._observed_categories()

    def _judges(self, names: Sequence[str]) -> list[int]:
        machines = self._group(JUDGE)
        if list(names) == [ALL_JUDGES]:
            if not machines:
                raise BadInput("--with-judges all: there are no judges here (run a campaign first)")
            return machines
        out = []
        for name in names:
            i = self._index(name)
            if i not in machines:
                raise BadInput(f"{name!r} is not a judge; name human raters with --raters or --group")
            out.append(i)
        return out

    def _nobody(self, raters: Sequence[str] | None, group: str | None) -> str:
        if raters is None and group is None:
            return "no human raters here; name judges with --raters, --group judge or --with-judges"
        if group == JUDGE:
            return "no judges here (run a campaign over these units, or import LLM labels)"
        return "no raters selected"

    def _observed_categories(self) -> RatingMatrix:
        if self.scale_declared:
            return self
        seen = np.unique(self.values[~np.isnan(self.values)])
        if seen.size == 0:
            return self
        if self.numeric:
            cats = numeric_scale(seen.tolist())
            return replace(self, categories=cats, category_labels=tuple(number_label(v) for v in cats))
        keep = np.isin(self.categories, seen)
        labels = tuple(lab for lab, k in zip(self.category_labels, keep.tolist(), strict=True) if k)
        return replace(self, categories=self.categories[keep], category_labels=labels)

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


def with_categories(matrix: RatingMatrix, labels: Sequence[object]) -> RatingMatrix:
    """The same ratings over an explicit category set (``--categories``, or a dataset's declared
    scale): numbers for a numeric matrix, labels otherwise (text codes follow the order given).
    BadInput if a rating lies outside the set or a category is named twice."""
    names = [str(x).strip() for x in labels]
    if not names or any(not n for n in names):
        raise BadInput("a category set needs at least one non-empty category")
    if len(set(names)) != len(names):
        raise BadInput(f"a category is named twice in {', '.join(names)}")
    values = matrix.values
    if matrix.numeric:
        try:
            cats = np.array([float(n) for n in names])
        except ValueError:
            raise BadInput(f"these scores are numbers; categories {', '.join(names)} are not") from None
        if not np.isfinite(cats).all():
            raise BadInput("categories must be finite numbers")
        cats = np.unique(cats)
        new_labels = tuple(number_label(v) for v in cats)
        seen = values[~np.isnan(values)]
        outside = np.setdiff1d(seen, cats)
        if outside.size:
            raise BadInput(
                f"rating {number_label(float(outside[0]))} is not one of the categories {', '.join(new_labels)}"
            )
    else:
        code_of = {lab: float(i) for i, lab in enumerate(names)}
        remap = np.full(values.shape, np.nan)
        for old, lab in zip(matrix.categories.tolist(), matrix.category_labels, strict=True):
            hit = values == old
            if hit.any():
                if lab not in code_of:
                    raise BadInput(f"label {lab!r} is used but not one of the categories {', '.join(names)}")
                remap[hit] = code_of[lab]
        values = remap
        cats = np.arange(float(len(names)))
        new_labels = tuple(names)
    return replace(matrix, values=values, categories=cats, category_labels=new_labels, scale_declared=True)


@dataclass(frozen=True)
class RaterColumn:
    """One extra rater to merge into a matrix: ``values`` maps a unit id (item or pair id) to a
    number (numeric matrices) or a label (text and pair matrices, e.g. "A"/"B"/"T")."""

    name: str
    values: Mapping[int, float | str]
    group: str | None = None
    kind: str = JUDGE
    aliases: tuple[str, ...] = ()  # other names `--raters` may use for it


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
            labels = tuple(number_label(v) for v in categories)
    return replace(
        matrix,
        values=values,
        rater_names=tuple(names),
        rater_groups=(*matrix.rater_groups, *(c.group for c in columns)),
        rater_kinds=(*matrix.kinds, *(c.kind for c in columns)),
        categories=categories,
        category_labels=labels,
        rater_aliases={
            **matrix.rater_aliases,
            **{a: c.name for c in columns for a in c.aliases if a != c.name and a not in names},
        },
    )
