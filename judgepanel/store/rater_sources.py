"""The registry of extra rater sources for the store's rating matrices (see `store.matrices`).

Kept apart from `store.matrices` (which imports numpy) so that a module that registers a source,
such as `store.campaigns.readers`, can be imported by `campaign status` without numpy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judgepanel.metrics.matrix import MatrixKind, RaterColumn


@dataclass(frozen=True)
class MatrixScope:
    """What a matrix is being built over, for rater sources."""

    kind: MatrixKind
    dataset_id: int
    pair_set_id: int | None
    dimension: str | None
    unit_ids: tuple[int, ...]


# called with an open Connection (Core statements only: the matrices are read without the ORM)
RaterSource = Callable[[Any, MatrixScope], Sequence["RaterColumn"]]
RATER_SOURCES: list[RaterSource] = []


def register_rater_source(source: RaterSource) -> RaterSource:
    """Register a function that contributes extra rater columns (e.g. campaign judges' verdicts)
    to every matrix built from the store; usable as a decorator. Registering twice is a no-op."""
    if source not in RATER_SOURCES:
        RATER_SOURCES.append(source)
    return source


def unregister_rater_source(source: RaterSource) -> None:
    if source in RATER_SOURCES:
        RATER_SOURCES.remove(source)
