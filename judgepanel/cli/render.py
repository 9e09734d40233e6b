"""Output: exactly one JSON object for `--json`, rich tables for people."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

console = Console()
err_console = Console(stderr=True)


def _clean(value: Any) -> Any:
    """NaN and infinities are not JSON: they become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return _clean(value.item())
    return value


def emit_json(obj: Mapping[str, Any]) -> None:
    sys.stdout.write(json.dumps(_clean(obj), sort_keys=False) + "\n")
    sys.stdout.flush()


def warn(message: str) -> None:
    """One warning, one stderr line: no wrapping at the terminal width, no rich markup (names and
    messages may hold brackets)."""
    err_console.print(f"warning: {message}", markup=False, highlight=False, soft_wrap=True)


def table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    t = Table(title=title, show_lines=False)
    for i, c in enumerate(columns):
        # the first column names things (judge specs can be long): fold it rather than cut it
        t.add_column(str(c), overflow="fold") if i == 0 else t.add_column(str(c))
    for r in rows:
        t.add_row(*("" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v) for v in r))
    console.print(t)
