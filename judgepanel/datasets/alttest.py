"""Panels in the alternative-annotator-test format (Calderon, Reichart & Dror, ACL 2025).

A panel is a folder with two JSON objects, each plain or gzip-compressed:

- `human_annotations.json`: ``{annotator_id: {instance_id: label}}``, one entry per labelled instance;
- `llm_annotations.json`: ``{llm_name: {instance_id: label}}``.

Humans become annotators of kind `human` (group `human`); each LLM an annotator of kind `llm` (group
`llm`), i.e. an external judge whose verdicts were produced elsewhere. Labels are kept as given: a JSON
number is stored as `value_num` (and its text), anything else as text only. Instance ids of the form
``<text_id>__<aspect>`` are grouped by their text id, the unit that several instances share.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgepanel.datasets.records import (
    READ_ERRORS,
    AnnotatorRecord,
    DuplicateKey,
    ItemRecord,
    LabelRecord,
    ParsedDataset,
    check_text,
    check_value,
    display_path,
    loads_json,
    open_text,
    read_error,
    sha256_files,
    unique_keys,
)
from judgepanel.errors import BadInput

HUMAN_FILE = "human_annotations.json"
LLM_FILE = "llm_annotations.json"
HUMAN_GROUP = "human"
LLM_GROUP = "llm"


def _locate(folder: Path, name: str) -> Path:
    plain, packed = folder / name, folder / f"{name}.gz"
    if plain.is_file():
        return plain
    if packed.is_file():
        return packed
    raise BadInput(f"{folder}: no {name} (plain or .gz)")


def _load(path: Path) -> dict[str, Any]:
    try:
        with open_text(path) as f:
            text = f.read()
    except READ_ERRORS as exc:
        raise read_error(path, None, exc) from exc
    try:
        # NaN is let through here so that `_label` can name the annotator and instance it labels
        data = json.loads(text, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from exc
    except DuplicateKey as exc:
        raise BadInput(f"{path}: not JSON we accept: {exc}") from exc
    except (RecursionError, ValueError):  # absurd nesting, huge integers: loads_json words them
        data = loads_json(text, str(path))
    if not isinstance(data, dict):
        raise BadInput(f"{path}: expected an object {{annotator: {{instance: label}}}}")
    if not data:
        raise BadInput(f"{path}: no annotators")
    return data


def _label(path: Path, annotator: str, instance: str, value: Any) -> tuple[float | None, str]:
    where = f"{path}: field {f'{annotator}.{instance}'!r}"
    if isinstance(value, bool) or value is None or not isinstance(value, str | int | float):
        raise BadInput(f"{where}: expected a text or number label, got {json.dumps(value)[:40]}")
    if isinstance(value, str):
        if not value.strip():
            raise BadInput(f"{where}: empty label")
        return None, value
    if value != value or value in (float("inf"), float("-inf")):
        raise BadInput(f"{where}: label is not a finite number")
    return float(value), str(value)


def group_of(instance_id: str) -> str:
    """The text or image an instance belongs to: the id's prefix before the first `__`."""
    return instance_id.split("__", 1)[0]


def parse_alttest(folder: Path) -> ParsedDataset:
    """Read one alt-test panel folder into records; nothing is written."""
    if not folder.is_dir():
        raise BadInput(f"{folder}: not a folder (expected one holding {HUMAN_FILE} and {LLM_FILE})")
    human_path, llm_path = _locate(folder, HUMAN_FILE), _locate(folder, LLM_FILE)
    items: dict[str, ItemRecord] = {}
    annotators: list[AnnotatorRecord] = []
    labels: list[LabelRecord] = []
    counts: dict[str, int] = {}
    for path, kind, group in ((human_path, "human", HUMAN_GROUP), (llm_path, "llm", LLM_GROUP)):
        for name, by_instance in _load(path).items():
            if not name.strip():
                raise BadInput(f"{path}: an annotator id is empty")
            check_text(f"{path}: annotator {name!a}", name)
            if name in counts:
                raise BadInput(f"{path}: field {name!r}: annotator also appears in {human_path.name}")
            if not isinstance(by_instance, dict):
                raise BadInput(f"{path}: field {name!r}: expected an object {{instance: label}}")
            check_value(f"{path}: field {name!r}", by_instance)
            annotators.append(AnnotatorRecord(name, kind, group))
            counts[name] = len(by_instance)
            for instance, value in by_instance.items():
                if not instance.strip():
                    raise BadInput(f"{path}: field {name!r}: an instance id is empty")
                num, text = _label(path, name, instance, value)
                if instance not in items:
                    items[instance] = ItemRecord(
                        external_id=instance, position=len(items), group_key=group_of(instance)
                    )
                labels.append(LabelRecord(instance, name, "", num, text))
    if not labels:
        raise BadInput(f"{human_path}: no labels")
    return ParsedDataset(
        kind="alttest",
        source_hash=sha256_files(human_path, llm_path),
        items=list(items.values()),
        annotators=annotators,
        labels=labels,
        meta={
            "files": [display_path(human_path), display_path(llm_path)],
            "format": "alttest",
            "humans": sum(a.kind == "human" for a in annotators),
            "llms": sum(a.kind == "llm" for a in annotators),
        },
    )


# ---------------------------------------------------------------- attaching a panel's LLMs to a dataset


def item_and_dimension(instance_id: str) -> tuple[str, str]:
    """Where an alt-test instance lands in an existing dataset: ``<text>__<unit>__<dimension>``
    names item ``<text>/<unit>`` (SummEval's ``<article id>/<system id>``) and that dimension;
    ``<text>__<dimension>`` names item ``<text>``; a bare id names the item with no dimension."""
    parts = instance_id.split("__")
    if len(parts) >= 3:
        return "/".join(parts[:-1]), parts[-1]
    if len(parts) == 2:
        return parts[0], parts[1]
    return instance_id, ""


@dataclass(frozen=True)
class LLMAnnotations:
    """A panel's LLM labels, addressed to (item external id, dimension)."""

    source_hash: str
    file: str
    annotators: list[AnnotatorRecord]
    labels: list[LabelRecord]
    instances: dict[str, str]  # item external id -> one instance id naming it (for messages)


def parse_llm_annotations(folder: Path) -> LLMAnnotations:
    """Read only ``llm_annotations.json`` of a panel folder (the humans are already in the target
    dataset); nothing is written."""
    if not folder.is_dir():
        raise BadInput(f"{folder}: not a folder (expected one holding {LLM_FILE})")
    path = _locate(folder, LLM_FILE)
    annotators: list[AnnotatorRecord] = []
    labels: list[LabelRecord] = []
    instances: dict[str, str] = {}
    for name, by_instance in _load(path).items():
        if not name.strip():
            raise BadInput(f"{path}: an annotator id is empty")
        if not isinstance(by_instance, dict):
            raise BadInput(f"{path}: field {name!r}: expected an object {{instance: label}}")
        annotators.append(AnnotatorRecord(name, "llm", LLM_GROUP))
        for instance, value in by_instance.items():
            if not instance.strip():
                raise BadInput(f"{path}: field {name!r}: an instance id is empty")
            num, text = _label(path, name, instance, value)
            item, dimension = item_and_dimension(instance)
            instances.setdefault(item, instance)
            labels.append(LabelRecord(item, name, dimension, num, text))
    if not labels:
        raise BadInput(f"{path}: no labels")
    return LLMAnnotations(sha256_files(path), str(path), annotators, labels, instances)
