"""What we ask a judge and how we read its answer.

- `templates`: render prompts from the versioned Jinja templates in `prompts/` (`render_pairwise`,
  `render_pointwise`, `render_clauses`), each with the hash of the template sources used;
- `schemas`: the JSON schemas of the replies (structured output / tool input);
- `parse`: `parse_reply`, structured output first, then the judge's last answer in the text;
- `pairs`: presented -> canonical pairwise verdicts and the AB/BA combination table.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judgepanel.protocol.pairs import (
        COMBINATION_TABLE,
        PairOutcome,
        as_label,
        combine_orders,
        pair_outcome,
        to_canonical,
    )
    from judgepanel.protocol.parse import ParsedVerdict, parse_reply
    from judgepanel.protocol.schemas import SCHEMA_NAMES, clauses_schema, pairwise_schema, pointwise_schema
    from judgepanel.protocol.templates import (
        CONDITIONS,
        ORDERS,
        Prompt,
        UnitText,
        neutralise,
        render_clauses,
        render_pairwise,
        render_pointwise,
        template_hash,
    )

# Imported on first use: the readers of stored verdicts need `pairs` (plain Python), not the
# template engine (Jinja) that `templates` loads, so `campaign status` starts faster.
_HOME = {
    **dict.fromkeys(
        ("COMBINATION_TABLE", "PairOutcome", "as_label", "combine_orders", "pair_outcome", "to_canonical"),
        "pairs",
    ),
    **dict.fromkeys(("ParsedVerdict", "parse_reply"), "parse"),
    **dict.fromkeys(("SCHEMA_NAMES", "clauses_schema", "pairwise_schema", "pointwise_schema"), "schemas"),
    **dict.fromkeys(
        (
            "CONDITIONS",
            "ORDERS",
            "Prompt",
            "UnitText",
            "neutralise",
            "render_clauses",
            "render_pairwise",
            "render_pointwise",
            "template_hash",
        ),
        "templates",
    ),
}


# A deliberate mirror (issue 31 §4): the lazy packages (`protocol`, `providers`, `store.campaigns`)
# each resolve a public name through their `_HOME` table here, so `--help` imports no submodule.
def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f"judgepanel.protocol.{_HOME[name]}"), name)
    raise AttributeError(f"module 'judgepanel.protocol' has no attribute {name!r}")


__all__ = [
    "COMBINATION_TABLE",
    "CONDITIONS",
    "ORDERS",
    "SCHEMA_NAMES",
    "PairOutcome",
    "ParsedVerdict",
    "Prompt",
    "UnitText",
    "as_label",
    "clauses_schema",
    "combine_orders",
    "neutralise",
    "pair_outcome",
    "pairwise_schema",
    "parse_reply",
    "pointwise_schema",
    "render_clauses",
    "render_pairwise",
    "render_pointwise",
    "template_hash",
    "to_canonical",
]
