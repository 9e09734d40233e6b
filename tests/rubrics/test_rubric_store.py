"""Rubric versions in the store, on SQLite and PostgreSQL (the `engine` fixture runs both)."""

from __future__ import annotations

import copy
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import Engine, func, select

from judgepanel.errors import BadInput, NotFound
from judgepanel.rubrics import RubricDoc, bundled_rubric
from judgepanel.store.engine import session_scope
from judgepanel.store.models import Clause, RubricVersion
from judgepanel.store.rubrics import (
    add_rubric,
    get_rubric,
    list_rubrics,
    load_rubric_version,
    rubric_version,
    rubric_versions,
)


def _edited(doc: RubricDoc, text: str) -> RubricDoc:
    body = copy.deepcopy(doc.to_dict())
    body["dimensions"][0]["clauses"][1]["text"] = text
    return RubricDoc.from_dict(body)


def _counts(engine: Engine) -> tuple[int, int]:
    with session_scope(engine) as s:
        versions = s.scalar(select(func.count()).select_from(RubricVersion))
        clauses = s.scalar(select(func.count()).select_from(Clause))
        return int(versions or 0), int(clauses or 0)


def test_add_identical_is_a_noop_and_an_edit_is_the_next_version(engine: Engine) -> None:
    doc = bundled_rubric("summeval")
    first = add_rubric(engine, doc)
    assert first.created and first.rubric.version == 1 and first.rubric.parent_version is None
    assert first.rubric.doc == doc and first.rubric.content_hash == doc.content_hash
    assert list(first.rubric.clause_ids) == list(doc.clause_ids())
    assert _counts(engine) == (1, len(doc.clauses))

    again = add_rubric(engine, bundled_rubric("summeval"))
    assert (
        not again.created and again.rubric.version == 1 and again.rubric.version_id == first.rubric.version_id
    )
    assert _counts(engine) == (1, len(doc.clauses))

    edited = _edited(doc, "Every pronoun refers to something named earlier in the summary.")
    second = add_rubric(engine, edited, change_note="coherence.2 made stricter")
    assert second.created and second.rubric.version == 2 and second.rubric.parent_version == 1
    assert second.rubric.change_note == "coherence.2 made stricter" and second.rubric.author == "manual"
    assert _counts(engine) == (2, 2 * len(doc.clauses))
    # the stable id keeps naming the clause; each version has its own row with its own text
    assert second.rubric.clause_ids["coherence.2"] != first.rubric.clause_ids["coherence.2"]
    with session_scope(engine) as s:
        texts = dict(
            s.execute(
                select(Clause.rubric_version_id, Clause.text).where(Clause.clause_key == "coherence.2")
            ).all()
        )
    assert texts[second.rubric.version_id].startswith("Every pronoun refers")
    assert texts[first.rubric.version_id] == doc.dimension("coherence").clauses[1].text

    # going back to v1's content is an edit too: v3 with parent v2, and it becomes the latest
    back = add_rubric(engine, doc, author="editor")
    assert (back.created, back.rubric.version, back.rubric.parent_version, back.rubric.author) == (
        True,
        3,
        2,
        "editor",
    )
    # issue 28 §1: an editor's version is a proposal; the current version is the person's v2, so a
    # person adding v1's content goes back by an edit of their own (v4), and adding it again is a no-op
    mine = add_rubric(engine, doc)
    assert (mine.created, mine.rubric.version, mine.rubric.parent_version, mine.rubric.author) == (
        True,
        4,
        2,
        "manual",
    )
    assert not add_rubric(engine, doc).created
    assert rubric_versions(engine, "summeval") == [1, 2, 3, 4]


def test_lookup_latest_and_by_version(engine: Engine) -> None:
    doc = bundled_rubric("helpfulness")
    add_rubric(engine, doc)
    add_rubric(engine, _edited(doc, "It answers every part."))
    assert get_rubric(engine, "helpfulness").version == 2
    v1 = get_rubric(engine, "helpfulness@1")
    assert v1.version == 1 and v1.doc == doc and v1.ref == "helpfulness@1"
    assert get_rubric(engine, "helpfulness@2").doc.dimensions[0].clauses[1].text == "It answers every part."
    with session_scope(engine) as s:
        rv = rubric_version(s, "helpfulness@1")
        assert load_rubric_version(s, rv.id).doc == doc
    with pytest.raises(NotFound, match="has no version 7 \\(latest: 2\\)"):
        get_rubric(engine, "helpfulness@7")
    with pytest.raises(NotFound, match="no rubric named 'nope' \\(known: helpfulness\\)"):
        get_rubric(engine, "nope")
    with pytest.raises(BadInput):
        get_rubric(engine, "helpfulness@x")


def test_name_override_and_listing(engine: Engine) -> None:
    doc = bundled_rubric("summeval")
    add_rubric(engine, doc)
    copy_ = add_rubric(engine, doc, name="summeval-strict")
    assert copy_.created and copy_.rubric.name == "summeval-strict" and copy_.rubric.version == 1
    assert copy_.rubric.doc.name == "summeval-strict"
    rows = list_rubrics(engine)
    assert [r["name"] for r in rows] == ["summeval", "summeval-strict"]
    assert rows[0]["latest_version"] == 1 and rows[0]["versions"] == 1
    assert rows[0]["dimensions"] == ["coherence", "consistency", "fluency", "relevance"]
    assert rows[0]["clauses"] == len(doc.clauses)


def test_bad_author_and_bad_name(engine: Engine) -> None:
    doc = bundled_rubric("helpfulness")
    with pytest.raises(BadInput, match="author"):
        add_rubric(engine, doc, author="robot")
    with pytest.raises(BadInput, match="--name: name: 'a b' is not a rubric name"):
        add_rubric(engine, doc, name="a b")
    assert _counts(engine) == (0, 0)


def test_concurrent_adds_store_one_version(engine: Engine) -> None:
    doc = bundled_rubric("summeval")
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: add_rubric(engine, doc), range(4)))
    assert sorted(r.created for r in results) == [False, False, False, True]
    assert {r.rubric.version for r in results} == {1}
    assert _counts(engine) == (1, len(doc.clauses))
