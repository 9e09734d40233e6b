"""The judge template an alignment edits, and the editor request that revises its instructions.

A judge under alignment is a pointwise custom template (`protocol.custom`) composed of two parts
a method may change and a fixed frame it may not:

- `instructions`: plain text shown after the first line (the instructions method replaces it);
- `examples`: worked examples, each a text (its source and candidate) with a human score (the
  few-shot method adds them), shown as ``<example n="1"><source>…</source><candidate>…</candidate>
  <score>4</score></example>`` blocks before the item;
- the frame: the first line naming the dimension and the scale ("on a scale from 1 (worst) to 5
  (best)"), the answer format, and the item itself last (its source, then its candidate).

`JudgeTemplate.source()` writes the Jinja source; the result is loaded with `custom.from_source`
and validated and hashed like any user's template, so a new instruction text or a new set of
examples is a new template version (another sha256). The instructions and examples are literal
text inside ``{% raw %}`` blocks, never Jinja: a ``{%`` in an item cannot run as template code.
Inside them, every ``<`` that would open a reserved tag is written ``&lt;`` (`neutralise_all`),
and a "1 to 10" / "1-3" in an item gets a word joiner after the 1, so the template's scale check
(`custom._check_answer_format`) reads only the template's own scale.

The instructions editor (`prompts/editor_align.v1.j2`, schema `instructions_revision`) sees the
current instructions, the dimension's name and scale and at most `MAX_ALIGN_EXAMPLES`
development items where judge and humans disagree: the text, the judge's score and rationale, the
human score and (where imported) the human rationales. Reply: {"reason", "instructions"}.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judgepanel.protocol.custom import CustomTemplate, from_source, neutralise_all
from judgepanel.rubrics import Dimension

ALIGN_TEMPLATE = "editor_align.v1"
ALIGN = "instructions_revision"
MAX_ALIGN_EXAMPLES = 8
MAX_INSTRUCTIONS_CHARS = 4000
MAX_EXAMPLE_SOURCE_CHARS = 4000
TEMPLATE_NAME = "align"

_SCALE_LIKE = re.compile(r"\b1(?=\s*(?:-|–|to)\s*\d)")
_JINJA = re.compile(r"\{([%#{])")


def _literal(text: str) -> str:
    """Text safe inside a ``{% raw %}`` block and our tags (see the module docstring)."""
    text = neutralise_all(text.strip())
    text = _SCALE_LIKE.sub("1\u2060", text)
    return _JINJA.sub("{\u2060\\1", text)


@dataclass(frozen=True)
class WorkedExample:
    item: str  # external id (recorded, never shown)
    candidate: str
    source: str | None
    score: float  # the human reference score

    def as_dict(self) -> dict[str, Any]:
        return {"item": self.item, "candidate": self.candidate, "source": self.source, "score": self.score}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WorkedExample:
        return cls(str(d["item"]), str(d["candidate"]), d.get("source"), float(d["score"]))


def default_instructions(dimension: Dimension | None, name: str) -> str:
    """The judge's starting instructions: the rubric dimension's definition and criteria, or a
    one-line request when the dataset has no rubric for it."""
    if dimension is None:
        return f"Judge the {name} of the candidate."
    lines = [f"{dimension.name.capitalize()}: {' '.join(dimension.definition.split())}"]
    if dimension.criteria:
        lines += ["", "In particular, inspect:", *(f"- {' '.join(c.split())}" for c in dimension.criteria)]
    return "\n".join(lines)


def rubric_instructions(dimension: Dimension) -> str:
    """A rubric version's dimension as a judge's instructions: the definition and criteria, then
    its clauses as a checklist — so a repair's edited clauses reach a pointwise judge (the bundled
    pointwise rubric prompt shows the anchors, not the clauses)."""
    checklist = [f"- {' '.join(c.text.split())}" for c in dimension.clauses]
    base = default_instructions(dimension, dimension.name)
    return base if not checklist else "\n".join([base, "", "A good text meets each of these:", *checklist])


@dataclass(frozen=True)
class JudgeTemplate:
    instructions: str
    examples: tuple[WorkedExample, ...] = ()
    scale: tuple[int, int] = (1, 5)

    def source(self) -> str:
        lo, hi = self.scale
        options = "|".join(str(v) for v in range(lo, hi + 1))
        parts = [
            "Rate the {{ dimension_name }} of the candidate {{ candidate_label }}{% if source is not none %} "
            "{{ relation }} the {{ source_label }} below{% endif %} "
            f"on a scale from {lo} (worst) to {hi} (best).",
            "",
            "{% raw %}" + _literal(self.instructions) + "{% endraw %}",
        ]
        if self.examples:
            blocks = ["Worked examples, each scored by a human expert:"]
            for n, e in enumerate(self.examples, 1):
                body = [f'<example n="{n}">']
                if e.source:
                    body += ["<source>", _literal(e.source[:MAX_EXAMPLE_SOURCE_CHARS]), "</source>"]
                body += ["<candidate>", _literal(e.candidate), "</candidate>", f"<score>{e.score:g}</score>"]
                body.append("</example>")
                blocks.append("\n".join(body))
            parts += ["", "{% raw %}" + "\n\n".join(blocks) + "{% endraw %}"]
        parts += [
            "",
            "Answer with one JSON object, giving your rationale first and your score last:",
            '{"rationale": "<a short assessment>", "score": ' + options + "}",
            "If you cannot produce JSON, write your reasoning and end your reply with a final line of "
            f"exactly the form `Score: N`, where N is an integer from {lo} to {hi}.",
            "{% if source is not none %}",
            "",
            "The {{ source_label }}:",
            "<source>",
            "{{ source }}",
            "</source>",
            "{% endif %}",
            "",
            "The candidate {{ candidate_label }}:",
            "<candidate>",
            "{{ candidate }}",
            "</candidate>",
        ]
        return "\n".join(parts) + "\n"

    def custom(self) -> CustomTemplate:
        """The template as a custom pointwise template (validated by `runner.create`)."""
        return from_source("pointwise", TEMPLATE_NAME, self.source())

    def as_dict(self) -> dict[str, Any]:
        t = self.custom()
        return {
            "instructions": self.instructions,
            "examples": [e.as_dict() for e in self.examples],
            "scale": list(self.scale),
            "sha256": t.sha256,
            "template_hash": t.template_hash,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> JudgeTemplate:
        lo, hi = d.get("scale", (1, 5))
        return cls(
            str(d["instructions"]),
            tuple(WorkedExample.from_dict(e) for e in d.get("examples", ())),
            (int(lo), int(hi)),
        )


# ---------------------------------------------------------------- the instructions editor


@dataclass(frozen=True)
class Disagreement:
    """One development item where the judge and the humans disagree, as the editor sees it."""

    candidate: str
    source: str | None
    judge_score: float
    judge_rationale: str | None
    human_score: float
    human_rationales: tuple[str, ...] = ()


@dataclass(frozen=True)
class AlignTask:
    instructions: str
    dimension: str
    scale: tuple[int, int]
    examples: tuple[Disagreement, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "align",
            "instructions": self.instructions,
            "dimension": self.dimension,
            "scale": list(self.scale),
            "examples": [
                {
                    "candidate": e.candidate,
                    "source": e.source,
                    "judge_score": e.judge_score,
                    "judge_rationale": e.judge_rationale,
                    "human_score": e.human_score,
                    "human_rationales": list(e.human_rationales),
                }
                for e in self.examples
            ],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AlignTask:
        lo, hi = d["scale"]
        return cls(
            str(d["instructions"]),
            str(d["dimension"]),
            (int(lo), int(hi)),
            tuple(
                Disagreement(
                    str(e["candidate"]),
                    e.get("source"),
                    float(e["judge_score"]),
                    e.get("judge_rationale"),
                    float(e["human_score"]),
                    tuple(str(r) for r in e.get("human_rationales", ())),
                )
                for e in d.get("examples", ())
            ),
        )


def align_schema() -> dict[str, Any]:
    """Strict: every key required, no other key, so a constrained local model can answer it."""
    return {
        "type": "object",
        "properties": {
            "reason": {"type": "string", "description": "What the disagreements show, before the revision."},
            "instructions": {"type": "string"},
        },
        "required": ["reason", "instructions"],
        "additionalProperties": False,
    }


def align_context(task: AlignTask, escape: Any, source_chars: int) -> dict[str, Any]:
    """The variables of `editor_align.v1` (every text escaped by the editor's `escape`)."""
    return {
        "instructions": escape(task.instructions),
        "dimension": escape(task.dimension),
        "scale_low": task.scale[0],
        "scale_high": task.scale[1],
        "examples": [
            {
                "candidate": escape(e.candidate),
                "source": escape(e.source[:source_chars]) if e.source else None,
                "judge_score": f"{e.judge_score:g}",
                "judge_rationale": escape(e.judge_rationale or "(none)"),
                "human_score": f"{e.human_score:g}",
                "human_rationales": [escape(r) for r in e.human_rationales if r.strip()],
            }
            for e in task.examples[:MAX_ALIGN_EXAMPLES]
        ],
    }


def valid_revision(obj: Mapping[str, Any], reason: str) -> dict[str, Any] | None:
    text = obj.get("instructions")
    if isinstance(text, str) and text.strip():
        return {"reason": reason, "instructions": text.strip()}
    return None


def disagreeing_first(scores: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of (judge, human) pairs that disagree, largest gap first, then position."""
    gaps = [(abs(j - h), k) for k, (j, h) in enumerate(scores) if j != h]
    gaps.sort(key=lambda t: (-t[0], t[1]))
    return [k for _g, k in gaps]
