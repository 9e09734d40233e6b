"""`judgepanel view --bundle DIR`: a static copy of the viewer for chosen campaigns, opened from
the file system or published as a static site (as `inspect view bundle`), no server.

Written from the same page functions and templates as the live viewer: `index.html` (the
campaigns), and per campaign `c/SLUG/index.html` (its figures and plots), `c/SLUG/verdicts.html`
(the verdict table: search, sort and filters run in the page over the verdicts embedded in it,
the state kept in the address's `#…` so a view can still be shared as a link) and
`c/SLUG/cases/N.html` (every case, with previous / next and the keys). Links between them are
relative; what needs the server (raw requests, JSON twins, rubric and repair pages, compare) is
left out rather than broken.

Every page is one file: the style sheet inline, the script inline and allowed by its SHA-256 in
the page's Content-Security-Policy (no other script may run, nothing is fetched), the data as
`application/json` text (never executed). Stored text is escaped by the same autoescaping
templates; the script puts text in with `textContent` only.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from judgepanel.errors import BadInput
from judgepanel.store.browse import VerdictFilter
from judgepanel.view import data, table

HERE = Path(__file__).resolve().parent
MAX_ROWS = 50_000  # verdict rows embedded per campaign (the table says when there are more)
MAX_CASES = 5_000  # case pages per campaign


@dataclass(frozen=True)
class BundleResult:
    folder: Path
    campaigns: list[str]
    pages: int
    verdicts: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "folder": str(self.folder),
            "campaigns": self.campaigns,
            "pages": self.pages,
            "verdicts": self.verdicts,
        }


def slug(name: str) -> str:
    """A file name for campaign `name`: its safe characters and a short hash (names differ only
    in unsafe characters, or differ in case on a case-insensitive file system, stay apart)."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:48].strip("._") or "campaign"
    return f"{safe}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def _csp(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    return (
        f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )


_HREF = re.compile(r'href="([^"]*)"')
_RAW = re.compile(r'<details class="raw".*?</details>', re.S)


class _Writer:
    def __init__(self, folder: Path, names: dict[str, str]) -> None:
        self.folder = folder
        self.names = names  # campaign name -> slug
        self.css = (HERE / "static" / "viewer.css").read_text(encoding="utf-8")
        self.script = (HERE / "static" / "viewer.js").read_text(encoding="utf-8") + (
            HERE / "static" / "bundle.js"
        ).read_text(encoding="utf-8")
        self.pages = 0

    def target(self, href: str) -> str | None:
        """The bundle file a viewer address points to (relative to the bundle's root), or None."""
        parsed = urllib.parse.urlsplit(href.replace("&amp;", "&"))
        if parsed.scheme or parsed.netloc or not parsed.path.startswith("/"):
            return href if href.startswith("#") else None
        parts = [urllib.parse.unquote(p) for p in parsed.path.split("/")[1:]]
        if parts in ([""], ["campaigns"]):
            return "index.html"
        if len(parts) >= 2 and parts[0] == "campaigns" and parts[1] in self.names:
            base = f"c/{self.names[parts[1]]}/"
            if len(parts) == 2:
                return base + "index.html"
            if parts[2:] == ["verdicts"]:
                return base + "verdicts.html" + (f"#{parsed.query}" if parsed.query else "")
            if len(parts) == 4 and parts[2] == "cases" and parts[3].isdigit():
                return base + f"cases/{parts[3]}.html"
        return None

    def write(self, where: str, html: str) -> None:
        depth = where.count("/")
        up = "../" * depth

        def link(m: re.Match[str]) -> str:
            to = self.target(m.group(1))
            if to is None:
                return 'data-left-out=""'  # a page of the live viewer only: no link
            return f'href="{to}"' if to.startswith("#") else f'href="{up}{to}"'

        html = _RAW.sub("", html)
        html = html.replace(' data-poll="/api/campaigns"', "")
        head, body = html.split("</head>", 1)
        body = _HREF.sub(link, body)
        head = head.replace('<link rel="stylesheet" href="/static/viewer.css">', f"<style>{self.css}</style>")
        head = head.replace(
            '<script src="/static/viewer.js" defer></script>',
            f'<meta http-equiv="Content-Security-Policy" content="{_csp(self.script)}">'
            f"<script>{self.script}</script>",
        )
        html = head + "</head>" + body
        path = self.folder / where
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # "x": a new file only; never replaces a file, nor writes through a symlink, that
            # appeared in the folder after it was found empty
            with open(path, "x", encoding="utf-8") as out:
                out.write(html)
        except FileExistsError:
            raise BadInput(f"--bundle {self.folder}: {where} appeared while writing (not replaced)") from None
        self.pages += 1


def _json_script(element_id: str, value: Any) -> str:
    """`value` as a JSON data block: not executed, and no `</script>` can end it early."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def _check_empty(folder: Path) -> None:
    """`folder` must be new or an empty folder (a dangling symlink is neither: it is a name taken)."""
    if os.path.lexists(folder) and (not folder.is_dir() or any(folder.iterdir())):
        raise BadInput(f"--bundle {folder}: not an empty folder (nothing written)")


def write_bundle(
    engine: Engine, folder: Path, campaigns: list[str] | None = None, *, db_label: str = "", n_boot: int = 200
) -> BundleResult:
    """Write the static copy into `folder` (new or empty; refused otherwise, nothing written)."""
    from judgepanel.view.app import _jinja, campaign_plots

    _check_empty(folder)
    listing = data.campaigns(engine, data.Tracker())
    known = [c["name"] for c in listing["campaigns"]]
    chosen = list(dict.fromkeys(campaigns or known))
    missing = [c for c in chosen if c not in known]
    if missing:
        raise BadInput(f"no campaign named {missing[0]!r} (known: {', '.join(known) or 'none'})")
    # every page computed before the first file is written: a failure leaves nothing behind
    env = _jinja()
    names = {c: slug(c) for c in chosen}
    pages: list[tuple[str, str]] = []

    def render(template: str, d: dict[str, Any], **extra: Any) -> str:
        return str(
            env.get_template(template).render(d=d, db_label=db_label, path="", api="", query="", **extra)
        )

    listing = {
        **listing,
        "campaigns": [c for c in listing["campaigns"] if c["name"] in names],
        "groups": [
            {**g, "campaigns": [c for c in g["campaigns"] if c in names]}
            for g in listing["groups"]
            if any(c in names for c in g["campaigns"])
        ],
    }
    pages.append(("index.html", render("campaigns.html.j2", listing)))
    n_verdicts = 0
    for name in chosen:
        base = f"c/{names[name]}/"
        page = data.campaign(engine, name, n_boot=n_boot)
        pages.append((base + "index.html", render("campaign.html.j2", page, **campaign_plots(page))))
        if page["protocol"] not in ("pairwise", "pointwise"):
            continue
        rows: list[dict[str, Any]] = []
        after = None
        while len(rows) < MAX_ROWS:
            got = table.verdicts(engine, name, table.VerdictQuery(VerdictFilter(), after, 200))
            rows += got["rows"]
            after = got["next_after"]
            if after is None:
                break
        rows = rows[:MAX_ROWS]
        n_verdicts += len(rows)
        keep = (
            "verdict_id", "case", "unit", "unit_title", "unit_short", "judge", "judge_name", "order", "condition",
            "dimension", "repeat", "parse_status", "failure_kind", "value", "score", "human", "disagreement",
            "latency_ms", "cost_usd", "rationale",
        )  # fmt: skip
        slim = [{k: r[k] for k in keep} for r in rows]
        meta = {
            "campaign": name,
            "protocol": page["protocol"],
            "truncated": after is not None,
            "max": MAX_ROWS,
        }
        pages.append(
            (
                base + "verdicts.html",
                render(
                    "bundle_verdicts.html.j2",
                    {
                        "campaign": name,
                        "protocol": page["protocol"],
                        "simulated": page["simulated"],
                        "truncated": after is not None,
                        "shown": len(rows),
                    },
                    rows_json=_json_script("rows", slim),
                    meta_json=_json_script("meta", meta),
                ),
            )
        )
        for unit in list(dict.fromkeys(r["case"] for r in rows))[:MAX_CASES]:
            case = data.case(engine, name, unit)
            pages.append((base + f"cases/{unit}.html", render("case.html.j2", case, state="")))
    writer = _Writer(folder, names)
    _check_empty(folder)  # again: computing the pages took a while
    folder.mkdir(parents=True, exist_ok=True)
    for where, html in pages:
        writer.write(where, html)
    return BundleResult(folder, chosen, writer.pages, n_verdicts)


__all__ = ["BundleResult", "slug", "write_bundle"]
