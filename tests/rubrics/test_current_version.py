"""Issue 28 §1: the rubric version a campaign uses. A bare `NAME` is the newest version a *person*
added; an editor's versions (repair, `rubric split`, the demo's simulated editor) are reached only
as `NAME@V`; `campaign create` prints and records the exact version; and adding content identical
to the current version writes nothing, whatever editor versions came after it."""

from __future__ import annotations

import copy

import yaml
from sqlalchemy import Engine, func, select

from judgepanel.rubrics import RubricDoc, bundled_rubric, bundled_rubrics
from judgepanel.store.engine import make_engine, session_scope
from judgepanel.store.models import RubricVersion
from judgepanel.store.rubrics import add_rubric, get_rubric, list_rubrics
from tests.helpers import cli, load_summeval_sample


def _edited(doc: RubricDoc, text: str) -> RubricDoc:
    body = copy.deepcopy(doc.to_dict())
    body["dimensions"][0]["clauses"][1]["text"] = text
    return RubricDoc.from_dict(body)


def _versions(engine: Engine) -> int:
    with session_scope(engine) as s:
        return int(s.scalar(select(func.count()).select_from(RubricVersion)) or 0)


def _with_editor_versions(engine: Engine) -> RubricDoc:
    """summeval@1 by a person, then @2 and @3 by an editor (as `judgepanel demo`'s repair leaves it)."""
    doc = bundled_rubric("summeval")
    add_rubric(engine, doc)
    e2 = add_rubric(
        engine, _edited(doc, "Edited once."), author="editor", parent="summeval@1", editor="sim:e"
    )
    e3 = add_rubric(
        engine, _edited(doc, "Edited twice."), author="editor", parent="summeval@1", editor="sim:e"
    )
    assert (e2.rubric.version, e3.rubric.version) == (2, 3)
    return doc


def test_a_bare_name_is_the_newest_version_a_person_added(engine: Engine) -> None:
    doc = _with_editor_versions(engine)
    assert get_rubric(engine, "summeval").version == 1
    assert get_rubric(engine, "summeval@3").doc.dimensions[0].clauses[1].text == "Edited twice."
    row = list_rubrics(engine)[0]
    assert (row["current_version"], row["latest_version"], row["versions"]) == (1, 3, 3)
    # a person's edit becomes the current version (its parent: the person's previous one)
    mine = add_rubric(engine, _edited(doc, "Edited by hand."))
    assert (mine.created, mine.rubric.version, mine.rubric.parent_version) == (True, 4, 1)
    assert get_rubric(engine, "summeval").version == 4


def test_adding_the_current_content_again_writes_nothing(engine: Engine) -> None:
    doc = _with_editor_versions(engine)
    again = add_rubric(engine, bundled_rubric("summeval"))
    assert (again.created, again.rubric.ref) == (False, "summeval@1")
    assert _versions(engine) == 3
    assert get_rubric(engine, "summeval").doc == doc


def test_create_prints_and_pins_the_exact_version(tmp_path, sqlite_url: str) -> None:  # type: ignore[no-untyped-def]
    load_summeval_sample(sqlite_url)
    engine = make_engine(sqlite_url)
    _with_editor_versions(engine)
    engine.dispose()

    out = cli("rubric", "add", str(bundled_rubrics()["summeval"]), db=sqlite_url)
    assert out.code == 0 and out.stdout.startswith("summeval@1 (unchanged"), out.stdout
    assert cli("rubric", "list", "--json", db=sqlite_url).json()["rubrics"][0]["versions"] == 3

    made = cli(
        "campaign", "create", "c1", "--dataset", "se", "--protocol", "pointwise", "--rubric", "summeval",
        "--condition", "rubric", "--dimension", "coherence", "--judge", "sim:judge-a", "--limit", "3",
        db=sqlite_url,
    )  # fmt: skip
    assert made.code == 0, made.stderr
    assert "rubric summeval@1," in made.stdout
    as_json = cli("campaign", "show", "c1", "--json", db=sqlite_url).json()
    assert as_json["rubric"] == "summeval@1"
    lock = cli("campaign", "show", "c1", "--yaml", db=sqlite_url)
    assert yaml.safe_load(lock.stdout)["rubric"] == "summeval@1"

    # the "lock" file re-creates the same campaign even after a person adds a newer version
    (tmp_path / "c1.yaml").write_text(lock.stdout)
    edited = tmp_path / "summeval.yaml"
    body = yaml.safe_load(bundled_rubrics()["summeval"].read_text())
    body["dimensions"]["fluency"]["clauses"].append({"id": "fluency.6", "text": "No sentence runs on."})
    edited.write_text(yaml.safe_dump(body, sort_keys=False))
    assert "summeval@4 added" in cli("rubric", "add", str(edited), db=sqlite_url).stdout
    again = cli("campaign", "create", "--from", str(tmp_path / "c1.yaml"), db=sqlite_url)
    assert again.code == 0 and "(unchanged)" in again.stdout and "summeval@1" in again.stdout
    # the bare name given again names the same campaign only while it means the same version
    moved = cli(
        "campaign", "create", "c1", "--dataset", "se", "--protocol", "pointwise", "--rubric", "summeval",
        "--condition", "rubric", "--dimension", "coherence", "--judge", "sim:judge-a", "--limit", "3",
        db=sqlite_url,
    )  # fmt: skip
    assert moved.code == 2 and "exists with another spec" in moved.stderr
