"""Binary outcomes (pass/fail) of a pointwise campaign's judge and of a human group, per item."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from sqlalchemy import Engine

from judgepanel.errors import BadInput
from judgepanel.store.report import campaign_facts, campaign_verdicts, human_item_scores


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
    scores = {
        v.unit: float(v.score)
        for v in campaign_verdicts(engine, campaign)
        if v.judge == judge and v.score is not None and v.condition == condition and v.dimension == dimension
    }
    if not scores:
        raise BadInput(f"judge {judge!r} has no scored verdict in campaign {campaign!r}")
    humans = human_item_scores(engine, facts.dataset_id, dimension)
    groups = sorted({g for g, _ in humans.raters.values()})
    members = [vals for g, vals in humans.raters.values() if g == human_group]
    if not members:
        raise BadInput(
            f"no human group {human_group!r} labels {dimension or 'this dataset'} (groups: {', '.join(groups) or 'none'})"
        )
    by_item: dict[int, list[float]] = defaultdict(list)
    for vals in members:
        for item, v in vals.items():
            by_item[item].append(v)
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
