"""USR (Mehri & Eskenazi, ACL 2020) human judgments of dialogue responses, Topical-Chat release.

The file is one JSON list of dialogue contexts. Each context has `context` (the turns so far, one
per line), `fact` (the knowledge snippet the responder was given), `annotators` (three short ids)
and `responses`: six systems' next turns, each rated by the three annotators on

    Understandable 0–1, Natural 1–3, Maintains Context 1–3, Engaging 1–3, Uses Knowledge 0–1,
    Overall 1–5

(one list of three ratings per dimension, in the order of `annotators`), stored as the dimensions
`understandability`, `naturalness`, `context_maintenance`, `engagingness`, `knowledge_use` and
`overall_quality` of the bundled rubric `rubrics/usr.yaml` (nouns, because prompts say "rate the
<dimension> of the response"). An item is one response:
its input is the dialogue context followed by the fact, its output the response, its system the
response's `model`, its group the context (so pairs and splits stay within one dialogue).
Annotators are the short ids in the file (five across the release, three per context), all in
group `expert`. USR has no free-text rationales, so none are imported.

Every error names the file and the line of the context or response at fault (the file is
pretty-printed, so a line number points at the record).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from judgepanel.datasets.records import (
    AnnotatorRecord,
    ItemRecord,
    LabelRecord,
    ParsedDataset,
    open_text,
    sha256_files,
)
from judgepanel.errors import BadInput

TOPICAL_CHAT_FILE = "tc_usr_data.json"
GROUP = "expert"
# file key -> (stored dimension, lowest, highest); the ranges are those of the USR release
DIMENSIONS: dict[str, tuple[str, int, int]] = {
    "Understandable": ("understandability", 0, 1),
    "Natural": ("naturalness", 1, 3),
    "Maintains Context": ("context_maintenance", 1, 3),
    "Engaging": ("engagingness", 1, 3),
    "Uses Knowledge": ("knowledge_use", 0, 1),
    "Overall": ("overall_quality", 1, 5),
}
_WS = re.compile(r"[ \t\n\r]*")
_SLUG = re.compile(r"[^a-z0-9.]+")


class _Located:
    """A JSON value parsed with the line on which each list element and object member starts.

    `json` drops positions, and a bad record in a 13,000-line file is only findable by its line.
    Containers are walked here; strings and numbers go to the standard decoder."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.decoder = json.JSONDecoder()
        self.lines: dict[int, int] = {}  # id() of a parsed container element -> line

    def line_at(self, pos: int) -> int:
        return self.text.count("\n", 0, pos) + 1

    def skip(self, pos: int) -> int:
        m = _WS.match(self.text, pos)
        return m.end() if m else pos

    def value(self, pos: int) -> tuple[Any, int]:
        pos = self.skip(pos)
        ch = self.text[pos : pos + 1]
        if ch == "[":
            return self.array(pos + 1)
        if ch == "{":
            return self.object(pos + 1)
        try:
            return self.decoder.raw_decode(self.text, pos)
        except json.JSONDecodeError as exc:
            raise _Syntax(exc.pos, exc.msg) from exc

    def array(self, pos: int) -> tuple[list[Any], int]:
        out: list[Any] = []
        pos = self.skip(pos)
        if self.text.startswith("]", pos):
            return out, pos + 1
        while True:
            start = self.skip(pos)
            item, pos = self.value(start)
            self.lines[id(item)] = self.line_at(start)
            out.append(item)
            pos = self.skip(pos)
            if self.text.startswith(",", pos):
                pos += 1
            elif self.text.startswith("]", pos):
                return out, pos + 1
            else:
                raise _Syntax(pos, "expected ',' or ']'")

    def object(self, pos: int) -> tuple[dict[str, Any], int]:
        out: dict[str, Any] = {}
        pos = self.skip(pos)
        if self.text.startswith("}", pos):
            return out, pos + 1
        while True:
            pos = self.skip(pos)
            if not self.text.startswith('"', pos):
                raise _Syntax(pos, "expected a property name in double quotes")
            key, pos = self.decoder.raw_decode(self.text, pos)
            pos = self.skip(pos)
            if not self.text.startswith(":", pos):
                raise _Syntax(pos, "expected ':'")
            out[key], pos = self.value(pos + 1)
            pos = self.skip(pos)
            if self.text.startswith(",", pos):
                pos += 1
            elif self.text.startswith("}", pos):
                return out, pos + 1
            else:
                raise _Syntax(pos, "expected ',' or '}'")


class _Syntax(Exception):
    def __init__(self, pos: int, msg: str) -> None:
        super().__init__(msg)
        self.pos, self.msg = pos, msg


def _load(path: Path) -> tuple[list[Any], _Located]:
    try:
        with open_text(path) as f:
            text = f.read()
    except (UnicodeDecodeError, OSError, EOFError) as exc:
        raise BadInput(f"{path}: cannot read: {exc}") from exc
    located = _Located(text)
    try:
        data, end = located.value(0)
        if located.skip(end) != len(text):
            raise _Syntax(located.skip(end), "extra data after the list")
    except _Syntax as exc:
        raise BadInput(f"{path}:{located.line_at(exc.pos)}: not JSON: {exc.msg}") from exc
    except RecursionError as exc:
        raise BadInput(f"{path}: not JSON: nested too deeply") from exc
    if not isinstance(data, list):
        raise BadInput(f"{path}:1: expected a JSON list of dialogue contexts")
    if not data:
        raise BadInput(f"{path}:1: no dialogue contexts")
    return data, located


def slug(system: str) -> str:
    """`Nucleus Decoding (p = 0.3)` -> `nucleus-decoding-p-0.3`: a readable, stable id part."""
    return _SLUG.sub("-", system.lower()).strip("-") or "system"


def dialogue_input(context: str, fact: str) -> str:
    """What a judge sees as the source: the turns so far (one per line), then the fact."""
    turns = [t.strip() for t in context.split("\n") if t.strip()]
    return "Dialogue so far:\n" + "\n".join(turns) + "\n\nFact available to the responder:\n" + fact.strip()


def _text(path: Path, line: int, obj: dict[str, Any], key: str, *, empty_ok: bool = False) -> str:
    v = obj.get(key)
    if not isinstance(v, str) or (not empty_ok and not v.strip()):
        raise BadInput(f"{path}:{line}: field {key!r}: missing, empty or not a string")
    return v


def _rating_ok(v: Any, lo: int, hi: int) -> bool:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return False
    return float(v).is_integer() and lo <= v <= hi


def parse_usr(path: Path) -> ParsedDataset:
    """Read a USR Topical-Chat file (or the folder holding `tc_usr_data.json`); nothing is written."""
    if path.is_dir():
        path = path / TOPICAL_CHAT_FILE
    data, located = _load(path)
    items: list[ItemRecord] = []
    labels: list[LabelRecord] = []
    annotators: dict[str, None] = {}
    for ci, ctx in enumerate(data):
        cline = located.lines.get(id(ctx), 1)
        if not isinstance(ctx, dict):
            raise BadInput(f"{path}:{cline}: context {ci}: expected an object")
        context = _text(path, cline, ctx, "context")
        fact = _text(path, cline, ctx, "fact", empty_ok=True)
        names = ctx.get("annotators")
        if (
            not isinstance(names, list)
            or not names
            or not all(isinstance(n, str) and n.strip() for n in names)
            or len(set(names)) != len(names)
        ):
            raise BadInput(f"{path}:{cline}: field 'annotators': expected a list of distinct annotator ids")
        annotators.update(dict.fromkeys(names))
        responses = ctx.get("responses")
        if not isinstance(responses, list) or not responses:
            raise BadInput(f"{path}:{cline}: field 'responses': expected a non-empty list")
        group = f"tc{ci:03d}"
        seen: set[str] = set()
        for resp in responses:
            rline = located.lines.get(id(resp), cline)
            if not isinstance(resp, dict):
                raise BadInput(f"{path}:{rline}: a response must be an object")
            output = _text(path, rline, resp, "response")
            system = _text(path, rline, resp, "model")
            ext = f"{group}/{slug(system)}"
            if ext in seen:
                raise BadInput(f"{path}:{rline}: field 'model': {system!r} answers context {ci} twice")
            seen.add(ext)
            items.append(
                ItemRecord(
                    external_id=ext,
                    position=len(items),
                    group_key=group,
                    input=dialogue_input(context, fact),
                    output=output.strip(),
                    system=system,
                    meta={"context": context, "fact": fact},
                )
            )
            for key, (dim, lo, hi) in DIMENSIONS.items():
                ratings = resp.get(key)
                if not isinstance(ratings, list) or len(ratings) != len(names):
                    raise BadInput(
                        f"{path}:{rline}: field {key!r}: expected {len(names)} ratings, one per annotator"
                    )
                for name, v in zip(names, ratings, strict=True):
                    if not _rating_ok(v, lo, hi):
                        raise BadInput(
                            f"{path}:{rline}: field {key!r}: rating {v!r} of {name!r} is not an integer {lo}..{hi}"
                        )
                    labels.append(LabelRecord(ext, name, dim, float(v), str(int(v))))
    return ParsedDataset(
        kind="usr",
        source_hash=sha256_files(path),
        items=items,
        annotators=[AnnotatorRecord(n, "human", GROUP) for n in annotators],
        labels=labels,
        meta={
            "files": [str(path)],
            "dimensions": [d for d, _, _ in DIMENSIONS.values()],
            "scales": {d: [lo, hi] for d, lo, hi in DIMENSIONS.values()},
        },
    )
