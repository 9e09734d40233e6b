"""The shared SummEval file as a 1000-pair rating matrix, built through the real CLI (import, pairs,
read-only query), independently of `store.matrices`, for tests that cross-check truth inference."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from tests.helpers import cli

SUMMEVAL = "summeval/model_annotations.reconstructed.jsonl.gz"
CATEGORIES = ("A", "B", "T")


@dataclass(frozen=True)
class PairMatrix:
    db: str
    values: np.ndarray  # pairs × annotators, codes 0/1/2 for A/B/T, NaN missing
    names: list[str]
    groups: list[str]

    def long(self) -> pd.DataFrame:
        """crowd-kit's long format: task, worker, label."""
        rows = [
            (i, self.names[r], CATEGORIES[int(self.values[i, r])])
            for i, r in zip(*np.nonzero(~np.isnan(self.values)), strict=True)
        ]
        return pd.DataFrame(rows, columns=["task", "worker", "label"])


def build(shared: Path, folder: Path, sample: int = 1000) -> PairMatrix:
    db = f"sqlite:///{folder / 'summeval.db'}"
    assert cli("db", "upgrade", db=db).code == 0
    assert cli("data", "import-summeval", str(shared / SUMMEVAL), db=db).code == 0
    assert cli("data", "pairs", "summeval", "--name", "p", "--sample", str(sample), db=db).code == 0
    out = cli(
        "query",
        'select p.position, a.name, a."group" g, pl.value from pair_label pl '
        "join pair p on p.id = pl.pair_id join annotator a on a.id = pl.annotator_id",
        "--format",
        "csv",
        db=db,
    )
    assert out.code == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    names = sorted({r["name"] for r in rows})
    group = {r["name"]: r["g"] for r in rows}
    values = np.full((sample, len(names)), np.nan)
    for r in rows:
        values[int(r["position"]), names.index(r["name"])] = CATEGORIES.index(r["value"])
    return PairMatrix(db, values, names, [group[n] for n in names])
