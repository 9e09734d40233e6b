"""`db current` / `db downgrade` refuse a missing database like every command but `db upgrade`, and
messages name the URL as the user typed it (password masked), not the driver URL."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tests.helpers import cli


@pytest.mark.parametrize(
    "args", [("db", "current"), ("db", "current", "--json"), ("db", "downgrade", "base")]
)
def test_missing_sqlite_database_is_refused_not_created(tmp_path: Path, args: tuple[str, ...]) -> None:
    url = f"sqlite:///{tmp_path / 'sub' / 'none.db'}"
    r = cli(*args, db=url)
    assert r.code == 2, r.stderr
    assert "db upgrade" in r.stderr and r.stderr.count("\n") == 1 and r.stdout == ""
    assert list(tmp_path.iterdir()) == []  # no file, no folder
    assert cli("db", "upgrade", db=url).code == 0  # upgrade still creates it
    assert cli("db", "current", "--json", db=url).json()["up_to_date"] is True


def _with_password(url: str) -> str:
    return (
        make_url(url).set(drivername="postgresql", password="hunter2pw").render_as_string(hide_password=False)
    )


@pytest.mark.postgres
def test_postgres_messages_show_the_typed_url(pg_url: str) -> None:
    typed = _with_password(pg_url)  # the test server trusts local connections, so any password works
    r = cli("campaign", "list", db=typed)
    assert r.code == 2 and "has no judgepanel tables" in r.stderr
    assert "postgresql://" in r.stderr and "+psycopg" not in r.stderr
    assert "hunter2pw" not in r.stderr and "***" in r.stderr


@pytest.mark.postgres
def test_missing_postgres_database_is_refused_in_one_line(pg_url: str) -> None:
    name = f"jp_missing_{uuid.uuid4().hex[:8]}"
    typed = _with_password(make_url(pg_url).set(database=name).render_as_string(hide_password=False))
    for args in (("db", "current"), ("db", "downgrade", "base"), ("campaign", "list"), ("query", "select 1")):
        r = cli(*args, db=typed)
        assert r.code == 2, (args, r.stderr)
        assert f"/{name}" in r.stderr and "does not exist" in r.stderr and r.stderr.count("\n") == 1
        assert "+psycopg" not in r.stderr and "hunter2pw" not in r.stderr
    admin = create_engine(make_url(pg_url).set(drivername="postgresql+psycopg"))
    with admin.connect() as conn:
        assert (
            conn.execute(text("select count(*) from pg_database where datname = :n"), {"n": name}).scalar()
            == 0
        )
    admin.dispose()
