"""The one `MetaData` every table of the results database is declared on, its naming convention,
and the clock the tables' `created_at` / `updated_at` defaults read. Nothing else: the tables are
in the sibling modules, and `store.tables` gathers them."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import MetaData

# Deterministic constraint names, so migrations can address them on every backend.
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING)


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)
