"""The documented widths of the text columns (`VARCHAR(n)`), enforced on every backend.

Boundary: reads the widths from the table definitions (`store.tables`) and checks values before
they are written; computes nothing else. SQLite ignores a column's width, so an item id of
100,000 characters was stored there although the schema says at most 300 — and the same file
made PostgreSQL refuse the whole import with a driver error (issue 29 §6). Each refusal is one
`BadInput` line naming the column, the width and the offending value's length (and its start),
raised before the transaction starts, so the database stays as it was.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import String, Table

from judgepanel.errors import BadInput


def widths(table: Table) -> dict[str, int]:
    """Column name -> its width, for the text columns of `table` that have one."""
    return {
        c.name: int(c.type.length)
        for c in table.columns
        if isinstance(c.type, String) and c.type.length is not None
    }


def check_widths(table: Table, rows: Iterable[Mapping[str, Any]], what: str) -> None:
    """`BadInput` for the first value of `rows` (dicts of column -> value) longer than its column."""
    limits = widths(table)
    for row in rows:
        for column, value in row.items():
            limit = limits.get(column)
            if limit is not None and isinstance(value, str) and len(value) > limit:
                start = value[:40].encode("unicode_escape").decode()
                raise BadInput(
                    f"{what}: {column} {start!r}… is {len(value):,} characters, more than the "
                    f"{limit} the database holds"
                )
