"""Every store reader that takes a campaign name looks it up with the one `campaign_by_name`, so an
unknown name reads the same everywhere: the name, and the campaigns there are."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from judgepanel.errors import NotFound
from judgepanel.runner import campaign as api
from judgepanel.store.conditions import load_condition_rows
from judgepanel.store.export import campaign_ids
from judgepanel.store.logprob_scores import pointwise_replies
from judgepanel.store.repair import clause_verdict_rows
from judgepanel.store.report import campaign_facts, campaign_verdicts
from judgepanel.store.validation import read_campaign_panel
from tests.runner.conftest import DATASET, load_tiny


def _panel(engine: Engine, name: str) -> Any:
    with Session(engine) as s:
        return read_campaign_panel(s, name)


LOOKUPS: dict[str, Callable[[Engine, str], Any]] = {
    "export.campaign_ids": campaign_ids,
    # the reader behind runner.logprob_scores (issue 30 §4 moved the reading itself there)
    "logprob_scores.pointwise_replies": pointwise_replies,
    "repair.clause_verdict_rows": clause_verdict_rows,
    "report.campaign_facts": campaign_facts,
    "report.campaign_verdicts": campaign_verdicts,
    "conditions.load_condition_rows": lambda e, n: load_condition_rows(e, n, "expert"),
    "validation.read_campaign_panel": _panel,
}


@pytest.mark.parametrize("reader", list(LOOKUPS))
def test_an_unknown_campaign_is_named_with_the_known_ones(engine: Engine, reader: str) -> None:
    load_tiny(engine)
    for name in ("zeta", "alpha"):
        api.create(engine, name, dataset=DATASET, protocol="pointwise", judges=["sim:a"])
    with pytest.raises(NotFound) as caught:
        LOOKUPS[reader](engine, "nope")
    assert str(caught.value) == "no campaign named 'nope' (known: alpha, zeta)"
