"""What an editor model is asked, and how its answer is read.

Two tasks, each one call:

- `rewrite` (`prompts/editor_rewrite.v1.j2`): one contested clause — its id, text and dimension
  name — and at most a few texts the judges split on, with each judge's rationale for that clause.
  Nothing else reaches the prompt: no human label, no score, no other clause or its verdicts
  (`RewriteTask` has no field that could carry them). Reply: {"reason", "clause"}.
- `split` (`prompts/editor_split.v1.j2`): one dimension's definition, criteria, anchors and
  current clauses. Reply: {"reason", "clauses": [...]}.
- `align` (`prompts/editor_align.v1.j2`, `protocol.align`): a judge's instructions and a few
  development items where judge and humans disagree (text, both scores, the rationales). Reply
  (strict schema): {"reason", "instructions"} — the revised instructions, at most
  `MAX_INSTRUCTIONS_CHARS` characters.
- `checker` (`prompts/editor_checker.v1.j2`): one clause (id and text) and the checker catalogue
  (`protocol.checkers.CATALOGUE`), nothing else — no item, no verdict. Reply (strict schema, every
  key present, unused parameters null): {"reason", "checker": none|word_count|phrase|regex|language,
  "params": {...}}.

A reply is bounded: a clause of at most `MAX_CLAUSE_CHARS` characters, a split of at most
`MAX_CLAUSES` clauses, a reason of at most `MAX_REASON_CHARS`. A reply over a bound is unreadable
(a failed editor job with the reason as its error), never a rubric version: an 80,000-character
clause would be pasted into every later evaluation prompt.

Every text inside the prompt has its `<` written as `&lt;`, so a text cannot close its tag and pose
as instructions. Tasks are plain JSON (`as_dict` / `task_from_dict`) because they are stored with
the editor campaign and rendered again, identically, when a run resumes.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from judgepanel.errors import BadInput
from judgepanel.protocol.align import (
    ALIGN,
    ALIGN_TEMPLATE,
    MAX_INSTRUCTIONS_CHARS,
    AlignTask,
    align_context,
    align_schema,
    valid_revision,
)
from judgepanel.protocol.checkers import CATALOGUE, KINDS
from judgepanel.protocol.templates import Prompt, _load, template_hash
from judgepanel.resources import resource_dir

EDITOR_SYSTEM = "editor_system.v1"
REWRITE_TEMPLATE = "editor_rewrite.v1"
SPLIT_TEMPLATE = "editor_split.v1"
CHECKER_TEMPLATE = "editor_checker.v1"
REWRITE = "clause_rewrite"
SPLIT = "dimension_split"
CHECKER = "clause_checker"
MAX_EXAMPLES = 8
MAX_SOURCE_CHARS = 2000
MAX_CLAUSE_CHARS = 1000  # an atomic clause is a sentence or two; the bundled ones are under 200
MAX_CLAUSES = 40  # clauses one dimension may be split into
MAX_REASON_CHARS = 8000


def _escape(text: str | None) -> str | None:
    return None if text is None else text.replace("<", "&lt;").strip()


@dataclass(frozen=True)
class Example:
    candidate: str
    source: str | None
    rationales: tuple[tuple[str, str], ...]  # (judge label, rationale for the clause)


@dataclass(frozen=True)
class RewriteTask:
    clause_id: str
    clause_text: str
    dimension: str
    examples: tuple[Example, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "rewrite",
            "clause_id": self.clause_id,
            "clause_text": self.clause_text,
            "dimension": self.dimension,
            "examples": [
                {"candidate": e.candidate, "source": e.source, "rationales": [list(r) for r in e.rationales]}
                for e in self.examples
            ],
        }


@dataclass(frozen=True)
class SplitTask:
    dimension: str
    definition: str
    criteria: tuple[str, ...] = ()
    anchors: tuple[tuple[int, str], ...] = ()
    clauses: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "split",
            "dimension": self.dimension,
            "definition": self.definition,
            "criteria": list(self.criteria),
            "anchors": [list(a) for a in self.anchors],
            "clauses": list(self.clauses),
        }


@dataclass(frozen=True)
class CheckerTask:
    """What the editor is shown to propose a checker: the clause and the catalogue, nothing else."""

    clause_id: str
    clause_text: str

    def as_dict(self) -> dict[str, Any]:
        return {"kind": "checker", "clause_id": self.clause_id, "clause_text": self.clause_text}


def task_from_dict(d: Mapping[str, Any]) -> RewriteTask | SplitTask | CheckerTask | AlignTask:
    if d.get("kind") == "align":
        return AlignTask.from_dict(d)
    if d.get("kind") == "checker":
        return CheckerTask(d["clause_id"], d["clause_text"])
    if d.get("kind") == "rewrite":
        return RewriteTask(
            d["clause_id"],
            d["clause_text"],
            d["dimension"],
            tuple(
                Example(e["candidate"], e.get("source"), tuple((str(j), str(t)) for j, t in e["rationales"]))
                for e in d.get("examples", ())
            ),
        )
    if d.get("kind") == "split":
        return SplitTask(
            d["dimension"],
            d["definition"],
            tuple(d.get("criteria", ())),
            tuple((int(a), str(b)) for a, b in d.get("anchors", ())),
            tuple(d.get("clauses", ())),
        )
    raise BadInput(f"unknown editor task kind {d.get('kind')!r}")


def rewrite_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "reason": {"type": "string", "description": "Why the clause was ambiguous, before the rewrite."},
            "clause": {"type": "string"},
        },
        "required": ["reason", "clause"],
        "additionalProperties": False,
    }


def split_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "reason": {"type": "string"},
            "clauses": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["reason", "clauses"],
        "additionalProperties": False,
    }


_NULLABLE_INT = {"type": ["integer", "null"]}
_NULLABLE_STR = {"type": ["string", "null"]}


def checker_schema() -> dict[str, Any]:
    """Strict: every key required, no other key, so a constrained local model can answer it."""
    params = {
        "min": _NULLABLE_INT,
        "max": _NULLABLE_INT,
        "phrases": {"type": ["array", "null"], "items": {"type": "string"}},
        "mode": {"type": ["string", "null"], "enum": ["all", "any", None]},
        "pattern": _NULLABLE_STR,
        "expect": {"type": ["string", "null"], "enum": ["match", "no_match", None]},
        "language": _NULLABLE_STR,
    }
    return {
        "type": "object",
        "properties": {
            "reason": {"type": "string"},
            "checker": {"type": "string", "enum": ["none", *KINDS]},
            "params": {
                "type": "object",
                "properties": params,
                "required": list(params),
                "additionalProperties": False,
            },
        },
        "required": ["reason", "checker", "params"],
        "additionalProperties": False,
    }


def render_editor(task: RewriteTask | SplitTask | CheckerTask | AlignTask) -> Prompt:
    folder = resource_dir("prompts")
    system = _load(folder, EDITOR_SYSTEM)
    if isinstance(task, AlignTask):
        name, schema, schema_name = ALIGN_TEMPLATE, align_schema(), ALIGN
        context: dict[str, Any] = align_context(task, _escape, MAX_SOURCE_CHARS)
    elif isinstance(task, CheckerTask):
        name, schema, schema_name = CHECKER_TEMPLATE, checker_schema(), CHECKER
        context = {
            "clause_id": _escape(task.clause_id),
            "clause_text": _escape(task.clause_text),
            "catalogue": [
                {"checker": c["checker"], "meaning": c["meaning"], "params": json.dumps(c["params"])}
                for c in CATALOGUE
            ],
        }
    elif isinstance(task, RewriteTask):
        name, schema, schema_name = REWRITE_TEMPLATE, rewrite_schema(), REWRITE
        context = {
            "clause_id": _escape(task.clause_id),
            "clause_text": _escape(task.clause_text),
            "dimension": _escape(task.dimension),
            "examples": [
                {
                    "candidate": _escape(e.candidate),
                    "source": _escape(e.source[:MAX_SOURCE_CHARS]) if e.source else None,
                    "rationales": [{"judge": _escape(j), "text": _escape(t)} for j, t in e.rationales],
                }
                for e in task.examples[:MAX_EXAMPLES]
            ],
        }
    else:
        name, schema, schema_name = SPLIT_TEMPLATE, split_schema(), SPLIT
        context = {
            "dimension": _escape(task.dimension),
            "definition": _escape(task.definition),
            "criteria": [_escape(c) for c in task.criteria],
            "anchors": [(lvl, _escape(t)) for lvl, t in task.anchors],
            "clauses": [_escape(c) for c in task.clauses],
        }
    user = _load(folder, name)
    messages = [
        {"role": "system", "content": system.compiled.render().strip()},
        {"role": "user", "content": user.compiled.render(**context).strip()},
    ]
    return Prompt(messages, name, template_hash(EDITOR_SYSTEM, name), schema, schema_name)


@dataclass(frozen=True)
class EditorReply:
    ok: bool
    method: str | None  # structured | json_tail
    proposal: dict[str, Any] | None  # {"reason", "clause"} or {"reason", "clauses"}
    error: str | None = None


def _valid(schema_name: str, obj: Any) -> dict[str, Any] | None:
    if not isinstance(obj, Mapping):
        return None
    reason = obj.get("reason")
    reason = str(reason).strip() if isinstance(reason, str | int | float) else ""
    if schema_name == ALIGN:
        return valid_revision(obj, reason)
    if schema_name == CHECKER:
        kind = obj.get("checker")
        params = obj.get("params")
        if kind == "none":
            return {"reason": reason, "checker": "none", "params": {}}
        if isinstance(kind, str) and kind in KINDS and isinstance(params, Mapping):
            return {
                "reason": reason,
                "checker": kind,
                "params": {k: v for k, v in params.items() if v is not None},
            }
        return None
    if schema_name == REWRITE:
        clause = obj.get("clause")
        if isinstance(clause, str) and clause.strip():
            return {"reason": reason, "clause": " ".join(clause.split())}
        return None
    clauses = obj.get("clauses")
    if isinstance(clauses, list):
        texts = [" ".join(c.split()) for c in clauses if isinstance(c, str) and c.strip()]
        if texts:
            return {"reason": reason, "clauses": texts}
    return None


def over_limit(proposal: Mapping[str, Any]) -> str | None:
    """Why a proposal breaks the bounds in the module docstring, or None."""
    if "instructions" in proposal and len(proposal["instructions"]) > MAX_INSTRUCTIONS_CHARS:
        return (
            f"the reply's instructions are {len(proposal['instructions']):,} characters, more than the "
            f"limit of {MAX_INSTRUCTIONS_CHARS:,}"
        )
    clauses = [proposal["clause"]] if "clause" in proposal else list(proposal.get("clauses", ()))
    if len(clauses) > MAX_CLAUSES:
        return f"the reply proposes {len(clauses):,} clauses, more than the limit of {MAX_CLAUSES}"
    longest = max((len(c) for c in clauses), default=0)
    if longest > MAX_CLAUSE_CHARS:
        return (
            f"the reply has a clause of {longest:,} characters, more than the limit of {MAX_CLAUSE_CHARS:,}"
        )
    if len(proposal.get("reason", "")) > MAX_REASON_CHARS:
        return f"the reply's reason is longer than the limit of {MAX_REASON_CHARS:,} characters"
    return None


# shorter is no instructions ("N/A", "New.", "..."): at least two words and ten characters
MIN_INSTRUCTIONS_WORDS = 2
MIN_INSTRUCTIONS_CHARS = 10
# a clause needs two words of letters or digits, or ten characters: a real 0.5B editor "rewrote"
# four clauses as ", and" and "," (issue 34), which became rubric versions
MIN_CLAUSE_WORDS = 2
MIN_CLAUSE_CHARS = 10
_WORD = re.compile(r"\w+")
_PLACEHOLDER = re.compile(r'"<([^">]+)>"')


def _folded(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


@functools.cache
def placeholders() -> frozenset[str]:
    """The placeholders of the editor templates' answer formats (`"<the rewritten clause>"`, …),
    folded to their letters and digits: a reply that repeats one has not answered."""
    folder = resource_dir("prompts")
    found: set[str] = set()
    for name in (REWRITE_TEMPLATE, SPLIT_TEMPLATE, ALIGN_TEMPLATE):
        text = (folder / f"{name}.j2").read_text(encoding="utf-8")
        found |= {_folded(m) for m in _PLACEHOLDER.findall(text)}
    return frozenset(f for f in found if f)


def unusable(proposal: Mapping[str, Any]) -> str | None:
    """Why a proposal is no answer although it has the right shape, or None: a text that repeats
    the answer format's placeholder (a small model copying the format: "The revised instructions,
    plain text"), a clause or instructions too short to be any (", and")."""
    texts = [proposal[k] for k in ("instructions", "clause") if k in proposal]
    texts += list(proposal.get("clauses", ()))
    for text in texts:
        if _folded(text) in placeholders():
            return f"the reply repeats the answer format's placeholder ({text!r}) instead of answering"
    for text in [proposal[k] for k in ("clause",) if k in proposal] + list(proposal.get("clauses", ())):
        if len(_WORD.findall(text)) < MIN_CLAUSE_WORDS and len(text) < MIN_CLAUSE_CHARS:
            return (
                f"the reply's clause {text!r} is too short to be a clause (at least {MIN_CLAUSE_WORDS} "
                f"words or {MIN_CLAUSE_CHARS} characters)"
            )
    if "instructions" in proposal:
        text = str(proposal["instructions"])
        if len(text.split()) < MIN_INSTRUCTIONS_WORDS or len(text) < MIN_INSTRUCTIONS_CHARS:
            return (
                f"the reply's instructions ({text!r}) are too short to be instructions (at least "
                f"{MIN_INSTRUCTIONS_WORDS} words and {MIN_INSTRUCTIONS_CHARS} characters)"
            )
    return None


def _checked(got: dict[str, Any], method: str) -> EditorReply:
    why = over_limit(got) or unusable(got)
    return EditorReply(False, method, None, why) if why else EditorReply(True, method, got)


def parse_editor(schema_name: str, text: str | None, structured: Mapping[str, Any] | None) -> EditorReply:
    """Structured output first; else the last JSON object in the text that has the answer keys.
    The first answer found decides: one over the bounds fails the reply (no earlier object in
    the text is taken instead)."""
    if structured is not None:
        got = _valid(schema_name, structured)
        if got is not None:
            return _checked(got, "structured")
    body = text or ""
    decoder = json.JSONDecoder()
    pos = body.rfind("{")
    while pos >= 0:
        try:
            obj, _end = decoder.raw_decode(body, pos)
        except ValueError:
            obj = None
        got = _valid(schema_name, obj)
        if got is not None:
            return _checked(got, "json_tail")
        pos = body.rfind("{", 0, pos)
    key = {REWRITE: "clause", CHECKER: "checker", ALIGN: "instructions"}.get(schema_name, "clauses")
    return EditorReply(False, None, None, f"no JSON object with a {key!r} field in the reply")


def proposal_json(proposal: Mapping[str, Any]) -> str:
    """How a proposal is kept in `verdict.rationale` (canonical JSON, read back by `json.loads`)."""
    return json.dumps(dict(proposal), sort_keys=True, ensure_ascii=False)
