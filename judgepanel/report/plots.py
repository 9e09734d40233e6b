"""Report plots as SVG text (matplotlib, rendered off-screen; nothing fetched, nothing written).

Every label is plain text (`text.parse_math` off): names are never read as mathtext.
Text and axes are drawn in `currentColor`, so one SVG reads in the page's light and dark themes;
data colours come from colour-blind-safe palettes (viridis for magnitudes, a blue–orange diverging
map for κ). Fonts stay text (`svg.fonttype = none`), so the SVGs are small and searchable.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
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
    """Box plot (with the median marked) of each judge's call latency, in seconds."""
    data = [[x / 1000.0 for x in lat] for lat in latencies_ms]
    if not any(data):
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 0.5 + 0.42 * len(judges)))
    shown = [d if d else [float("nan")] for d in data]
    bp = ax.boxplot(shown, orientation="horizontal", widths=0.6, patch_artist=True, showfliers=True)
    for i, box in enumerate(bp["boxes"]):
        box.set_facecolor(PALETTE[i % len(PALETTE)])
        box.set_alpha(0.55)
    for median in bp["medians"]:
        median.set_color(_INK)
    ax.set_yticks(range(1, len(judges) + 1), [_short((labels or {}).get(j, j)) for j in judges])
    ax.set_xlabel("latency per call (s)")
    ax.invert_yaxis()
    ax.set_title("Latency per judge")
    return _svg(fig)


def kappa_heatmap(
    names: Sequence[str], kappa: Sequence[Sequence[float | None]], groups: Sequence[str]
) -> str:
    """Rater × rater Cohen κ, annotated; tick labels carry the rater's group."""
    import numpy as np

    plt = _plt()
    m = np.array([[np.nan if v is None else v for v in row] for row in kappa], dtype=float)
    n = len(names)
    size = max(3.2, 0.5 * n + 1.6)
    fig, ax = plt.subplots(figsize=(size + 1.0, size))
    im = ax.imshow(m, cmap="PuOr", vmin=-1, vmax=1)
    labels = [f"{_short(nm)} ({g})" for nm, g in zip(names, groups, strict=True)]
    ax.set_xticks(range(n), labels, rotation=60, ha="right")
    ax.set_yticks(range(n), labels)
    if n <= 16:
        for i in range(n):
            for j in range(n):
                if not np.isnan(m[i, j]):
                    ax.text(
                        j,
                        i,
                        f"{m[i, j]:.2f}",
                        ha="center",
                        va="center",
                        fontsize=7,
                        color="white" if abs(m[i, j]) > 0.55 else "black",
                    )
    cbar = fig.colorbar(im, ax=ax, shrink=0.8)
    cbar.set_label("Cohen κ")
    ax.set_title("Rater κ (pairwise-complete)")
    return _svg(fig)


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
    """A short, still distinct name per judge spec for plots: the model, with the provider when
    providers differ and the parameters whose values differ between the judges (two judges on one
    server differ in their model or parameters, not in `base_url`). The full spec where that is
    not unique."""
    from urllib.parse import parse_qsl

    parsed = []
    for spec in specs:
        head, _, query = spec.partition("?")
        provider, _, model = head.partition(":")
        parsed.append((provider, model or head, dict(parse_qsl(query, keep_blank_values=True))))
    providers = {p for p, _, _ in parsed}
    out = {}
    for spec, (provider, model, ps) in zip(specs, parsed, strict=True):
        # the parameters that tell this judge from the others with the same provider and model
        same = [q for p, m, q in parsed if (p, m) == (provider, model)]
        keys = {k for q in same for k in q}
        differing = sorted(k for k in keys if len({q.get(k) for q in same}) > 1)
        name = f"{provider}:{model}" if len(providers) > 1 else model
        extra = [f"{k}={ps[k]}" for k in differing if k in ps]
        out[spec] = name + (f" ({', '.join(extra)})" if extra else "")
    if len(set(out.values())) < len(out):
        return {s: s for s in specs}
    return out
