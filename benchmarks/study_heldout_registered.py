"""Issue 30 §5: the registered held-out comparisons on sel1000, split by pairs and by articles.

The table "Predicting a held-out expert: registered targets" of docs/validation.md comes from
this script. It builds sel1000 as the guides do (SummEval with the six alt-test LLMs attached,
`data pairs --sample 1000`, seed 42), then runs ``metrics heldout``'s library calls —
``heldout_battery`` with the ``groups-*`` models (humans-only, joint, judges-only), 10 random splits
of 800/200 pairs (``--split-by items``) or of 80/20 articles (``--split-by group``), seed 0 — and
prints per design: each model's mean expert accuracy (sd over splits), the cross-fitted rule on the
other two experts' labels, a second expert, the ceiling band, and the three registered comparisons
with their Nadeau–Bengio intervals and verdicts (``metrics.registered``).

Run: ``.venv/bin/python -m benchmarks.study_heldout_registered [--seed 0] [--family groups]``
(about 5 CPU minutes: two designs × 10 splits × 14 raters × 3 models with the inner CV).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import create_engine

from judgepanel.datasets.alttest import parse_llm_annotations
from judgepanel.datasets.summeval import parse_summeval
from judgepanel.metrics.matrix import RatingMatrix
from judgepanel.metrics.prediction import heldout_battery
from judgepanel.metrics.registered import group_ceilings, registered_comparisons
from judgepanel.store.imports import attach_llm_annotations, import_parsed
from judgepanel.store.matrices import pair_matrix, unit_groups
from judgepanel.store.migrate import upgrade
from judgepanel.store.pair_scores import pair_dimension_differences, pair_score_differences
from judgepanel.store.queries import create_pair_set

SHARED = Path(os.environ.get("JUDGEPANEL_SHARED_DATA", "/work/shared/data"))


def load() -> tuple[RatingMatrix, np.ndarray, np.ndarray, list[str | None]]:
    """sel1000 with every judge: the matrix, score and dimension differences, article per pair."""
    with tempfile.TemporaryDirectory() as tmp:
        engine = create_engine(f"sqlite:///{tmp}/study.db")
        upgrade(engine)
        import_parsed(
            engine,
            "summeval-llm",
            parse_summeval(
                SHARED / "summeval/model_annotations.reconstructed.jsonl.gz",
                SHARED / "summeval/articles.jsonl.gz",
            ),
        )
        attach_llm_annotations(engine, "summeval-llm", parse_llm_annotations(SHARED / "alttest/summeval"))
        create_pair_set(engine, "summeval-llm", "sel1000", sample=1000)
        m = pair_matrix(engine, "sel1000", with_judges=["all"])
        diffs = pair_score_differences(engine, "sel1000", m)
        dims = pair_dimension_differences(engine, "sel1000", m)[0]
        keys = unit_groups(engine, m)
        engine.dispose()
    return m, diffs, dims, keys


def _ci(c: dict[str, Any]) -> str:
    lo, hi = c["ci"]
    return f"{c['value']:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def run(design: str, family: str, seed: int, data: tuple[Any, ...]) -> dict[str, Any]:
    m, diffs, dims, keys = data
    methods = tuple(f"{family}-{c}" for c in ("humans", "joint", "judges"))
    t0 = time.process_time()
    bat = heldout_battery(
        m,
        diffs,
        train=800,
        methods=methods,
        folds=10,
        seed=seed,
        n_bootstrap=200,
        dimension_differences=dims,
        split_by=design,
        unit_groups=keys,
    )
    reg = registered_comparisons(bat, m, seed=seed).as_dict()
    d = bat.as_dict()
    return {"battery": bat, "dict": d, "registered": reg, "cpu": time.process_time() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--family", default="groups")
    args = ap.parse_args()
    data = load()
    m = data[0]
    band = group_ceilings(m)["expert"]
    assert band is not None
    runs = {design: run(design, args.family, args.seed, data) for design in ("items", "group")}
    fam = args.family
    rows: list[tuple[str, ...]] = []

    def acc(design: str, method: str) -> str:
        spread = runs[design]["dict"]["folds"]["accuracy"][method]["expert"]
        return f"{spread['mean']:.3f} ({spread['sd']:.3f})"

    for method in ("cluster", f"{fam}-humans", f"{fam}-joint", f"{fam}-judges"):
        rows.append((f"{method} accuracy (sd)", *(acc(d, method) for d in runs)))
    for key, name in (
        ("peers", "rule on the other two experts' labels"),
        ("second_rater", "a second expert"),
    ):
        rows.append(
            (name, *(f"{runs[d]['registered']['groups']['expert']['accuracy'][key]:.3f}" for d in runs))
        )
    rows.append(("ceiling band (all 1,000 pairs)", *([f"[{band.low:.3f}, {band.high:.3f}]"] * 2)))
    for key, name in (
        ("model_vs_peers", f"(a) {fam}-joint − other experts' rule"),
        ("judges_vs_second_rater", f"(b) {fam}-judges − a second expert (margin −0.02)"),
    ):
        rows.append(
            (
                name,
                *(
                    f"{_ci(runs[d]['registered']['groups']['expert'][key])}: "
                    f"{runs[d]['registered']['groups']['expert'][key]['verdict']}"
                    for d in runs
                ),
            )
        )
    for key, name in (
        ("ece", f"(c) ECE of {fam}-joint (≤ 0.05)"),
        ("log_loss_vs_humans", "(c) log loss − humans-only (≤ −0.02)"),
    ):
        rows.append(
            (
                name,
                *(
                    f"{_ci(runs[d]['registered']['groups']['expert']['calibration'][key])}: "
                    f"{runs[d]['registered']['groups']['expert']['calibration'][key]['verdict']}"
                    for d in runs
                ),
            )
        )
    rows.append(
        (
            "(c) calibration verdict",
            *(runs[d]["registered"]["groups"]["expert"]["calibration"]["verdict"] for d in runs),
        )
    )
    rows.append(
        ("test articles per split (mean)", *(f"{np.mean(runs[d]['battery'].test_groups):.1f}" for d in runs))
    )
    rows.append(("CPU seconds", *(f"{runs[d]['cpu']:.0f}" for d in runs)))
    print(f"expert group, sel1000, 10 splits, seed {args.seed}; intervals Nadeau–Bengio 95 %\n")
    print("| | split by pairs (`--split-by items`) | split by articles (`--split-by group`) |")
    print("|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
