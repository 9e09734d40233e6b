"""Issue 17 §4: a user's template that fails on one real item is refused at `campaign create`
with the item's id and the error (one line, exit 2, nothing stored), instead of stalling the
campaign; `{{ reference }}` on an item without one is an error, never `None` in the prompt; and
templates are bounded (statements reaching outside, loops, recursion, size), each one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from judgepanel.store.models import Campaign, Job
from tests.helpers import cli
from tests.runner.conftest import PAIRS, create_argv, tiny_db

HEAD = """{# judgepanel:
structured: off
#}
Which is better?
<candidate_a>
{{ candidate_a }}
</candidate_a>
<candidate_b>
{{ candidate_b }}
</candidate_b>
"""
TAIL = "End with [[A]], [[B]] or [[C]] for a tie.\n"


@pytest.fixture
def db(sqlite_url: str) -> tuple[str, Engine]:
    eng = tiny_db(sqlite_url, pairs=4)
    return sqlite_url, eng


def _create(url: str, tmp_path: Path, body: str, *extra: str) -> tuple[int, str]:
    path = tmp_path / "t.j2"
    path.write_text(HEAD + body + TAIL, encoding="utf-8")
    argv = create_argv(
        "c", "sim:a", protocol="pairwise", extra=("--pairs", PAIRS, "--template", f"pairwise={path}", *extra)
    )
    got = cli(*argv, db=url)
    return got.code, got.stderr


def _nothing_stored(eng: Engine) -> bool:
    with eng.connect() as c:
        return (c.scalar(select(func.count()).select_from(Campaign)) or 0) == 0 and (
            c.scalar(select(func.count()).select_from(Job)) or 0
        ) == 0


def test_division_by_zero_on_one_item_names_the_item(db: tuple[str, Engine], tmp_path: Path) -> None:
    """The issue's `{{ (1/0) if "…" in candidate else "" }}`: the samples pass, one real item fails."""
    url, eng = db
    with eng.connect() as c:
        first = c.exec_driver_sql("select output from item order by position limit 1").scalar_one()
    marker = first.split()[0]
    body = f'{{{{ (1/0) if "{marker}" in candidate_a else "" }}}}\n'
    code, err = _create(url, tmp_path, body)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1
    assert "ZeroDivisionError" in err and "'g0-s" in err, err  # the pair's items, by id
    assert _nothing_stored(eng)
    assert "Traceback" not in err


def test_plan_of_a_failing_template_is_one_line(db: tuple[str, Engine], tmp_path: Path) -> None:
    """A campaign whose template fails at run time only (planned before this check existed, or
    failing on data changed since) gives `campaign plan` one line, not a traceback."""
    from judgepanel.runner import create

    url, eng = db
    path = tmp_path / "ok.j2"
    path.write_text(HEAD + TAIL, encoding="utf-8")
    create(
        eng,
        "c",
        dataset="tiny",
        protocol="pairwise",
        pairs=PAIRS,
        judges=["sim:a"],
        templates={"pairwise": str(path)},
    )
    # swap the stored template for one that divides by zero on every real item
    with eng.begin() as c:
        spec = c.execute(select(Campaign.spec)).scalar_one()
        spec["templates"]["pairwise"]["source"] = HEAD + "{{ 1/0 if candidate_a else '' }}" + TAIL
        c.execute(Campaign.__table__.update().values(spec=spec))
    got = cli("campaign", "plan", "c", "--json", db=url)
    assert got.code == 2, (got.code, got.stderr)
    assert len(got.stderr.strip().splitlines()) == 1 and "ZeroDivisionError" in got.stderr


def test_reference_on_an_item_without_one_is_refused_not_none(db: tuple[str, Engine], tmp_path: Path) -> None:
    url, eng = db
    code, err = _create(url, tmp_path, "Reference: {{ reference }}\n")
    assert code == 2, err
    assert "none was printed" in err and "item" in err and len(err.strip().splitlines()) == 1
    assert _nothing_stored(eng)
    # guarded, it renders and runs
    code, err = _create(
        url, tmp_path, "{% if reference is not none %}Reference: {{ reference }}{% endif %}\n"
    )
    assert code == 0, err


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ('{% include "/etc/passwd" %}\n', "{% include %} is not allowed"),
        ('{% import "x.j2" as x %}\n', "{% import %} is not allowed"),
        ('{% extends "base.j2" %}\n', "{% extends %} is not allowed"),
        ("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}\n", "calls nested deeper"),
        (
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}\n",
            "loop iterations",
        ),
        ("{{ candidate_a * 10000000 }}\n", "would exceed"),
        ("{% for i in range(60000) %}{{ candidate_a }}{% endfor %}\n", "exceeds"),
        ("{{ 2 ** 100000 }}\n", "exponent"),
    ],
    ids=["include", "import", "extends", "recursive macro", "nested loops", "repeat", "output size", "power"],
)
def test_template_bounds_are_one_line(db: tuple[str, Engine], tmp_path: Path, body: str, says: str) -> None:
    url, eng = db
    code, err = _create(url, tmp_path, body)
    assert code == 2, err
    assert says in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert _nothing_stored(eng)
