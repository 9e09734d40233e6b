"""Position bias per judge of a stored pairwise campaign (`metrics bias --campaign NAME`)."""

from __future__ import annotations

from sqlalchemy import Engine

from judgepanel.metrics.bias import PositionBias, position_bias
from judgepanel.store.campaigns import swapped_verdicts


def campaign_bias(engine: Engine, campaign: str) -> dict[str, PositionBias]:
    return {judge: position_bias(sv.ab, sv.ba) for judge, sv in swapped_verdicts(engine, campaign).items()}
