"""Report plots as SVG text (nothing fetched, nothing written). The plots every report has — the
latency box plot, the κ heatmap and the confusion matrices — are written directly as small SVGs
(matplotlib's import and drawing cost about a second per report, more than the statistics at 10⁵
verdicts); the bias chart and the repair forest plots are drawn by matplotlib, off-screen.

Every label is plain text (`text.parse_math` off): names are never read as mathtext.
Text and axes are drawn in `currentColor`, so one SVG reads in the page's light and dark themes;
data colours come from colour-blind-safe palettes (viridis for magnitudes, a blue–orange diverging
map for κ). Fonts stay text (`svg.fonttype = none`), so the SVGs are small and searchable.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from html import escape
from typing import Any

_INK = "#123456"  # a sentinel colour replaced by currentColor after rendering
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999"]


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "svg.fonttype": "none",
            "svg.hashsalt": "judgepanel",  # deterministic ids: the same report twice is the same file
            "font.size": 9,
            "text.color": _INK,
            "axes.labelcolor": _INK,
            "axes.edgecolor": _INK,
            "xtick.color": _INK,
            "ytick.color": _INK,
            "axes.titlesize": 10,
            "figure.dpi": 100,
            # names are text, never maths: `$x^2$` in a judge or annotator name is drawn as typed,
            # and an invalid expression (`$\frac$`) cannot end the report in a ParseException
            "text.parse_math": False,
        }
    )
    return plt


def _svg(fig: Any) -> str:
    plt = _plt()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", transparent=True, bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :]  # drop the XML prolog and doctype: inlined in HTML
    text = text.replace(_INK, "currentColor").replace(_INK.upper(), "currentColor")
    return re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)


def latency_plot(
    judges: Sequence[str], latencies_ms: Sequence[Sequence[float]], labels: dict[str, str] | None = None
) -> str | None:
    """Box plot of each judge's call latency in seconds, as a small SVG written directly (no
    matplotlib: drawing thousands of points through it cost a second per report). Boxes span the
    quartiles with the median marked; whiskers reach the furthest latency within 1.5 × IQR (as
    matplotlib's `boxplot`), points beyond are drawn as fliers (one per pixel column)."""
    import numpy as np

    data = [np.asarray(lat, dtype=float) / 1000.0 for lat in latencies_ms]
    if not any(len(d) for d in data):
        return None
    names = [_short((labels or {}).get(j, j)) for j in judges]
    left = 12 + 6.2 * max(len(n) for n in names)
    plot_w, row, top = 420.0, 30.0, 30.0
    width = left + plot_w + 20
    height = top + row * len(judges) + 46
    lo = min(float(d.min()) for d in data if len(d))
    hi = max(float(d.max()) for d in data if len(d))
    ticks = _ticks(lo, hi)
    x0, x1 = min(ticks[0], lo), max(ticks[-1], hi)
    span = (x1 - x0) or 1.0

    def x(v: float) -> float:
        return left + (v - x0) / span * plot_w

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" font-family="sans-serif" font-size="11">',
        "<title>Latency per judge</title>",
        f'<text x="{left + plot_w / 2:.1f}" y="16" text-anchor="middle" fill="currentColor" font-size="12">'
        "Latency per judge</text>",
    ]
    bottom = top + row * len(judges)
    out.append(
        f'<rect x="{left:.1f}" y="{top}" width="{plot_w}" height="{row * len(judges)}" fill="none" '
        'stroke="currentColor" stroke-width="0.8"/>'
    )
    for t in ticks:
        out.append(
            f'<line x1="{x(t):.1f}" y1="{bottom}" x2="{x(t):.1f}" y2="{bottom + 4}" stroke="currentColor"/>'
            f'<text x="{x(t):.1f}" y="{bottom + 16}" text-anchor="middle" fill="currentColor">{t:g}</text>'
        )
    out.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{bottom + 34}" text-anchor="middle" fill="currentColor">'
        "latency per call (s)</text>"
    )
    for i, (name, d) in enumerate(zip(names, data, strict=True)):
        mid = top + row * i + row / 2
        out.append(
            f'<text x="{left - 6:.1f}" y="{mid + 4:.1f}" text-anchor="end" fill="currentColor">{escape(name)}</text>'
        )
        if not len(d):
            continue
        q1, med, q3, w_lo, w_hi, fliers = box_stats(d)
        colour = PALETTE[i % len(PALETTE)]
        h = row * 0.6
        out.append(
            f'<line x1="{x(w_lo):.1f}" y1="{mid:.1f}" x2="{x(q1):.1f}" y2="{mid:.1f}" stroke="currentColor"/>'
            f'<line x1="{x(q3):.1f}" y1="{mid:.1f}" x2="{x(w_hi):.1f}" y2="{mid:.1f}" stroke="currentColor"/>'
            f'<line x1="{x(w_lo):.1f}" y1="{mid - h / 4:.1f}" x2="{x(w_lo):.1f}" y2="{mid + h / 4:.1f}" stroke="currentColor"/>'
            f'<line x1="{x(w_hi):.1f}" y1="{mid - h / 4:.1f}" x2="{x(w_hi):.1f}" y2="{mid + h / 4:.1f}" stroke="currentColor"/>'
            f'<rect x="{x(q1):.1f}" y="{mid - h / 2:.1f}" width="{max(0.5, x(q3) - x(q1)):.1f}" height="{h:.1f}" '
            f'fill="{colour}" fill-opacity="0.55" stroke="currentColor"/>'
            f'<line x1="{x(med):.1f}" y1="{mid - h / 2:.1f}" x2="{x(med):.1f}" y2="{mid + h / 2:.1f}" '
            'stroke="currentColor" stroke-width="1.6"/>'
        )
        for px in sorted({round(x(float(v)) * 2) / 2 for v in fliers}):
            out.append(f'<circle cx="{px}" cy="{mid:.1f}" r="2.5" fill="none" stroke="currentColor"/>')
    out.append("</svg>")
    return "".join(out)


def box_stats(values: Any) -> tuple[float, float, float, float, float, list[float]]:
    """Quartile 1, median, quartile 3, the whiskers (the furthest values within 1.5 × IQR of the
    box) and the fliers beyond them: what matplotlib's `boxplot` draws (`cbook.boxplot_stats`)."""
    import numpy as np

    d = np.asarray(values, dtype=float)
    q1, med, q3 = (float(v) for v in np.percentile(d, [25, 50, 75]))
    iqr = q3 - q1
    inside = d[(d >= q1 - 1.5 * iqr) & (d <= q3 + 1.5 * iqr)]
    w_lo, w_hi = float(inside.min()), float(inside.max())
    return q1, med, q3, w_lo, w_hi, d[(d < w_lo) | (d > w_hi)].tolist()


def _ticks(lo: float, hi: float, n: int = 6) -> list[float]:
    """Round tick values covering [lo, hi] (steps of 1, 2 or 5 × a power of ten)."""
    import math

    span = hi - lo
    if span <= 0:
        span = abs(hi) or 1.0
        lo, hi = lo - span / 2, hi + span / 2
    raw = (hi - lo) / n
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(lo / step) * step
    return [round(first + k * step, 10) for k in range(math.ceil((hi - first) / step) + 1)]


# matplotlib's PuOr at 9 stops (−1 … 1): orange for disagreement, purple for agreement
_PUOR = [
    (127, 59, 8), (190, 99, 10), (239, 158, 60), (254, 215, 162), (246, 246, 247),
    (206, 205, 228), (152, 141, 190), (93, 55, 144), (45, 0, 75),
]  # fmt: skip


def kappa_heatmap(
    names: Sequence[str], kappa: Sequence[Sequence[float | None]], groups: Sequence[str]
) -> str:
    """Rater × rater Cohen κ (colour from −1 to 1, annotated up to 16 raters), as a small SVG
    written directly; tick labels carry the rater's group."""
    n = len(names)
    labels = [f"{_short(nm)} ({g})" for nm, g in zip(names, groups, strict=True)]
    # values printed in the cells up to 16 raters at a size legible at 100 % zoom; every cell also
    # carries its value (and the two raters) as a hover title, which is all a larger matrix shows
    cell = 38 if n <= 8 else (32 if n <= 16 else 18)
    text_w = 6.2 * max((len(lab) for lab in labels), default=0)
    left, top = 10 + text_w, 30.0
    grid = cell * n
    bar_x = left + grid + 14
    width = bar_x + 70
    height = top + grid + 0.71 * text_w + 20  # the rotated column labels below the grid
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" font-family="sans-serif" font-size="11">',
        "<title>Rater κ (pairwise-complete)</title>",
        f'<text x="{left + grid / 2:.1f}" y="16" text-anchor="middle" fill="currentColor" font-size="12">'
        "Rater κ (pairwise-complete)</text>",
    ]
    for i, row in enumerate(kappa):
        for j, v in enumerate(row):
            x, y = left + j * cell, top + i * cell
            if v is None:
                continue
            r, g, b = _puor(v)
            hover = escape(f"{labels[i]} × {labels[j]}: κ = {v:.3f}")
            out.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{cell}" height="{cell}" fill="rgb({r},{g},{b})">'
                f"<title>{hover}</title></rect>"
            )
            if n <= 16:
                ink = "white" if abs(v) > 0.55 else "black"
                out.append(
                    f'<text x="{x + cell / 2:.1f}" y="{y + cell / 2 + 4:.1f}" text-anchor="middle" '
                    f'font-size="{10 if n > 8 else 11}" fill="{ink}" pointer-events="none">{v:.2f}</text>'
                )
    out.append(
        f'<rect x="{left:.1f}" y="{top}" width="{grid}" height="{grid}" fill="none" stroke="currentColor" stroke-width="0.8"/>'
    )
    for i, lab in enumerate(labels):
        c = i * cell + cell / 2
        out.append(
            f'<text x="{left - 5:.1f}" y="{top + c + 4:.1f}" text-anchor="end" fill="currentColor">{escape(lab)}</text>'
        )
        bx, by = left + c + 3, top + grid + 6
        out.append(
            f'<text x="{bx:.1f}" y="{by:.1f}" text-anchor="end" fill="currentColor" '
            f'transform="rotate(-60 {bx:.1f} {by:.1f})">{escape(lab)}</text>'
        )
    # the colour bar: −1 at the bottom, 1 at the top
    steps = 40
    h = grid / steps
    for k in range(steps):
        r, g, b = _puor(1 - 2 * (k + 0.5) / steps)
        out.append(
            f'<rect x="{bar_x:.1f}" y="{top + k * h:.2f}" width="12" height="{h + 0.3:.2f}" fill="rgb({r},{g},{b})"/>'
        )
    for v in (1, 0.5, 0, -0.5, -1):
        y = top + (1 - v) / 2 * grid
        out.append(
            f'<text x="{bar_x + 16:.1f}" y="{y + 4:.1f}" fill="currentColor" font-size="10">{v:g}</text>'
        )
    out.append(
        f'<text x="{bar_x + 52:.1f}" y="{top + grid / 2:.1f}" text-anchor="middle" fill="currentColor" '
        f'transform="rotate(-90 {bar_x + 52:.1f} {top + grid / 2:.1f})">Cohen κ</text>'
    )
    out.append("</svg>")
    return "".join(out)


def _puor(v: float) -> tuple[int, int, int]:
    x = (min(1.0, max(-1.0, v)) + 1) / 2 * (len(_PUOR) - 1)
    i = min(int(x), len(_PUOR) - 2)
    f = x - i
    a, b = _PUOR[i], _PUOR[i + 1]
    return (round(a[0] + f * (b[0] - a[0])), round(a[1] + f * (b[1] - a[1])), round(a[2] + f * (b[2] - a[2])))


def bias_plot(rows: Sequence[dict[str, Any]], labels: dict[str, str] | None = None) -> str | None:
    """Back-slot vs front-slot wins per judge (pairs where the pick followed the position);
    `labels` maps a judge to the name shown (see `short_judge_names`)."""
    if not rows:
        return None
    labels = labels or {}
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 1.0 + 0.45 * len(rows)))
    y = list(range(len(rows)))
    back = [r["back_wins"] for r in rows]
    front = [r["front_wins"] for r in rows]
    ax.barh([v - 0.2 for v in y], back, height=0.38, color=PALETTE[1], label="back slot won both orders")
    ax.barh([v + 0.2 for v in y], front, height=0.38, color=PALETTE[0], label="front slot won both orders")
    ax.set_yticks(y, [_short(labels.get(r["judge"], r["judge"])) for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("pairs (count)")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # counts: no 0.5 of a pair
    # below the axes, never over a bar
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=2, frameon=False, fontsize=8)
    ax.set_title("Position-driven verdicts per judge")
    return _svg(fig)


def confusion_plot(title: str, labels: Sequence[str], confusion: Sequence[Sequence[int]], rows: str) -> str:
    """Counts of (human reference, judge) labels, as a small SVG written directly (no matplotlib:
    a report has one per judge, condition and human group). The title is wrapped, never cut."""
    import textwrap
    from html import escape

    k = len(labels)
    cell, left, gap = 30, 46, 6
    lines = [
        ln
        for part in title.split("\n")
        for ln in (textwrap.wrap(part, 34, break_on_hyphens=False, break_long_words=False) or [""])
    ]
    top = 16 * len(lines) + 10
    width = max(left + cell * k + 10, 8 * max((len(ln) for ln in lines), default=0) + 10)
    height = top + cell * k + 40
    peak = max((max(r) for r in confusion if r), default=0) or 1
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" font-family="sans-serif" font-size="11">',
        f"<title>{escape(title)}</title>",
    ]
    for n, ln in enumerate(lines):
        out.append(f'<text x="2" y="{14 + 16 * n}" fill="currentColor" font-size="11">{escape(ln)}</text>')
    for i, row in enumerate(confusion):
        for j, v in enumerate(row):
            x, y = left + j * cell, top + i * cell
            r, g, b = _viridis(v / peak)
            ink = "black" if v / peak > 0.6 else "white"
            out.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="rgb({r},{g},{b})"/>')
            out.append(
                f'<text x="{x + cell / 2}" y="{y + cell / 2 + 4}" text-anchor="middle" fill="{ink}">{int(v)}</text>'
            )
    for i, lab in enumerate(labels):
        out.append(
            f'<text x="{left - gap}" y="{top + i * cell + cell / 2 + 4}" text-anchor="end" fill="currentColor">{escape(lab)}</text>'
        )
        out.append(
            f'<text x="{left + i * cell + cell / 2}" y="{top + k * cell + 14}" text-anchor="middle" fill="currentColor">{escape(lab)}</text>'
        )
    out.append(
        f'<text x="{left + k * cell / 2}" y="{top + k * cell + 32}" text-anchor="middle" fill="currentColor">judge</text>'
    )
    out.append(
        f'<text x="10" y="{top + k * cell / 2}" text-anchor="middle" fill="currentColor" '
        f'transform="rotate(-90 10 {top + k * cell / 2})">{escape(rows)}</text>'
    )
    out.append("</svg>")
    return "".join(out)


# viridis at 5 stops (matplotlib's map), interpolated: the colours of the other plots
_VIRIDIS = [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)]


def distribution_plot(rows: Sequence[Any], labels: dict[str, str] | None = None) -> str | None:
    """One small bar chart per rater (`report.distributions.Distribution`: the humans' and each
    judge column's answers), side by side on one scale: bar height is the share of the rater's
    answers (one scale for every panel, up to the largest share), the count is printed above each
    bar and in its hover title. Written directly."""
    rows = [r for r in rows if r.total]
    if not rows:
        return None
    top_share = max(n / r.total for r in rows for n in r.counts) or 1.0
    labels = labels or {}
    cats = list(rows[0].categories)
    bar, gap, pad = 22.0, 6.0, 26.0
    panel_w = max(120.0, len(cats) * (bar + gap) + 2 * pad)
    panel_h, top = 120.0, 34.0
    per_row = max(1, min(len(rows), int(900 // (panel_w + 12))))
    n_rows = -(-len(rows) // per_row)
    width = per_row * (panel_w + 12) + 10
    height = n_rows * (panel_h + top + 40) + 10
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" font-family="sans-serif" font-size="11">',
        "<title>What each rater answered</title>",
    ]
    for k, r in enumerate(rows):
        ox = 10 + (k % per_row) * (panel_w + 12)
        oy = 10 + (k // per_row) * (panel_h + top + 40)
        name = _short(labels.get(r.rater, r.rater), 28)
        colour = "#777777" if r.kind == "human" else PALETTE[k % len(PALETTE)]
        out.append(
            f'<text x="{ox + panel_w / 2:.1f}" y="{oy + 12:.1f}" text-anchor="middle" fill="currentColor" '
            f'font-size="12">{escape(name)}</text>'
            f'<text x="{ox + panel_w / 2:.1f}" y="{oy + 26:.1f}" text-anchor="middle" fill="currentColor" '
            f'font-size="10">{r.total} answers</text>'
        )
        base = oy + top + panel_h
        out.append(
            f'<line x1="{ox + pad - 4:.1f}" y1="{base:.1f}" x2="{ox + panel_w - pad + 4:.1f}" y2="{base:.1f}" '
            'stroke="currentColor" stroke-width="0.8"/>'
        )
        for c, (cat, n) in enumerate(zip(r.categories, r.counts, strict=True)):
            x = ox + pad + c * (bar + gap)
            h = (panel_h - 14) * n / r.total / top_share
            share = 100.0 * n / r.total
            tip = escape(f"{name}: {cat} — {n} of {r.total} ({share:.1f} %)")
            out.append(
                f'<rect x="{x:.1f}" y="{base - h:.1f}" width="{bar}" height="{max(h, 0.0):.1f}" fill="{colour}">'
                f"<title>{tip}</title></rect>"
                f'<text x="{x + bar / 2:.1f}" y="{base - h - 3:.1f}" text-anchor="middle" fill="currentColor" '
                f'font-size="10">{n}</text>'
                f'<text x="{x + bar / 2:.1f}" y="{base + 13:.1f}" text-anchor="middle" fill="currentColor" '
                f'font-size="10">{escape("incons." if cat == "inconsistent" else cat)}</text>'
            )
    out.append("</svg>")
    return "".join(out)


def _viridis(x: float) -> tuple[int, int, int]:
    x = min(1.0, max(0.0, x)) * (len(_VIRIDIS) - 1)
    i = min(int(x), len(_VIRIDIS) - 2)
    f = x - i
    a, b = _VIRIDIS[i], _VIRIDIS[i + 1]
    return (round(a[0] + f * (b[0] - a[0])), round(a[1] + f * (b[1] - a[1])), round(a[2] + f * (b[2] - a[2])))


def forest_plot(
    labels: Sequence[str],
    values: Sequence[float | None],
    cis: Sequence[tuple[float, float] | None],
    xlabel: str,
) -> str:
    """Point estimates with their 95 % intervals, one row each."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 0.6 + 0.4 * len(labels)))
    for i, (v, ci) in enumerate(zip(values, cis, strict=True)):
        if ci is not None:
            ax.plot(ci, [i, i], color=PALETTE[0], linewidth=2)
        if v is not None:
            ax.plot([v], [i], "o", color=PALETTE[1])
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.axvline(0, color=_INK, linewidth=0.5, alpha=0.5)
    return _svg(fig)


def _short(name: str, width: int = 34) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def short_judge_names(specs: Sequence[str]) -> dict[str, str]:
    """The derived name per judge spec (`judgepanel.providers.spec.derive_judge_names`, the one source)."""
    from judgepanel.providers.spec import derive_judge_names

    return derive_judge_names(specs)
