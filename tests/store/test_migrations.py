from __future__ import annotations

from sqlalchemy import inspect, text

from judgepanel.store import migrate
from judgepanel.store.engine import make_engine
from judgepanel.store.models import Base
from tests.helpers import cli


def test_upgrade_downgrade_upgrade(db_url: str) -> None:
    eng = make_engine(db_url)
    migrate.upgrade(eng)
    tables = set(inspect(eng).get_table_names())
    assert set(Base.metadata.tables) <= tables
    assert migrate.current_revision(eng) == migrate.head_revision(eng)
    migrate.downgrade(eng, "base")
    assert set(inspect(eng).get_table_names()) - {"alembic_version"} == set()
    assert migrate.current_revision(eng) is None
    migrate.upgrade(eng)
    assert set(Base.metadata.tables) <= set(inspect(eng).get_table_names())
    eng.dispose()


def test_models_and_migrations_agree(engine) -> None:  # type: ignore[no-untyped-def]
    assert migrate.drift(engine) == []


def test_sqlite_pragmas(sqlite_url: str) -> None:
    eng = make_engine(sqlite_url)
    migrate.upgrade(eng)
    with eng.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert conn.execute(text("PRAGMA busy_timeout")).scalar() >= 1000
    eng.dispose()


def test_foreign_keys_enforced(engine) -> None:  # type: ignore[no-untyped-def]
    import pytest
    from sqlalchemy.exc import IntegrityError

    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(
            text("INSERT INTO item (dataset_id, external_id, position, meta) VALUES (999, 'x', 0, '{}')")
        )


def test_cli_db_commands(db_url: str) -> None:
    if db_url.startswith("sqlite"):  # no file yet: refused, not created (only `db upgrade` creates)
        assert cli("db", "current", "--json", db=db_url).code == 2
    else:  # an empty PostgreSQL database exists and is at no revision
        assert cli("db", "current", "--json", db=db_url).json()["current"] is None
    assert cli("db", "upgrade", db=db_url).code == 0
    state = cli("db", "current", "--json", db=db_url).json()
    assert state["up_to_date"] and state["current"] == state["head"]
    assert cli("db", "downgrade", "base", db=db_url).code == 0
    assert cli("db", "current", "--json", db=db_url).json()["current"] is None


def test_bad_database_url_is_one_line_exit_2() -> None:
    r = cli("db", "upgrade", db="mysql://nobody@nowhere/x")
    assert r.code == 2
    assert r.stderr.count("\n") == 1 and "unsupported database" in r.stderr
