"""The text of `metrics heldout`'s ceiling band and registered comparisons (the JSON is built by
their `as_dict`); kept apart from `metrics_cmd` so that module stays readable. Renders only."""

from __future__ import annotations

import math
from typing import Any

from judgepanel.cli.render import console, table


def _f(v: Any, digits: int = 3) -> str:
    return "—" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:.{digits}f}"


def _ci(ci: list[Any]) -> str:
    return f"[{_f(ci[0])}, {_f(ci[1])}]"


def _signed(v: Any) -> str:
    return "—" if v is None else f"{v:+.3f}"


def ceiling_words(band: dict[str, Any] | None) -> str:
    """`ceiling [0.681, 0.746]`, or why there is none."""
    if band is None:
        return "no ceiling band (fewer than three raters)"
    if band["low"] is None:
        return "no ceiling band (no unit labelled by three raters)"
    return f"ceiling band [{_f(band['low'])}, {_f(band['high'])}]"


def render_ceilings(ceilings: dict[str, dict[str, Any] | None]) -> None:
    rows = [
        [
            g,
            "—" if b is None or b["low"] is None else _ci([b["low"], b["high"]]),
            "—" if b is None else _f(b["observed_agreement"]),
            "—" if b is None else b["n_triples"],
            "—" if b is None else _f(b["mismatch"], 4),
        ]
        for g, b in ceilings.items()
    ]
    table(
        "Bayes ceiling of predicting one rater of each group (LP identification bounds from the "
        "three-rater pattern frequencies; docs/validation.md)",
        ["group", "ceiling band", "rater-rater agreement", "unit-triples", "mismatch"],
        rows,
    )


def render_registered(reg: dict[str, Any], ceilings: dict[str, dict[str, Any] | None]) -> None:
    """One table per human group: the three registered comparisons with their verdicts."""
    if reg["model"] is None:
        console.print("registered comparisons: no *-joint model was run (add one with --method)")
        return
    for g, r in reg["groups"].items():
        acc = r["accuracy"]
        rows: list[list[Any]] = []
        a = r["model_vs_peers"]
        if a is not None:
            versus = f"{_f(acc['model'])} vs {_f(acc['peers'])}"
            rows.append(_difference_row(f"(a) model − other {g} labels' rule", versus, a, "> 0"))
        b = r["judges_vs_second_rater"]
        if b is not None:
            versus = f"{_f(acc['judges_only'])} vs {_f(acc['second_rater'])}"
            target = f"> {reg['margin']:+.2f}"
            rows.append(_difference_row(f"(b) judges-only − second {g} rater", versus, b, target))
        c = r["calibration"]
        if c is not None:
            rows.append(
                [
                    "(c) model's ECE",
                    "",
                    _f(c["ece"]["value"]),
                    _ci(c["ece"]["ci"]),
                    f"≤ {reg['ece_max']:.2f}",
                    c["ece"]["verdict"],
                ]
            )
            ll = c["log_loss_vs_humans"]
            rows.append(
                [
                    "(c) log loss: model − humans-only",
                    "",
                    _signed(ll["value"]),
                    _ci(ll["ci"]),
                    f"≤ {-reg['log_loss_gain']:+.2f}",
                    f"{ll['verdict']} (calibration: {c['verdict']})",
                ]
            )
        method = next((x["ci_method"] for x in (a, b) if x is not None), "")
        table(
            f"group {g}: registered comparisons (model {reg['model']}, judges-only {reg['judges_only']}, "
            f"humans-only {reg['humans_only']}; 95% CI: {method}); {ceiling_words(ceilings.get(g))}",
            ["comparison", "accuracies", "Δ / value", "CI", "target", "verdict"],
            rows,
        )
        for what, why in r["missing"].items():
            console.print(f"group {g}: {what} not computed: {why}")


def _difference_row(comparison: str, accuracies: str, d: dict[str, Any], target: str) -> list[Any]:
    """A registered comparison's row: its difference with the CI, the target and the verdict."""
    return [comparison, accuracies, _signed(d["value"]), _ci(d["ci"]), target, d["verdict"]]
