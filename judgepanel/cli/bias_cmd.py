"""`judgepanel metrics bias --campaign NAME`: position bias of each judge from its swapped pairs."""

from __future__ import annotations

import typer

from judgepanel.cli.context import state
from judgepanel.cli.render import emit_json, table
from judgepanel.runner.bias import campaign_bias


def bias(
    ctx: typer.Context,
    campaign: str = typer.Option(..., "--campaign", help="A pairwise campaign (asked in AB and BA order)."),
    json_: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Per judge: back/front slot wins over inconsistent swapped pairs and the exact sign-test p-value."""
    result = campaign_bias(state(ctx).engine(), campaign)
    if json_:
        emit_json({"judges": {name: b.as_dict() for name, b in result.items()}})
        return
    table(
        f"position bias in {campaign} (decisive swapped pairs)",
        ["judge", "pairs", "consistent", "inconsistent", "back wins", "front wins", "p (sign test)"],
        [
            [n, b.decisive, b.consistent, b.inconsistent, b.back_wins, b.front_wins, b.p_value]
            for n, b in result.items()
        ],
    )
