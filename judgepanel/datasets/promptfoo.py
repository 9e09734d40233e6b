"""promptfoo results files (`promptfoo eval -o results.json`, schema version 3) as graded samples.

Boundary: a results file in, `datasets.graded` records out, read one result at a time with ijson
(`datasets.jsonstream`, bounded memory: a file of a million results is never held whole); nothing
is written.

Each result (one test case × one prompt) is a sample: its item is named by the test's `id` var
(`--id-var`), else by a hash of its vars (``t-…``), with ``@p<N>`` added when the file has more
than one prompt or provider. promptfoo's `--repeat N` repeats a test with the same vars: the
repeats are the same item and become repeated verdicts (`repeat` 0, 1, …, assigned as the file is
stored). Every assertion of a test is a grader: its type, the `metric` it names, and for a
model-graded type the grader's provider (the assertion's, else the test's `options.provider`,
else promptfoo's default grader): ``llm-rubric/coherence (openai:chat:gpt-4o-mini)``. Its verdict
is the assertion's score (`datasets.graded`), shown as pass / fail, its reason the rationale, its
rendered grading prompt the request. A `metric` is the verdict's dimension (else `--dimension`).

Counted: `samples`, `grades`, `errors` (a result promptfoo marks as an error: the provider
failed, nothing to grade), `grader_errors` (an assertion whose grader call failed: promptfoo
records it as a fail with score 0, judgepanel as no verdict).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judgepanel.datasets.graded import (
    Grade,
    GradedLog,
    GradedSample,
    Grader,
    clean_json,
    cleaner,
    dumps,
    text_field,
)
from judgepanel.datasets.jsonstream import guarded_items, head_values, open_bytes
from judgepanel.datasets.records import display_path, sha256_files
from judgepanel.errors import BadInput
from judgepanel.providers.errors import configured_secrets

VERSIONS = (3,)
MODEL_GRADED = frozenset(
    {
        "llm-rubric",
        "g-eval",
        "model-graded-closedqa",
        "factuality",
        "model-graded-factuality",
        "answer-relevance",
        "context-faithfulness",
        "context-recall",
        "context-relevance",
        "conversation-relevance",
        "search-rubric",
        "select-best",
        "max-score",
        "pi",
    }
)
_HEAD = {
    "evalId": "eval_id",
    "results.version": "version",
    "results.timestamp": "timestamp",
    "results.prompts": "prompts",
}
_VERSION = re.compile(rb'"promptfooVersion"\s*:\s*"([^"]{1,40})"')


def _provider_id(p: Any) -> str | None:
    if isinstance(p, str):
        return p
    if isinstance(p, dict):
        pid = p.get("id") or p.get("label")
        return str(pid) if pid else None
    return None


def _tool_version(path: Path) -> str | None:
    """promptfoo writes its version into the file's trailing `metadata`: read from the last 64 KB."""
    try:
        with open_bytes(path) as f:
            if isinstance(f, gzip.GzipFile):  # no seeking to the end: read through, keep the tail
                tail = b""
                while chunk := f.read(1 << 20):
                    tail = (tail + chunk)[-(1 << 16) :]
            else:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - (1 << 16)))
                tail = f.read()
            m = _VERSION.search(tail)
    except (OSError, EOFError):
        return None
    return m.group(1).decode("utf-8", "replace") if m else None


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _messages(rendered: Any) -> list[dict[str, Any]]:
    if not isinstance(rendered, str) or not rendered:
        return []
    try:
        parsed = json.loads(rendered)
    except ValueError:
        return [{"role": "user", "content": rendered}]
    if isinstance(parsed, list) and all(isinstance(m, dict) and "role" in m for m in parsed):
        return [
            {"role": str(m["role"]), "content": c if isinstance(c := m.get("content"), str) else dumps(c)}
            for m in parsed
        ]
    return [{"role": "user", "content": rendered}]


class _Reader:
    def __init__(self, path: Path, found: GradedLog, id_var: str, dimension: str, prompts: int) -> None:
        self.path, self.found, self.id_var, self.dimension = path, found, id_var, dimension
        self.several_prompts = prompts > 1
        self.secrets = configured_secrets()  # read once: the environment does not change mid-import
        self.clean = cleaner()
        self.graders: dict[tuple[str, str | None, str | None, int], Grader] = {}

    def grader(self, assertion: dict[str, Any], test_provider: str | None, ordinal: int) -> Grader:
        kind = str(assertion.get("type") or "unknown")
        metric = assertion.get("metric")
        metric = str(metric) if metric not in (None, "") else None
        model = None
        if kind.removeprefix("not-") in MODEL_GRADED:
            model = _provider_id(assertion.get("provider")) or test_provider or "default grader"
        key = (kind, metric, model, ordinal)
        g = self.graders.get(key)
        if g is None:
            name = kind + (f"/{metric}" if metric else "") + (f" ({model})" if model else "")
            name += f" #{ordinal + 1}" if ordinal else ""
            g = self.graders[key] = Grader(key=name, name=name, scorer=kind, model=model)
        return g

    def external_id(self, result: dict[str, Any], vars_: dict[str, Any], digest: str, where: str) -> str:
        given = vars_.get(self.id_var)
        if isinstance(given, str | int | float) and not isinstance(given, bool) and str(given).strip():
            ext = str(given)
        else:
            ext = f"t-{digest[:16]}"
        if self.several_prompts:
            ext += f"@p{result.get('promptIdx', 0)}"
        return text_field(where, ext) or ""

    def sample(self, result: Any, n: int) -> GradedSample:
        where = f"{self.path}: result {n}"
        if not isinstance(result, dict):
            raise BadInput(f"{where}: expected an object")
        self.found.count("samples")
        test = _obj(result.get("testCase"))
        vars_ = _obj(result.get("vars")) or _obj(test.get("vars"))
        vars_ = self.clean(vars_)
        identity = hashlib.sha256(json.dumps(vars_, sort_keys=True, default=str).encode()).hexdigest()
        ext = self.external_id(result, vars_, identity, where)
        where = f"{self.path}: result {n} (test {ext!r})"
        response = _obj(result.get("response"))
        prompt = _obj(result.get("prompt"))
        meta: dict[str, Any] = {
            "source": "promptfoo",
            "test_idx": result.get("testIdx"),
            "prompt_idx": result.get("promptIdx"),
            "provider": _provider_id(result.get("provider")),
            "vars": vars_,
            "identity": identity,
        }
        if test.get("description"):
            meta["description"] = self.clean(test["description"])
        error = None
        if result.get("failureReason") == 2 or (result.get("error") and not result.get("gradingResult")):
            self.found.count("errors")
            error = text_field(where, self.clean(str(result.get("error") or "error")))
        grades = [] if error is not None else self.grades(result, test, where)
        return GradedSample(
            external_id=ext,
            repeat=None,
            input=text_field(where, self.clean(prompt.get("raw"))),
            output=text_field(where, self.clean(response.get("output"))),
            meta=meta,
            grades=grades,
            error=error,
        )

    def grades(self, result: dict[str, Any], test: dict[str, Any], where: str) -> list[Grade]:
        grading = result.get("gradingResult")
        if not isinstance(grading, dict):
            return []
        options = _obj(test.get("options"))
        test_provider = _provider_id(options.get("provider"))
        out: list[Grade] = []
        seen: dict[tuple[str, str | None, str | None], int] = {}
        for k, comp in enumerate(grading.get("componentResults") or []):
            if not isinstance(comp, dict):
                raise BadInput(f"{where}: assertion {k + 1} is not an object")
            assertion = _obj(comp.get("assertion"))
            base = self.grader(assertion, test_provider, 0)
            ordinal = seen.get((base.scorer, assertion.get("metric"), base.model), 0)
            seen[(base.scorer, assertion.get("metric"), base.model)] = ordinal + 1
            grader = self.grader(assertion, test_provider, ordinal) if ordinal else base
            at = f"{where}: assertion {grader.name!r}"
            raw = clean_json({key: v for key, v in comp.items() if key != "metadata"}, self.secrets)
            meta = _obj(comp.get("metadata"))
            tokens = _obj(comp.get("tokensUsed"))
            dim = assertion.get("metric") if assertion.get("metric") not in (None, "") else self.dimension
            reason = text_field(at, self.clean(comp.get("reason")))
            common: dict[str, Any] = {
                "grader": grader,
                "dimension": text_field(at, str(dim)) or "",
                "rationale": reason,
                "text": reason,
                "raw": raw,
                "messages": [
                    {**m, "content": self.clean(m["content"])}
                    for m in _messages(meta.get("renderedGradingPrompt"))
                ],
                "input_tokens": tokens.get("prompt") if isinstance(tokens.get("prompt"), int) else None,
                "output_tokens": tokens.get("completion")
                if isinstance(tokens.get("completion"), int)
                else None,
            }
            if meta.get("graderError") or (reason or "").startswith("API error"):
                self.found.count("grader_errors")
                out.append(
                    Grade(
                        presented=None,
                        value=None,
                        scale=None,
                        error=f"grader error: {reason or 'unknown'}"[:2000],
                        error_class="fatal",
                        **common,
                    )
                )
                continue
            passed, score = comp.get("pass"), comp.get("score")
            if not isinstance(passed, bool):
                raise BadInput(f"{at}: 'pass' is {json.dumps(passed)[:20]}, expected true or false")
            if score is None:
                score = 1.0 if passed else 0.0
            if isinstance(score, bool) or not isinstance(score, int | float) or score != score:
                raise BadInput(
                    f"{at}: score {json.dumps(score)[:20]} is outside every known scale (a number)"
                )
            if score in (float("inf"), float("-inf")):
                raise BadInput(f"{at}: score {score} is not a finite number")
            self.found.use_scale(grader, "promptfoo score", at)
            self.found.count("grades")
            out.append(
                Grade(
                    presented="pass" if passed else "fail",
                    value=float(score),
                    scale="promptfoo score",
                    **common,
                )
            )
        return out


def read_promptfoo(path: Path, *, id_var: str = "id", dimension: str = "") -> GradedLog:
    """Read one promptfoo results file (plain or gzip JSON) into a `GradedLog`; its header is read
    here, the results as the stream is consumed. Nothing is written."""
    what = f"{path}: cannot read as a promptfoo results file"
    head = head_values(path, _HEAD, "results.results", what)
    version = head.get("version")
    if version is None:
        raise BadInput(
            f"{path}: not a promptfoo results file (no results.version; write it with `promptfoo eval -o FILE.json`)"
        )
    if version not in VERSIONS:
        raise BadInput(
            f"{path}: promptfoo results version {version}; judgepanel reads version "
            f"{', '.join(map(str, VERSIONS))} (promptfoo 0.100 and later)"
        )
    prompts: list[Any] = head["prompts"] if isinstance(head.get("prompts"), list) else []
    eval_id = str(head.get("eval_id") or "")
    tool_version = _tool_version(path)
    found = GradedLog(
        tool="promptfoo",
        files=[display_path(path)],
        source_hash=hashlib.sha256(
            sha256_files(path).encode() + f"|{id_var}|{dimension}".encode()
        ).hexdigest(),
        sources=[
            {
                "tool": "promptfoo",
                "path": display_path(path),
                "eval_id": eval_id or None,
                "results_version": version,
                "timestamp": head.get("timestamp"),
                "promptfoo": tool_version,
                "prompts": [
                    {"label": p.get("label"), "provider": _provider_id(p.get("provider"))}
                    for p in prompts
                    if isinstance(p, dict)
                ],
            }
        ],
        samples=iter(()),
        eval_ids=[f"promptfoo:{eval_id}"] if eval_id else [],
    )
    reader = _Reader(path, found, id_var, dimension, len(prompts))

    def stream() -> Iterator[GradedSample]:
        for n, result in enumerate(guarded_items(path, "results.results.item", what), start=1):
            yield reader.sample(result, n)

    found.samples = stream()
    return found
