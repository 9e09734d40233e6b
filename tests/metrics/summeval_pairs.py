"""The shared SummEval file as a 1000-pair rating matrix, built through the real CLI (import, pairs,
read-only query), independently of `store.matrices`, for tests that cross-check truth inference."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers import built_once, cli, copy_db, shared_root

SUMMEVAL = "summeval/model_annotations.reconstructed.jsonl.gz"
ARTICLES = "summeval/articles.jsonl.gz"
SAMPLE = 1000
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


def world(shared: Path, tmp_path_factory: pytest.TempPathFactory, folder: str) -> str:
    """A private copy (in a new temporary `folder`) of the shared SummEval file imported with its
    articles as dataset `summeval`, and `data pairs summeval --name p --sample 1000`: the import
    runs once per test run for every module and xdist worker that asks."""

    def import_(db: str) -> None:
        assert cli("db", "upgrade", db=db).code == 0
        r = cli(
            "data", "import-summeval", str(shared / SUMMEVAL), "--articles", str(shared / ARTICLES), db=db
        )
        assert r.code == 0, r.stderr
        assert cli("data", "pairs", "summeval", "--name", "p", "--sample", str(SAMPLE), db=db).code == 0

    src = built_once(shared_root(tmp_path_factory.getbasetemp()), "summeval-pairs", import_)
    return copy_db(src, tmp_path_factory.mktemp(folder), "summeval.db")


def build(shared: Path, tmp_path_factory: pytest.TempPathFactory, folder: str) -> PairMatrix:
    """The rating matrix of pair set `p` (`SAMPLE` pairs) on a private copy of `world`."""
    db = world(shared, tmp_path_factory, folder)
    sample = SAMPLE
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
