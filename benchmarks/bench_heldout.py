"""The held-out battery on real SummEval: every method, K = 10 random folds, 1,000 pairs.

Builds a throwaway SQLite database from ``/work/shared/data`` (or ``$JUDGEPANEL_SHARED_DATA``):
SummEval imported, the alt-test panel's six LLMs attached with ``--into``, pair set ``se1000``
(``--sample 1000``, seed 42). Not timed: the import. Timed: reading the pair matrix and the score
differences from the store (humans + all judges), and ``heldout_battery`` with the three
baselines and the six fitted models of ``--method all`` on 10 splits of 800 train / 200 test
units, 1,000 bootstrap replicates. Prints wall and CPU seconds (on a shared machine the wall time
is the CPU time plus waiting) and the expert group's accuracies.

Then the two inner-CV families on the same splits, as a ratio measured in the same run:
``groups-joint`` (D + 5 features per rater group) against ``dims-joint`` (D + 3 per rater), CPU
seconds each.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from sqlalchemy import create_engine

from judgepanel.datasets.alttest import parse_llm_annotations
from judgepanel.datasets.summeval import parse_summeval
from judgepanel.metrics.prediction import DEFAULT_MODELS, heldout_battery
from judgepanel.store.imports import attach_llm_annotations, import_parsed
from judgepanel.store.matrices import pair_matrix
from judgepanel.store.migrate import upgrade
from judgepanel.store.pair_scores import pair_dimension_differences, pair_score_differences
from judgepanel.store.queries import create_pair_set

SHARED = Path(os.environ.get("JUDGEPANEL_SHARED_DATA", "/work/shared/data"))
FOLDS, TRAIN, PAIRS = 10, 800, 1000


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        engine = create_engine(url)
        upgrade(engine)
        start = time.perf_counter()
        import_parsed(
            engine,
            "summeval",
            parse_summeval(
                SHARED / "summeval/model_annotations.reconstructed.jsonl.gz",
                SHARED / "summeval/articles.jsonl.gz",
            ),
        )
        attach_llm_annotations(engine, "summeval", parse_llm_annotations(SHARED / "alttest/summeval"))
        create_pair_set(engine, "summeval", "se1000", sample=PAIRS)
        print(f"setup (not timed): {time.perf_counter() - start:.1f} s")

        start = time.perf_counter()
        matrix = pair_matrix(engine, "se1000", with_judges=["all"])
        diffs = pair_score_differences(engine, "se1000", matrix)
        loaded = time.perf_counter() - start
        start, cpu = time.perf_counter(), time.process_time()
        battery = heldout_battery(
            matrix, diffs, train=TRAIN, methods=DEFAULT_MODELS, folds=FOLDS, n_bootstrap=1000
        )
        fitted, cpu = time.perf_counter() - start, time.process_time() - cpu
        dims = pair_dimension_differences(engine, "se1000", matrix)[0]
        engine.dispose()
    inner_cpu: dict[str, float] = {}
    for method in ("dims-joint", "groups-joint"):
        t0 = time.process_time()
        heldout_battery(
            matrix,
            diffs,
            train=TRAIN,
            methods=(method,),
            folds=FOLDS,
            n_bootstrap=1000,
            dimension_differences=dims,
        )
        inner_cpu[method] = time.process_time() - t0
    fits = sum(len(f.fits) for f in battery.folds)
    print(f"{matrix.n_units} pairs × {matrix.n_raters} raters, {FOLDS} folds, {len(battery.methods)} methods")
    print(
        f"load {loaded:.2f} s; battery {fitted:.2f} s wall, {cpu:.2f} s CPU "
        f"({fits} logistic fits, {cpu / FOLDS:.2f} CPU s per fold; wall > CPU means a busy machine)"
    )
    for mt in battery.methods:
        value, lo, hi = battery.delta[mt]["expert"]
        print(
            f"  {mt:14s} expert accuracy {battery.accuracy(mt, 'expert'):.3f}  Δ vs cluster {value:+.3f} [{lo:+.3f}, {hi:+.3f}]"
        )

    ref = inner_cpu["dims-joint"]
    print(
        f"inner-CV families, {FOLDS} folds, baselines included: dims-joint {ref:.1f} CPU s (reference), "
        f"groups-joint {inner_cpu['groups-joint']:.1f} CPU s = {inner_cpu['groups-joint'] / ref:.2f}× the reference"
    )


if __name__ == "__main__":
    main()
