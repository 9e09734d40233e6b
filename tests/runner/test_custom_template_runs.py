"""Custom templates in campaigns: validated before anything is stored, stored with the campaign,
recorded with every request, and never silently swapped for an edited file."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from judgepanel.protocol.templates import template_source
from judgepanel.store.models import Campaign, Job, Request, Verdict
from tests.helpers import cli
from tests.runner.conftest import PAIRS, create_argv, tiny_db

TEMPLATE = """{# judgepanel:
structured: off
#}
Which summary of the article is better?
<source>
{{ source }}
</source>
<candidate_a>
{{ candidate_a }}
</candidate_a>
<candidate_b>
{{ candidate_b }}
</candidate_b>
Think briefly, then end with [[A]], [[B]] or [[C]] for a tie.
"""


@pytest.fixture
def db(sqlite_url: str) -> tuple[str, Engine]:
    eng = tiny_db(sqlite_url, pairs=4)
    return sqlite_url, eng


def _expected_hash(source: str) -> str:
    return hashlib.sha256(template_source("system.v2").encode() + b"\0" + source.encode() + b"\0").hexdigest()


def test_a_custom_template_runs_and_every_request_records_its_hash(
    db: tuple[str, Engine], tmp_path: Path
) -> None:
    url, eng = db
    path = tmp_path / "mine.j2"
    path.write_text(TEMPLATE, encoding="utf-8")
    argv = create_argv(
        "c", "sim:a", protocol="pairwise", extra=("--pairs", PAIRS, "--template", f"pairwise={path}")
    )
    made = cli(*argv, "--json", db=url).json()
    assert made["jobs"] == 4 * 2
    run = cli("campaign", "run", "c", "--json", db=url).json()
    assert run["status"] == "done" and run["done"] == 8
    with eng.connect() as c:
        rows = c.execute(select(Request.template_name, Request.template_hash, Request.output_schema)).all()
        ok = c.scalar(select(func.count()).select_from(Verdict).where(Verdict.parse_status == "ok"))
        spec = c.scalar(select(Campaign.spec))
    assert {(r[0], r[1]) for r in rows} == {
        (f"custom:mine.j2@{hashlib.sha256(TEMPLATE.encode()).hexdigest()[:12]}", _expected_hash(TEMPLATE))
    }
    assert all(r[2] is None for r in rows)  # `structured: off`: no JSON schema was sent
    assert ok == 8
    assert spec["templates"]["pairwise"]["source"] == TEMPLATE

    # editing the file neither changes the planned campaign nor passes silently
    path.write_text(TEMPLATE.replace("Think briefly", "Think hard"), encoding="utf-8")
    again = cli("campaign", "run", "c", "--json", db=url)
    assert again.code == 0 and "changed since campaign c was created" in again.json()["warnings"][0]
    refused = cli(*argv, db=url)
    assert refused.code == 2 and "exists with another spec" in refused.stderr
    # … and the refusal names the edited template as the reason, both versions by hash
    new = hashlib.sha256(TEMPLATE.replace("Think briefly", "Think hard").encode()).hexdigest()
    old = hashlib.sha256(TEMPLATE.encode()).hexdigest()
    assert f"its pairwise template changed: sha256 {old[:12]} stored, {new[:12]} now" in refused.stderr


def test_a_classic_template_needs_no_file(db: tuple[str, Engine]) -> None:
    url, eng = db
    argv = create_argv(
        "c",
        "sim:a",
        protocol="pairwise",
        extra=("--pairs", PAIRS, "--template", "pairwise=@classic-pairwise"),
    )
    assert cli(*argv, db=url).code == 0
    assert cli("campaign", "run", "c", "--json", db=url).json()["done"] == 8
    with eng.connect() as c:
        names = set(c.scalars(select(Request.template_name)))
    assert names == {"@classic-pairwise"}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("{{ candidate_a }} Verdict: A or B", "must show candidate_b"),
        ("{{ candidate_a }} {{ candidate_b }} Which do you prefer?", "no answer format"),
    ],
)
def test_a_bad_template_is_one_line_exit_2_and_stores_nothing(
    db: tuple[str, Engine], tmp_path: Path, body: str, expected: str
) -> None:
    url, eng = db
    path = tmp_path / "bad.j2"
    path.write_text(body, encoding="utf-8")
    argv = create_argv(
        "c", "sim:a", protocol="pairwise", extra=("--pairs", PAIRS, "--template", f"pairwise={path}")
    )
    got = cli(*argv, db=url)
    assert got.code == 2
    assert expected in got.stderr and len(got.stderr.strip().splitlines()) == 1
    with eng.connect() as c:
        assert c.scalar(select(func.count()).select_from(Campaign)) == 0


def test_a_template_for_another_protocol_is_refused(db: tuple[str, Engine]) -> None:
    url, _ = db
    got = cli(*create_argv("c", "sim:a", extra=("--template", "pairwise=@classic-pairwise")), db=url)
    assert got.code == 2 and "a pairwise template was given for a pointwise campaign" in got.stderr


def test_a_spec_without_the_new_options_is_stored_as_before(db: tuple[str, Engine]) -> None:
    """Campaigns created before templates existed must still compare equal on re-create."""
    url, eng = db
    assert cli(*create_argv("c", "sim:a", protocol="pairwise", extra=("--pairs", PAIRS)), db=url).code == 0
    with eng.connect() as c:
        spec = c.scalar(select(Campaign.spec))
    assert "templates" not in spec and "max_cost" not in spec and "origin" not in spec


@pytest.fixture
def any_db(db_url: str) -> Iterator[tuple[str, Engine]]:
    eng = tiny_db(db_url, pairs=4)
    yield db_url, eng
    eng.dispose()


def test_a_file_edited_before_the_first_run_does_not_change_what_the_campaign_sends(
    any_db: tuple[str, Engine], tmp_path: Path
) -> None:
    """Create, edit the file, then run: every request carries the text and hash the campaign was
    created with; the edit is adopted only by a new campaign (`campaign show --yaml` re-reads the
    file), and the old campaign's requests stay as they were."""
    url, eng = any_db
    path = tmp_path / "mine.j2"
    path.write_text(TEMPLATE, encoding="utf-8")
    argv = create_argv(
        "c", "sim:a", protocol="pairwise", extra=("--pairs", PAIRS, "--template", f"pairwise={path}")
    )
    assert cli(*argv, db=url).code == 0
    edited = TEMPLATE.replace("Think briefly", "Think hard")
    path.write_text(edited, encoding="utf-8")
    run = cli("campaign", "run", "c", "--json", db=url).json()
    assert run["done"] == 8 and "changed since campaign c was created" in run["warnings"][0]
    with eng.connect() as c:
        sent = c.execute(select(Request.template_hash, Request.messages)).all()
    assert {h for h, _ in sent} == {_expected_hash(TEMPLATE)}
    assert all("Think briefly" in m[-1]["content"] and "Think hard" not in m[-1]["content"] for _, m in sent)

    # adopting the edit: a new campaign from the old one's file, which names the template's path
    lock = tmp_path / "c.yaml"
    lock.write_text(cli("campaign", "show", "c", "--yaml", db=url).stdout, encoding="utf-8")
    made = cli("campaign", "create", "c2", "--from", str(lock), "--json", db=url)
    assert made.code == 0, made.stderr
    assert cli("campaign", "run", "c2", "--json", db=url).json()["done"] == 8
    with eng.connect() as c:
        by_campaign = {
            name: set(hashes)
            for name, hashes in (
                (
                    n,
                    c.scalars(
                        select(Request.template_hash).join(Job).join(Campaign).where(Campaign.name == n)
                    ),
                )
                for n in ("c", "c2")
            )
        }
    assert by_campaign == {"c": {_expected_hash(TEMPLATE)}, "c2": {_expected_hash(edited)}}


def test_a_campaign_stored_before_system_v2_is_the_same_campaign_and_keeps_system_v1(
    db: tuple[str, Engine], tmp_path: Path
) -> None:
    """A campaign created before custom templates had their own system message (its stored
    template has no `system` key) re-creates as itself and is still sent the message it was
    planned with, so its requests and cache keys do not change under it."""
    url, eng = db
    path = tmp_path / "mine.j2"
    path.write_text(TEMPLATE, encoding="utf-8")
    argv = create_argv(
        "c", "sim:a", protocol="pairwise", extra=("--pairs", PAIRS, "--template", f"pairwise={path}")
    )
    assert cli(*argv, db=url).code == 0
    with eng.begin() as c:  # as an older judgepanel stored it
        spec = dict(c.scalar(select(Campaign.spec)))
        spec["templates"] = {
            p: {k: v for k, v in t.items() if k != "system"} for p, t in spec["templates"].items()
        }
        c.execute(Campaign.__table__.update().values(spec=spec))
    again = cli(*argv, db=url)
    assert again.code == 0, again.stderr
    assert cli("campaign", "run", "c", "--json", db=url).json()["done"] == 8
    with eng.connect() as c:
        hashes = set(c.scalars(select(Request.template_hash)))
        assert "system" not in c.scalar(select(Campaign.spec))["templates"]["pairwise"]
    v1 = hashlib.sha256(template_source("system.v1").encode() + b"\0" + TEMPLATE.encode() + b"\0").hexdigest()
    assert hashes == {v1}
