"""`judgepanel demo`: the main job end to end on embedded defaults (SQLite, bundled sample, offline)."""

from __future__ import annotations

import typer

from judgepanel.cli.context import state
from judgepanel.cli.render import console, emit_json, table
from judgepanel.cli.repair_cmd import print_comparison


def _short(spec: str) -> str:
    """`sim:judge-b?position_bias=0.15` -> `judge-b (bias 0.15)`, so the table fits 80 columns."""
    model, _, query = spec.partition(":")[2].partition("?")
    bias = query.partition("position_bias=")[2].split("&")[0]
    return f"{model} (bias {bias})" if bias else model


def demo(
    ctx: typer.Context,
    json_: bool = typer.Option(False, "--json"),
    report_path: str = typer.Option(
        "demo-report.html", "--report", help="Where to write the HTML report of the demo campaigns."
    ),
) -> None:
    """Import the bundled sample and run the whole job on it, offline."""
    from judgepanel.demo import DIMENSION, PAIRS, PAIRWISE, POINTWISE, REPAIR, REPAIR_DIMENSION, run_demo
    from judgepanel.report.render import write_report

    st = state(ctx)
    engine = st.engine(migrated=False, create=True)
    report = run_demo(engine, say=(lambda _m: None) if json_ else (lambda m: console.print(f"• {m}")))
    page = write_report(
        engine,
        [PAIRWISE, POINTWISE],
        report_path,
        db_label="the demo database",
        iteration=REPAIR if report.repair is not None else None,
        force=True,  # the demo rebuilds its own report each time it runs
    )
    if json_:
        emit_json(
            {"db": st.db_url, "steps": {title: result for title, result in report.steps}, "report": page.path}
        )
        return
    table(
        f"simulated judges (sim:, planted slot bias) on {DIMENSION}; no model was called",
        [
            "judge",
            "back wins",
            "front wins",
            "sign p",
            "κ experts",
            "ρ no rubric",
            "ρ rubric",
        ],
        [
            [
                _short(r["judge"]),
                r["back_wins"],
                r["front_wins"],
                f"{r['p_value']:.2g}",
                r["kappa_pairs"],
                r["spearman_none"],
                r["spearman_rubric"],
            ]
            for r in report.panel
        ],
    )
    console.print(
        "back/front wins: swapped pairs where the judge chose the same slot in both orders. "
        "κ: Cohen's κ with the experts' majority A/B/T. ρ: Spearman with the experts' mean score."
    )
    if report.repair is not None:
        console.print()
        print_comparison(
            report.repair,
            f"SIMULATED rubric repair on {REPAIR_DIMENSION} (sim judges and sim editor; no model was called)",
        )
    db = st.db_url
    console.print(
        f"\nEverything is stored in {db}. Next:\n"
        f"  judgepanel --db {db} campaign status {PAIRWISE}\n"
        f"  judgepanel --db {db} metrics bias --campaign {PAIRWISE}\n"
        f"  judgepanel --db {db} metrics matrix --pairs {PAIRS}\n"
        f'  judgepanel --db {db} query "select rationale from verdict limit 3"\n'
        f"  judgepanel --db {db} repair status {REPAIR}\n"
        f"  judgepanel --db {db} repair rewrite {REPAIR}"
    )
    console.print(f"\nReport (open it in a browser): {page.path}")
