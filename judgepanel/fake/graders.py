"""Replies in the formats other tools' LLM graders ask for, from the simulated judge's score.

Boundary: the fake server (`judgepanel.fake.server`) asks this module whether a chat request is a
known grader's prompt and, if so, for the reply; it never touches HTTP. The verdict itself comes
from the simulated judge (`judgepanel.simjudge`, pointwise, labelled `[simulated]`), so a grader
served by the fake server judges the submission's text the way a `sim:` judge of the same model
name would, and different grader models disagree a little.

Recognised prompts:

* **Inspect AI model-graded scorers** (`model_graded_qa`, `model_graded_fact`): a prompt that
  asks for ``GRADE: $LETTER`` (or ``GRADE: $NUMBER``) over a ``[Submission]: …`` section. The
  source is the ``[Task]:`` / ``[Question]:`` section. When the grading prompt states a scale
  ("on a scale from 1 (worst) to 5 (best)") the grade is that number; otherwise it is a letter:
  ``C`` for a simulated score of 4–5 on 1–5, ``P`` for 3 when the instructions offer ``P``
  (partial credit), else ``I``. The reply is the rationale, a blank line and ``GRADE: X``.
* **promptfoo `llm-rubric`** (and assertions built on it): a system message asking for
  ``{reason: string, pass: boolean, score: number}`` and a user message with ``<Output>`` and
  ``<Rubric>``. The rubric is the source. With a scale stated in the rubric the score is on that
  scale and passes at its midpoint or above; without one the score is 1 (pass, a simulated 3–5
  on 1–5) or 0. The reply is that JSON object, the rationale as `reason`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from judgepanel.simjudge import simulate
from judgepanel.simjudge.reading import content_text
from judgepanel.simjudge.reply import POINTWISE, SimReply, count_tokens

_SCALE = re.compile(r"on a scale from (\d+) \(worst\) to (\d+) \(best\)")
_INSPECT_ASK = re.compile(r"GRADE: \$(LETTER|NUMBER)")
_INSPECT_SOURCE = re.compile(r"\[(?:Task|Question)\]:\s*(.*?)\n\s*\*\*\*", re.S)
_INSPECT_SUBMISSION = re.compile(r"\[Submission\]:\s*(.*?)\n\s*\*\*\*", re.S)
_PROMPTFOO_ASK = "{reason: string, pass: boolean, score: number}"
_PROMPTFOO_OUTPUT = re.compile(r"<Output>\s*(.*?)\s*</Output>", re.S)
_PROMPTFOO_RUBRIC = re.compile(r"<Rubric>\s*(.*?)\s*</Rubric>", re.S)


def _scored(
    model: str, source: str, candidate: str, lo: int, hi: int, params: Mapping[str, Any]
) -> tuple[int, str]:
    """The simulated judge's pointwise score of `candidate` against `source` on lo..hi, and its rationale."""
    prompt = (
        f"Rate the candidate on a scale from {lo} (worst) to {hi} (best).\n"
        f"<source>{source}</source>\n<candidate>{candidate}</candidate>"
    )
    sim = simulate(
        model, [{"role": "user", "content": prompt}], schema_name=POINTWISE, params=params, structured=True
    )
    answer = sim.structured or {}
    return int(answer.get("score", lo)), str(answer.get("rationale", "[simulated]"))


def _stated_scale(text: str) -> tuple[int, int] | None:
    m = _SCALE.search(text)
    if m is None:
        return None
    lo, hi = int(m.group(1)), int(m.group(2))
    return (lo, hi) if lo < hi else None


def _inspect(model: str, user: str, params: Mapping[str, Any]) -> str | None:
    ask = _INSPECT_ASK.search(user)
    submission = _INSPECT_SUBMISSION.search(user)
    if ask is None or submission is None:
        return None
    source = _INSPECT_SOURCE.search(user)
    scale = _stated_scale(user)
    lo, hi = scale or (1, 5)
    score, why = _scored(model, source.group(1) if source else "", submission.group(1), lo, hi, params)
    if scale is not None:
        grade = str(score)
    elif score >= 4:
        grade = "C"
    elif score == 3 and re.search(r"\bone of CPI\b|\"P\"", user):
        grade = "P"
    else:
        grade = "I"
    return f"{why}\n\nGRADE: {grade}"


def _promptfoo(model: str, system: str, user: str, params: Mapping[str, Any]) -> str | None:
    if _PROMPTFOO_ASK not in system:
        return None
    output, rubric = _PROMPTFOO_OUTPUT.search(user), _PROMPTFOO_RUBRIC.search(user)
    if output is None or rubric is None:
        return None
    scale = _stated_scale(rubric.group(1))
    lo, hi = scale or (1, 5)
    score, why = _scored(model, rubric.group(1), output.group(1), lo, hi, params)
    midpoint = math.ceil((lo + hi) / 2)
    passed = score >= midpoint
    shown: float = float(score) if scale is not None else (1.0 if passed else 0.0)
    return json.dumps({"reason": why, "pass": passed, "score": shown})


def grader_reply(
    model: str, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any], reply: SimReply
) -> SimReply:
    """`reply` rewritten in a known grader's format when `messages` are that grader's prompt
    (see the module docstring), else `reply` unchanged."""
    system = "\n".join(content_text(m.get("content")) for m in messages if m.get("role") == "system")
    users = [content_text(m.get("content")) for m in messages if m.get("role") == "user"]
    if not users:
        return reply
    user = users[-1]
    text = _inspect(model, user, params) or _promptfoo(model, system, user, params)
    if text is None:
        return reply
    prompt_chars = sum(len(content_text(m.get("content"))) for m in messages)
    return dataclasses.replace(
        reply,
        kind="grader",
        text=text,
        structured=None,
        style="prose",
        finish_reason="stop",
        input_tokens=max(1, math.ceil(prompt_chars / 4)) + 4 * len(messages),
        output_tokens=count_tokens(text),
    )
