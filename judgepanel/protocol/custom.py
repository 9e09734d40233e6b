"""Bring-your-own judge prompts: a user's Jinja template (or a named classic one) for a protocol.

`campaign create … --template pairwise=my_pairwise.j2` replaces the bundled user message of that
protocol. The system message is the shared `system.v2`, which names only the tags the template
itself shows (`material_tags`: "source and candidate", or none, when it shows none of them);
campaigns created before it keep `system.v1` (their stored template has no `system` key).

A template is checked before any call (`validate`): it must compile; use only the variables
below; show the candidates (pairwise: `candidate_a` and `candidate_b`, in the presented order, so
the AB/BA swap cannot be undone by the template); render against sample units with
`StrictUndefined`; and ask for an answer the parser can read (a `"verdict"` / `"score"` JSON key,
a `Verdict:` / `Score:` line, `[[A]]`/`[[B]]`/`[[C]]`, `[[7]]`), or declare its own
`verdict_pattern`.

Declarations go in a Jinja comment opening the file, read as YAML::

    {# judgepanel:
    structured: off          # ask in text only (no JSON schema / forced tool is sent)
    scale: 10                # pointwise: scores 1..10 instead of 1..5
    verdict_pattern: 'Winner is \\[(A|B|tie)\\]'   # a regex; group 1 is the verdict or score
    requires: [reference]    # refuse items that lack one (shown as `reference`)
    #}

Variables: `source`, `source_label`, `candidate_label`, `a_candidate`, `relation`, `dimension`
(a rubric dimension or none), `dimension_name`, `condition`, `scale`, `reference`; pairwise
`candidate_a`, `candidate_b`, `conversation_a`, `conversation_b`, `conversation` (the shared one,
when both candidates answer the same turns); pointwise and clauses `candidate`, `conversation`;
clauses `clauses` (`id`, `text`). A conversation is a list of turns with `role` and `content`, the
turns before the judged reply, oldest first; none when the item has none.

The stored hash is computed as for the bundled templates, ``sha256(system_src + "\\0" +
template_src + "\\0")``; the template's source is stored with the campaign, so a later edit of the
file is a new template version, never a silent change of a planned campaign.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta
import yaml

from judgepanel.errors import BadInput
from judgepanel.inputs import check_yaml_depth, read_text
from judgepanel.protocol.sandbox import BoundedEnvironment, TemplateProblem, compile_bounded, render_bounded
from judgepanel.protocol.schemas import clauses_schema, pairwise_schema, pointwise_schema
from judgepanel.protocol.templates import (
    SYSTEM_TEMPLATE,
    Prompt,
    Turn,
    UnitText,
    _article,
    template_source,
)
from judgepanel.resources import resource_dir
from judgepanel.rubrics import (
    DEFAULT_CANDIDATE,
    DEFAULT_RELATION,
    DEFAULT_SOURCE,
    LEVELS,
    Dimension,
    RubricDoc,
)

PROTOCOL_NAMES = ("pairwise", "pointwise", "clauses")
SCHEMA_OF = {"pairwise": "pairwise_verdict", "pointwise": "pointwise_verdict", "clauses": "clause_verdicts"}
# Named classic formats (in our own words): name -> (protocol, file stem in prompts/)
CLASSIC: Mapping[str, tuple[str, str]] = {
    "classic-pairwise": ("pairwise", "classic_pairwise.v1"),
    "classic-pairwise-ref": ("pairwise", "classic_pairwise_ref.v1"),
    "classic-single": ("pointwise", "classic_single.v1"),
    "classic-single-ref": ("pointwise", "classic_single_ref.v1"),
}
# a classic template -> its reference-guided variant (the default `reference` template)
CLASSIC_REF: Mapping[str, str] = {
    "@classic-pairwise": "@classic-pairwise-ref",
    "@classic-single": "@classic-single-ref",
}
COMMON_VARS = frozenset(
    {
        "source",
        "source_label",
        "candidate_label",
        "a_candidate",
        "relation",
        "dimension",
        "dimension_name",
        "condition",
        "scale",
        "reference",
    }
)
VARIABLES: Mapping[str, frozenset[str]] = {
    "pairwise": COMMON_VARS
    | {"candidate_a", "candidate_b", "conversation", "conversation_a", "conversation_b"},
    "pointwise": COMMON_VARS | {"candidate", "conversation"},
    "clauses": COMMON_VARS | {"candidate", "conversation", "clauses"},
}
REQUIRED: Mapping[str, tuple[str, ...]] = {
    "pairwise": ("candidate_a", "candidate_b"),
    "pointwise": ("candidate",),
    "clauses": ("candidate", "clauses"),
}
REQUIRABLE = ("reference", "conversation", "source")
# the system message of custom templates; a stored template without a `system` key predates it
CUSTOM_SYSTEM = "system.v2"
LEGACY_SYSTEM = SYSTEM_TEMPLATE  # system.v1: "enclosed in tags named source, candidate, …" always
# the tags whose contents are neutralised data (`_RESERVED`), in the order the system message names them
MATERIAL_TAGS = (
    "source",
    "reference",
    "conversation",
    "conversation_a",
    "conversation_b",
    "turn",
    "candidate",
    "candidate_a",
    "candidate_b",
    "clause",
)
_COMMENT = re.compile(r"\{#.*?#\}", re.DOTALL)
_DECLARED_KEYS = ("structured", "scale", "verdict_pattern", "requires")
_FRONT = re.compile(r"\A\s*\{#-?\s*judgepanel:[ \t]*\n(?P<body>.*?)-?#\}", re.DOTALL)
# Custom templates may show references and conversations, so their tags are reserved too.
_RESERVED = re.compile(
    r"<(?=\s*(?:/\s*)?(?:source|candidate_a|candidate_b|candidate|clause|reference|turn|conversation(?:_a|_b)?)\b)",
    re.IGNORECASE,
)
# What the parser reads when no pattern is declared (checked on the rendered sample).
_READABLE: Mapping[str, re.Pattern[str]] = {
    "pairwise": re.compile(
        r"[\"']?\b(?:verdict|winner|decision|choice|preference)\b[\"']?\s*[:=]|\[\[\s*A\s*\]\].*?\[\[\s*B\s*\]\]",
        re.IGNORECASE | re.DOTALL,
    ),
    "pointwise": re.compile(
        r"[\"']?\b(?:score|rating|grade)\b[\"']?\s*[:=]|\[\[\s*(?:rating|score|\d+)\s*\]\]", re.IGNORECASE
    ),
    "clauses": re.compile(r"\"clauses\"|\bmet\b", re.IGNORECASE),
}
_SCALE_ASKED = re.compile(r"\b1\s*(?:-|–|to)\s*(\d{1,3})\b")
_SENTINEL = "\u2063JP-{}\u2063"  # invisible separator around a sample text, found again after rendering


def neutralise_all(text: str) -> str:
    """`neutralise` for custom templates: also the reference, turn and conversation tags."""
    return _RESERVED.sub("&lt;", text)


@dataclass(frozen=True)
class CustomTemplate:
    """A template for one protocol: a user's file (`path`) or a named classic (`name` "@…")."""

    protocol: str
    name: str
    source: str
    path: str | None = None
    structured: bool = True
    scale: int = LEVELS[-1]
    pattern: str | None = None
    requires: tuple[str, ...] = ()
    system: str = CUSTOM_SYSTEM  # the system message's template (LEGACY_SYSTEM for old campaigns)

    @property
    def material_tags(self) -> tuple[str, ...]:
        """The reserved tags this template shows (outside Jinja comments), in `MATERIAL_TAGS` order:
        what the system message may say the material is enclosed in."""
        body = _COMMENT.sub("", self.source)
        return tuple(t for t in MATERIAL_TAGS if re.search(rf"<\s*/?\s*{t}\b(?![-\w])", body, re.IGNORECASE))

    @property
    def sha256(self) -> str:
        """sha256 of the template file's text alone (what the campaign stores and checks for drift)."""
        return hashlib.sha256(self.source.encode("utf-8")).hexdigest()

    @property
    def template_hash(self) -> str:
        """What every request records: system and template sources, each followed by a NUL byte."""
        h = hashlib.sha256()
        for src in (template_source(self.system), self.source):
            h.update(src.encode("utf-8"))
            h.update(b"\0")
        return h.hexdigest()

    @property
    def template_name(self) -> str:
        return self.name if self.name.startswith("@") else f"custom:{self.name}@{self.sha256[:12]}"

    def stored(self) -> dict[str, Any]:
        """What the campaign spec keeps: enough to render exactly this version again."""
        return {
            "name": self.name,
            "path": self.path,
            "sha256": self.sha256,
            "source": self.source,
            "system": self.system,
        }


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _declarations(name: str, source: str) -> dict[str, Any]:
    m = _FRONT.match(source)
    if m is None:
        return {}
    check_yaml_depth(m.group("body"), f"template {name}: its judgepanel block")
    try:
        body = yaml.safe_load(m.group("body"))
    except yaml.YAMLError as exc:
        raise BadInput(f"template {name}: its judgepanel block is not YAML: {_one_line(exc)}") from None
    except RecursionError:
        raise BadInput(f"template {name}: its judgepanel block is nested too deep") from None
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise BadInput(f"template {name}: its judgepanel block must be a mapping of key: value")
    unknown = sorted(str(k) for k in body if k not in _DECLARED_KEYS)
    if unknown:
        raise BadInput(
            f"template {name}: unknown key(s) {', '.join(unknown)} in its judgepanel block; "
            f"known: {', '.join(_DECLARED_KEYS)}"
        )
    return body


def from_source(protocol: str, name: str, source: str, *, path: str | None = None) -> CustomTemplate:
    """Read a template's declarations (not yet validated against samples: see `validate`)."""
    if protocol not in PROTOCOL_NAMES:
        raise BadInput(f"--template: unknown protocol {protocol!r}; use one of {', '.join(PROTOCOL_NAMES)}")
    d = _declarations(name, source)
    structured = d.get("structured", True)
    if isinstance(structured, str):
        structured = {"on": True, "off": False}.get(structured.lower(), structured)
    if not isinstance(structured, bool):
        raise BadInput(f"template {name}: structured must be on or off")
    scale = d.get("scale", LEVELS[-1])
    if isinstance(scale, bool) or not isinstance(scale, int) or not 2 <= scale <= 100:
        raise BadInput(f"template {name}: scale must be an integer from 2 to 100, got {scale!r}")
    if scale != LEVELS[-1] and protocol != "pointwise":
        raise BadInput(f"template {name}: scale is for pointwise templates, not {protocol}")
    pattern = d.get("verdict_pattern")
    if pattern is not None:
        if protocol == "clauses":
            raise BadInput(f"template {name}: verdict_pattern is for pairwise and pointwise templates")
        if not isinstance(pattern, str):
            raise BadInput(f"template {name}: verdict_pattern must be a regular expression")
        try:
            groups = re.compile(pattern).groups
        except re.error as exc:
            raise BadInput(f"template {name}: verdict_pattern is not a regular expression: {exc}") from None
        if groups != 1:
            raise BadInput(
                f"template {name}: verdict_pattern must have exactly one group (the verdict), it has {groups}"
            )
    requires = d.get("requires", [])
    if isinstance(requires, str):
        requires = [requires]
    if not isinstance(requires, list) or any(r not in REQUIRABLE for r in requires):
        raise BadInput(f"template {name}: requires must list some of {', '.join(REQUIRABLE)}")
    return CustomTemplate(protocol, name, source, path, structured, scale, pattern, tuple(requires))


def parse_template_option(value: str) -> tuple[str, str]:
    """`PROTOCOL=FILE` (or `PROTOCOL=@classic-…`, or `reference=…` for the reference-guided
    template of `--reference-categories`) -> (protocol, reference)."""
    protocol, eq, ref = value.partition("=")
    protocol, ref = protocol.strip(), ref.strip()
    if not eq or not protocol or not ref:
        raise BadInput(f"--template must look like PROTOCOL=FILE or PROTOCOL=@NAME, got {value!r}")
    if protocol not in (*PROTOCOL_NAMES, "reference"):
        raise BadInput(f"--template: unknown protocol {protocol!r}; use one of {', '.join(PROTOCOL_NAMES)}")
    return protocol, ref


def load_template(protocol: str, ref: str, *, base: Path | None = None) -> CustomTemplate:
    """A named classic (`@classic-pairwise`) or a file (relative paths from `base`, else the cwd)."""
    if ref.startswith("@"):
        key = ref[1:]
        if key not in CLASSIC:
            raise BadInput(f"no bundled template {ref}; known: {', '.join('@' + k for k in CLASSIC)}")
        proto, stem = CLASSIC[key]
        if proto != protocol:
            raise BadInput(f"template {ref} is a {proto} template, not {protocol}")
        source = (resource_dir("prompts") / f"{stem}.j2").read_text(encoding="utf-8")
        return from_source(protocol, ref, source)
    path = Path(ref).expanduser()
    if not path.is_absolute() and base is not None:
        path = base / path
    source = read_text(path, "template file")  # a regular file of at most 1 MB (`judgepanel.inputs`)
    return from_source(protocol, path.name, source, path=str(path.resolve()))


def from_stored(protocol: str, stored: Mapping[str, Any]) -> CustomTemplate:
    t = from_source(protocol, str(stored["name"]), str(stored["source"]), path=stored.get("path"))
    return replace(t, system=str(stored.get("system", LEGACY_SYSTEM)))


# ---------------------------------------------------------------- rendering


_ENV = BoundedEnvironment(autoescape=False, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False)


@functools.lru_cache(maxsize=64)
def _compiled(source: str) -> jinja2.Template:
    return compile_bounded(_ENV, source)


def _compile(t: CustomTemplate) -> jinja2.Template:
    try:
        return _compiled(t.source)
    except TemplateProblem as exc:
        raise BadInput(f"template {t.name}:{exc}") from None


def _turns(turns: Sequence[Turn] | None) -> list[dict[str, str]] | None:
    if turns is None:
        return None
    return [{"role": r, "content": neutralise_all(c.strip())} for r, c in turns]


def _shared(what: str, a: UnitText, b: UnitText, x: str | None, y: str | None) -> str | None:
    if x is not None and y is not None and x.strip() != y.strip():
        raise BadInput(
            f"items {a.external_id!r} and {b.external_id!r} have different {what}s; "
            f"a pairwise comparison needs one shared {what}"
        )
    return x if x is not None else y


def _base(rubric: RubricDoc | None, source: str | None, reference: str | None, scale: int) -> dict[str, Any]:
    candidate = rubric.candidate_label if rubric else DEFAULT_CANDIDATE
    return {
        "source": None if source is None or not source.strip() else neutralise_all(source.strip()),
        "source_label": rubric.source_label if rubric else DEFAULT_SOURCE,
        "candidate_label": candidate,
        "a_candidate": _article(candidate),
        "relation": rubric.relation if rubric else DEFAULT_RELATION,
        "reference": None
        if reference is None or not reference.strip()
        else neutralise_all(reference.strip()),
        "scale": scale,
    }


def context_for(
    t: CustomTemplate,
    units: Sequence[UnitText],
    *,
    order: str | None = None,
    dimension: Dimension | None = None,
    dimension_name: str | None = None,
    condition: str | None = None,
    rubric: RubricDoc | None = None,
    clauses: Sequence[tuple[str, str]] = (),
) -> dict[str, Any]:
    """The variables `t` is rendered with for one job (pairwise: `units` in canonical order)."""
    if t.protocol == "pairwise":
        a, b = units
        first, second = (a, b) if order == "AB" else (b, a)
        source = _shared("source", a, b, a.input, b.input)
        reference = _shared("reference answer", a, b, a.reference, b.reference)
        ctx = _base(rubric, source, reference, t.scale)
        conv_a, conv_b = _turns(first.conversation), _turns(second.conversation)
        ctx |= {
            "candidate_a": neutralise_all(first.output.strip()),
            "candidate_b": neutralise_all(second.output.strip()),
            "conversation_a": conv_a,
            "conversation_b": conv_b,
            "conversation": conv_a if conv_a == conv_b else None,
        }
        ctx["raw"] = tuple(x.strip() for x in (first.output, second.output, source or "", reference or ""))
        who = f"items {a.external_id!r} and {b.external_id!r}"
    else:
        (item,) = units
        ctx = _base(rubric, item.input, item.reference, t.scale)
        ctx |= {"candidate": neutralise_all(item.output.strip()), "conversation": _turns(item.conversation)}
        if t.protocol == "clauses":
            ctx["clauses"] = [{"id": cid, "text": neutralise_all(text)} for cid, text in clauses]
        ctx["raw"] = tuple(x.strip() for x in (item.output, item.input or "", item.reference or ""))
        who = f"item {item.external_id!r}"
    for need in t.requires:
        if ctx.get(need) is None:
            raise BadInput(f"{who}: template {t.name} needs a {need}, and it has none")
    ctx["who"] = who  # named in a render error; not a template variable (validate refuses it)
    ctx |= {
        "dimension": dimension,
        "dimension_name": dimension.name if dimension else dimension_name,
        "condition": condition,
    }
    return ctx


def _material(t: CustomTemplate) -> dict[str, Any]:
    """What the system message says the material is enclosed in: `material_tags` as words
    (`source, candidate_a and candidate_b`) and how many (0: the template shows none of our tags)."""
    names = t.material_tags
    listed = " and ".join(filter(None, (", ".join(names[:-1]), names[-1]))) if names else ""
    return {"material_tags": listed, "material_count": len(names)}


def render_custom(t: CustomTemplate, context: Mapping[str, Any]) -> Prompt:
    """Messages for one job: the bundled system message, then `t` rendered with `context`."""
    from judgepanel.protocol.templates import _environment

    system = _environment(resource_dir("prompts")).from_string(template_source(t.system))
    try:
        user = render_bounded(_compile(t), context).strip()
    except TemplateProblem as exc:
        raise BadInput(f"{context.get('who', 'a job')}: template {t.name} does not render: {exc}") from None
    messages = [
        {
            "role": "system",
            "content": system.render(**context, **_material(t)).strip(),
        },
        {"role": "user", "content": user},
    ]
    if t.protocol == "pairwise":
        schema = pairwise_schema()
    elif t.protocol == "pointwise":
        schema = pointwise_schema(tuple(range(LEVELS[0], t.scale + 1)))
    else:
        schema = clauses_schema([c["id"] for c in context.get("clauses", [])])
    shown = [context.get(k) for k in ("source", "candidate", "candidate_a", "candidate_b", "reference")]
    turns = [
        t["content"]
        for k in ("conversation", "conversation_a", "conversation_b")
        for t in context.get(k) or ()
    ]
    quoted = tuple(
        dict.fromkeys(x for x in (*shown, *turns, *context.get("raw", ())) if isinstance(x, str) and x)
    )
    return Prompt(
        messages,
        t.template_name,
        t.template_hash,
        schema,
        SCHEMA_OF[t.protocol],
        quoted=quoted,
        answer_pattern=t.pattern,
        structured=t.structured,
    )


# ---------------------------------------------------------------- validation


def _samples(t: CustomTemplate) -> list[dict[str, Any]]:
    """Two sample jobs: everything optional present, and everything optional absent (except what
    the template `requires`)."""
    conv: tuple[Turn, ...] = (
        ("user", "SAMPLE first question"),
        ("assistant", "SAMPLE first answer"),
        ("user", "SAMPLE follow-up question"),
    )
    out = []
    for full in (True, False):

        def unit(key: str, full: bool = full) -> UnitText:
            return UnitText(
                f"sample-{key}",
                _SENTINEL.format(key),
                "SAMPLE source text" if full or "source" in t.requires else None,
                conv if full or "conversation" in t.requires else None,
                "SAMPLE reference answer" if full or "reference" in t.requires else None,
            )

        units = [unit("a"), unit("b")] if t.protocol == "pairwise" else [unit("c")]
        out.append(
            context_for(
                t,
                units,
                order="AB",
                clauses=[("sample.1", "SAMPLE clause one"), ("sample.2", "SAMPLE clause two")],
            )
        )
    return out


def validate(
    t: CustomTemplate, *, dimension: Dimension | None = None, dimension_name: str | None = None
) -> None:
    """Refuse, with one line, a template that cannot be rendered or read back (see module docstring).
    `dimension` / `dimension_name` are what the campaign's jobs will pass."""
    compiled = _compile(t)
    used = jinja2.meta.find_undeclared_variables(_ENV.parse(t.source))
    allowed = VARIABLES[t.protocol]
    unknown = sorted(used - allowed)
    if unknown:
        raise BadInput(
            f"template {t.name}: unknown variable(s) {', '.join(unknown)} for a {t.protocol} template; "
            f"known: {', '.join(sorted(allowed))}"
        )
    missing = [v for v in REQUIRED[t.protocol] if v not in used]
    if missing:
        why = " (both, in the order shown, so the AB/BA swap holds)" if t.protocol == "pairwise" else ""
        raise BadInput(f"template {t.name}: a {t.protocol} template must show {' and '.join(missing)}{why}")
    for full, ctx in zip((True, False), _samples(t), strict=True):
        ctx |= {
            "dimension": dimension,
            "dimension_name": dimension.name if dimension else dimension_name,
        }
        try:
            text = render_bounded(compiled, ctx, none_ok=not full)
        except TemplateProblem as exc:
            raise BadInput(f"template {t.name}: does not render for a sample item: {exc}") from None
        for key in ("a", "b") if t.protocol == "pairwise" else ("c",):
            if _SENTINEL.format(key) not in text:
                var = {"a": "candidate_a", "b": "candidate_b", "c": "candidate"}[key]
                raise BadInput(f"template {t.name}: {var} is never shown in the rendered prompt")
        _check_answer_format(t, text)


def _check_answer_format(t: CustomTemplate, text: str) -> None:
    if t.pattern is None and not _READABLE[t.protocol].search(text):
        raise BadInput(
            f"template {t.name}: it asks for no answer format judgepanel can read "
            f"({_FORMATS[t.protocol]}); or declare verdict_pattern in a {{# judgepanel: #}} block"
        )
    if t.protocol == "pointwise":
        for m in _SCALE_ASKED.finditer(text):
            asked = int(m.group(1))
            if asked != t.scale and asked in (3, 4, 5, 7, 10, 100):
                raise BadInput(
                    f"template {t.name}: it asks for a 1..{asked} score but the scale is 1..{t.scale}; "
                    f"declare `scale: {asked}` in a {{# judgepanel: #}} block"
                )


_FORMATS = {
    "pairwise": 'a "verdict" JSON key, a `Verdict: A` line, or [[A]] / [[B]] / [[C]]',
    "pointwise": 'a "score" JSON key, a `Score: N` line, or [[N]]',
    "clauses": 'a "clauses" JSON list, or `id: met` lines',
}


def conversation_of(meta: Mapping[str, Any], output: str | None) -> tuple[Turn, ...] | None:
    """An item's `meta["conversation"]` as the turns before the judged reply. A conversation that
    ends with the judged reply itself (as an importer may store the whole dialogue) loses that
    last turn, so the reply is not shown twice."""
    raw = meta.get("conversation")
    if not raw:
        return None
    turns = tuple((str(t["role"]), str(t["content"])) for t in raw)
    if (
        turns
        and turns[-1][0] == "assistant"
        and output is not None
        and turns[-1][1].strip() == output.strip()
    ):
        turns = turns[:-1]
    return turns or None


def reply_at_turn(
    external_id: str, meta: Mapping[str, Any], output: str | None, turn: int
) -> tuple[tuple[Turn, ...], str]:
    """The turns before the `turn`-th assistant reply of an item's conversation (oldest first) and
    that reply. The conversation is `meta["conversation"]`, followed by the item's `output` as the
    last assistant reply unless the conversation already ends with it (an MT-Bench item's output
    without the earlier answers it repeats)."""
    raw = meta.get("conversation") or []
    turns = [(str(t["role"]), str(t["content"])) for t in raw]
    if output is not None and isinstance(meta.get("turn"), int) and not isinstance(meta["turn"], bool):
        # an MT-Bench item (`data import-mtbench`): its output repeats its earlier answers, which
        # its conversation already holds
        from judgepanel.datasets.mtbench import answer_to_judge

        output = answer_to_judge(output, meta["turn"])
    ends_with_it = (
        bool(turns) and turns[-1][0] == "assistant" and turns[-1][1].strip() == (output or "").strip()
    )
    if output is not None and output.strip() and not ends_with_it:
        turns.append(("assistant", output))
    replies = [k for k, (role, _) in enumerate(turns) if role == "assistant"]
    if len(replies) < turn:
        has = f"{len(replies)} assistant repl{'y' if len(replies) == 1 else 'ies'}"
        raise BadInput(f"item {external_id!r} has {has}; turn {turn} was asked for (--turn)")
    k = replies[turn - 1]
    if not turns[k][1].strip():
        raise BadInput(f"item {external_id!r}: its assistant reply at turn {turn} is empty")
    return tuple(turns[:k]), turns[k][1]


def reference_of(meta: Mapping[str, Any]) -> str | None:
    ref = meta.get("reference")
    return ref if isinstance(ref, str) and ref.strip() else None


def resolve_templates(refs: Mapping[str, str], *, base: Path | None = None) -> dict[str, CustomTemplate]:
    """protocol -> loaded template for each `PROTOCOL=REF` (not yet validated)."""
    return {p: load_template(p, r, base=base) for p, r in refs.items()}
