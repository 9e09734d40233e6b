"""Pair-set views for the meta-evaluation: the two items behind each pair with their mean human
scores, and a pairwise campaign's human labels next to its judges' swapped verdicts.

Feeds the meta-evaluation (`metrics.summary`): the absolute gap between the two items' mean human
scores is the signal that vote and posterior entropies are correlated with (a close pair should be
uncertain), and the item ids map duplicate flags (per item) onto pairs.

An item's mean human score is the mean over the human annotators who scored it of each
annotator's mean over its numeric dimensions — the same per-annotator mean that `data pairs` uses
to derive A/B/T — so the gap is on the scale of the labels (1–5 for SummEval). Optionally only one
annotator group counts. Items nobody scored have NaN.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Engine, select

from judgepanel.datasets.pairs import score_difference
from judgepanel.errors import BadInput, NotFound
from judgepanel.metrics.matrix import HUMAN, NoRaters, RatingMatrix
from judgepanel.store.engine import session_scope
from judgepanel.store.matrices import pair_matrix, pair_set_dataset
from judgepanel.store.models import Annotator, Item, Label, Pair
from judgepanel.store.queries import find_duplicates, pair_set_by_name


@dataclass(frozen=True, eq=False)
class PairItems:
    """One row per pair, in sampled order."""

    pair_ids: tuple[int, ...]
    item_a: tuple[int, ...]
    item_b: tuple[int, ...]
    mean_a: NDArray[np.float64]
    mean_b: NDArray[np.float64]

    @property
    def score_gap(self) -> NDArray[np.float64]:
        return np.asarray(np.abs(self.mean_a - self.mean_b))

    def touching(self, item_ids: set[int]) -> NDArray[np.bool_]:
        """Per pair: does it involve one of these items?"""
        return np.array(
            [a in item_ids or b in item_ids for a, b in zip(self.item_a, self.item_b, strict=True)]
        )


def pair_items(engine: Engine, pair_set: str, *, group: str | None = None) -> PairItems:
    """The items and mean human scores of every pair in ``pair_set`` (``group``: only that
    annotator group's scores)."""
    with session_scope(engine) as s:
        ps = pair_set_by_name(s, pair_set)
        pairs = s.execute(
            select(Pair.id, Pair.item_a_id, Pair.item_b_id)
            .where(Pair.pair_set_id == ps.id)
            .order_by(Pair.position)
        ).all()
        query = (
            select(Label.item_id, Label.annotator_id, Label.value_num)
            .join(Item, Label.item_id == Item.id)
            .join(Annotator, Label.annotator_id == Annotator.id)
            .where(Item.dataset_id == ps.dataset_id, Annotator.kind == "human", Label.value_num.is_not(None))
        )
        if group is not None:
            groups = set(
                s.scalars(select(Annotator.group).where(Annotator.dataset_id == ps.dataset_id).distinct())
            )
            if group not in groups:
                known = ", ".join(sorted(g for g in groups if g)) or "none"
                raise NotFound(f"no annotator group {group!r} in this dataset (known: {known})")
            query = query.where(Annotator.group == group)
        sums: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        for item, annotator, value in s.execute(query):
            if value is not None:
                sums[item][annotator].append(float(value))
    means = {
        item: float(np.mean([np.mean(v) for v in by_annotator.values()]))
        for item, by_annotator in sums.items()
    }
    return PairItems(
        pair_ids=tuple(p.id for p in pairs),
        item_a=tuple(p.item_a_id for p in pairs),
        item_b=tuple(p.item_b_id for p in pairs),
        mean_a=np.array([means.get(p.item_a_id, np.nan) for p in pairs], dtype=np.float64),
        mean_b=np.array([means.get(p.item_b_id, np.nan) for p in pairs], dtype=np.float64),
    )


@dataclass(frozen=True, eq=False)
class PairSetInputs:
    """What `metrics summary` reads for a pair set, aligned with the rows of ``matrix``."""

    matrix: RatingMatrix
    dataset: str
    score_gap: NDArray[np.float64]  # |mean human score of A − of B|, per matrix row
    duplicate_units: dict[str, NDArray[np.bool_]]  # group -> rows touching a flagged item
    duplicate_items: dict[str, int]  # group -> how many items `data duplicates` flags


def pair_set_inputs(
    engine: Engine,
    pair_set: str,
    *,
    exclude_duplicates: str | None = None,
    raters: Sequence[str] | None = None,
    group: str | None = None,
    with_judges: Sequence[str] | None = None,
) -> PairSetInputs:
    """The A/B/T matrix of ``pair_set`` over the chosen raters (the humans unless ``raters``,
    ``group`` or ``with_judges`` name judges; see ``metrics.matrix``), the score gap of each pair
    and the duplicate flags mapped onto pairs. ``exclude_duplicates``: leave out every pair touching
    an item flagged for that group."""
    dataset = pair_set_dataset(engine, pair_set)
    dups = find_duplicates(engine, dataset)
    excluded = None
    if exclude_duplicates is not None:
        if exclude_duplicates not in dups.flagged:
            known = ", ".join(dups.flagged) or "none"
            raise BadInput(f"no annotator group {exclude_duplicates!r} in {dataset!r} (known: {known})")
        excluded = dups.flagged[exclude_duplicates]
    matrix = pair_matrix(engine, pair_set, raters, group, exclude_items=excluded, with_judges=with_judges)
    items = pair_items(engine, pair_set)
    row_of = {p: i for i, p in enumerate(items.pair_ids)}
    rows = np.array([row_of[u] for u in matrix.unit_ids], dtype=np.int64)
    return PairSetInputs(
        matrix=matrix,
        dataset=dataset,
        score_gap=items.score_gap[rows],
        duplicate_units={g: items.touching(set(ids))[rows] for g, ids in dups.flagged.items()},
        duplicate_items={g: len(ids) for g, ids in dups.flagged.items()},
    )


def _pair_scores(
    engine: Engine, pair_set: str, matrix: RatingMatrix
) -> tuple[dict[int, tuple[int, int]], dict[int, int], dict[int, dict[int, dict[str, float]]]]:
    """The pair set's pairs, the matrix column of each annotator of its dataset, and every numeric
    score those annotators gave: annotator -> item -> dimension -> value."""
    with session_scope(engine) as s:
        ps = pair_set_by_name(s, pair_set)
        pairs = dict(
            (pid, (a, b))
            for pid, a, b in s.execute(
                select(Pair.id, Pair.item_a_id, Pair.item_b_id).where(Pair.pair_set_id == ps.id)
            )
        )
        col_of = {n: j for j, n in enumerate(matrix.rater_names)}
        annotators = {
            aid: col_of[name]
            for aid, name in s.execute(
                select(Annotator.id, Annotator.name).where(Annotator.dataset_id == ps.dataset_id)
            )
            if name in col_of
        }
        scores: dict[int, dict[int, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
        rows = s.execute(
            select(Label.annotator_id, Label.item_id, Label.dimension, Label.value_num)
            .join(Item, Label.item_id == Item.id)
            .where(
                Item.dataset_id == ps.dataset_id,
                Label.value_num.is_not(None),
                Label.annotator_id.in_(list(annotators)),
            )
        )
        for aid, item, dim, value in rows:
            if value is not None:
                scores[aid][item][dim] = float(value)
    return pairs, annotators, scores


def pair_score_differences(engine: Engine, pair_set: str, matrix: RatingMatrix) -> NDArray[np.float64]:
    """Per row and rater of ``matrix`` (a matrix of ``pair_set``): the rater's mean score on item A
    minus its mean on item B — the number `data pairs` thresholds into A/B/T. NaN where the rater
    has no scores on both items, and for raters that are not annotators of the dataset (campaign
    judges give verdicts, not scores)."""
    pairs, annotators, scores = _pair_scores(engine, pair_set, matrix)
    out = np.full(matrix.values.shape, np.nan)
    for i, pid in enumerate(matrix.unit_ids):
        a, b = pairs[pid]
        for aid, j in annotators.items():
            by_item = scores.get(aid, {})
            if a in by_item and b in by_item:
                d = score_difference(by_item[a], by_item[b])
                if d is not None:
                    out[i, j] = d
    return out


def pair_dimension_differences(
    engine: Engine, pair_set: str, matrix: RatingMatrix
) -> tuple[NDArray[np.float64], tuple[str, ...]]:
    """Per row, rater and dimension of ``matrix`` (a matrix of ``pair_set``): the rater's score on
    item A minus its score on item B in that dimension (units × raters × dimensions, dimensions in
    name order), NaN where the rater did not score both items in it or is no annotator of the
    dataset; and the dimension names."""
    pairs, annotators, scores = _pair_scores(engine, pair_set, matrix)
    dims = tuple(sorted({d for by_item in scores.values() for sc in by_item.values() for d in sc}))
    at = {d: k for k, d in enumerate(dims)}
    out = np.full((*matrix.values.shape, len(dims)), np.nan)
    for i, pid in enumerate(matrix.unit_ids):
        a, b = pairs[pid]
        for aid, j in annotators.items():
            by_item = scores.get(aid, {})
            sa, sb = by_item.get(a), by_item.get(b)
            if sa and sb:
                for d in sa.keys() & sb.keys():
                    out[i, j, at[d]] = sa[d] - sb[d]
    return out, dims


# ---------------------------------------------------------------- humans and swapped judges, for the joint model

_SWAP = {"A": "B", "B": "A", "T": "T"}


@dataclass(frozen=True, eq=False)
class JointInputs:
    """A pairwise campaign's pair set as codes A = 0, B = 1, T = 2 (NaN missing): the human
    annotators' labels and each judge's verdicts in AB and in BA order, mapped back to canonical
    order (under BA the item shown first is B). One row per pair of the pair set, sampled order."""

    campaign: str
    pairs: str
    pair_ids: tuple[int, ...]
    human_names: tuple[str, ...]
    human_groups: tuple[str | None, ...]
    humans: NDArray[np.float64]
    judge_names: tuple[str, ...]
    judges_ab: NDArray[np.float64]
    judges_ba: NDArray[np.float64]


def _canonical(presented: str, order: str) -> str | None:
    v = presented.strip().upper()
    v = "T" if v.startswith("T") else v[:1]
    if v not in _SWAP:
        return None
    return v if order == "AB" else _SWAP[v]


def campaign_joint_inputs(engine: Engine, campaign: str) -> JointInputs:
    """Human labels and swapped judge verdicts of a pairwise ``campaign`` (first repeat,
    condition and dimension seen for each judge and pair)."""
    # imported here: store.campaigns imports the runner, which imports store.campaigns back, so
    # importing it at module level from a module the CLI loads first breaks that cycle's order
    from judgepanel.store.campaigns import campaign_spec, swapped_verdicts

    spec, _ = campaign_spec(engine, campaign)
    if spec.protocol != "pairwise" or spec.pairs is None:
        raise BadInput(f"campaign {campaign!r} is not a pairwise campaign over a pair set")
    verdicts = swapped_verdicts(engine, campaign)
    items = pair_items(engine, spec.pairs)
    row_of = {p: i for i, p in enumerate(items.pair_ids)}
    n = len(items.pair_ids)
    try:
        matrix: RatingMatrix | None = pair_matrix(engine, spec.pairs, group=HUMAN)
    except NoRaters:  # no human labels on this pair set: the judges alone
        matrix = None
    human_names = () if matrix is None else matrix.rater_names
    humans = np.full((n, len(human_names)), np.nan)
    if matrix is not None:
        humans[[row_of[u] for u in matrix.unit_ids]] = matrix.values
    names = tuple(verdicts)
    ab = np.full((n, len(names)), np.nan)
    ba = np.full((n, len(names)), np.nan)
    code = {"A": 0.0, "B": 1.0, "T": 2.0}
    for j, name in enumerate(names):
        sv = verdicts[name]
        for pid, v_ab, v_ba in zip(sv.pair_ids, sv.ab, sv.ba, strict=True):
            i = row_of.get(pid)
            if i is None or not np.isnan(ab[i, j]):
                continue  # another repeat / condition of a pair already taken
            c_ab, c_ba = _canonical(v_ab, "AB"), _canonical(v_ba, "BA")
            if c_ab is not None and c_ba is not None:
                ab[i, j], ba[i, j] = code[c_ab], code[c_ba]
    return JointInputs(
        campaign=campaign,
        pairs=spec.pairs,
        pair_ids=items.pair_ids,
        human_names=human_names,
        human_groups=() if matrix is None else matrix.rater_groups,
        humans=humans,
        judge_names=names,
        judges_ab=ab,
        judges_ba=ba,
    )
