"""The repair-iteration section of a report: α and human agreement per rubric version with their
CIs (forest plots), the pre-declared criterion and its verdict, and each edited clause side by
side with the editor's reason (a word-level diff)."""

from __future__ import annotations

import difflib
import html
from typing import Any

from sqlalchemy import Engine

from judgepanel.providers.spec import given_judge_names, names_beside, parse_spec, split_judge_name
from judgepanel.report import plots
from judgepanel.store.checkers import iteration_checkers
from judgepanel.store.repair import get_iteration
from judgepanel.store.simulated import iteration_simulated

VERSIONS = ("original", "contested", "control")


def _over(comp: dict[str, Any]) -> str:
    if comp.get("resample") == "groups" and comp.get("n_groups"):
        return f"{comp['n_groups']} groups (articles)"
    return "items"


def _notes(comp: dict[str, Any]) -> str:
    """Sample size, equivalence, unchanged clauses and editor isolation, as plain sentences."""
    out = []
    if comp.get("human", {}).get("original", {}).get("note"):
        out.append(f" Humans: {comp['human']['original']['note']} ({comp.get('n_human_items')} rated items).")
    eq = comp.get("human_equivalence") or {}
    if eq.get("p") is not None:
        out.append(
            f" Equivalence (TOST) of Δρ with humans within ±{eq['margin']:g}: 90 % CI "
            f"{eq['ci90'][0]:+.3f}..{eq['ci90'][1]:+.3f}, p = {eq['p']:.3g}"
            + (
                f"; power {eq['power']:.3g} at a true Δ of 0, smallest margin this design shows "
                f"±{eq['detectable_margin']:.2g}."
                if eq.get("power") is not None and eq.get("detectable_margin") is not None
                else "."
            )
        )
    for w in comp.get("warnings") or []:
        out.append(f" Warning: {w}.")
    for k, ids in (comp.get("clauses_unchanged") or {}).items():
        if ids:
            out.append(f" Returned unchanged by the editor ({k}): {', '.join(ids)}.")
    shared = comp.get("editor_shares_family_with") or {}
    if shared:
        names = names_beside(comp.get("judges") or [], comp.get("judge_names"))
        shown = sorted(names.get(j, j) for j in shared)
        out.append(f" The editor shares a provider or model family with {', '.join(shown)}.")
    return html.escape("".join(out))


def _ci(ci: Any) -> tuple[float, float] | None:
    return (float(ci[0]), float(ci[1])) if isinstance(ci, list | tuple) and len(ci) == 2 else None


def _fmt(v: Any) -> str:
    return "—" if v is None else f"{float(v):.3f}"


def _fmt_ci(ci: Any) -> str:
    c = _ci(ci)
    return "—" if c is None else f"[{c[0]:.3f}, {c[1]:.3f}]"


def checkers_part(rows: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """The checker proposals (`repair checkers`) as an HTML table and Markdown lines ('' / [] when none)."""
    if not rows:
        return "", []

    def params(r: dict[str, Any]) -> str:
        return ", ".join(f"{k}={v}" for k, v in r["params"].items() if v is not None) or "—"

    def decision(r: dict[str, Any]) -> str:
        if r["checker"] == "none":
            return "no checker proposed"
        if r["kept"]:
            return "kept"
        return "refused" + (f" ({r['error']})" if r.get("error") else "")

    threshold = rows[0]["threshold"]
    intro = (
        f"Each clause was offered to the editor with the checker catalogue only; a proposed checker is kept "
        f"when it agrees with the judge majority on at least {threshold:g} of the development items "
        "(items where the judges tie are left out). A kept checker answers its clause in later campaigns "
        "on this rubric version without a model call."
    )
    body = "".join(
        f"<tr><td><code>{html.escape(r['clause'])}</code></td><td>{html.escape(r['checker'])}</td>"
        f"<td>{html.escape(params(r))}</td><td class='num'>{_fmt(r['agreement'])}</td>"
        f"<td class='num'>{r['n_items']}</td><td class='{'good' if r['kept'] else 'muted'}'>{html.escape(decision(r))}</td></tr>"
        for r in rows
    )
    part = (
        f"<h3>Clause checkers</h3><p class='muted'>{html.escape(intro)}</p>"
        "<table data-table='checkers'><tr><th>clause</th><th>checker</th><th>parameters</th>"
        "<th class='num'>agreement</th><th class='num'>items</th><th>decision</th></tr>" + body + "</table>"
    )
    md = [
        "",
        "Clause checkers. " + intro,
        "",
        "| clause | checker | parameters | agreement | items | decision |",
        "|---|---|---|---:|---:|---|",
        *[
            f"| `{r['clause']}` | {r['checker']} | {params(r).replace('|', '/')} | {_fmt(r['agreement'])} "
            f"| {r['n_items']} | {decision(r).replace('|', '/')} |"
            for r in rows
        ],
    ]
    return part, md


def word_diff(old: str, new: str) -> tuple[str, str]:
    """Both texts as HTML, removed words marked in the old and added words in the new."""
    a, b = old.split(), new.split()
    left: list[str] = []
    right: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        olds = html.escape(" ".join(a[i1:i2]))
        news = html.escape(" ".join(b[j1:j2]))
        if op == "equal":
            left.append(olds)
            right.append(news)
        else:
            if olds:
                left.append(f'<span class="diff-old">{olds}</span>')
            if news:
                right.append(f'<span class="diff-new">{news}</span>')
    return " ".join(left), " ".join(right)


def iteration_section(engine: Engine, name: str) -> dict[str, Any]:
    """`{"name", "html", "markdown", "plots", "simulated", "judges", "editor"}` for the report
    templates."""
    rec = get_iteration(engine, name)
    comp = rec.comparison
    simulated = iteration_simulated(engine, rec.inputs, rec.campaigns)
    given = [str(j) for j in rec.inputs.get("judges") or []]
    # each judge by its short name (issue 19 §3), the full spec beside it once
    specs = [parse_spec(split_judge_name(j)[1]).name for j in given]
    named = given_judge_names(given)
    judges = [named[s] for s in specs]
    editor = str(rec.inputs.get("editor") or "")
    badge = " <span class='badge'>simulated</span>" if simulated else ""
    head = (
        f"<p>Dataset {html.escape(rec.dataset)} · rubric versions: "
        + " · ".join(f"{v} <code>{html.escape(str(rec.rubrics.get(v)))}</code>" for v in VERSIONS)
        + f" · control seed {rec.control_seed}</p>"
        + "<p>Judges: "
        + ", ".join(
            f"<code>{html.escape(n)}</code>" + (f" (<code>{html.escape(s)}</code>)" if s != n else "")
            for n, s in zip(judges, specs, strict=True)
        )
        + f" · editor <code>{html.escape(editor)}</code>{badge}</p>"
    )
    md = [
        f"Dataset {rec.dataset}; rubric versions: "
        + ", ".join(f"{v} `{rec.rubrics.get(v)}`" for v in VERSIONS)
        + f"; control seed {rec.control_seed}.",
        "",
        "Judges: "
        + ", ".join(f"`{n}`" + (f" (`{s}`)" if s != n else "") for n, s in zip(judges, specs, strict=True))
        + f"; editor `{editor}`"
        + (" (**simulated**)" if simulated else "")
        + ".",
        "",
    ]
    extra = {"simulated": simulated, "judges": judges, "editor": editor}
    checker_html, checker_md = checkers_part([r.as_dict() for r in iteration_checkers(engine, name)])
    if comp is None:
        pending = [s for s, state in rec.steps.items() if state != "done"]
        note = f"The iteration is not compared yet (pending steps: {', '.join(pending)})."
        return {
            "name": name,
            "html": head + f"<p class='muted'>{html.escape(note)}</p>" + checker_html,
            "markdown": "\n".join([*md, note, *checker_md]),
            "plots": 0,
            **extra,
        }
    alpha = comp["alpha"]
    human = comp["human"]
    forest_alpha = plots.forest_plot(
        list(VERSIONS),
        [alpha[v]["value"] for v in VERSIONS],
        [_ci(alpha[v]["ci"]) for v in VERSIONS],
        "inter-judge Krippendorff α (nominal) with 95 % CI",
    )
    forest_human = plots.forest_plot(
        list(VERSIONS),
        [human[v]["spearman"] for v in VERSIONS],
        [_ci(human[v]["ci"]["spearman"]) for v in VERSIONS],
        "judge ensemble vs humans: Spearman ρ with 95 % CI",
    )
    rows = "".join(
        f"<tr><td>{v}</td><td class='num'>{_fmt(alpha[v]['value'])}</td><td>{_fmt_ci(alpha[v]['ci'])}</td>"
        f"<td class='num'>{_fmt(human[v]['spearman'])}</td><td>{_fmt_ci(human[v]['ci']['spearman'])}</td>"
        f"<td class='num'>{_fmt(human[v]['alpha'])}</td><td>{_fmt_ci(human[v]['ci']['alpha'])}</td></tr>"
        for v in VERSIONS
    )
    deltas = "".join(
        f"<tr><td>{k.replace('_', ' ')}</td><td class='num'>{_fmt(d['value'])}</td><td>{_fmt_ci(d['ci'])}</td>"
        f"<td class='num'>{_fmt(comp['human_delta'][k]['spearman']['value'])}</td>"
        f"<td>{_fmt_ci(comp['human_delta'][k]['spearman']['ci'])}</td></tr>"
        for k, d in comp["delta"].items()
    )
    verdict = comp.get("verdict", {})
    badge = " · ".join(
        f"<span class='{'good' if verdict.get(k) in ('pass', 'closer', 'equivalent') else 'bad'}'>{k.replace('_', '-')}: {verdict.get(k)}</span>"
        for k in ("inter_judge", "human")
    )
    rewrites = rec.rewrites or {}
    diff_rows = []
    md_rewrites = []
    for cid, r in sorted(rewrites.items()):
        if r.get("new") == r.get("old"):
            continue
        left, right = word_diff(str(r.get("old", "")), str(r.get("new", "")))
        sets = ", ".join(r.get("sets", []))
        diff_rows.append(
            f"<tr class='case-row'><td><code>{html.escape(cid)}</code><br><span class='muted'>{html.escape(sets)}</span></td>"
            f"<td>{left}</td><td>{right}</td><td class='muted'>{html.escape(str(r.get('reason', '')))}</td></tr>"
        )
        md_rewrites.append(
            f"| `{cid}` | {sets} | {str(r.get('old', '')).replace('|', '/')} | {str(r.get('new', '')).replace('|', '/')} "
            f"| {str(r.get('reason', '')).replace('|', '/')} |"
        )
    body = (
        head
        + f"<p><strong>Criterion</strong> <code>{html.escape(str(comp.get('criterion')))}</code>, declared before "
        f"any evaluation call: {badge}</p><p>{html.escape(str(comp.get('summary', '')))}</p>"
        + "<table><tr><th>rubric version</th><th class='num'>α judges</th><th>95 % CI</th><th class='num'>ρ humans</th>"
        "<th>95 % CI</th><th class='num'>α humans (interval)</th><th>95 % CI</th></tr>"
        + rows
        + "</table>"
        + "<table><tr><th>paired difference</th><th class='num'>Δα judges</th><th>95 % CI</th><th class='num'>Δρ humans</th>"
        "<th>95 % CI</th></tr>"
        + deltas
        + "</table>"
        + f"<div class='grid'><figure data-plot='forest'>{forest_alpha}</figure><figure data-plot='forest'>{forest_human}</figure></div>"
        + f"<p class='muted'>{comp.get('units', {}).get('eval', '?')} evaluation items, "
        f"{comp.get('units', {}).get('dev', '?')} development items; paired bootstrap over {_over(comp)} "
        f"({comp.get('n_boot')} replicates).{_notes(comp)}</p>"
        + "<h3>Edited clauses</h3><table><tr><th>clause</th><th>before</th><th>after</th><th>editor's reason</th></tr>"
        + "".join(diff_rows)
        + "</table>"
        + checker_html
    )
    md += [
        f"Criterion `{comp.get('criterion')}` (declared before evaluation): inter-judge "
        f"**{verdict.get('inter_judge')}**, human **{verdict.get('human')}**. {comp.get('summary', '')}",
        "",
        "| version | α judges | 95 % CI | ρ humans | 95 % CI |",
        "|---|---:|---|---:|---|",
        *[
            f"| {v} | {_fmt(alpha[v]['value'])} | {_fmt_ci(alpha[v]['ci'])} | {_fmt(human[v]['spearman'])} "
            f"| {_fmt_ci(human[v]['ci']['spearman'])} |"
            for v in VERSIONS
        ],
        "",
        "| clause | sets | before | after | reason |",
        "|---|---|---|---|---|",
        *md_rewrites,
        *checker_md,
    ]
    return {"name": name, "html": body, "markdown": "\n".join(md), "plots": 2, **extra}
