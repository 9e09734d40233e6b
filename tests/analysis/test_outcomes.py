"""`analysis.outcomes.pass_fail` on the column readers gives what the row readers give."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from sqlalchemy import Engine

from judgepanel.analysis.outcomes import pass_fail
from judgepanel.demo import POINTWISE
from judgepanel.errors import BadInput
from judgepanel.store.readonly import read_only_engine
from judgepanel.store.report import JudgeVerdict, campaign_facts, campaign_verdicts, human_item_scores


def _by_rows(
    engine: Engine, verdicts: list[JudgeVerdict], key: tuple[str, str, str], group: str, t: float
) -> tuple[list[int], ...]:
    """The pass/fail vectors from the row readers (a record per verdict and per label), as
    `pass_fail` computed them before it read columns."""
    judge, condition, dimension = key
    scores = {
        v.unit: float(v.score)
        for v in verdicts
        if v.judge == judge and v.score is not None and v.condition == condition and v.dimension == dimension
    }
    by_item: dict[int, list[float]] = defaultdict(list)
    dataset = campaign_facts(engine, POINTWISE).dataset_id
    for g, vals in human_item_scores(engine, dataset, dimension).raters.values():
        if g == group:
            for item, value in vals.items():
                by_item[item].append(value)
    labelled = sorted(set(scores) & set(by_item))
    return (
        [int(np.mean(by_item[i]) >= t) for i in labelled],
        [int(scores[i] >= t) for i in labelled],
        [int(s >= t) for i, s in sorted(scores.items()) if i not in by_item],
    )


def test_pass_fail_matches_the_row_readers(demo_url: str) -> None:
    engine = read_only_engine(demo_url)
    try:
        facts = campaign_facts(engine, POINTWISE)
        assert len(facts.judges) > 1 and facts.conditions and facts.dimensions
        verdicts = campaign_verdicts(engine, POINTWISE, rationales=False)
        keys = [(j, c, d) for j in facts.judges for c in facts.conditions for d in facts.dimensions]
        for i, (judge, condition, dimension) in enumerate(keys):
            group, t = ("expert", 3.0) if i % 2 else ("crowd", 4.0)
            pf = pass_fail(
                engine,
                POINTWISE,
                human_group=group,
                threshold=t,
                judge=judge,
                condition=condition,
                dimension=dimension,
            )
            want = _by_rows(engine, verdicts, (judge, condition, dimension), group, t)
            assert (pf.human, pf.judge_labelled, pf.judge_unlabelled) == want, (judge, condition, group)
            assert pf.human and pf.judge_labelled  # something was compared
        assert len(keys) >= 4
        with pytest.raises(BadInput, match="no human group 'nobody'"):
            pass_fail(engine, POINTWISE, human_group="nobody", threshold=3, judge=facts.judges[0],
                      condition=facts.conditions[0], dimension=facts.dimensions[0])  # fmt: skip
    finally:
        engine.dispose()
