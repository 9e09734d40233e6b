"""`judgepanel compare A B`: two campaigns side by side on the items both judged."""

from __future__ import annotations

import typer

from judgepanel.cli.context import state
from judgepanel.cli.options import BOOTSTRAP, JSON, RESAMPLE
from judgepanel.cli.render import emit_json, fmt_number, sim_title, table


def compare(
    ctx: typer.Context,
    a: str = typer.Argument(..., help="The first campaign (the baseline)."),
    b: str = typer.Argument(..., help="The second campaign."),
    human_group: str | None = typer.Option(
        None, "--human-group", help="The human group whose labels are the reference (default: every human)."
    ),
    bootstrap: int = BOOTSTRAP,
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
    resample: str | None = RESAMPLE,
    rows: int = typer.Option(200, "--rows", help="Units listed in the JSON `rows` (changed ones first)."),
    json_: bool = JSON,
) -> None:
    """Two campaigns side by side: what differs, changed verdicts, agreement with humans B − A."""
    from judgepanel.analysis.compare import compare_campaigns
    from judgepanel.errors import BadInput

    if resample not in (None, "groups", "items"):
        raise BadInput(f"--resample must be groups or items, got {resample!r}")
    if rows < 0:
        raise BadInput(f"--rows must be 0 or more, got {rows}")
    out = compare_campaigns(
        state(ctx).engine(),
        a,
        b,
        human_group=human_group,
        n_boot=bootstrap,
        seed=seed,
        resample=resample,
        rows_limit=rows,
    )
    if json_:
        emit_json(out)
        return
    print(f"{a} → {b}: {out['units']} units judged by both, {out['changed']} verdicts changed")
    for d in out["differs"]:
        print(f"  differs: {d['what']}: {d['a']} → {d['b']}")
    for side in ("a", "b"):
        if out["unmatched"][side]:
            print(f"  only in {out[side]}: {', '.join(out['unmatched'][side])}")

    def cell(est: dict[str, object] | None) -> str:
        if not est:
            return "—"
        ci = est["ci"]
        assert isinstance(ci, list)
        return f"{fmt_number(est['value'])} [{fmt_number(ci[0])}, {fmt_number(ci[1])}]"

    table(
        sim_title(
            f"Agreement with humans, {b} − {a} (paired, {out['resample']} bootstrap)", out["simulated"]
        ),
        ["column", "units", "changed", "exact A", "exact B", "Δ exact", "κ A", "κ B", "Δ κ"],
        [
            [
                c["column"],
                c["units"],
                c["changed"],
                fmt_number((c["agreement"] or {}).get("a", {}).get("exact")),
                fmt_number((c["agreement"] or {}).get("b", {}).get("exact")),
                cell((c["delta"] or {}).get("exact")),
                fmt_number((c["agreement"] or {}).get("a", {}).get("kappa")),
                fmt_number((c["agreement"] or {}).get("b", {}).get("kappa")),
                cell((c["delta"] or {}).get("kappa")),
            ]
            for c in out["columns"]
        ],
    )
