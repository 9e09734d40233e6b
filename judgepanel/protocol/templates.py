"""Rendering judge prompts from the versioned Jinja templates in `prompts/`.

Each protocol has one user template (`pairwise.v2.j2`, `pointwise_{none,criteria,rubric}.v3.j2`,
`clauses.v2.j2`) and all share `system.v1.j2`. A template is never edited once used: a change is a
new file so stored requests keep meaning what they meant (the v1 files, and the pointwise v2 files
for scales other than 1..5, are what campaigns before prompt caching were sent).

Layout for prompt caching: the stable part comes first and the item last. The system text, then
the instructions, the rubric and the answer format (the same for every item of a dimension), then
the item's source (shared by every pair drawn from it and by both orders of a pair), then the
candidates. `Prompt.cache_breaks` are the offsets in the user message where the first two parts
end; providers with explicit caching mark them (see `providers.anthropic_provider`), OpenAI
caches such prefixes by itself.

`template_hash` is the sha256 of the sources actually used, system first, each followed by a NUL
byte: ``sha256(system_src + "\\0" + user_src + "\\0")``. It changes whenever either file changes.

Tag contract (the simulated judge and the parser rely on it). In the final user message:
- the source/context is wrapped in `<source>…</source>` (shown once, also in pairwise prompts);
- candidates in `<candidate_a>…</candidate_a>` / `<candidate_b>…</candidate_b>` (pairwise) or
  `<candidate>…</candidate>` (pointwise and clauses);
- clauses as `<clause id="coherence.2">text</clause>`.
A text that itself contains one of these tags has its `<` written as `&lt;`, so each tag appears
exactly once per prompt and an item cannot close its own container and pose as instructions.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import jinja2

from judgepanel.errors import BadInput
from judgepanel.protocol.schemas import clauses_schema, pairwise_schema, pointwise_schema
from judgepanel.resources import resource_dir
from judgepanel.rubrics import (
    DEFAULT_CANDIDATE,
    DEFAULT_RELATION,
    DEFAULT_SOURCE,
    SCALE,
    Dimension,
    RubricDoc,
)

Order = Literal["AB", "BA"]
Condition = Literal["none", "criteria", "rubric"]
CONDITIONS: tuple[str, ...] = ("none", "criteria", "rubric")
ORDERS: tuple[str, ...] = ("AB", "BA")

SYSTEM_TEMPLATE = "system.v1"
PAIRWISE_TEMPLATE = "pairwise.v2"
# v3: the v2 questions (any score range, 1..5 included) with the item last
POINTWISE_TEMPLATES: Mapping[str, str] = {
    "none": "pointwise_none.v3",
    "criteria": "pointwise_criteria.v3",
    "rubric": "pointwise_rubric.v3",
}
SCALED_POINTWISE_TEMPLATES: Mapping[str, str] = POINTWISE_TEMPLATES
CLAUSES_TEMPLATE = "clauses.v2"
# where the item begins: its source, else its candidate(s) (neutralised texts cannot fake these)
_ITEM_TAG = re.compile(r"^<(?:source|candidate_a|candidate)>$", re.MULTILINE)

_RESERVED_TAG = re.compile(
    r"<(?=\s*(?:/\s*)?(?:source|candidate_a|candidate_b|candidate|clause)\b)", re.IGNORECASE
)


Turn = tuple[str, str]  # (role, content) of one conversation turn


@dataclass(frozen=True)
class UnitText:
    """What a judge sees of one item: its candidate output and, if any, its source/context, the
    conversation the output answers (earlier turns, oldest first) and a reference answer. The
    bundled v1 templates show only output and input; conversations and references are shown by
    the classic and custom templates (`judgepanel.protocol.custom`)."""

    external_id: str
    output: str
    input: str | None = None
    conversation: tuple[Turn, ...] | None = None
    reference: str | None = None


@dataclass(frozen=True)
class Prompt:
    messages: list[dict[str, str]]  # [{"role": "system" | "user", "content": …}]
    template_name: str  # e.g. "pairwise.v1"
    template_hash: str  # sha256 of the template sources used (see module docstring)
    schema: dict[str, Any]  # JSON schema of the expected reply
    schema_name: str  # "pairwise_verdict" | "pointwise_verdict" | "clause_verdicts"
    # the item's own texts (candidates, source) as shown and as given: a judge that copies them
    # into its reply is quoting, and the parser does not read verdicts out of a quote
    quoted: tuple[str, ...] = ()
    # offsets in the last message where a stable prefix ends (for prompt caching, see above)
    cache_breaks: tuple[int, ...] = ()
    answer_pattern: str | None = None  # a custom template's declared verdict pattern
    structured: bool = True  # False: the template asks for a text format, so no schema is sent


@dataclass(frozen=True)
class _Template:
    name: str
    source: str
    compiled: jinja2.Template


@lru_cache(maxsize=8)
def _environment(folder: Path) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # plain text prompts; our own tags are neutralised by `neutralise`
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )


@lru_cache(maxsize=32)
def _load(folder: Path, name: str) -> _Template:
    env = _environment(folder)
    filename = f"{name}.j2"
    try:
        source, _, _ = env.loader.get_source(env, filename)  # type: ignore[union-attr]
    except jinja2.TemplateNotFound as exc:
        raise BadInput(f"no prompt template {filename} in {folder}") from exc
    compiled = env.from_string(source)
    # jinja builds each render's context with `dict(template.globals, **variables)`; its globals
    # are a ChainMap over the environment's, which that copy walks key by key (a seventh of the
    # runner's time preparing a job). This environment is private and never given globals after
    # it is made, so a plain dict of the same names is the same context, copied at C speed.
    compiled.globals = dict(compiled.globals)
    return _Template(name, source, compiled)


def template_source(name: str) -> str:
    """The source text of `prompts/<name>.j2`."""
    return _load(resource_dir("prompts"), name).source


@lru_cache(maxsize=64)  # the sources are cached by `_load`, so their hash is too
def template_hash(*names: str) -> str:
    """sha256 over the sources of `names`, in the order given, each followed by a NUL byte."""
    h = hashlib.sha256()
    for n in names:
        h.update(template_source(n).encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def neutralise(text: str) -> str:
    """Write `<` as `&lt;` where it would open or close one of our tags; nothing else changes."""
    return _RESERVED_TAG.sub("&lt;", text)


def _article(noun: str) -> str:
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


@lru_cache(maxsize=32)
def _reads(folder: Path, name: str) -> tuple[str, ...] | None:
    """The variables a template reads, or None when it may read more than its own text shows (it
    includes, imports or extends another template)."""
    import jinja2.meta

    env = _environment(folder)
    ast = env.parse(_load(folder, name).source)
    if any(True for _ in jinja2.meta.find_referenced_templates(ast)):
        return None
    return tuple(sorted(jinja2.meta.find_undeclared_variables(ast)))


_MISSING = object()  # a variable the context lacks (rendering raises: StrictUndefined)
_RENDERED: dict[tuple[Any, ...], str] = {}  # (folder, template, variables read) -> text, bounded


def _render_once(folder: Path, name: str, context: Mapping[str, Any]) -> str:
    """`name` rendered with `context`, remembered by the values of the variables it reads: the
    system prompt reads none, so it is rendered once, not once per job."""
    reads = _reads(folder, name)
    template = _load(folder, name).compiled
    if reads is None:
        return template.render(**context).strip()
    key = (folder, name, *(context.get(k, _MISSING) for k in reads))
    try:
        return _RENDERED[key]
    except TypeError:  # a value that cannot be a key: render every time
        return template.render(**context).strip()
    except KeyError:
        pass
    text = template.render(**context).strip()
    if len(_RENDERED) >= 1024:
        _RENDERED.clear()
    _RENDERED[key] = text
    return text


def _render(name: str, schema: dict[str, Any], schema_name: str, context: dict[str, Any]) -> Prompt:
    folder = resource_dir("prompts")
    user = _load(folder, name)
    messages = [
        {"role": "system", "content": _render_once(folder, SYSTEM_TEMPLATE, context)},
        {"role": "user", "content": user.compiled.render(**context).strip()},
    ]
    shown = [context.get(k) for k in ("source", "candidate", "candidate_a", "candidate_b")]
    quoted = tuple(dict.fromkeys(t for t in (*shown, *context.get("raw", ())) if isinstance(t, str) and t))
    return Prompt(
        messages,
        name,
        template_hash(SYSTEM_TEMPLATE, name),
        schema,
        schema_name,
        quoted,
        cache_breaks(messages[-1]["content"]),
    )


def cache_breaks(text: str) -> tuple[int, ...]:
    """Where the stable parts of a user message end: before the paragraph that opens the item's
    first tag (instructions end) and, when that is the source, before the candidates' (the source
    ends). Empty when the message shows no item."""
    breaks: list[int] = []
    for tag in _ITEM_TAG.finditer(text):
        cut = text.rfind("\n\n", 0, tag.start())
        cut = tag.start() if cut < 0 else cut + 2
        if not breaks or cut > breaks[-1]:
            breaks.append(cut)
        if tag.group() != "<source>" or len(breaks) == 2:
            break
    return tuple(breaks)


def _context(rubric: RubricDoc | None, source: str | None) -> dict[str, Any]:
    candidate = rubric.candidate_label if rubric else DEFAULT_CANDIDATE
    return {
        "source": None if source is None or not source.strip() else neutralise(source.strip()),
        "source_label": rubric.source_label if rubric else DEFAULT_SOURCE,
        "candidate_label": candidate,
        "a_candidate": _article(candidate),
        "relation": rubric.relation if rubric else DEFAULT_RELATION,
    }


def _dimension(rubric: RubricDoc | None, dimension: str | None, *, required_by: str) -> Dimension:
    if rubric is None:
        raise BadInput(f"{required_by} needs a rubric")
    if dimension is None:
        if len(rubric.dimensions) == 1:
            return rubric.dimensions[0]
        raise BadInput(
            f"{required_by} needs a dimension: rubric {rubric.name!r} has {', '.join(rubric.dimension_names)}"
        )
    return rubric.dimension(dimension)


def _shared_source(a: UnitText, b: UnitText) -> str | None:
    if a.input is not None and b.input is not None and a.input.strip() != b.input.strip():
        raise BadInput(
            f"items {a.external_id!r} and {b.external_id!r} answer different sources; "
            "a pairwise comparison needs one shared source (for multi-turn items, "
            "--template pairwise=@classic-pairwise shows each candidate with its own conversation)"
        )
    return a.input if a.input is not None else b.input


def render_pairwise(
    a: UnitText,
    b: UnitText,
    *,
    order: Order,
    dimension: str | None,
    rubric: RubricDoc | None,
) -> Prompt:
    """Ask which of two candidates is better. `order` "AB" shows `a` in slot A, "BA" shows `b`
    there. With a rubric and a dimension the dimension's definition and criteria are shown; with a
    dimension but no rubric only its name; with neither, overall quality."""
    if order not in ORDERS:
        raise BadInput(f"order must be AB or BA, got {order!r}")
    first, second = (a, b) if order == "AB" else (b, a)
    dim: Dimension | None = None
    if rubric is not None and (dimension is not None or len(rubric.dimensions) == 1):
        dim = _dimension(rubric, dimension, required_by="a pairwise prompt")
    context = _context(rubric, _shared_source(a, b))
    context |= {
        "dimension": dim,
        "dimension_name": dim.name if dim else dimension,
        "candidate_a": neutralise(first.output.strip()),
        "candidate_b": neutralise(second.output.strip()),
        "raw": (first.output.strip(), second.output.strip(), (a.input or b.input or "").strip()),
    }
    return _render(PAIRWISE_TEMPLATE, pairwise_schema(), "pairwise_verdict", context)


def render_pointwise(
    item: UnitText,
    *,
    condition: Condition,
    dimension: str | None,
    rubric: RubricDoc | None,
) -> Prompt:
    """Ask for a score on the dimension's scale (1–5 unless the rubric says otherwise). `none`:
    overall quality, or the dimension by name only, no rubric needed; `criteria`: the dimension's
    definition and list of what to inspect; `rubric`: the same plus a description of every score
    level. The conditions are nested on purpose, so a difference between two of them is the
    effect of what the richer one adds. All three ask on the same scale: under `none` it is taken
    from the rubric's dimension of that name when there is one."""
    if condition not in POINTWISE_TEMPLATES:
        raise BadInput(f"condition must be one of {', '.join(CONDITIONS)}, got {condition!r}")
    dim: Dimension | None = None
    if condition != "none":
        dim = _dimension(rubric, dimension, required_by=f"condition {condition!r}")
    scale = pointwise_scale(rubric, dimension if dim is None else dim.name)
    context = _context(rubric, item.input)
    context |= {
        "dimension": dim,
        "dimension_name": dim.name if dim else dimension,
        "candidate": neutralise(item.output.strip()),
        "raw": (item.output.strip(), (item.input or "").strip()),
    }
    levels = tuple(range(scale[0], scale[1] + 1))
    context |= {
        "scale_low": scale[0],
        "scale_high": scale[1],
        "score_options": " | ".join(str(lv) for lv in levels),
    }
    schema = pointwise_schema() if scale == SCALE else pointwise_schema(levels)
    return _render(POINTWISE_TEMPLATES[condition], schema, "pointwise_verdict", context)


def pointwise_scale(rubric: RubricDoc | None, dimension: str | None) -> tuple[int, int]:
    """The score range a pointwise question uses: the rubric dimension's, else 1..5."""
    if rubric is None or dimension is None or dimension not in rubric.dimension_names:
        return SCALE
    return rubric.dimension(dimension).scale


def render_clauses(
    item: UnitText, *, dimension: str, rubric: RubricDoc, skip: frozenset[str] = frozenset()
) -> Prompt:
    """Ask for met / not met on every clause of one dimension, in one call; the clauses in `skip`
    (answered by a kept checker) are left out of the prompt and the schema."""
    dim = _dimension(rubric, dimension, required_by="a clause prompt")
    shown = [c for c in dim.clauses if c.id not in skip]
    context = _context(rubric, item.input)
    context |= {
        "dimension": dim,
        "clauses": [{"id": c.id, "text": neutralise(c.text)} for c in shown],
        "candidate": neutralise(item.output.strip()),
        "raw": (item.output.strip(), (item.input or "").strip()),
    }
    return _render(CLAUSES_TEMPLATE, clauses_schema([c.id for c in shown]), "clause_verdicts", context)
