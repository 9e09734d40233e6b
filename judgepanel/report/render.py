"""`judgepanel report`: one self-contained HTML file (or Markdown with SVG files beside it).

The HTML carries its styles, its one small script (the case search) and every plot inline; it
fetches nothing, so it opens offline in any browser and can be mailed or attached as one file.
The search box filters the disagreement cases as you type; `report.html#q=WORD` opens the page
already filtered (a link you can share).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from judgepanel.errors import BadInput
from judgepanel.providers.errors import scrubber
from judgepanel.report import plots
from judgepanel.report.build import CampaignReport, campaign_report
from judgepanel.report.export import check_out_path, replace_file

TEMPLATES = Path(__file__).resolve().parent / "templates"
FORMATS = ("html", "md")
CASES_PAGE = 50  # disagreement cases shown at first per campaign ("show more" adds as many)


@dataclass(frozen=True)
class RenderedCampaign:
    anchor: str
    facts: Any
    unit_kind: str
    agreement: Any
    clusters: Any
    bias: Any
    versus: Any
    cases: Any
    notes: Any
    plots: dict[str, Any] = field(default_factory=dict)
    simulated: bool = False
    short: dict[str, str] = field(default_factory=dict)  # judge column -> the name plots show
    cases_total: int = 0  # disagreeing units, of which `cases` are in the page


@dataclass(frozen=True)
class ReportResult:
    path: str
    format: str
    campaigns: list[str]
    sections: list[str]
    plots: int
    bytes: int
    files: list[str]
    simulated: bool = False


def fmt(v: float | None, digits: int = 3) -> str:
    return "—" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:.{digits}f}"


def ci(c: tuple[float, float] | None) -> str:
    return "—" if c is None else f"[{c[0]:.3f}, {c[1]:.3f}]"


def pval(p: float) -> str:
    """p-values keep their magnitude: 4.8e-73, not 0.000."""
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def _version() -> str:
    try:
        return metadata.version("judgepanel")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "dev"


def _column_parts(col: str, facts: Any) -> tuple[str, str | None, str | None]:
    """A judge column (`judge[/condition][/dimension]`, see `build._name`) as judge, condition and
    dimension; the campaign's only condition or dimension when the name carries none."""
    judge = max((j for j in facts.judges if col == j or col.startswith(j + "/")), key=len, default=col)
    parts = col[len(judge) :].lstrip("/").split("/") if col != judge else []
    cond = (
        parts.pop(0)
        if len(facts.conditions) > 1 and parts
        else (facts.conditions[0] if facts.conditions else None)
    )
    dim = parts.pop(0) if parts else (facts.dimensions[0] if len(facts.dimensions) == 1 else None)
    return judge, cond, dim


def _display(col: str, facts: Any, short: dict[str, str]) -> str:
    judge = _column_parts(col, facts)[0]
    if col == judge:
        return short.get(judge, judge)
    return " / ".join([short.get(judge, judge), *[p for p in col[len(judge) :].split("/") if p]])


def rater_label(col: str, facts: Any) -> str:
    """A judge column of a campaign report (`SPEC` or `SPEC/CONDITION`) as people read it: the
    judge's short name (`facts.judge_names`), then the condition; other raters unchanged."""
    if not any(col == j or col.startswith(j + "/") for j in facts.judges):
        return col
    return _display(col, facts, facts.judge_names or plots.short_judge_names(facts.judges))


def _plots(r: CampaignReport, short: dict[str, str]) -> dict[str, Any]:
    facts = r.facts
    confusion = []
    for v in r.versus:
        judge, cond, dim = _column_parts(v.judge, facts)
        where = " · ".join(x for x in (f"condition {cond}" if cond else None, dim) if x)
        title = f"{short.get(judge, judge)}\n{where + ' · ' if where else ''}vs {v.group}"
        confusion.append(plots.confusion_plot(title, v.labels, v.confusion, v.group))
    names = [
        _display(n, facts, short) if g == "judge" else n
        for n, g in zip(r.kappa_names, r.kappa_groups, strict=True)
    ]
    out: dict[str, Any] = {
        # judges with latencies to show: a simulated judge answers in no time (an empty box)
        "latency": plots.latency_plot([u.judge for u in timed], [u.latencies_ms for u in timed], short)
        if (timed := [u for u in facts.usage if u.latencies_ms and not u.judge.startswith("sim:")])
        else None,
        "kappa": plots.kappa_heatmap(names, r.kappa, r.kappa_groups) if r.kappa else None,
        "bias": plots.bias_plot(r.bias, short),
        "confusion": confusion,
    }
    return out


def _rendered(reports: list[CampaignReport], simulated: dict[str, bool]) -> list[RenderedCampaign]:
    out = []
    for i, r in enumerate(reports, 1):
        short = r.facts.judge_names or plots.short_judge_names(r.facts.judges)
        out.append(
            RenderedCampaign(
                anchor=f"c{i}-{re.sub(r'[^A-Za-z0-9_-]', '-', r.facts.name)}",
                facts=r.facts,
                unit_kind=r.unit_kind,
                agreement=r.agreement,
                clusters=[[rater_label(n, r.facts) for n in cl] for cl in r.clusters],
                bias=r.bias,
                versus=r.versus,
                cases=r.cases,
                cases_total=r.cases_total,
                notes=r.notes,
                plots=_plots(r, short),
                simulated=simulated.get(r.facts.name, False),
                short={
                    c: _display(c, r.facts, short)
                    for c in {
                        *r.facts.judges,
                        *(v.judge for k in r.cases for v in k.verdicts),
                        *(u.judge for u in r.facts.usage),
                        *(b["judge"] for b in r.bias),
                        *(v.judge for v in r.versus),
                    }
                },
            )
        )
    return out


def template_environment(
    folder: Path, *, autoescape: bool = True, keep_trailing_newline: bool = False
) -> Any:
    """The Jinja environment every page judgepanel writes or serves is rendered with (the report,
    the viewer, the annotation pages): templates from `folder`, an unknown name an error, block
    tags leaving no blank lines, and the number formatters `fmt`, `ci` and `pval`."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(folder)),
        autoescape=autoescape,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=keep_trailing_newline,
    )
    env.globals.update(fmt=fmt, ci=ci, pval=pval)
    return env


def _env(autoescape: bool) -> Any:
    return template_environment(TEMPLATES, autoescape=autoescape, keep_trailing_newline=True)


def _md_cell(v: Any) -> str:
    return str(v).replace("|", "\\|").replace("\n", " ")


def write_report(
    engine: Engine,
    campaigns: list[str],
    out: str | Path,
    *,
    fmt_: str = "html",
    db_label: str = "",
    n_boot: int = 200,
    cases: int = 200,
    seed: int = 0,
    iteration: str | None = None,
    alignment: str | None = None,
    force: bool = False,
) -> ReportResult:
    if fmt_ not in FORMATS:
        raise BadInput(f"--format must be one of {', '.join(FORMATS)}, got {fmt_!r}")
    if not campaigns and iteration is None and alignment is None:
        raise BadInput("name at least one campaign, --iteration or --alignment")
    if n_boot < 0 or cases < 0:
        raise BadInput("--bootstrap and --cases must not be negative")
    # the rules of `export --out`: never the live database or a folder, an existing file (or
    # symlink) only with `force`, and the file is replaced, never written through a symlink
    path = check_out_path(engine, out, force=force)
    folder = path.with_name(path.stem + "_files")
    if fmt_ == "md" and os.path.lexists(folder):
        if folder.is_symlink() or not folder.is_dir():
            raise BadInput(f"--out: {str(folder)!r} (where the plots go) is not a folder: move it away")
        if not force:
            raise BadInput(f"--out: {str(folder)!r} already exists: pass --force to replace its plots")
    section = None
    if iteration is not None:
        from judgepanel.report.iteration import iteration_section

        section = iteration_section(engine, iteration)
    aligned = None
    if alignment is not None:
        from judgepanel.report.alignment import alignment_section, repair_comparison

        # with --iteration too, the alignment's comparison carries the repair's versions
        comparison = repair_comparison(engine, alignment, iteration) if iteration is not None else None
        aligned = alignment_section(engine, alignment, comparison)
        if aligned["comparison"] is None:
            raise BadInput(
                f"alignment {alignment!r} is not compared yet; run `judgepanel align run {alignment}` to finish it"
            )
    reports = [campaign_report(engine, c, n_boot=n_boot, seed=seed, cases=cases) for c in campaigns]
    from judgepanel.store.simulated import simulated_campaigns

    sims = simulated_campaigns(engine, campaigns)
    rendered = _rendered(reports, sims)
    simulated = (
        any(sims.values()) or bool(section and section["simulated"]) or bool(aligned and aligned["simulated"])
    )
    context = {
        "title": ", ".join(
            [
                *campaigns,
                *([f"repair {iteration}"] if iteration else []),
                *([f"alignment {alignment}"] if alignment else []),
            ]
        ),
        "campaigns": rendered,
        "db_label": db_label,
        "version": _version(),
        "simulated": simulated,
        "n_boot": n_boot,
        "iteration": section,
        "alignment": aligned,
        "page": CASES_PAGE,
    }
    files: list[str] = []
    # every configured key, in any form a server may have echoed it in, is cut from what is written
    scrub = scrubber()
    if fmt_ == "html":
        text = _env(True).get_template("report.html.j2").render(**context)
    else:
        folder.mkdir(exist_ok=True)
        for c in rendered:
            for key in ("latency", "kappa", "bias"):
                if c.plots.get(key):
                    f = folder / f"{c.anchor}-{key}.svg"
                    replace_file(f, scrub(c.plots[key]))
                    c.plots[key] = f"{folder.name}/{f.name}"
                    files.append(str(f))
            links = []
            for i, svg in enumerate(c.plots.get("confusion", [])):
                f = folder / f"{c.anchor}-confusion-{i}.svg"
                replace_file(f, scrub(svg))
                links.append(f"{folder.name}/{f.name}")
                files.append(str(f))
            c.plots["confusion"] = links
        if aligned is not None:
            links = []
            for key, svg in aligned["svg"].items():
                f = folder / f"alignment-{key}.svg"
                replace_file(f, scrub(svg))
                links.append(f"![alignment {key} forest plot]({folder.name}/{f.name})")
                files.append(str(f))
            aligned["markdown"] += "\n\n" + "\n\n".join(links) if links else ""
        env = _env(False)
        env.filters["cell"] = _md_cell
        text = env.get_template("report.md.j2").render(**context)
    text = scrub(text)
    replace_file(path, text)
    sections = sorted(
        set(re.findall(r'data-section="([a-z-]+)"', text))
        | set(re.findall(r"<!-- section: ([a-z-]+) -->", text))
    )
    n_plots = text.count("<svg") if fmt_ == "html" else len(files)
    return ReportResult(
        path=str(path),
        format=fmt_,
        campaigns=campaigns,
        sections=sections,
        plots=n_plots,
        bytes=path.stat().st_size,
        files=files,
        simulated=simulated,
    )
