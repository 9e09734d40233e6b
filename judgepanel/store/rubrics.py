"""Rubric versions and their clauses in the store.

Rules:
- a rubric is a name with numbered versions 1, 2, …; each version keeps the whole document
  (`body`), its `content_hash` (see `RubricDoc.content_hash`) and one `clause` row per clause;
- a person's version (`author="manual"`) and an editor model's (`author="editor"`, written by
  `rubric split`, repair and alignment) share one numbering; the *current* version is the newest
  one a person added, and a bare `NAME` means it: an editor's proposal is reached only as
  `NAME@N`, so a simulated or experimental edit never becomes what `--rubric NAME` uses;
- a person adding content identical to the current version changes nothing and returns it
  (`summeval@1 (unchanged)`), whatever editor versions came after it;
- anything else creates version latest+1 whose parent is the current version for a person's edit
  (also when the content equals an older version: going back is an edit too, and the current
  version must be what a person added last), the latest for an editor's without `parent`;
- `NAME@N` is version N.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, func, insert, select
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session

from judgepanel.errors import BadInput, NotFound
from judgepanel.rubrics import RubricDoc, parse_ref
from judgepanel.store.engine import session_scope
from judgepanel.store.models import Clause, Rubric, RubricVersion

AUTHORS = ("manual", "editor")
# two writers adding at once: the loser (unique violation, or SQLite's stale-snapshot "busy")
# retries and then sees the winner's version as the latest
_ATTEMPTS = 5


@dataclass(frozen=True)
class StoredRubric:
    name: str
    version: int
    version_id: int  # rubric_version.id (what a campaign points to)
    parent_version: int | None
    author: str
    change_note: str | None
    content_hash: str
    created_at: datetime
    doc: RubricDoc
    clause_ids: dict[str, int]  # stable clause id ("coherence.3") -> clause.id row
    editor: str | None = None  # the editor spec of an author='editor' version

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "parent_version": self.parent_version,
            "author": self.author,
            "editor": self.editor,
            "change_note": self.change_note,
            "content_hash": self.content_hash,
            "created_at": self.created_at.isoformat(timespec="seconds"),
            "dimensions": list(self.doc.dimension_names),
            "clauses": len(self.doc.clauses),
        }


@dataclass(frozen=True)
class AddedRubric:
    rubric: StoredRubric
    created: bool  # False: identical to the current version (or the parent's edit), nothing written

    def as_dict(self) -> dict[str, Any]:
        return {"created": self.created, **self.rubric.as_dict()}


def _load(s: Session, rubric: Rubric, rv: RubricVersion) -> StoredRubric:
    parent = s.get(RubricVersion, rv.parent_id) if rv.parent_id is not None else None
    doc = RubricDoc.from_dict(rv.body, origin=f"stored rubric {rubric.name}@{rv.version}", name=rubric.name)
    clause_ids = dict(
        s.execute(
            select(Clause.clause_key, Clause.id)
            .where(Clause.rubric_version_id == rv.id)
            .order_by(Clause.position)
        ).all()
    )
    return StoredRubric(
        name=rubric.name,
        version=rv.version,
        version_id=rv.id,
        parent_version=parent.version if parent is not None else None,
        author=rv.author,
        change_note=rv.change_note,
        content_hash=rv.content_hash,
        created_at=rv.created_at,
        doc=doc,
        clause_ids=clause_ids,
        editor=rv.editor,
    )


def _latest(s: Session, rubric_id: int) -> RubricVersion | None:
    return s.scalar(
        select(RubricVersion)
        .where(RubricVersion.rubric_id == rubric_id)
        .order_by(RubricVersion.version.desc())
        .limit(1)
    )


def _current(s: Session, rubric_id: int) -> RubricVersion | None:
    """The newest version a person added (the latest of any author when none was)."""
    manual = s.scalar(
        select(RubricVersion)
        .where(RubricVersion.rubric_id == rubric_id, RubricVersion.author == "manual")
        .order_by(RubricVersion.version.desc())
        .limit(1)
    )
    return manual if manual is not None else _latest(s, rubric_id)


def pinned_ref(s: Session, ref: str) -> tuple[RubricVersion, str]:
    """The row `NAME[@VERSION]` names and its exact `NAME@VERSION` (what a campaign records)."""
    rv = rubric_version(s, ref)
    return rv, f"{parse_ref(ref)[0]}@{rv.version}"


def rubric_version(s: Session, ref: str) -> RubricVersion:
    """The `rubric_version` row for `NAME[@VERSION]` (the current version by default: the newest
    a person added), inside a session."""
    name, version = parse_ref(ref)
    rubric = s.scalar(select(Rubric).where(Rubric.name == name))
    if rubric is None:
        known = ", ".join(s.scalars(select(Rubric.name).order_by(Rubric.name))) or "none"
        raise NotFound(
            f"no rubric named {name!r} (known: {known}); add one with `judgepanel rubric add FILE`"
        )
    if version is None:
        rv = _current(s, rubric.id)
    else:
        rv = s.scalar(
            select(RubricVersion).where(
                RubricVersion.rubric_id == rubric.id, RubricVersion.version == version
            )
        )
    if rv is None:
        latest = _latest(s, rubric.id)
        raise NotFound(
            f"rubric {name!r} has no version {version} (latest: {latest.version if latest else 'none'})"
        )
    return rv


def load_rubric_version(s: Session, rubric_version_id: int) -> StoredRubric:
    """A stored version by its row id (e.g. a campaign's `rubric_version_id`)."""
    rv = s.get(RubricVersion, rubric_version_id)
    if rv is None:
        raise NotFound(f"no rubric version with id {rubric_version_id}")
    rubric = s.get(Rubric, rv.rubric_id)
    assert rubric is not None
    return _load(s, rubric, rv)


def get_rubric(engine: Engine, ref: str) -> StoredRubric:
    with session_scope(engine) as s:
        rv = rubric_version(s, ref)
        return load_rubric_version(s, rv.id)


def _add(
    s: Session,
    doc: RubricDoc,
    author: str,
    change_note: str | None,
    *,
    parent: RubricVersion | None = None,
    editor: str | None = None,
) -> tuple[Rubric, RubricVersion, bool]:
    rubric = s.scalar(select(Rubric).where(Rubric.name == doc.name))
    if rubric is None:
        rubric = Rubric(name=doc.name)
        s.add(rubric)
        s.flush()
    latest = _latest(s, rubric.id)
    current = _current(s, rubric.id) if author == "manual" else latest
    if parent is not None:
        # an edit of a chosen version: the same content from the same parent is that version again
        same = s.scalar(
            select(RubricVersion)
            .where(
                RubricVersion.rubric_id == rubric.id,
                RubricVersion.content_hash == doc.content_hash,
                (RubricVersion.parent_id == parent.id) | (RubricVersion.id == parent.id),
            )
            .order_by(RubricVersion.version)
            .limit(1)
        )
        if same is not None:
            return rubric, same, False
    elif current is not None and current.content_hash == doc.content_hash:
        return rubric, current, False
    rv = RubricVersion(
        rubric_id=rubric.id,
        version=(latest.version + 1) if latest is not None else 1,
        parent_id=parent.id if parent is not None else (current.id if current is not None else None),
        author=author,
        editor=editor,
        change_note=change_note,
        content_hash=doc.content_hash,
        body=doc.to_dict(),
    )
    s.add(rv)
    s.flush()
    s.execute(
        insert(Clause),
        [
            {
                "rubric_version_id": rv.id,
                "clause_key": c.id,
                "dimension": c.dimension,
                "position": i,
                "text": c.text,
            }
            for i, c in enumerate(doc.clauses)
        ],
    )
    return rubric, rv, True


def add_rubric(
    engine: Engine,
    doc: RubricDoc,
    *,
    name: str | None = None,
    author: str = "manual",
    change_note: str | None = None,
    parent: str | None = None,
    editor: str | None = None,
) -> AddedRubric:
    """Store `doc` (under `name` if given) as a new version, or find it unchanged. `parent`
    (`NAME@V`) makes it an edit of that version rather than of the latest; `editor` names the
    editor model behind an `author="editor"` version."""
    if author not in AUTHORS:
        raise BadInput(f"rubric author must be one of {', '.join(AUTHORS)}, got {author!r}")
    if name is not None and name != doc.name:
        doc = RubricDoc.from_dict(doc.to_dict(), origin="--name", name=name)
    for attempt in range(_ATTEMPTS):
        try:
            with session_scope(engine) as s:
                parent_rv = rubric_version(s, parent) if parent is not None else None
                rubric, rv, created = _add(s, doc, author, change_note, parent=parent_rv, editor=editor)
                return AddedRubric(_load(s, rubric, rv), created)
        except (IntegrityError, OperationalError):
            if attempt == _ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def list_rubrics(engine: Engine) -> list[dict[str, Any]]:
    """One row per rubric: its latest version, its current one (what a bare name means) and how
    many versions it has."""
    with session_scope(engine) as s:
        counts = dict(
            s.execute(select(RubricVersion.rubric_id, func.count()).group_by(RubricVersion.rubric_id)).all()
        )
        out = []
        for rubric in s.scalars(select(Rubric).order_by(Rubric.name)):
            latest = _latest(s, rubric.id)
            current = _current(s, rubric.id)
            if latest is None or current is None:
                continue
            stored = _load(s, rubric, latest)
            out.append(
                {
                    "name": rubric.name,
                    "latest_version": latest.version,
                    "current_version": current.version,
                    "versions": counts.get(rubric.id, 0),
                    "dimensions": list(stored.doc.dimension_names),
                    "clauses": len(stored.doc.clauses),
                    "author": latest.author,
                    "created_at": latest.created_at.isoformat(timespec="seconds"),
                }
            )
        return out


def rubric_versions(engine: Engine, name: str) -> list[int]:
    with session_scope(engine) as s:
        rubric = s.scalar(select(Rubric).where(Rubric.name == name))
        if rubric is None:
            raise NotFound(f"no rubric named {name!r}")
        return list(
            s.scalars(
                select(RubricVersion.version)
                .where(RubricVersion.rubric_id == rubric.id)
                .order_by(RubricVersion.version)
            )
        )


__all__ = [
    "AddedRubric",
    "StoredRubric",
    "add_rubric",
    "get_rubric",
    "list_rubrics",
    "load_rubric_version",
    "pinned_ref",
    "rubric_version",
    "rubric_versions",
]
