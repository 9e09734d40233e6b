"""The alignment section of a report (`report --alignment NAME`): the stored comparison of
`align compare` as a forest plot per version (QWK with its 95 % CI) and one of the paired deltas,
the overfitting gap, what was chosen on development items (the examples, rounds or
configurations) and the template diff."""

from __future__ import annotations

import html
from typing import Any

from sqlalchemy import Engine

from judgepanel.errors import BadInput
from judgepanel.report import plots
from judgepanel.store.align import get_alignment

STATS = ("exact", "kappa", "qwk", "spearman")


def _fmt(v: Any) -> str:
    return "–" if v is None else f"{v:+.3f}"


def _ci(ci: Any) -> tuple[float, float] | None:
    return None if not ci or ci[0] is None or ci[1] is None else (float(ci[0]), float(ci[1]))


def _fmt_ci(ci: Any) -> str:
    c = _ci(ci)
    return "–" if c is None else f"{c[0]:+.3f} … {c[1]:+.3f}"


def _choices(ch: dict[str, Any]) -> list[str]:
    """What was chosen, one line each (plain text)."""
    out: list[str] = []
    if ch.get("method") == "fewshot":
        ex = ch["examples"]
        out.append(
            f"{len(ex['items'])} worked examples of {ex['disagreeing']} disagreeing development items "
            f"(seed {ch['seed']}; by human score: {', '.join(f'{k}: {v}' for k, v in ex['strata'].items())}): "
            + ", ".join(ex["items"])
        )
    elif ch.get("method") == "instructions":
        for r in ch["rounds"]:
            qwk = (r.get("dev_agreement") or {}).get("qwk")
            out.append(
                f"round {r['round']}: "
                + ("unchanged" if r.get("unchanged") else f"development QWK {_fmt(qwk)}")
            )
        out.append(f"kept round {ch['best_round']}" + (f" ({ch['stopped']})" if ch.get("stopped") else ""))
    elif ch.get("method") == "grid":
        for c in ch["configs"]:
            out.append(
                f"config {c['config']}: {c['judge']}, instructions {c['instructions_index']}: development QWK {_fmt(c['dev_agreement'].get('qwk'))}"
            )
        out.append(f"kept config {ch['best_config']}")
    return out


def alignment_section(engine: Engine, name: str) -> dict[str, Any]:
    """`{"name", "html", "markdown", "plots", "simulated"}` for the report templates."""
    rec = get_alignment(engine, name)
    comp = rec.comparison
    if comp is None:
        pending = [s for s, state in rec.steps.items() if state != "done"]
        raise BadInput(
            f"alignment {name!r} is not compared yet (pending: {', '.join(pending)}); run `judgepanel align run {name}`"
        )
    versions = list(comp["versions"])
    agree = {v: comp["versions"][v]["agreement"] for v in versions}
    forest = plots.forest_plot(
        versions,
        [agree[v]["qwk"] for v in versions],
        [_ci(agree[v]["ci"]["qwk"]) for v in versions],
        "QWK with the human reference, 95 % CI (evaluation items)",
    )
    keys = list(comp["delta"])
    forest_delta = plots.forest_plot(
        [k.replace("_vs_", " − ") for k in keys],
        [comp["delta"][k]["qwk"]["value"] for k in keys],
        [_ci(comp["delta"][k]["qwk"]["ci"]) for k in keys],
        "paired ΔQWK against the original judge, 95 % CI",
    )
    sim = bool(comp.get("simulated"))
    gap = comp["overfit_gap"]["qwk"]
    gap_line = (
        f"Overfitting gap (QWK): development gain {_fmt(gap['dev_gain']['value'])} − evaluation gain "
        f"{_fmt(gap['eval_gain']['value'])} = {_fmt(gap['value'])} (95 % CI {_fmt_ci(gap['ci'])})."
    )
    head = (
        f"{comp['method']} alignment of {comp['judge']} on {comp['dataset']} {comp['dimension']} against "
        f"{comp['human_group']}: {comp['units']['dev']} development and {comp['units']['eval']} evaluation items; "
        f"{comp['bootstrap']} {comp['resample']} resamples."
    )
    rows = "".join(
        f"<tr><td>{html.escape(v)}</td>"
        + "".join(
            f"<td class='num'>{_fmt(agree[v][s])}</td><td>{_fmt_ci(agree[v]['ci'][s])}</td>" for s in STATS
        )
        + "</tr>"
        for v in versions
    )
    choice_lines = _choices(rec.choices or {})
    diff = "\n".join(comp.get("template_diff") or []) or "(the aligned template is the original)"
    body = (
        f"<p>{html.escape(head)}{' <span class=badge>simulated</span>' if sim else ''}</p>"
        + "<table><tr><th>version</th>"
        + "".join(f"<th class='num'>{s}</th><th>95 % CI</th>" for s in STATS)
        + "</tr>"
        + rows
        + "</table>"
        + f"<div class='grid'><figure data-plot='forest'>{forest}</figure><figure data-plot='forest'>{forest_delta}</figure></div>"
        + f"<p>{html.escape(gap_line)}</p>"
        + "<h3>Chosen on development items</h3><ul>"
        + "".join(f"<li>{html.escape(x)}</li>" for x in choice_lines)
        + "</ul><h3>Template diff</h3><pre>"
        + html.escape(diff)
        + "</pre>"
    )
    md = [
        head + (" (**simulated**)" if sim else ""),
        "",
        "| version | " + " | ".join(f"{s} | 95 % CI" for s in STATS) + " |",
        "|---|" + "---:|---|" * len(STATS),
        *[
            f"| {v} | "
            + " | ".join(f"{_fmt(agree[v][s])} | {_fmt_ci(agree[v]['ci'][s])}" for s in STATS)
            + " |"
            for v in versions
        ],
        "",
        gap_line,
        "",
        "Chosen on development items:",
        "",
        *[f"- {x}" for x in choice_lines],
        "",
        "```diff",
        diff,
        "```",
    ]
    return {"name": name, "html": body, "markdown": "\n".join(md), "plots": 2, "simulated": sim}
