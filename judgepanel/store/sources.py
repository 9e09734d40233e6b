"""Where a campaign's verdicts come from: judgepanel's own calls, or another tool's graders.

Boundary: reads the `source` a campaign's spec carries when `data import-inspect` or
`data import-promptfoo` stored it (`store.graded_imports`); no SQL, no imports beyond the standard
library, so every reader (planning, the report, the viewer) may ask it cheaply.
"""

from __future__ import annotations

from typing import Any

TOOLS = ("inspect", "promptfoo")


def imported_source(spec: dict[str, Any] | None) -> dict[str, Any] | None:
    """The `source` of an imported campaign's spec (tool, files, eval ids …), None for a campaign
    judgepanel ran itself."""
    source = (spec or {}).get("source")
    return source if isinstance(source, dict) and source.get("tool") in TOOLS else None


def imported_source_text(spec: dict[str, Any] | None) -> str | None:
    """One line naming where an imported campaign's verdicts come from, for every page and report
    that shows them ("inspect log FILE (task T, eval id E, model M)"); None for judgepanel's own."""
    source = imported_source(spec)
    if source is None:
        return None
    parts = []
    for src in source.get("sources") or []:
        facts = [
            f"{k.replace('_', ' ')} {src[k]}"
            for k in ("task", "eval_id", "model", "promptfoo", "inspect_ai")
            if src.get(k)
        ]
        what = "log" if source["tool"] == "inspect" else "results"
        parts.append(f"{what} {src.get('path')}" + (f" ({', '.join(facts)})" if facts else ""))
    return f"{source['tool']}: " + "; ".join(parts)
