"""Position bias per judge of a stored pairwise campaign (`metrics bias --campaign NAME`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgepanel.store.campaigns import swapped_verdicts

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from judgepanel.metrics.bias import PositionBias


def campaign_bias(engine: Engine, campaign: str) -> dict[str, PositionBias]:
    verdicts = swapped_verdicts(engine, campaign)
    from judgepanel.metrics.bias import position_bias  # numpy and SciPy: once there is data to test

    return {judge: position_bias(sv.ab, sv.ba) for judge, sv in verdicts.items()}
