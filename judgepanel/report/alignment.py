"""The alignment section of a report (`report --alignment NAME`) and of the viewer's alignment page.

It shows the stored `align compare` (or, with a repair iteration, the comparison that
`align compare NAME --repair ITER` made, recomputed from its campaigns without a model call):
per version, agreement with the human group with its 95 % CI (a forest plot) and the paired delta
against the original (a second forest plot); the overfitting gap (development gain − evaluation
gain); the TOST outcome in words; calls and USD per method; and what the method chose — the
worked examples (item, human label, the original judge's score), the instructions rounds with
their development agreement and the instruction diff (word level, as the repair section diffs
clauses), or the grid's configurations with their development scores.

Every stored text is escaped here (`html.escape`); the templates insert `html` unescaped.
"""

from __future__ import annotations

import html
from typing import Any

from sqlalchemy import Engine

from judgepanel.errors import BadInput, NotFound
from judgepanel.metrics.names import TOO_FEW_GROUPS
from judgepanel.report import plots
from judgepanel.report.iteration import word_diff
from judgepanel.store.align import AlignmentRecord, get_alignment

STATS = ("exact", "kappa", "qwk", "spearman")
STAT_NAMES = {"exact": "exact", "kappa": "κ", "qwk": "QWK", "spearman": "Spearman ρ"}
COST_NAMES = {
    "original": "original judge (evaluation)",
    "alignment_choices": "alignment choices (development)",
    "aligned": "alignment in all (choices + evaluation)",
    "repair": "repair iteration in all (+ its versions judged here)",
}


def _e(x: Any) -> str:
    return html.escape(str(x))


def _f(v: Any, signed: bool = False) -> str:
    if v is None:
        return "—"
    return f"{float(v):+.3f}" if signed else f"{float(v):.3f}"


def _ci(ci: Any, signed: bool = False) -> str:
    if not isinstance(ci, list | tuple) or len(ci) != 2 or ci[0] is None or ci[1] is None:
        return "—"
    return f"[{_f(ci[0], signed)}, {_f(ci[1], signed)}]"


def _pair(ci: Any) -> tuple[float, float] | None:
    if not isinstance(ci, list | tuple) or len(ci) != 2 or ci[0] is None or ci[1] is None:
        return None
    return float(ci[0]), float(ci[1])


def _usd(v: Any) -> str:
    return "unknown (a price is missing)" if v is None else f"{float(v):.4f}"


def _spec(config: dict[str, Any]) -> str:
    """A grid judge's full spec under its short name, when they differ."""
    spec = config.get("spec")
    if not spec or spec == config.get("judge"):
        return ""
    return f"<br><span class='muted small'>{_e(spec)}</span>"


def _pair_name(key: str) -> str:
    """`repair_contested_vs_repair_original` as `repair_contested − repair_original`."""
    return key.replace("_vs_", " − ")


def tost_words(key: str, eq: dict[str, Any]) -> str:
    """One sentence on a TOST of the exact-agreement difference against the stated margin."""
    mine, _, base = key.partition("_vs_")
    who = mine.replace("_", " ")
    against = "the original" if base in ("original", "") else base.replace("_", " ")
    margin = eq.get("margin")
    m = f"±{float(margin):g}" if isinstance(margin, int | float) else str(margin)
    ci = _pair(eq.get("ci90"))
    est = eq.get("estimate")
    if eq.get("p") is None or ci is None:
        return (
            f"{who}: the equivalence test is undefined on these {eq.get('items')} items "
            "(no variation in the paired differences); nothing is claimed."
        )
    span = f"difference in exact agreement {_f(est, True)}, 90 % CI {ci[0]:+.3f}..{ci[1]:+.3f}, p = {eq['p']:.3g}"
    if eq.get("equivalent"):
        return f"{who}: equivalent to {against} within {m} ({span}) — no change beyond the margin."
    if isinstance(margin, int | float) and (ci[0] > float(margin) or ci[1] < -float(margin)):
        return f"{who}: differs from {against} by more than {m} ({span})."
    return (
        f"{who}: not shown equivalent within {m} ({span}); the interval reaches beyond the margin, "
        "so neither 'no change' nor a change of that size is established."
    )


def _original_scores(engine: Engine, rec: AlignmentRecord) -> dict[str, float]:
    """item -> the original judge's score on the development items (what the examples corrected)."""
    from judgepanel.store.conditions import load_condition_rows

    camp = rec.campaigns.get("dev-original")
    if not camp:
        return {}
    try:
        rows = load_condition_rows(
            engine, camp, str(rec.inputs["human_group"]), dimension=rec.inputs.get("dimension")
        )
    except BadInput:
        return {}
    if len(rows.scores) != 1:
        return {}
    (scores,) = rows.scores.values()
    return {rows.items[k]: s.score for k, s in scores.items()}


def _method_part(
    engine: Engine, rec: AlignmentRecord, diff: list[str] | None = None
) -> tuple[str, list[str]]:
    """What the method chose, on development items only: HTML and Markdown lines (`diff`: the
    comparison's `template_diff`, examples included, for the Markdown)."""
    choices = rec.choices or {}
    templates = rec.templates or {}
    out: list[str] = []
    md: list[str] = []
    if rec.method == "fewshot":
        ex = (choices.get("examples") or {}).get("items") or []
        worked = {e["item"]: e for e in (templates.get("aligned") or {}).get("examples", [])}
        judged = _original_scores(engine, rec)
        rows = []
        for i in ex:
            human = worked.get(i, {}).get("score")
            rows.append((i, human, judged.get(i), worked.get(i, {}).get("candidate", "")))
        strata = choices.get("examples", {}).get("strata") or {}
        out.append(
            f"<h3>Worked examples chosen ({len(ex)} of {choices.get('examples', {}).get('disagreeing', '?')} "
            "disagreeing development items)</h3>"
            f"<p class='muted'>Stratified by human label (seed {_e(choices.get('seed'))}): "
            + _e(", ".join(f"label {k}: {v}" for k, v in strata.items()) or "—")
            + "</p><table data-table='examples'><tr><th>item</th><th class='num'>human label</th>"
            "<th class='num'>original judge</th><th>candidate (as shown to the judge)</th></tr>"
            + "".join(
                f"<tr><td><code>{_e(i)}</code></td><td class='num'>{_f(h) if h is not None else '—'}</td>"
                f"<td class='num'>{_f(j) if j is not None else '—'}</td>"
                f"<td><details><summary>{_e(str(c)[:80])}{'…' if len(str(c)) > 80 else ''}</summary>"
                f"<pre class='text'>{_e(c)}</pre></details></td></tr>"
                for i, h, j, c in rows
            )
            + "</table>"
        )
        md += [
            f"Worked examples chosen ({len(ex)}), stratified by human label:",
            "",
            "| item | human label | original judge |",
            "|---|---:|---:|",
            *[f"| `{i}` | {_f(h)} | {_f(j)} |" for i, h, j, _c in rows],
            "",
        ]
    elif rec.method == "instructions":
        rounds = choices.get("rounds") or []
        best = choices.get("best_round")
        body = []
        for r in rounds:
            a = r.get("dev_agreement") or {}
            state = (
                "kept"
                if r.get("round") == best
                else ("returned unchanged" if r.get("unchanged") else "scored")
            )
            body.append(
                f"<tr><td class='num'>{_e(r.get('round'))}</td><td class='num'>{_f(a.get('qwk'))}</td>"
                f"<td class='num'>{_f(a.get('exact'))}</td><td>{_e(state)}</td>"
                f"<td class='muted'>{_e(r.get('reason', '') or ('the original instructions' if r.get('round') == 0 else ''))}</td></tr>"
            )
        stopped = choices.get("stopped")
        out.append(
            "<h3>Instruction rounds (development agreement)</h3>"
            "<table data-table='rounds'><tr><th class='num'>round</th><th class='num'>dev QWK</th>"
            "<th class='num'>dev exact</th><th>decision</th><th>editor's reason</th></tr>"
            + "".join(body)
            + "</table>"
            + (f"<p class='muted'>Stopped early: {_e(stopped)}</p>" if stopped else "")
        )
        md += [
            "Instruction rounds (development agreement):",
            "",
            "| round | dev QWK | dev exact | reason |",
            "|---:|---:|---:|---|",
            *[
                f"| {r.get('round')} | {_f((r.get('dev_agreement') or {}).get('qwk'))} "
                f"| {_f((r.get('dev_agreement') or {}).get('exact'))} "
                f"| {str(r.get('reason', '')).replace('|', '/').replace(chr(10), ' ')} |"
                for r in rounds
            ],
            "",
            f"Kept: round {best}." + (f" Stopped early: {stopped}" if stopped else ""),
            "",
        ]
    elif rec.method == "grid":
        configs = choices.get("configs") or []
        best = choices.get("best_config")
        out.append(
            "<h3>Grid configurations (development agreement)</h3>"
            "<table data-table='grid'><tr><th class='num'>config</th><th>judge</th><th class='num'>instructions</th>"
            "<th class='num'>dev QWK</th><th class='num'>dev exact</th><th>decision</th></tr>"
            + "".join(
                f"<tr><td class='num'>{_e(c.get('config'))}</td><td><code>{_e(c.get('judge'))}</code>{_spec(c)}</td>"
                f"<td class='num'>#{_e(c.get('instructions_index'))}</td>"
                f"<td class='num'>{_f((c.get('dev_agreement') or {}).get('qwk'))}</td>"
                f"<td class='num'>{_f((c.get('dev_agreement') or {}).get('exact'))}</td>"
                f"<td>{'kept' if c.get('config') == best else ''}</td></tr>"
                for c in configs
            )
            + "</table><p class='muted'>Instructions #0 are the original; the others are the files given "
            "with <code>--grid-instructions</code>, in order.</p>"
        )
        md += [
            "Grid configurations (development agreement):",
            "",
            "| config | judge | instructions | dev QWK | dev exact | kept |",
            "|---:|---|---:|---:|---:|---|",
            *[
                f"| {c.get('config')} | `{c.get('judge')}` | #{c.get('instructions_index')} "
                f"| {_f((c.get('dev_agreement') or {}).get('qwk'))} "
                f"| {_f((c.get('dev_agreement') or {}).get('exact'))} | {'yes' if c.get('config') == best else ''} |"
                for c in configs
            ],
            "",
        ]
    o, a = templates.get("original"), templates.get("aligned")
    if o and a:
        left, right = word_diff(str(o.get("instructions", "")), str(a.get("instructions", "")))
        same = o.get("instructions") == a.get("instructions")
        judge_note = (
            ""
            if o.get("judge") == a.get("judge")
            else f" The aligned judge is <code>{_e(a.get('judge'))}</code> (was <code>{_e(o.get('judge'))}</code>)."
        )
        out.append(
            "<h3>Template diff: original → aligned</h3>"
            f"<p class='muted'>sha256 {_e(str(o.get('sha256', ''))[:12])} → {_e(str(a.get('sha256', ''))[:12])}; "
            f"{len(a.get('examples') or [])} worked example(s) in the aligned template."
            + (" The instructions are unchanged." if same else "")
            + judge_note
            + "</p>"
            + (
                ""
                if same
                else "<table data-table='template-diff'><tr><th>original instructions</th><th>aligned instructions</th></tr>"
                f"<tr><td class='text'>{left}</td><td class='text'>{right}</td></tr></table>"
            )
        )
        lines = diff or (
            [] if same else _unified(str(o.get("instructions", "")), str(a.get("instructions", "")))
        )
        md += [
            f"Template diff: sha256 `{str(o.get('sha256', ''))[:12]}` → `{str(a.get('sha256', ''))[:12]}`; "
            f"{len(a.get('examples') or [])} worked example(s); instructions "
            + ("unchanged." if same else "changed:"),
            "",
        ]
        if lines:
            md += ["```diff", *lines, "```", ""]
    return "".join(out), md


def _unified(old: str, new: str) -> list[str]:
    import difflib

    return list(
        difflib.unified_diff(old.splitlines(), new.splitlines(), "original", "aligned", lineterm="", n=1)
    )


class _NoCalls:
    """A provider for a campaign that has nothing left to ask: any call is refused."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def complete(self, request: Any, *, timeout: float) -> Any:
        raise BadInput(f"{self.name}: the report asks no model")

    async def aclose(self) -> None:
        return None


def repair_comparison(engine: Engine, name: str, iteration: str) -> dict[str, Any]:
    """`align compare NAME --repair ITER` recomputed from the campaigns it left, without a model
    call: refused (BadInput) unless that comparison was made and every one of its campaigns is
    finished."""
    from judgepanel.align.compare import REPAIR_VERSIONS, compare
    from judgepanel.runner import RunOptions
    from judgepanel.store.campaigns import campaign_status
    from judgepanel.store.repair import get_iteration

    get_alignment(engine, name)
    it = get_iteration(engine, iteration)
    hint = f"run `judgepanel align compare {name} --repair {iteration}` first (a report buys no answer)"
    for v in REPAIR_VERSIONS:
        if v != "original" and it.rubric_ids[v] == it.rubric_ids["original"]:
            continue  # compared as the original version
        try:
            st = campaign_status(engine, f"{name}-eval-repair-{iteration}-{v}")
        except NotFound:
            raise BadInput(
                f"alignment {name!r} was not compared with repair iteration {iteration!r}; {hint}"
            ) from None
        if st.pending:
            raise BadInput(f"the comparison of {name!r} with {iteration!r} is unfinished; {hint}")
    return compare(
        engine,
        name,
        repair=iteration,
        options=RunOptions(),
        provider_factory=lambda js, _n: _NoCalls(js.name),
    )


def alignment_section(
    engine: Engine,
    name: str,
    comparison: dict[str, Any] | None = None,
    *,
    links: bool = False,
    banner: bool = True,
) -> dict[str, Any]:
    """`{"name", "html", "markdown", "plots", "simulated", "comparison"}` for the report templates
    and the viewer; `comparison` defaults to the stored one (`align compare NAME --json`); `links`
    (the viewer) links each version's campaign to its page; `banner=False` leaves the SIMULATED
    banner to a page that shows its own."""
    rec = get_alignment(engine, name)
    comp = comparison if comparison is not None else rec.comparison
    inp = rec.inputs
    judge = str(inp.get("judge", ""))
    simulated = (
        bool(comp.get("simulated"))
        if comp
        else any(
            str(s).startswith("sim:")
            for s in [judge, *(inp.get("grid_judges") or []), *([inp["editor"]] if inp.get("editor") else [])]
        )
    )
    sim_banner = (
        "<p class='sim-banner' data-simulated='true'><span class='badge sim'>SIMULATED</span> "
        "This alignment rests on simulated judges or a simulated editor (the sim provider or the fake "
        "server), not on real models: its figures show the method working, not a model improving.</p>"
        if simulated and banner
        else ""
    )
    head = (
        sim_banner + f"<p>Method <strong>{_e(rec.method)}</strong> · dataset {_e(rec.dataset)} · dimension "
        f"{_e(inp.get('dimension'))} · judge <code>{_e(judge)}</code> · human group {_e(inp.get('human_group'))}"
        + (f" · editor <code>{_e(inp.get('editor'))}</code>" if inp.get("editor") else "")
        + f" · splits: choices on <code>{_e(inp.get('dev_split'))}</code>, comparison on "
        f"<code>{_e(inp.get('eval_split'))}</code> · seed {_e(inp.get('seed'))}</p>"
    )
    md = [
        (
            "**SIMULATED**: this alignment rests on simulated judges or a simulated editor, not real models.\n"
            if simulated
            else ""
        )
        + f"Method **{rec.method}**; dataset {rec.dataset}; dimension {inp.get('dimension')}; judge `{judge}`; "
        f"human group {inp.get('human_group')}; choices on `{inp.get('dev_split')}`, comparison on "
        f"`{inp.get('eval_split')}`; seed {inp.get('seed')}.",
        "",
    ]
    method_html, method_md = (
        _method_part(engine, rec, (comp or {}).get("template_diff"))
        if rec.steps.get("align") == "done"
        else ("", [])
    )
    base = {"name": name, "simulated": simulated, "comparison": comp}
    if comp is None:
        pending = [s for s, state in rec.steps.items() if state != "done"]
        note = f"Not compared yet (pending steps: {', '.join(pending)}; run `judgepanel align run {name}`)."
        return {
            **base,
            "html": head + f"<p class='muted'>{_e(note)}</p>" + method_html,
            "markdown": "\n".join([*md, note, "", *method_md]),
            "plots": 0,
            "svg": {},
        }
    versions: dict[str, Any] = comp["versions"]
    names = list(versions)
    stat = str(comp.get("choice_statistic") or "qwk")
    sname = STAT_NAMES.get(stat, stat)
    forest_agreement = plots.forest_plot(
        names,
        [versions[v]["agreement"].get(stat) for v in names],
        [_pair(versions[v]["agreement"]["ci"].get(stat)) for v in names],
        f"agreement with the human group: {sname} with 95 % CI",
    )
    deltas: dict[str, Any] = comp.get("delta") or {}
    dkeys = list(deltas)
    forest_delta = plots.forest_plot(
        [_pair_name(k) for k in dkeys],
        [deltas[k][stat]["value"] for k in dkeys],
        [_pair(deltas[k][stat]["ci"]) for k in dkeys],
        f"paired differences (version − baseline): Δ{sname} with 95 % CI",
    )
    vrows = "".join(
        f"<tr><td>{_e(v)}</td>"
        + "".join(
            f"<td class='num'>{_f(d['agreement'].get(s))}</td><td>{_ci(d['agreement']['ci'].get(s))}</td>"
            for s in STATS
        )
        + f"<td class='num'>{_f(d['agreement'].get('omega'))}</td>"
        f"<td class='num'>{_f((d.get('dev_agreement') or {}).get(stat))}</td>"
        f"<td>{_campaign(str(d.get('campaign', '')), links)}</td></tr>"
        for v, d in versions.items()
    )
    head_cells = "".join(f"<th class='num'>{STAT_NAMES[s]}</th><th>95 % CI</th>" for s in STATS)
    drows = "".join(
        f"<tr><td>{_e(_pair_name(k))}</td>"
        + "".join(
            f"<td class='num'>{_f(d[s]['value'], True)}</td><td>{_ci(d[s]['ci'], True)}</td>" for s in STATS
        )
        + "</tr>"
        for k, d in deltas.items()
    )
    gap = comp.get("overfit_gap") or {}
    grows = "".join(
        f"<tr><td>{STAT_NAMES[s]}</td><td class='num'>{_f(g['dev_gain']['value'], True)}</td>"
        f"<td>{_ci(g['dev_gain']['ci'], True)}</td><td class='num'>{_f(g['eval_gain']['value'], True)}</td>"
        f"<td>{_ci(g['eval_gain']['ci'], True)}</td><td class='num'>{_f(g['value'], True)}</td>"
        f"<td>{_ci(g['ci'], True)}</td></tr>"
        for s in STATS
        if (g := gap.get(s))
    )
    survives = comp.get("gain_survives") or {}
    gain = comp.get("gain") or {}
    if ((rec.templates or {}).get("aligned") or {}).get("same_as_original"):
        verdict = "The alignment kept the original judge: there is no gain on new items to test."
    elif gain.get("verdict") == TOO_FEW_GROUPS:
        verdict = (
            f"The aligned judge's {sname} gain on the evaluation items gets no verdict: {TOO_FEW_GROUPS} "
            f"({gain.get('n_groups')} articles, fewer than 5); the figures are shown without one."
        )
    else:
        verdict = f"The aligned judge's {sname} gain on the evaluation items " + (
            "survives its 95 % interval (the lower bound is above 0)."
            if survives.get(stat)
            else "does not survive its 95 % interval (the lower bound is not above 0)."
        )
    tost = [tost_words(k, e) for k, e in (comp.get("equivalence") or {}).items()]
    cost = comp.get("cost_usd") or {}
    calls = comp.get("calls") or {}
    crows = "".join(
        f"<tr><td>{_e(COST_NAMES.get(k, k))}</td><td class='num'>{_e(calls.get(k, '—'))}</td>"
        f"<td class='num'>{_usd(v)}</td></tr>"
        for k, v in cost.items()
    )
    binary = comp.get("binary") or {}
    brows = "".join(
        f"<tr><td>{_e(v)}</td><td class='num'>{b['fp']}</td><td class='num'>{b['fn']}</td>"
        f"<td class='num'>{_f(b['fpr'])}</td><td class='num'>{_f(b['fnr'])}</td>"
        f"<td class='num'>{_pct((binary.get('relative_change') or {}).get(v, {}).get('fp'))}</td>"
        f"<td class='num'>{_pct((binary.get('relative_change') or {}).get(v, {}).get('fn'))}</td></tr>"
        for v, b in (binary.get("versions") or {}).items()
    )
    units = comp.get("units") or {}
    over = (
        f"{comp.get('n_groups')} groups"
        if comp.get("resample") == "groups" and comp.get("n_groups")
        else "items"
    )
    body = (
        head
        + f"<p><strong>{_e(verdict)}</strong></p>"
        + f"<p class='muted'>{_e(units.get('eval'))} evaluation items, {_e(units.get('dev'))} development items; "
        f"reference: the human group's {_e(comp.get('reference'))}; paired bootstrap over {_e(over)} "
        f"({_e(comp.get('bootstrap'))} replicates); ω is the alt-test's winning rate at ε = "
        f"{_e(inp.get('epsilon'))}; dev {sname} is the development agreement the choice was made on.</p>"
        + "<table data-table='versions'><tr><th>version</th>"
        + head_cells
        + f"<th class='num'>ω</th><th class='num'>dev {sname}</th><th>campaign</th></tr>"
        + vrows
        + "</table>"
        + "<table data-table='deltas'><tr><th>paired difference</th>"
        + head_cells.replace("<th class='num'>", "<th class='num'>Δ")
        + "</tr>"
        + drows
        + "</table>"
        + f"<div class='grid'><figure data-plot='forest'>{forest_agreement}</figure>"
        f"<figure data-plot='forest'>{forest_delta}</figure></div>"
        + "<h3>Overfitting gap</h3><p class='muted'>Development gain − evaluation gain of the aligned judge "
        "over the original: a gain learnt on the development items that does not carry over to new items "
        "shows as a positive gap.</p>"
        + "<table data-table='overfit'><tr><th>statistic</th><th class='num'>dev gain</th><th>95 % CI</th>"
        "<th class='num'>eval gain</th><th>95 % CI</th><th class='num'>gap</th><th>95 % CI</th></tr>"
        + grows
        + "</table>"
        + "<h3>Equivalence (TOST)</h3><ul>"
        + "".join(f"<li>{_e(t)}</li>" for t in tost)
        + "</ul>"
        + "<h3>Cost per method</h3><table data-table='cost'><tr><th>what</th><th class='num'>calls bought</th>"
        "<th class='num'>USD</th></tr>"
        + crows
        + "</table>"
        + (
            f"<h3>False positives and negatives (pass = score ≥ {_e(binary.get('threshold'))})</h3>"
            "<table data-table='binary'><tr><th>version</th><th class='num'>FP</th><th class='num'>FN</th>"
            "<th class='num'>FP rate</th><th class='num'>FN rate</th><th class='num'>FP vs original</th>"
            "<th class='num'>FN vs original</th></tr>" + brows + "</table>"
            if brows
            else ""
        )
        + "<h3>What the method chose (development items only)</h3>"
        + method_html
    )
    md += [
        verdict,
        "",
        f"{units.get('eval')} evaluation items, {units.get('dev')} development items; paired bootstrap over "
        f"{over} ({comp.get('bootstrap')} replicates).",
        "",
        "| version | " + " | ".join(f"{STAT_NAMES[s]} | 95 % CI" for s in STATS) + " | ω |",
        "|---|" + "---:|---|" * len(STATS) + "---:|",
        *[
            f"| {v} | "
            + " | ".join(f"{_f(d['agreement'].get(s))} | {_ci(d['agreement']['ci'].get(s))}" for s in STATS)
            + f" | {_f(d['agreement'].get('omega'))} |"
            for v, d in versions.items()
        ],
        "",
        "| paired difference | " + " | ".join(f"Δ{STAT_NAMES[s]} | 95 % CI" for s in STATS) + " |",
        "|---|" + "---:|---|" * len(STATS),
        *[
            f"| {_pair_name(k)} | "
            + " | ".join(f"{_f(d[s]['value'], True)} | {_ci(d[s]['ci'], True)}" for s in STATS)
            + " |"
            for k, d in deltas.items()
        ],
        "",
        "Overfitting gap (development gain − evaluation gain):",
        "",
        "| statistic | dev gain | eval gain | gap | 95 % CI |",
        "|---|---:|---:|---:|---|",
        *[
            f"| {STAT_NAMES[s]} | {_f(g['dev_gain']['value'], True)} | {_f(g['eval_gain']['value'], True)} "
            f"| {_f(g['value'], True)} | {_ci(g['ci'], True)} |"
            for s in STATS
            if (g := gap.get(s))
        ],
        "",
        "Equivalence (TOST):",
        "",
        *[f"- {t}" for t in tost],
        "",
        "| cost | calls bought | USD |",
        "|---|---:|---:|",
        *[f"| {COST_NAMES.get(k, k)} | {calls.get(k, '—')} | {_usd(v)} |" for k, v in cost.items()],
        "",
        *method_md,
    ]
    return {
        **base,
        "html": body,
        "markdown": "\n".join(md),
        "plots": 2,
        "svg": {"agreement": forest_agreement, "delta": forest_delta},
    }


def _pct(v: Any) -> str:
    return "—" if v is None else f"{100 * float(v):+.0f} %"


def _campaign(name: str, link: bool) -> str:
    import urllib.parse

    if not link:
        return f"<code>{_e(name)}</code>"
    return f"<a href='/campaigns/{_e(urllib.parse.quote(name, safe=''))}'>{_e(name)}</a>"
