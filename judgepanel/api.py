"""judgepanel from Python, as pandas DataFrames.

    from judgepanel import api
    df = api.verdicts("sqlite:///judgepanel.db", "c1")      # one row per verdict
    api.attempts(db, "c1"); api.clause_verdicts(db, "c1"); api.labels(db, "c1")

`db` is a database URL or an SQLAlchemy Engine. The columns are those of `judgepanel export`
(see `judgepanel.store.export.COLUMNS`, where each is documented): the same rows and values,
typed (nullable integers and booleans where a value can be missing, UTC timestamps without zone).
pandas is imported only here, so the rest of judgepanel does not need it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine

from judgepanel.store.engine import make_engine
from judgepanel.store.export import COLUMNS, What, export_rows

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["attempts", "clause_verdicts", "labels", "verdicts"]

_DTYPES = {
    "int": "Int64",
    "float": "float64",
    "str": "object",
    "bool": "boolean",
    "datetime": "datetime64[us]",
}


def _frame(db: str | Engine, campaign: str, what: What) -> pd.DataFrame:
    import pandas as pd

    engine = db if isinstance(db, Engine) else make_engine(db, create=False)
    try:
        rows: list[tuple[Any, ...]] = [r for chunk in export_rows(engine, campaign, what) for r in chunk]
    finally:
        if engine is not db:
            engine.dispose()
    cols = COLUMNS[what]
    df = pd.DataFrame.from_records(rows, columns=[c.name for c in cols])
    return df.astype({c.name: _DTYPES[c.kind] for c in cols})


def verdicts(db: str | Engine, campaign: str) -> pd.DataFrame:
    """One row per stored verdict of the campaign (every attempt that produced one)."""
    return _frame(db, campaign, "verdicts")


def attempts(db: str | Engine, campaign: str) -> pd.DataFrame:
    """One row per attempt (request) with its response's error class, tokens, cost and latency."""
    return _frame(db, campaign, "attempts")


def clause_verdicts(db: str | Engine, campaign: str) -> pd.DataFrame:
    """One row per clause verdict of a clauses campaign."""
    return _frame(db, campaign, "clauses")


def labels(db: str | Engine, campaign: str) -> pd.DataFrame:
    """The imported labels (human and external LLM) of the campaign's dataset."""
    return _frame(db, campaign, "labels")
