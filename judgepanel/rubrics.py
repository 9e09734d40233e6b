"""Rubric documents: YAML files in `rubrics/` loaded into a frozen, validated `RubricDoc`.

A rubric names what is judged (`subject`: the source and the candidate, e.g. "news article" and
"summary") and one or more dimensions. Each dimension has

- `definition`: one or two sentences, shown under the `criteria` and `rubric` conditions;
- `criteria`: the list of what to inspect (the `criteria` condition);
- `scale`: optional `[lowest, highest]` integer score range, default `[1, 5]` (USR rates
  understandability 0..1 and naturalness 1..3); pointwise prompts, reply schema and parser use it;
- `anchors`: one description per score level of the scale (the `rubric` condition);
- `clauses`: atomic yes/no statements with stable ids `<dimension>.<n>` (the clause protocol).

The file format::

    name: summeval
    title: SummEval summary quality          # optional
    description: …                           # optional
    subject: {source: news article, candidate: summary, relation: of}
    dimensions:
      coherence:
        definition: …
        criteria: [ …, … ]
        anchors: {1: …, 2: …, 3: …, 4: …, 5: …}
        clauses:
          - {id: coherence.1, text: …}

`dimensions` may also be a list of mappings with a `name` key; that list form is what
`RubricDoc.to_dict()` returns and what the store keeps, because it fixes the order on every
backend. A dimension on the default 1..5 scale stores no `scale` key, so the documents (and
content hashes) of rubrics written before scales existed do not change. Unknown keys and duplicate YAML keys are errors (they are usually typos), and every error
names the file and the field.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgepanel.errors import BadInput, NotFound
from judgepanel.inputs import check_yaml_depth, read_text
from judgepanel.resources import resource_dir

if TYPE_CHECKING:
    import yaml

SCALE = (1, 5)
LEVELS = tuple(range(SCALE[0], SCALE[1] + 1))

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$")
DIMENSION_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
CLAUSE_SUFFIX_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")

DEFAULT_SOURCE = "input"
DEFAULT_CANDIDATE = "response"
DEFAULT_RELATION = "to"

_TOP_KEYS = {"name", "title", "description", "subject", "dimensions"}
_DIM_KEYS = {"name", "definition", "criteria", "scale", "anchors", "clauses"}
MAX_LEVELS = 11  # a 0..10 scale at most: every level needs an anchor
_CLAUSE_KEYS = {"id", "text"}


@dataclass(frozen=True)
class Clause:
    """One atomic statement a candidate either meets or not. `id` is stable across versions."""

    id: str
    dimension: str
    text: str


@dataclass(frozen=True)
class Dimension:
    name: str
    definition: str
    criteria: tuple[str, ...]
    anchors: tuple[tuple[int, str], ...]  # (level, description) for every level, ascending
    clauses: tuple[Clause, ...]
    scale: tuple[int, int] = SCALE  # lowest and highest score, inclusive

    @property
    def levels(self) -> tuple[int, ...]:
        return tuple(range(self.scale[0], self.scale[1] + 1))

    @property
    def clause_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.clauses)


@dataclass(frozen=True)
class RubricDoc:
    name: str
    dimensions: tuple[Dimension, ...]
    title: str | None = None
    description: str | None = None
    source_label: str = DEFAULT_SOURCE
    candidate_label: str = DEFAULT_CANDIDATE
    relation: str = DEFAULT_RELATION  # "a summary *of* the article", "an answer *to* the question"

    def dimension(self, name: str) -> Dimension:
        for d in self.dimensions:
            if d.name == name:
                return d
        known = ", ".join(d.name for d in self.dimensions)
        raise BadInput(f"rubric {self.name!r} has no dimension {name!r} (known: {known})")

    @property
    def dimension_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.dimensions)

    @property
    def clauses(self) -> tuple[Clause, ...]:
        return tuple(c for d in self.dimensions for c in d.clauses)

    def clause_ids(self, dimension: str | None = None) -> tuple[str, ...]:
        if dimension is None:
            return tuple(c.id for c in self.clauses)
        return self.dimension(dimension).clause_ids

    def to_dict(self) -> dict[str, Any]:
        """The canonical document (list form of `dimensions`); `from_dict` reads it back."""
        out: dict[str, Any] = {"name": self.name}
        if self.title is not None:
            out["title"] = self.title
        if self.description is not None:
            out["description"] = self.description
        out["subject"] = {
            "source": self.source_label,
            "candidate": self.candidate_label,
            "relation": self.relation,
        }
        out["dimensions"] = [_dimension_dict(d) for d in self.dimensions]
        return out

    @property
    def content_hash(self) -> str:
        """sha256 of the canonical document without its name: what decides whether an added file
        is a new version."""
        body = {k: v for k, v in self.to_dict().items() if k != "name"}
        return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    @classmethod
    def from_dict(cls, data: Any, *, origin: str = "<rubric>", name: str | None = None) -> RubricDoc:
        """Validate `data` (a parsed YAML/JSON document). `name` overrides the document's name.
        Raises BadInput naming `origin` and the field at fault."""
        return _Validator(origin).document(data, name)


def _dimension_dict(d: Dimension) -> dict[str, Any]:
    out: dict[str, Any] = {"name": d.name, "definition": d.definition, "criteria": list(d.criteria)}
    if d.scale != SCALE:  # absent on the default scale: older documents keep their hash
        out["scale"] = list(d.scale)
    out["anchors"] = {str(level): text for level, text in d.anchors}
    out["clauses"] = [{"id": c.id, "text": c.text} for c in d.clauses]
    return out


# ---------------------------------------------------------------- loading files


@functools.cache
def _unique_key_loader() -> type[yaml.SafeLoader]:
    """A SafeLoader that refuses duplicate keys: PyYAML silently keeps the last of two equal keys,
    and a rubric must not lose a dimension that way. Built on first use, so that reading stored
    rubrics (e.g. `campaign status`) does not import PyYAML."""
    import yaml

    def construct_mapping(
        loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False
    ) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return loader.construct_mapping(node, deep=deep)

    class UniqueKeyLoader(yaml.SafeLoader):
        pass

    UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return UniqueKeyLoader


def load_rubric_text(text: str, *, origin: str = "<rubric>", name: str | None = None) -> RubricDoc:
    import yaml

    check_yaml_depth(text, origin)
    try:
        data = yaml.load(text, Loader=_unique_key_loader())  # a SafeLoader subclass: no arbitrary objects
    except RecursionError:
        raise BadInput(f"{origin}: YAML nested too deep") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise BadInput(f"{origin}:{where} not valid YAML: {problem}") from exc
    return RubricDoc.from_dict(data, origin=origin, name=name)


def load_rubric_file(path: Path | str, *, name: str | None = None) -> RubricDoc:
    p = Path(path)
    if not p.exists():
        raise BadInput(f"{p}: no such rubric file")
    text = read_text(p, "rubric file")  # a regular file of at most 1 MB (`judgepanel.inputs`)
    return load_rubric_text(text, origin=str(p), name=name)


def bundled_rubrics() -> dict[str, Path]:
    """The rubrics shipped with judgepanel, by file stem (`summeval`, `helpfulness`)."""
    folder = resource_dir("rubrics")
    return {p.stem: p for p in sorted(folder.glob("*.yaml"))}


def bundled_rubric(name: str) -> RubricDoc:
    found = bundled_rubrics()
    if name not in found:
        raise NotFound(f"no bundled rubric {name!r} (bundled: {', '.join(found) or 'none'})")
    return load_rubric_file(found[name])


# ---------------------------------------------------------------- validation


class _Validator:
    def __init__(self, origin: str) -> None:
        self.origin = origin

    def fail(self, field: str, message: str) -> BadInput:
        return BadInput(f"{self.origin}: {field}: {message}")

    def text(self, value: Any, field: str, *, optional: bool = False) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(field, "expected a non-empty text")
        return " ".join(value.split())  # YAML folding leaves stray newlines; prompts want one line

    def required_text(self, value: Any, field: str) -> str:
        out = self.text(value, field)
        assert out is not None
        return out

    def keys(self, data: Mapping[Any, Any], allowed: set[str], field: str) -> None:
        unknown = sorted(str(k) for k in data if k not in allowed)
        if unknown:
            raise self.fail(
                field, f"unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(allowed))})"
            )

    def document(self, data: Any, name_override: str | None) -> RubricDoc:
        if not isinstance(data, Mapping):
            raise BadInput(f"{self.origin}: a rubric must be a mapping with name and dimensions")
        self.keys(data, _TOP_KEYS, "(top level)")
        name = name_override if name_override is not None else data.get("name")
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise self.fail("name", f"{name!r} is not a rubric name (letters, digits, '_', '-', '.'; no '@')")
        source, candidate, relation = DEFAULT_SOURCE, DEFAULT_CANDIDATE, DEFAULT_RELATION
        subject = data.get("subject")
        if subject is not None:
            if not isinstance(subject, Mapping):
                raise self.fail("subject", "expected a mapping with source and candidate")
            self.keys(subject, {"source", "candidate", "relation"}, "subject")
            source = self.required_text(subject.get("source", source), "subject.source")
            candidate = self.required_text(subject.get("candidate", candidate), "subject.candidate")
            relation = self.required_text(subject.get("relation", relation), "subject.relation")
        dims_raw = data.get("dimensions")
        entries: list[tuple[str, Any]]
        if isinstance(dims_raw, Mapping):
            entries = [(str(k), v) for k, v in dims_raw.items()]
        elif isinstance(dims_raw, list):
            entries = []
            for i, d in enumerate(dims_raw):
                if not isinstance(d, Mapping) or "name" not in d:
                    raise self.fail(f"dimensions[{i}]", "expected a mapping with a name")
                entries.append((str(d["name"]), d))
        else:
            raise self.fail("dimensions", "expected a non-empty mapping of dimension name to definition")
        if not entries:
            raise self.fail("dimensions", "a rubric needs at least one dimension")
        dims: list[Dimension] = []
        seen: set[str] = set()
        for dim_name, body in entries:
            if dim_name in seen:
                raise self.fail(f"dimensions.{dim_name}", "dimension given twice")
            seen.add(dim_name)
            dims.append(self.dimension(dim_name, body))
        return RubricDoc(
            name=name,
            dimensions=tuple(dims),
            title=self.text(data.get("title"), "title", optional=True),
            description=self.text(data.get("description"), "description", optional=True),
            source_label=source,
            candidate_label=candidate,
            relation=relation,
        )

    def dimension(self, name: str, body: Any) -> Dimension:
        f = f"dimensions.{name}"
        if not DIMENSION_RE.match(name):
            raise self.fail(
                f, "a dimension name is lower-case letters, digits and '_', starting with a letter"
            )
        if not isinstance(body, Mapping):
            raise self.fail(f, "expected a mapping with definition, criteria, anchors and clauses")
        self.keys(body, _DIM_KEYS, f)
        for key in ("definition", "criteria", "anchors", "clauses"):
            if key not in body:
                raise self.fail(f"{f}.{key}", "missing")
        definition = self.required_text(body["definition"], f"{f}.definition")
        criteria = self.text_list(body["criteria"], f"{f}.criteria")
        scale = self.scale(body.get("scale", list(SCALE)), f"{f}.scale")
        anchors = self.anchors(body["anchors"], f"{f}.anchors", scale)
        clauses = self.clauses(name, body["clauses"], f"{f}.clauses")
        return Dimension(name, definition, criteria, anchors, clauses, scale)

    def scale(self, value: Any, field: str) -> tuple[int, int]:
        ok = (
            isinstance(value, list)
            and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        )
        if not ok or not 0 <= value[0] < value[1] or value[1] - value[0] + 1 > MAX_LEVELS:
            raise self.fail(
                field,
                f"expected [lowest, highest] integers with 0 <= lowest < highest and at most "
                f"{MAX_LEVELS} levels, got {value!r}",
            )
        return value[0], value[1]

    def text_list(self, value: Any, field: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not value:
            raise self.fail(field, "expected a non-empty list of texts")
        return tuple(self.required_text(v, f"{field}[{i}]") for i, v in enumerate(value))

    def anchors(self, value: Any, field: str, scale: tuple[int, int] = SCALE) -> tuple[tuple[int, str], ...]:
        lo, hi = scale
        levels_ = tuple(range(lo, hi + 1))
        if not isinstance(value, Mapping):
            raise self.fail(field, f"expected a mapping of score level ({lo}..{hi}) to description")
        levels: dict[int, str] = {}
        for key, text in value.items():
            level = key if isinstance(key, int) and not isinstance(key, bool) else None
            if isinstance(key, str) and key.strip().isdigit():
                level = int(key)
            if level is None or level not in levels_:
                raise self.fail(field, f"{key!r} is not a score level {lo}..{hi}")
            if level in levels:
                raise self.fail(field, f"level {level} given twice")
            levels[level] = self.required_text(text, f"{field}.{level}")
        missing = [str(lv) for lv in levels_ if lv not in levels]
        if missing:
            raise self.fail(
                field, f"missing level(s) {', '.join(missing)}: every level {lo}..{hi} needs an anchor"
            )
        return tuple((lv, levels[lv]) for lv in levels_)

    def clauses(self, dim: str, value: Any, field: str) -> tuple[Clause, ...]:
        if not isinstance(value, list) or not value:
            raise self.fail(field, "expected a non-empty list of {id, text} clauses")
        out: list[Clause] = []
        seen: set[str] = set()
        for i, c in enumerate(value):
            cf = f"{field}[{i}]"
            if not isinstance(c, Mapping):
                raise self.fail(cf, "expected a mapping with id and text")
            self.keys(c, _CLAUSE_KEYS, cf)
            cid = c.get("id")
            if not isinstance(cid, str):
                raise self.fail(f"{cf}.id", f"expected an id such as {dim}.{i + 1}")
            prefix, dot, suffix = cid.partition(".")
            if prefix != dim or not dot or not CLAUSE_SUFFIX_RE.match(suffix):
                raise self.fail(f"{cf}.id", f"{cid!r} must have the form {dim}.<n> (e.g. {dim}.{i + 1})")
            if cid in seen:
                raise self.fail(f"{cf}.id", f"clause id {cid!r} is used twice")
            seen.add(cid)
            out.append(Clause(cid, dim, self.required_text(c.get("text"), f"{cf}.text")))
        return tuple(out)


def parse_ref(ref: str) -> tuple[str, int | None]:
    """`NAME[@VERSION]` -> (name, version or None for the latest)."""
    name, at, version = ref.partition("@")
    if not name:
        raise BadInput(f"{ref!r} is not a rubric reference: use NAME or NAME@VERSION")
    if not at:
        return name, None
    if not version.isdigit() or int(version) < 1:
        raise BadInput(f"{ref!r}: the version after '@' must be a positive integer")
    return name, int(version)


@dataclass(frozen=True)
class RubricDiff:
    """Clause-level difference between two rubric documents, by stable clause id."""

    changed: dict[str, dict[str, str]]  # id -> {"old", "new"} (same id, other text)
    added: list[str]
    removed: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {"changed": self.changed, "added": self.added, "removed": self.removed}


def diff_rubrics(old: RubricDoc, new: RubricDoc) -> RubricDiff:
    """Which clause ids `new` adds, removes, or keeps with another text (in `new`'s order)."""
    before = {c.id: c.text for c in old.clauses}
    after = {c.id: c.text for c in new.clauses}
    return RubricDiff(
        {k: {"old": before[k], "new": t} for k, t in after.items() if k in before and before[k] != t},
        [k for k in after if k not in before],
        [k for k in before if k not in after],
    )
