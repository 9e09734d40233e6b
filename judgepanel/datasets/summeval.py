"""SummEval (Fabbri et al., TACL 2021) annotations: 16 systems' summaries of 100 CNN/DM articles.

Each row has 3 expert and (for the abstractive systems) 5 crowd ratings of coherence, consistency,
fluency and relevance on 1–5. Items are grouped by article; annotators are `expert_1..3` (group
`expert`) and `turker_1..5` (group `crowd`). A null annotation list is skipped and counted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgepanel.datasets.records import (
    AnnotatorRecord,
    ItemRecord,
    LabelRecord,
    ParsedDataset,
    check_row,
    display_path,
    iter_lines,
    loads_json,
    sha256_files,
)
from judgepanel.errors import BadInput

DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")
GROUPS = {"expert_annotations": ("expert", 3), "turker_annotations": ("turker", 5)}
GROUP_NAMES = {"expert": "expert", "turker": "crowd"}


def _fail(path: Path, line: int, field: str, why: str) -> BadInput:
    return BadInput(f"{path}:{line}: field {field!r}: {why}")


def read_articles(path: Path) -> dict[str, str]:
    texts: dict[str, str] = {}
    for n, line in iter_lines(path):
        row = loads_json(line, f"{path}:{n}")
        if not isinstance(row, dict):
            raise BadInput(f"{path}:{n}: expected a JSON object")
        check_row(f"{path}:{n}", row)
        for key in ("id", "text"):
            if not isinstance(row.get(key), str):
                raise _fail(path, n, key, "missing or not a string")
        texts[row["id"]] = row["text"]
    return texts


def _annotations(path: Path, n: int, key: str, value: Any, size: int) -> list[dict[str, int]] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != size:
        raise _fail(path, n, key, f"expected a list of {size} rating objects or null")
    out = []
    for i, ann in enumerate(value):
        if not isinstance(ann, dict):
            raise _fail(path, n, f"{key}[{i}]", "expected an object of dimension scores")
        scores: dict[str, int] = {}
        for dim in DIMENSIONS:
            v = ann.get(dim)
            if isinstance(v, bool) or not isinstance(v, int | float) or not 1 <= v <= 5:
                raise _fail(path, n, f"{key}[{i}].{dim}", f"expected a score 1..5, got {v!r}")
            scores[dim] = int(v) if float(v).is_integer() else v  # type: ignore[assignment]
        out.append(scores)
    return out


def parse_summeval(annotations: Path, articles: Path | None = None) -> ParsedDataset:
    texts = read_articles(articles) if articles else {}
    items: list[ItemRecord] = []
    labels: list[LabelRecord] = []
    skipped = {"expert_annotations_null": 0, "turker_annotations_null": 0}
    seen: set[str] = set()
    for n, line in iter_lines(annotations):
        row = loads_json(line, f"{annotations}:{n}")
        if not isinstance(row, dict):
            raise BadInput(f"{annotations}:{n}: expected a JSON object")
        check_row(f"{annotations}:{n}", row)
        for key in ("id", "model_id", "decoded"):
            if not isinstance(row.get(key), str):
                raise _fail(annotations, n, key, "missing or not a string")
        if not row["decoded"].strip():  # refused now rather than failing every job that shows it
            raise _fail(annotations, n, "decoded", "empty summary (judges need a text to judge)")
        ext = f"{row['id']}/{row['model_id']}"
        if ext in seen:
            raise _fail(annotations, n, "id", f"duplicate row for article and system {ext}")
        seen.add(ext)
        refs = row.get("references")
        items.append(
            ItemRecord(
                external_id=ext,
                position=len(items),
                group_key=row["id"],
                input=texts.get(row["id"]),
                output=row["decoded"],
                system=row["model_id"],
                meta={"filepath": row.get("filepath"), "references": refs if isinstance(refs, list) else []},
            )
        )
        for key, (prefix, size) in GROUPS.items():
            anns = _annotations(annotations, n, key, row.get(key), size)
            if anns is None:
                skipped[f"{key}_null"] += 1
                continue
            for i, scores in enumerate(anns, start=1):
                for dim, v in scores.items():
                    labels.append(LabelRecord(ext, f"{prefix}_{i}", dim, float(v), str(v)))
    if not items:
        raise BadInput(f"{annotations}: no rows")
    if articles and not any(it.input for it in items):
        raise BadInput(f"{articles}: no article id matches an annotation row")
    annotators = [AnnotatorRecord(f"expert_{i}", "human", "expert") for i in range(1, 4)] + [
        AnnotatorRecord(f"turker_{i}", "human", "crowd") for i in range(1, 6)
    ]
    paths = [annotations] + ([articles] if articles else [])
    return ParsedDataset(
        kind="summeval",
        source_hash=sha256_files(*paths),
        items=items,
        annotators=annotators,
        labels=labels,
        skipped={k: v for k, v in skipped.items() if v},
        meta={"files": [display_path(p) for p in paths], "dimensions": list(DIMENSIONS)},
    )
