"""What each rater answered, counted: per judge column (judge, and condition / dimension where a
campaign has several), the distribution of its scores (pointwise) or of A / B / tie / inconsistent
(pairwise, both orders read together), beside the humans' distribution over the same units — the
first plot an evaluation engineer looks at (issue 33 §3).

Counting only: arrays in, `Distribution`s out. Conventions as in `report.build`: a pairwise judge's
verdict on a pair is its last AB and last BA verdict combined (`protocol.pairs.combine_orders`),
with "inconsistent" counted as its own bar (never folded into tie); a pair asked in one order
only is left out. A pointwise judge counts every accepted score (each repeat). The humans count
every human label of the campaign's units: pair labels A / B / T, or item scores of the
campaign's dimension.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from judgepanel.protocol.pairs import INCONSISTENT, MISSING, combine_orders
from judgepanel.store.report import HumanColumns, VerdictColumns

PAIR_BARS = ("A", "B", "T", INCONSISTENT)


@dataclass(frozen=True)
class Distribution:
    """`counts[k]` answers of `rater` were `categories[k]`; `kind` is `judge` or `human`."""

    rater: str
    kind: str
    categories: tuple[str, ...]
    counts: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.counts)

    def as_dict(self) -> dict[str, object]:
        return {
            "rater": self.rater,
            "kind": self.kind,
            "counts": dict(zip(self.categories, self.counts, strict=True)),
            "total": self.total,
        }


def _columns(
    vc: VerdictColumns, several_conditions: bool, several_dimensions: bool
) -> list[tuple[str, NDArray[np.bool_]]]:
    """(column name, mask of its rows) per judge × condition × dimension present."""
    out: list[tuple[str, NDArray[np.bool_]]] = []
    if not len(vc.judge):
        return out
    combos = np.unique(np.stack([vc.judge, vc.condition, vc.dimension], axis=1), axis=0)
    for j, c, d in combos.tolist():
        parts = [vc.judges[j]]
        if several_conditions and vc.conditions[c]:
            parts.append(str(vc.conditions[c]))
        if several_dimensions and vc.dimensions[d]:
            parts.append(str(vc.dimensions[d]))
        mask = (vc.judge == j) & (vc.condition == c) & (vc.dimension == d)
        out.append(("/".join(parts), mask))
    return out


def _scale(values: NDArray[np.float64]) -> list[float]:
    return sorted({float(v) for v in values[~np.isnan(values)].tolist()})


def _fmt(v: float) -> str:
    return f"{v:g}"


def distributions(protocol: str, vc: VerdictColumns, humans: HumanColumns | None) -> list[Distribution]:
    """The humans' distribution (one row for all human annotators), then every judge column's."""
    several_c = len({c for c in vc.conditions if c}) > 1
    several_d = len({d for d in vc.dimensions if d}) > 1
    cols = _columns(vc, several_c, several_d)
    units = np.unique(vc.unit)
    out: list[Distribution] = []
    if protocol == "pairwise":
        for name, mask in cols:
            last: dict[int, dict[int, str]] = {}
            for u, o, v in zip(
                vc.unit[mask].tolist(), vc.order[mask].tolist(), vc.value[mask].tolist(), strict=True
            ):
                if o in (1, 2) and v >= 0:
                    last.setdefault(u, {})[o] = vc.values[v]  # later rows (job order) win
            counts = dict.fromkeys(PAIR_BARS, 0)
            for by in last.values():
                verdict = combine_orders(by.get(1), by.get(2))
                if verdict != MISSING and (1 in by and 2 in by):
                    counts[verdict] = counts.get(verdict, 0) + 1
            out.append(Distribution(name, "judge", PAIR_BARS, tuple(counts[k] for k in PAIR_BARS)))
        if humans is not None and humans.labels:
            mine = np.isin(humans.unit, units)
            labels = [humans.labels[int(k)] for k in humans.value[mine].astype(np.int64).tolist()]
            out.insert(
                0, Distribution("humans", "human", PAIR_BARS, tuple(labels.count(k) for k in PAIR_BARS))
            )
        return out
    human_values = (
        humans.value[np.isin(humans.unit, units)] if humans is not None and not humans.labels else np.zeros(0)
    )
    scale = _scale(np.concatenate([vc.score, human_values]))
    cats = tuple(_fmt(v) for v in scale)
    for name, mask in cols:
        scores = vc.score[mask]
        scores = scores[~np.isnan(scores)]
        out.append(Distribution(name, "judge", cats, tuple(int((scores == v).sum()) for v in scale)))
    if len(human_values):
        out.insert(
            0, Distribution("humans", "human", cats, tuple(int((human_values == v).sum()) for v in scale))
        )
    return out


__all__ = ["PAIR_BARS", "Distribution", "distributions"]
