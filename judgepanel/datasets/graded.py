"""Verdicts of other tools' graders (Inspect AI scorers, promptfoo assertions), as plain records.

Boundary: the readers (`datasets.inspect_log`, `datasets.promptfoo`) turn one tool's files into a
`GradedLog`: a description of the source and a stream of `GradedSample`s (one per sample and
epoch, or test case and repeat); `store.graded_imports` writes that stream as a dataset and an
imported campaign. Nothing here touches the database or the network.

How grades become numbers (the same table is stored in each judge row's `params.scale` and shown
in docs/imports.md):

=====================  ==========================================  ==========================
grade as given         value stored (`verdict.value_canonical`)    scale name
=====================  ==========================================  ==========================
``C`` / ``P`` / ``I``  2 / 1 / 0 (Inspect's letters, any case)     ``CPI``
true / false           1 / 0                                       ``pass/fail``
a finite number        the number, as given (numeric text too)     ``numeric``
promptfoo assertion    its ``score`` (promptfoo records 1 / 0      ``promptfoo score``
                       from pass / fail when the grader gave none)
=====================  ==========================================  ==========================

A grade that is missing (no score, ``None``, NaN, Inspect's ``N`` for "no answer") is no verdict:
the job is stored as failed (error class ``parse``) and counted as ``unscored``. Any other text,
a list, an infinite number, or a grader whose grades mix two scales is refused with one line
naming the file and the sample.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from judgepanel.datasets.records import check_text
from judgepanel.errors import BadInput
from judgepanel.providers.errors import configured_secrets, redact
from judgepanel.providers.names import is_secret_name

CPI = {"C": 2.0, "P": 1.0, "I": 0.0}
PASS_FAIL = {"true": 1.0, "false": 0.0}
SCALES: dict[str, Any] = {
    "CPI": CPI,
    "pass/fail": PASS_FAIL,
    "numeric": "the number as given",
    "promptfoo score": "the assertion's score as promptfoo recorded it (1 / 0 from pass / fail "
    "when the grader gave no score)",
}
NO_ANSWER = "N"  # Inspect's NOANSWER: the grader saw no answer to grade
MAX_TEXT = 16 * 1024 * 1024  # one text field (an output, a rationale): larger is refused


@dataclass(frozen=True)
class Grader:
    """One grader of an import: a scorer (Inspect) or an assertion (promptfoo) and the model that
    graded, if one did. `key` is unique within the import; `name` is what people read."""

    key: str
    name: str
    scorer: str
    model: str | None


@dataclass(frozen=True)
class Grade:
    """One grader's grade of one sample (epoch / repeat) on one dimension."""

    grader: Grader
    dimension: str
    presented: str | None  # the grade as the grader gave it ("C", "true", "4", "pass")
    value: float | None  # the mapped number; None: no grade (unscored or an error)
    scale: str | None
    rationale: str | None
    text: str | None  # the grader's reply, where the log keeps it
    raw: str  # the grade's record in the log, as JSON (secrets redacted)
    messages: list[dict[str, Any]] = field(default_factory=list)  # what the grader was asked
    error: str | None = None  # why there is no grade: "unscored: …" or the grader's error
    error_class: str | None = None  # parse (unscored) or fatal (the grader failed)
    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass(frozen=True)
class GradedSample:
    """One graded sample: the item it is about, which repeat (epoch − 1, or promptfoo repeat), and
    its grades; `meta["identity"]`, where given, is what the item's id must always stand for (a
    second test under the same id with other vars is a duplicate id, refused)."""

    external_id: str
    repeat: int | None  # None: the next repeat of this item (promptfoo's --repeat), counted when stored
    input: str | None
    output: str | None
    meta: dict[str, Any]
    grades: list[Grade]
    error: str | None = None  # the sample itself failed (no grades)


@dataclass
class GradedLog:
    """What a reader found, and the samples as a stream (read once). `counts` fills in as the
    stream is read: samples, grades, unscored, errors, cancelled … (reported, never silent)."""

    tool: str  # inspect | promptfoo
    files: list[str]
    source_hash: str
    sources: list[dict[str, Any]]  # per file: path, task, eval id, model, version …
    samples: Iterator[GradedSample]
    counts: dict[str, int] = field(default_factory=dict)
    graders: dict[str, Grader] = field(default_factory=dict)
    scales: dict[str, str] = field(default_factory=dict)  # grader key -> scale name
    eval_ids: list[str] = field(default_factory=list)  # ids that recognise a re-import

    def count(self, what: str, n: int = 1) -> None:
        self.counts[what] = self.counts.get(what, 0) + n

    def use_scale(self, grader: Grader, scale: str, where: str) -> None:
        """Record that `grader` graded on `scale`; a second scale for one grader is refused."""
        self.graders.setdefault(grader.key, grader)
        seen = self.scales.setdefault(grader.key, scale)
        if seen != scale:
            raise BadInput(
                f"{where}: grader {grader.name!r} grades on two scales ({seen} and {scale}); "
                "judgepanel compares one scale per judge"
            )


def map_grade(value: Any, where: str) -> tuple[str, str, float] | None:
    """(scale, grade as text, number) for one grade value (see the module docstring); None for no
    grade. Refuses a value outside every known scale."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "pass/fail", "true" if value else "false", 1.0 if value else 0.0
    if isinstance(value, int | float):
        v = float(value)
        if math.isnan(v):
            return None
        if not math.isfinite(v):
            raise BadInput(f"{where}: grade {value} is not a finite number")
        return "numeric", f"{value}", v
    if isinstance(value, str):
        text = value.strip()
        if text.upper() in CPI:
            return "CPI", text.upper(), CPI[text.upper()]
        if text.upper() == NO_ANSWER:
            return None
        try:
            v = float(text)
        except ValueError:
            v = math.nan
        if math.isfinite(v):
            return "numeric", text, v
        shown = text if len(text) <= 40 else text[:40] + "…"
        raise BadInput(f"{where}: grade {shown!r} is outside every known scale (C/P/I, true/false, a number)")
    raise BadInput(
        f"{where}: grade {json.dumps(value, default=str)[:40]} is outside every known scale "
        "(C/P/I, true/false, a number)"
    )


REDACTED = "[REDACTED]"


def cleaner() -> Callable[[Any], Any]:
    """A function that returns a JSON-shaped value with every secret removed: values under keys
    named like a secret (`apiKey`, `authorization` …) replaced by "[REDACTED]", and configured keys
    and key-shaped strings cut out of every string (`providers.errors.redact`). Tools write their
    configuration into their logs, promptfoo an assertion provider's `apiKey` in clear."""
    secrets = configured_secrets()
    secret_key: dict[str, bool] = {}  # the same few keys come back in every record

    def is_secret(k: Any) -> bool:
        if not isinstance(k, str):
            return False
        known = secret_key.get(k)
        if known is None:
            known = secret_key[k] = is_secret_name(k)
        return known

    def clean(v: Any) -> Any:
        if isinstance(v, str):
            return redact(v, secrets)
        if isinstance(v, dict):
            return {k: (REDACTED if x and is_secret(k) else clean(x)) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [clean(x) for x in v]
        return v

    return clean


def clean_json(value: Any, secrets: tuple[str, ...] | None = None) -> str:
    """`value` as JSON text with secrets removed (`secrets`: the configured keys, read once by the
    caller; default: read now): a non-empty string under a key named like a secret becomes
    "[REDACTED]", then configured keys and key-shaped strings are cut from the text."""
    return redact(dumps(_secret_strings_out(value)), configured_secrets() if secrets is None else secrets)


_CONTAINERS = (dict, list, tuple)


def _secret_strings_out(value: Any) -> Any:
    """`value` with every non-empty string under a key named like a secret replaced (leaves are
    not recursed into: they are most of a record's values)."""
    if isinstance(value, dict):
        return {
            k: REDACTED
            if x and isinstance(x, str) and _secret_key(k)
            else (_secret_strings_out(x) if isinstance(x, _CONTAINERS) else x)
            for k, x in value.items()
        }
    if isinstance(value, list | tuple):
        return [_secret_strings_out(x) if isinstance(x, _CONTAINERS) else x for x in value]
    return value


@functools.lru_cache(maxsize=1024)
def _secret_key(key: Any) -> bool:
    """A key named like a secret, read as JSON writes it (escapes and all, as the scan of the text
    this replaced read it)."""
    return isinstance(key, str) and is_secret_name(json.dumps(key, ensure_ascii=False)[1:-1])


def text_field(where: str, value: Any) -> str | None:
    """A text a tool logged, as judgepanel stores it: None stays None, anything else must be text a
    database can store and at most MAX_TEXT characters."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > MAX_TEXT:
        raise BadInput(f"{where}: a text of {len(text):,} characters (at most {MAX_TEXT:,})")
    if text.isascii() and "\x00" not in text:  # no surrogate can be there: nothing to check
        return text
    return check_text(where, text)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, allow_nan=True)
