"""Inspect AI logs (`.eval` and `.json`) as graded samples (`datasets.graded`).

Boundary: reads log files through `inspect_ai.log`'s public API (an optional dependency, the
`judgepanel[inspect]` extra, imported only here and only when a log is read) and yields records;
nothing is written. Every scorer of the log is a grader: its name is the scorer's, with the model
that graded when the scorer was given one (`model_graded_qa (openai/gpt-4o-mini)`). Each sample and
epoch is one `GradedSample` (repeat = epoch − 1), so epochs stay separate verdicts. A score whose
value is a dict gives one grade per key, the key as the dimension; any other value is graded on
the dimension passed in (default ``""``).

Streaming. The header comes from `read_eval_log(header_only=True)`. A `.eval` log's samples are
read a batch at a time with `read_eval_log_samples_by_id`, which parses the archive's directory
once per batch (its `read_eval_log_samples` opens the archive again for every sample, which made a
3,000-sample log take 68 s here against 12 s by batches). That parse grows with the log (9 ms a
call at 2,000 samples, 33 ms at 10⁴), so a batch is `BATCH` samples or a `BATCHES`-th of the log,
whichever is more, up to `MAX_BATCH` (memory: at most that many samples held per reader). A `.json` log's samples are read one at a
time from the file with ijson and validated as `inspect_ai.log.EvalSample` (Inspect reads a
`.json` log whole to return any one sample), with no token longer than `records`' limit. Either
way only the fields the import stores are validated (`UNREAD` lists what is skipped: the
transcript's events, the store, the message history), and their attachments resolved.

In parallel. Inspect's reading of a full sample is most of an import's CPU (about 1.5 ms a sample
here, against 0.7 ms for `samples_df`'s summaries), so a `.eval` log of more than one batch is read
by `readers` child processes (forked, so nothing is imported again), each reading every
`readers`-th batch and building its samples, and handing them back over a pipe in order; the
parent only writes. What a child counts (`GradedLog.count`, `use_scale`) is replayed in the parent
in sample order, and an error a child meets is raised in the parent where the serial reading
would have raised it, so counts, refusals and the all-or-nothing rule do not depend on `readers`.
Where `fork` is not available, or one core, the log is read in this process.

What is counted (never dropped silently): `samples`, `grades`, `unscored` (a score without a
grade, e.g. "Grade not found"), `sample_errors` (a sample that failed before it was scored),
`cancelled` (a sample id of the log's dataset that the log does not hold: a cancelled or failed
run), `limits` (a sample stopped by a token, time or message limit, still scored).
"""

from __future__ import annotations

import hashlib
import math
import multiprocessing
import os
import signal
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from judgepanel.datasets.graded import (
    Grade,
    GradedLog,
    GradedSample,
    Grader,
    cleaner,
    dumps,
    map_grade,
    text_field,
)
from judgepanel.datasets.jsonstream import guarded_items, head_values
from judgepanel.datasets.records import display_path, sha256_files
from judgepanel.errors import BadInput

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from inspect_ai.log import EvalLog, EvalSample

BATCH = 500
BATCHES = 40
MAX_BATCH = 2_500
# what a sample holds beyond the fields read here (id, epoch, input, target, output, scores,
# metadata, error, limit): its transcript, above all, whose events were about half the CPU of
# reading a sample and of resolving its attachments; Inspect's reader skips them unparsed
UNREAD = frozenset({"events", "events_data", "timelines", "store", "messages", "error_retries"})
LOG_VERSION = 2  # the schema version of the logs judgepanel reads (Inspect AI 0.3.285 writes 2)
FORMATS = (".eval", ".json")
READERS = 2  # child processes that read a .eval log of more than one batch (this machine: 2 cores)


class _Counts(Protocol):
    """What reading a sample records: a `GradedLog`, or a child's `_Tally` of the same calls."""

    def count(self, what: str, n: int = 1) -> None: ...

    def use_scale(self, grader: Grader, scale: str, where: str) -> None: ...


class _Tally:
    """A child reader's record of its `count` / `use_scale` calls, replayed in order by the parent."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def count(self, what: str, n: int = 1) -> None:
        self.calls.append(("count", what, n))

    def use_scale(self, grader: Grader, scale: str, where: str) -> None:
        self.calls.append(("use_scale", grader, scale, where))

    @staticmethod
    def replay(calls: list[tuple[Any, ...]], found: GradedLog) -> None:
        for call in calls:
            if call[0] == "count":
                found.count(call[1], call[2])
            else:
                found.use_scale(call[1], call[2], call[3])


def _inspect() -> Any:
    try:
        import inspect_ai.log as log
    except ImportError as exc:  # the optional extra is missing
        raise BadInput("reading Inspect logs needs Inspect AI: pip install 'judgepanel[inspect]'") from exc
    return log


def _unreadable(path: Path, exc: BaseException) -> BadInput:
    why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return BadInput(f"{path}: cannot read as an Inspect log: {why[:300]}")


def _header(path: Path) -> EvalLog:
    if not path.exists():
        raise BadInput(f"{path}: no such file")
    if path.is_dir():
        raise BadInput(f"{path}: is a folder, expected an Inspect log (.eval or .json)")
    if path.suffix not in FORMATS:
        raise BadInput(f"{path}: not an Inspect log: expected a .eval or .json file")
    if path.suffix == ".json":
        # Inspect reads older versions of its .json format by converting them, and reports every
        # header as the current version: the version the file says is read here, first
        version = head_values(path, {"version": "version"}, "eval", f"{path}: cannot read as an Inspect log")
        if version.get("version") != LOG_VERSION:
            raise BadInput(
                f"{path}: Inspect log schema version {version.get('version')}; judgepanel reads version "
                f"{LOG_VERSION} (Inspect AI 0.3.x)"
            )
    log = _inspect()
    try:
        header: EvalLog = log.read_eval_log(str(path), header_only=True)
    except Exception as exc:  # Inspect raises ValueError, zip and JSON errors, pydantic's …
        raise _unreadable(path, exc) from exc
    return header


def _grader_model(options: dict[str, Any]) -> str | None:
    model = options.get("model")
    if isinstance(model, dict):
        model = model.get("model")
    if isinstance(model, list):  # a panel of graders in one scorer
        model = ", ".join(str(m.get("model") if isinstance(m, dict) else m) for m in model)
    return str(model) if model else None


def _graders(header: EvalLog) -> dict[str, Grader]:
    """Score name -> grader, from the log's scorer list. Inspect names the scores of a task with
    the same scorer twice `NAME`, `NAME1`, `NAME2` …, in the list's order."""
    out: dict[str, Grader] = {}
    seen: dict[str, int] = {}
    for scorer in header.eval.scorers or []:
        n = seen.get(scorer.name, 0)
        seen[scorer.name] = n + 1
        key = scorer.name if n == 0 else f"{scorer.name}{n}"
        model = _grader_model(dict(scorer.options or {}))
        name = f"{key} ({model})" if model else key
        out[key] = Grader(key=name, name=name, scorer=scorer.name, model=model)
    return out


def _as_text(value: Any) -> str | None:
    """A sample's input (text or chat messages) as one text."""
    if value is None or isinstance(value, str):
        return value
    parts = []
    for m in value:
        text = getattr(m, "text", None)
        parts.append(f"{getattr(m, 'role', '?')}: {text if text is not None else m}")
    return "\n\n".join(parts)


def _messages(metadata: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The grader's conversation where the scorer keeps it (`model_graded_*`: metadata `grading`)."""
    grading = (metadata or {}).get("grading")
    if not isinstance(grading, list):
        return []
    out = []
    for m in grading:
        if isinstance(m, dict) and "role" in m:
            content = m.get("content")
            out.append(
                {"role": str(m["role"]), "content": content if isinstance(content, str) else dumps(content)}
            )
    return out


def _reply(messages: list[dict[str, Any]]) -> str | None:
    last = messages[-1] if messages else None
    return str(last["content"]) if last and last["role"] == "assistant" else None


def _grades(
    found: _Counts,
    sample: EvalSample,
    graders: dict[str, Grader],
    dimension: str,
    where: str,
    clean: Any,
) -> list[Grade]:
    out: list[Grade] = []
    for scorer_name, score in (sample.scores or {}).items():
        grader = graders.get(scorer_name)
        if grader is None:  # a score the header's scorer list does not name (e.g. added later)
            grader = graders.setdefault(scorer_name, Grader(scorer_name, scorer_name, scorer_name, None))
        record = clean(score.model_dump(mode="json"))
        raw = dumps(record)
        messages = _messages(record.get("metadata"))
        reply = _reply(messages)
        explanation = record.get("explanation")
        value = score.value
        values = value.items() if isinstance(value, dict) else [(dimension, value)]
        for dim, v in values:
            at = f"{where}: scorer {scorer_name!r}" + (f", key {dim!r}" if isinstance(value, dict) else "")
            mapped = map_grade(v, at)
            common: dict[str, Any] = {
                "grader": grader,
                "dimension": text_field(at, str(dim)) or "",
                "rationale": text_field(at, explanation),
                "text": text_field(at, reply if reply is not None else explanation),
                "raw": raw,
                "messages": messages,
            }
            if mapped is None:
                found.count("unscored")
                shown = "no grade" if v is None or (isinstance(v, float) and math.isnan(v)) else repr(v)
                out.append(
                    Grade(
                        presented=None,
                        value=None,
                        scale=None,
                        error=f"unscored: {shown}",
                        error_class="parse",
                        **common,
                    )
                )
                continue
            scale, presented, number = mapped
            found.use_scale(grader, scale, at)
            found.count("grades")
            out.append(Grade(presented=presented, value=number, scale=scale, **common))
    return out


def _sample(
    found: _Counts, sample: EvalSample, graders: dict[str, Grader], dimension: str, path: Path
) -> GradedSample:
    where = f"{path}: sample {sample.id!r} epoch {sample.epoch}"
    clean = cleaner()
    found.count("samples")
    if sample.limit is not None:
        found.count("limits")
    error = None
    if sample.error is not None:
        found.count("sample_errors")
        error = text_field(where, clean(sample.error.message))
    output = sample.output.completion if sample.output is not None and sample.output.choices else None
    meta: dict[str, Any] = {"source": "inspect", "sample_id": sample.id, "epoch": sample.epoch}
    if sample.target:
        meta["target"] = sample.target
    if sample.metadata:
        meta["metadata"] = clean(sample.metadata)
    return GradedSample(
        external_id=text_field(where, str(sample.id)) or "",
        repeat=sample.epoch - 1,
        input=text_field(where, clean(_as_text(sample.input))),
        output=text_field(where, clean(output)),
        meta=meta,
        grades=[] if error is not None else _grades(found, sample, graders, dimension, where, clean),
        error=error,
    )


def _read_batch(path: Path, batch: Sequence[tuple[str | int, int]], found: _Counts) -> list[EvalSample]:
    """The samples `batch` names, through Inspect's reader; an id the log does not hold is counted
    as cancelled (the run was cancelled or failed before it)."""
    log = _inspect()
    try:
        got: list[EvalSample] = log.read_eval_log_samples_by_id(
            str(path), batch, resolve_attachments=False, exclude_fields=set(UNREAD)
        )
        return [log.resolve_sample_attachments(s, "core") for s in got]
    except IndexError:
        if len(batch) == 1:
            found.count("cancelled")
            return []
        half = len(batch) // 2
        return _read_batch(path, batch[:half], found) + _read_batch(path, batch[half:], found)
    except Exception as exc:
        raise _unreadable(path, exc) from exc


def _batches(header: EvalLog, size: int | None) -> list[list[tuple[str | int, int]]]:
    """The log's (id, epoch) pairs in batches of `size` (None: see the module docstring)."""
    ids = list(header.eval.dataset.sample_ids or [])
    epochs = range(1, (header.eval.config.epochs or 1) + 1)
    wanted = [(i, e) for i in ids for e in epochs]
    if size is None:
        size = max(BATCH, min(MAX_BATCH, -(-len(wanted) // BATCHES)))
    return [wanted[k : k + size] for k in range(0, len(wanted), size)]


def _child(
    out: Connection,
    path: Path,
    batches: list[list[tuple[str | int, int]]],
    first: int,
    every: int,
    graders: dict[str, Grader],
    dimension: str,
) -> None:
    """A child reader: batches `first`, `first + every`, … as (samples, calls, error), in order;
    it stops at its first error. The pipe blocks while the parent writes, so a child is at most
    one batch ahead. Ctrl-C is the parent's to handle (it ends its readers): a child ignores it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        for k in range(first, len(batches), every):
            tally = _Tally()
            samples: list[GradedSample] = []
            try:
                for s in _read_batch(path, batches[k], tally):
                    samples.append(_sample(tally, s, graders, dimension, path))
            except Exception as exc:  # BadInput as it is; anything else as a line that pickles
                error = exc if isinstance(exc, BadInput) else RuntimeError(f"{type(exc).__name__}: {exc}")
                out.send((samples, tally.calls, error))
                return
            out.send((samples, tally.calls, None))
    finally:
        out.close()


def _fork() -> Any:
    try:
        return multiprocessing.get_context("fork")
    except ValueError:  # no fork on this platform
        return None


def _parallel_samples(
    path: Path,
    batches: list[list[tuple[str | int, int]]],
    readers: int,
    graders: dict[str, Grader],
    dimension: str,
    found: GradedLog,
) -> Iterator[GradedSample]:
    ctx = _fork()
    children, pipes = [], []
    try:
        for first in range(readers):
            receive, send = ctx.Pipe(duplex=False)
            child = ctx.Process(
                target=_child, args=(send, path, batches, first, readers, graders, dimension), daemon=True
            )
            child.start()
            send.close()
            children.append(child)
            pipes.append(receive)
        for k in range(len(batches)):
            try:
                samples, calls, error = pipes[k % readers].recv()
            except EOFError:
                raise RuntimeError(f"{path}: a reader process ended without its samples") from None
            # what the serial reading would have counted and refused up to this batch's error
            _Tally.replay(calls, found)
            if error is not None:
                raise error
            yield from samples
    finally:
        for child in children:
            if child.is_alive():
                child.kill()
            child.join()
        for pipe in pipes:
            pipe.close()


def _eval_samples(
    path: Path,
    header: EvalLog,
    found: GradedLog,
    graders: dict[str, Grader],
    dimension: str,
    readers: int,
    batch: int | None,
) -> Iterator[GradedSample]:
    batches = _batches(header, batch)
    readers = min(readers, len(batches))
    if readers > 1 and _fork() is not None:
        yield from _parallel_samples(path, batches, readers, graders, dimension, found)
        return
    for b in batches:
        for sample in _read_batch(path, b, found):
            yield _sample(found, sample, graders, dimension, path)


def _json_samples(path: Path, found: GradedLog) -> Iterator[EvalSample]:
    log = _inspect()
    for obj in guarded_items(path, "samples.item", f"{path}: cannot read as an Inspect log", nonfinite=True):
        try:
            if isinstance(obj, dict):
                obj = {k: v for k, v in obj.items() if k not in UNREAD}
            sample = log.EvalSample.model_validate(obj)
            yield log.resolve_sample_attachments(sample, "core")
        except Exception as exc:
            raise _unreadable(path, exc) from exc


def read_inspect(
    paths: Sequence[Path], dimension: str = "", *, readers: int | None = None, batch: int | None = None
) -> GradedLog:
    """Read Inspect logs (each `.eval` or `.json`) into a `GradedLog`; their headers are read
    here, the samples as the stream is consumed. Nothing is written. `readers`: child processes
    that read a `.eval` log of more than one `batch` of samples (default `READERS`, at most the
    CPUs; 1: read here; `batch` default: the module docstring)."""
    if readers is None:
        readers = min(READERS, os.cpu_count() or 1)
    if not paths:
        raise BadInput("give at least one Inspect log")
    headers = [(p, _header(p)) for p in paths]
    sources = []
    eval_ids = []
    for p, h in headers:
        sources.append(
            {
                "tool": "inspect",
                "path": display_path(p),
                "format": p.suffix.lstrip("."),
                "task": h.eval.task,
                "eval_id": h.eval.eval_id,
                "run_id": h.eval.run_id,
                "model": h.eval.model,
                "status": h.status,
                "epochs": h.eval.config.epochs or 1,
                "log_version": h.version,
                "inspect_ai": (h.eval.packages or {}).get("inspect_ai"),
                "created": h.eval.created,
            }
        )
        eval_ids.append(f"inspect:{h.eval.eval_id}")
    twice = sorted({e for e in eval_ids if eval_ids.count(e) > 1})
    if twice:
        raise BadInput(f"the same Inspect log ({twice[0]}) is given twice")
    found = GradedLog(
        tool="inspect",
        files=[display_path(p) for p in paths],
        source_hash=hashlib.sha256(sha256_files(*paths).encode() + dimension.encode()).hexdigest(),
        sources=sources,
        samples=iter(()),
        eval_ids=eval_ids,
    )

    def stream() -> Iterator[GradedSample]:
        for p, h in headers:
            graders = _graders(h)
            expected = len(h.eval.dataset.sample_ids or []) * (h.eval.config.epochs or 1)
            read = 0
            if p.suffix == ".eval":
                yield from _eval_samples(p, h, found, graders, dimension, readers, batch)
                continue
            for sample in _json_samples(p, found):
                read += 1
                yield _sample(found, sample, graders, dimension, p)
            if p.suffix == ".json" and h.status != "success" and expected > read:
                found.count("cancelled", expected - read)

    found.samples = stream()
    return found
