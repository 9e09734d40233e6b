"""Binary outcomes (pass/fail) of a pointwise campaign's judge and of a human group, per item."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy import Engine

from judgepanel.errors import BadInput
from judgepanel.store.report import campaign_facts, human_item_score_columns, verdict_columns


@dataclass(frozen=True)
class PassFail:
    judge: str  # the judge's full spec
    name: str  # its short name (`NAME=SPEC` or derived; issue 19 §3)
    condition: str | None
    dimension: str | None
    threshold: float
    human_group: str
    human: list[int]  # labelled items: the group's verdict (mean score ≥ threshold)
    judge_labelled: list[int]  # the judge's verdict on the same items
    judge_unlabelled: list[int]  # the judge's verdict on items no one in the group labelled
    # a `scoring=logprobs` judge passes on its expectation (a continuous score against a threshold)
    score_source: str = "expectation"


def pass_fail(
    engine: Engine,
    campaign: str,
    *,
    human_group: str,
    threshold: float,
    judge: str | None = None,
    condition: str | None = None,
    dimension: str | None = None,
) -> PassFail:
    """A pass is a score ≥ `threshold`: the judge's score of the first sample, the group's mean."""
    facts = campaign_facts(engine, campaign)
    if facts.protocol != "pointwise":
        raise BadInput(f"campaign {campaign!r} is {facts.protocol}; prevalence needs a pointwise campaign")
    if not facts.judges:
        raise BadInput(f"campaign {campaign!r} has no judge")
    names = {j: facts.judge_names.get(j, j) for j in facts.judges}
    by_name = {n: j for j, n in names.items()}
    if judge is None:
        if len(facts.judges) > 1:
            raise BadInput(f"campaign {campaign!r} has {len(facts.judges)} judges; name one with --judge")
        judge = facts.judges[0]
    elif judge in by_name and judge not in facts.judges:  # its short name (issue 19 §3)
        judge = by_name[judge]
    elif judge not in facts.judges:
        raise BadInput(f"no judge {judge!r} in campaign {campaign!r} (judges: {', '.join(names.values())})")
    for what, value, known in (
        ("condition", condition, facts.conditions),
        ("dimension", dimension, facts.dimensions),
    ):
        if value is not None and value not in known:
            raise BadInput(
                f"no {what} {value!r} in campaign {campaign!r} (has: {', '.join(known) or 'none'})"
            )
        if value is None and len(known) > 1:
            raise BadInput(
                f"campaign {campaign!r} has several {what}s ({', '.join(known)}); name one with --{what}"
            )
    condition = condition or (facts.conditions[0] if facts.conditions else None)
    dimension = dimension or (facts.dimensions[0] if facts.dimensions else None)
    # the column readers of the report (`store.report.verdict_columns`): arrays, not a record per verdict
    v = verdict_columns(engine, campaign)
    mine = (
        (v.judge == _code(v.judges, judge))
        & (v.condition == _code(v.conditions, condition))
        & (v.dimension == _code(v.dimensions, dimension))
        & ~np.isnan(v.score)
    )
    # in job order, so a unit judged twice keeps its last score (as a dict built row by row does)
    scores = dict(zip(v.unit[mine].tolist(), v.score[mine].tolist(), strict=True))
    if not scores:
        raise BadInput(f"judge {judge!r} has no scored verdict in campaign {campaign!r}")
    humans = human_item_score_columns(engine, facts.dataset_id, dimension)
    groups = sorted(set(humans.groups))
    in_group = [k for k, g in enumerate(humans.groups) if g == human_group]
    if not in_group:
        raise BadInput(
            f"no human group {human_group!r} labels {dimension or 'this dataset'} (groups: {', '.join(groups) or 'none'})"
        )
    rows = np.isin(humans.rater, in_group)
    by_item: dict[int, list[float]] = defaultdict(list)
    for item, value in zip(humans.unit[rows].tolist(), humans.value[rows].tolist(), strict=True):
        by_item[item].append(value)
    labelled = sorted(set(scores) & set(by_item))
    return PassFail(
        judge=judge,
        name=names[judge],
        condition=condition,
        dimension=dimension,
        threshold=threshold,
        human_group=human_group,
        human=[int(np.mean(by_item[i]) >= threshold) for i in labelled],
        judge_labelled=[int(scores[i] >= threshold) for i in labelled],
        judge_unlabelled=[int(s >= threshold) for i, s in sorted(scores.items()) if i not in by_item],
    )


def _code(names: Sequence[object], name: str | None) -> int:
    """The code of `name` in a column reader's list of names (-2, matching none, when absent)."""
    return names.index(name) if name in names else -2
