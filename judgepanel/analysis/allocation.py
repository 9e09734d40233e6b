"""Re-annotation allocation (`plan allocate`): which secondary annotator labels which items.

Read the primary annotator's labels (the strata) and any labels the secondaries already gave from
the store, draw the seeded allocation with `metrics.design.allocate`, store it (`allocation` /
`allocation_item`) and write one CSV per annotator. Everything happens in one transaction and the
files are written inside it, so a failure to write them stores nothing.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from judgepanel.errors import BadInput
from judgepanel.metrics.design import DESIGNS, allocate
from judgepanel.store import validation as store
from judgepanel.store.engine import session_scope
from judgepanel.store.models import Allocation, Dataset


@dataclass(frozen=True)
class AllocationSummary:
    name: str
    dataset: str
    design: str
    coverage: float
    seed: int
    primary: str
    n_items: int
    items_per_annotator: int
    assigned: dict[str, int]
    overlaps: dict[str, dict[str, int]]
    files: list[str]
    unchanged: bool

    def as_dict(self) -> dict[str, Any]:
        n = self.n_items
        return {
            "name": self.name,
            "dataset": self.dataset,
            "design": self.design,
            "seed": self.seed,
            "primary": self.primary,
            "n_items": n,
            "items_per_annotator": self.items_per_annotator,
            "coverage": {a: k / n for a, k in self.assigned.items()},
            "assigned": self.assigned,
            "overlaps": self.overlaps,
            "with_primary": dict(self.assigned),
            "expected_overlap": {"secondary_pair": self.coverage**2 * n, "with_primary": self.coverage * n},
            "files": self.files,
            "unchanged": self.unchanged,
        }


_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _file_names(annotators: Sequence[str]) -> dict[str, str]:
    names = {a: (_SAFE.sub("_", a).strip("._") or "annotator") + ".csv" for a in annotators}
    if len(set(names.values())) != len(names):
        raise BadInput("two annotator names map to the same file name; rename one")
    return names


def _write_csvs(s: Session, out_dir: Path, lists: dict[str, list[int]], files: dict[str, str]) -> list[str]:
    info = store.item_rows(s, [i for items in lists.values() for i in items])
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for ann, items in lists.items():
            path = out_dir / files[ann]
            with path.open("w", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                w.writerow(["position", "item_id", "group", "system", "input", "output"])
                for pos, i in enumerate(items, start=1):
                    w.writerow([pos, *info[i]])
            written.append(str(path))
    except OSError as exc:
        raise BadInput(f"cannot write assignment files to {out_dir}: {exc.strerror or exc}") from exc
    return written


def _summary(s: Session, alloc: Allocation, ds: Dataset, out_dir: Path, unchanged: bool) -> AllocationSummary:
    annotators: list[str] = list(alloc.params["annotators"])
    lists = store.allocation_lists(s, alloc)
    for a in annotators:
        lists.setdefault(a, [])
    sets = {a: set(lists[a]) for a in annotators}
    overlaps = {a: {b: len(sets[a] & sets[b]) for b in annotators if b != a} for a in annotators}
    files = _write_csvs(s, out_dir, {a: lists[a] for a in annotators}, _file_names(annotators))
    return AllocationSummary(
        name=alloc.name,
        dataset=ds.name,
        design=alloc.design,
        coverage=alloc.coverage,
        seed=alloc.seed,
        primary=alloc.params["primary"],
        n_items=int(alloc.params["n_items"]),
        items_per_annotator=int(alloc.params["items_per_annotator"]),
        assigned={a: len(lists[a]) for a in annotators},
        overlaps=overlaps,
        files=files,
        unchanged=unchanged,
    )


def create_allocation(
    engine: Engine,
    *,
    dataset: str,
    name: str,
    primary: str,
    annotators: Sequence[str],
    coverage: float,
    design: str,
    seed: int,
    out_dir: Path,
    dimension: str | None = None,
    replace: bool = False,
) -> AllocationSummary:
    """Allocate the items the primary annotator labelled to ``annotators`` (see
    ``metrics.design``), store the assignment under ``name`` and write ``out_dir/<annotator>.csv``.
    The same name with the same parameters changes nothing (the files are written again).
    Files are written inside the transaction, so a failure to write them stores nothing."""
    if design not in DESIGNS:
        raise BadInput(f"unknown design {design!r}; use one of {', '.join(DESIGNS)}")
    if not name.strip():
        raise BadInput("an allocation name must not be empty")
    secondaries = [a.strip() for a in annotators]
    if not secondaries or any(not a for a in secondaries):
        raise BadInput("--annotators takes a comma-separated list of names")
    if len(set(secondaries)) != len(secondaries):
        raise BadInput("an annotator is named twice in --annotators")
    if primary in secondaries:
        raise BadInput(f"the primary annotator {primary!r} cannot also be a secondary")
    if not 0.0 < coverage <= 1.0:
        raise BadInput(f"coverage must be in (0, 1], got {coverage}")
    _file_names(secondaries)
    with session_scope(engine) as s:
        ds, dim = store.dataset_dimension(s, dataset, dimension)
        params = {
            "primary": primary,
            "annotators": secondaries,
            "dimension": dim,
        }
        prev = store.allocation_by_name(s, name)
        if prev is not None:
            same = (prev.dataset_id, prev.design, prev.coverage, prev.seed) == (
                ds.id,
                design,
                coverage,
                seed,
            ) and all(prev.params.get(k) == v for k, v in params.items())
            if same:
                return _summary(s, prev, ds, out_dir, unchanged=True)
            if not replace:
                raise BadInput(
                    f"allocation {name!r} exists with other parameters; pass --replace or choose another name"
                )
            store.delete_allocation(s, prev)

        labels = store.primary_labels(s, ds, dim, primary)
        item_ids = [i for i, _, _ in labels]
        values = [_label_key(v, t) for _, v, t in labels]
        # strata in a stable order: numbers by value, texts alphabetically
        numeric = all(v is not None for _, v, _ in labels)
        distinct = sorted(set(values), key=(lambda x: float(x)) if numeric else None)
        code = {v: c for c, v in enumerate(distinct)}
        strata = np.array([code[v] for v in values], dtype=np.int64)
        revealed = _revealed(store.secondary_labels(s, ds, dim, secondaries), secondaries, item_ids, code)
        result = allocate(strata, len(secondaries), coverage, design, seed, revealed=revealed)
        assignments = {
            a: [item_ids[int(i)] for i in result.order[t] if result.assigned[t, i]]
            for t, a in enumerate(secondaries)
        }
        alloc = store.save_allocation(
            s,
            name=name,
            dataset=ds,
            design=design,
            coverage=coverage,
            seed=seed,
            params={**params, "n_items": len(item_ids), "items_per_annotator": result.items_per_annotator},
            assignments=assignments,
        )
        return _summary(s, alloc, ds, out_dir, unchanged=False)


def _label_key(num: float | None, text: str | None) -> str:
    """Numbers by value ("2" and "2.0" are one stratum), other labels by their text."""
    return f"{num:.15g}" if num is not None else str(text)


def _revealed(
    given: Mapping[str, Sequence[store.LabelRow]] | None,
    secondaries: Sequence[str],
    item_ids: Sequence[int],
    code: dict[str, int],
) -> np.ndarray[Any, np.dtype[np.int64]] | None:
    """Labels the secondaries already gave (if they are annotators of the dataset), as codes in the
    primary's code space (new values get new codes); −1 where unknown. Seq-Refined reads them."""
    if given is None:
        return None
    pos = {i: r for r, i in enumerate(item_ids)}
    out = np.full((len(item_ids), len(secondaries)), -1, dtype=np.int64)
    for t, a in enumerate(secondaries):
        for item, v, txt in given.get(a, ()):
            if item in pos:
                key = _label_key(v, txt)
                out[pos[item], t] = code.setdefault(key, len(code))
    return out
