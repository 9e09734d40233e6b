"""How many labels does a queue need before the certification state is decided? Real SummEval
expert ratings fed through the queue API, order by order (issue 32 §5).

The panel: the alt-test release of SummEval (`../shared/data/alttest/summeval`), one dimension's
1,600 summaries, the three experts' real ratings and six real LLMs' ratings (imported as the
stored judges). Each run makes a queue of `--items` summaries in one order (random, stratified,
disagreement first, or from a `plan allocate` allocation) with three annotators, who take turns
asking the queue API for their next item (`store.annotation.next_slot`) and answer with the real
rating of "their" expert (`store.annotation.submit`), until the queue is empty. Then, for each
judge, the labels given when its state was first decided (`metrics.sequential.certification_state`
on the units completed so far, in completion order; the anytime rule is monotone, so the first
decided prefix is found by bisection) and the state itself, against the fixed-sample alt-test on
every item of the run labelled (`metrics.validation.alt_test`, the "label everything" answer).

Printed: per order, the median (min–max over runs) labels to the first decision per judge, the
share of judge-runs decided before the queue ran out, and the decisions that disagree with the
label-everything answer (certified where it fails, or fails where it passes).

Run: ``.venv/bin/python benchmarks/study_annotation.py [--items 300] [--runs 5] [--dimension coherence]``
(about a minute per run on a loaded 2-core machine; it copies the imported panel once per run).
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "alttest" / "summeval"
EXPERTS = ("e0", "e1", "e2")
ORDERS = ("random", "stratified", "disagreement", "allocation")


def _panel(dimension: str, out: Path) -> dict[str, dict[str, int]]:
    """The dimension's instances as an alt-test panel folder; returns expert -> {instance: rating}."""
    with gzip.open(SHARED / "human_annotations.json.gz", "rt") as f:
        humans = json.load(f)
    with gzip.open(SHARED / "llm_annotations.json.gz", "rt") as f:
        llms = json.load(f)
    keep = lambda d: {k: v for k, v in d.items() if k.endswith(f"__{dimension}")}  # noqa: E731
    out.mkdir(parents=True, exist_ok=True)
    (out / "human_annotations.json").write_text(json.dumps({h: keep(v) for h, v in humans.items()}))
    (out / "llm_annotations.json").write_text(json.dumps({j: keep(v) for j, v in llms.items()}))
    return {h: keep(humans[h]) for h in EXPERTS}


def _base(folder: Path, dimension: str) -> tuple[Path, dict[str, dict[str, int]]]:
    from tests.helpers import cli

    ratings = _panel(dimension, folder / "panel")
    db = folder / "base.db"
    url = f"sqlite:///{db}"
    assert cli("db", "upgrade", db=url).code == 0
    r = cli("data", "import-alttest", str(folder / "panel"), "--name", "se", db=url)
    assert r.code == 0, r.stderr
    return db, ratings


def _run(
    base: Path, folder: Path, ratings: dict[str, dict[str, int]], order: str, n: int, seed: int
) -> dict[str, Any]:
    from sqlalchemy import text

    from judgepanel.annotate import certify
    from judgepanel.annotate.queues import CreateOptions, create, invite
    from judgepanel.store import annotation as store
    from judgepanel.store.engine import make_engine
    from tests.helpers import cli

    db = folder / f"run-{order}-{seed}.db"
    shutil.copyfile(base, db)
    url = f"sqlite:///{db}"
    eng = make_engine(url)
    names = [f"q{k}" for k in range(3)]
    if order == "allocation":
        # each of three new annotators labels n of the 1,600 items (as many labels as the other orders), stratified on expert e0.s
        # ratings (the primary); the units are those items, the seats the assignments
        r = cli("plan", "allocate", "--dataset", "se", "--primary", "e0", "--annotators", ",".join(names),
                "--coverage", str(round(n / 1600, 4)), "--design", "strat", "--seed", str(seed),
                "--out", str(folder / f"al-{seed}"), "--name", "al", db=url)  # fmt: skip
        assert r.code == 0, r.stderr
        opts = CreateOptions(
            name="q", dataset="se", allocation="al", access="assigned", scorer="neg-rmse", seed=seed
        )
    else:
        opts = CreateOptions(
            name="q", dataset="se", items=n, order=order, per_item=3, scorer="neg-rmse", seed=seed
        )
    create(eng, opts)
    expert_of = dict(zip(names, EXPERTS, strict=True))
    members = []
    for name in names:
        token = invite(eng, "q", name, "http://127.0.0.1")["token"]
        members.append(store.member_by_token(eng, "q", store.token_hash(token)))
    with eng.connect() as c:
        external = dict(c.execute(text("SELECT id, external_id FROM item")).all())
    labels_at_completion: list[int] = []
    given = 0
    active = list(members)
    while active:
        for m in list(active):
            slot = store.next_slot(eng, m)
            if slot is None:
                active.remove(m)
                continue
            with eng.connect() as c:
                item = c.execute(
                    text(
                        "SELECT u.item_id FROM annotation_slot s JOIN annotation_unit u ON u.id = s.unit_id WHERE s.id = :s"
                    ),
                    {"s": slot},
                ).scalar()
            done = store.submit(eng, m, slot, value=ratings[expert_of[m.name]][external[item]])
            given += 1
            if done.completed_unit:
                labels_at_completion.append(given)
    result = _decisions(eng, certify, labels_at_completion)
    result["labels_total"] = given
    eng.dispose()
    db.unlink()
    return result


def _decisions(eng: Any, certify: Any, labels_at_completion: list[int]) -> dict[str, Any]:
    from judgepanel.metrics.sequential import advantages, certification_state
    from judgepanel.metrics.validation import alt_test, make_scorer
    from judgepanel.store import annotation_read as read

    panel = read.queue_panel(eng, "q")
    humans = sorted(n for n, d in panel.humans.items() if d)
    judges = sorted(panel.judges)
    units = list(panel.units)
    h, j, _texts = certify._encode(panel, humans, judges, units, True)
    row = {u: r for r, u in enumerate(units)}
    done = [u for _, u in sorted((t, u) for u, t in panel.completed.items())]
    idx = np.array([row[u] for u in done], dtype=np.int64)
    scorer = make_scorer("neg-rmse")
    out: dict[str, Any] = {}
    for c, judge in enumerate(judges):
        d = advantages(h[idx], j[idx, c], scorer)

        def state(k: int, d: Any = d) -> str:
            streams = [d[:k, x][~np.isnan(d[:k, x])] for x in range(len(humans))]
            return certification_state(streams, epsilon=0.2, q=0.05, min_instances=30)

        final = state(len(done))
        first = None
        if final != "undecided":
            lo, hi = 1, len(done)
            while lo < hi:
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if state(mid) != "undecided" else (mid + 1, hi)
            first = labels_at_completion[lo - 1]
        fixed = alt_test(h, j[:, c], epsilon=0.2, scorer=scorer, q=0.05, min_instances=30)
        out[judge] = {"state": final, "labels": first, "everything": "passes" if fixed.passed else "fails"}
    return {"judges": out}


def _everything(ratings: dict[str, dict[str, int]], dimension: str) -> dict[str, str]:
    """The fixed-sample alt-test of each judge on every summary of the dimension (all 1,600, every
    expert): what labelling everything would say."""
    from judgepanel.metrics.validation import alt_test, make_scorer

    with gzip.open(SHARED / "llm_annotations.json.gz", "rt") as f:
        llms = json.load(f)
    keys = sorted(ratings[EXPERTS[0]])
    h = np.array([[ratings[e][k] for e in EXPERTS] for k in keys], dtype=float)
    out = {}
    for judge, labels in sorted(llms.items()):
        j = np.array([labels[k] for k in keys], dtype=float)
        res = alt_test(h, j, epsilon=0.2, scorer=make_scorer("neg-rmse"), q=0.05, min_instances=30)
        out[judge] = "passes" if res.passed else "fails"
    return out


def _wrong(state: str, reference: str) -> bool:
    return (state == "certified" and reference == "fails") or (state == "fails" and reference == "passes")


def summarise(table: dict[str, list[dict[str, Any]]], truth: dict[str, str], header: str) -> None:
    """The two Markdown tables of docs/annotation.md from the runs' results."""
    print(f"\n{header}")
    print(
        "| order | labels in the queue | labels to the first decision, median (min–max) | judge-runs decided "
        "| certified / fails | wrong against all 1,600 labelled | wrong against the run's items labelled |"
    )
    print("|---|---|---|---|---|---|---|")
    for order, runs in table.items():
        cells = [(r["judges"][j], j) for r in runs for j in r["judges"]]
        firsts = [v["labels"] for v, _ in cells if v["labels"] is not None]
        decided = sum(v["state"] != "undecided" for v, _ in cells)
        cert = sum(v["state"] == "certified" for v, _ in cells)
        wrong_all = sum(_wrong(v["state"], truth[j]) for v, j in cells)
        wrong_run = sum(_wrong(v["state"], v["everything"]) for v, _ in cells)
        totals = "–".join(map(str, sorted({r["labels_total"] for r in runs})))
        span = f"{statistics.median(firsts):.0f} ({min(firsts)}–{max(firsts)})" if firsts else "—"
        print(
            f"| {order} | {totals} | {span} | {decided}/{len(cells)} | {cert} / {decided - cert} "
            f"| {wrong_all} | {wrong_run} |"
        )
    print("\n| judge | all 1,600 labelled | " + " | ".join(table) + " |")
    print("|---|---|" + "---|" * len(table))
    for j in sorted(truth):
        row = []
        for runs in table.values():
            vs = [r["judges"][j] for r in runs]
            counts = ", ".join(
                f"{st} {sum(v['state'] == st for v in vs)}" for st in sorted({v["state"] for v in vs})
            )
            labels = [v["labels"] for v in vs if v["labels"] is not None]
            row.append(counts + (f" (median {statistics.median(labels):.0f} labels)" if labels else ""))
        print(f"| {j} | {truth[j]} | " + " | ".join(row) + " |")


def _from_log(path: Path) -> tuple[dict[str, list[dict[str, Any]]], dict[str, str], str]:
    table: dict[str, list[dict[str, Any]]] = defaultdict(list)
    truth: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.startswith("# labelling every summary"):
            truth = json.loads(line.split(":", 1)[1])
        elif line.startswith("# {"):
            run = json.loads(line[2:])
            table[run["order"]].append(run)
    runs = {len(v) for v in table.values()}
    return (
        table,
        truth,
        f"{len(next(iter(table.values())))} runs per order (from {path.name})" if runs else "",
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=300)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--dimension", default="coherence")
    ap.add_argument("--orders", default=",".join(ORDERS))
    ap.add_argument("--from-log", type=Path, help="summarise the runs a previous output logged")
    args = ap.parse_args()
    if args.from_log is not None:
        summarise(*_from_log(args.from_log))
        return
    if not SHARED.is_dir():
        raise SystemExit(f"no shared data at {SHARED}")
    folder = Path(tempfile.mkdtemp(prefix="jp-annot-study-"))
    try:
        base, ratings = _base(folder, args.dimension)
        truth = _everything(ratings, args.dimension)
        print("# labelling every summary (fixed-sample alt-test, 1,600 × 3):", json.dumps(truth), flush=True)
        table: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for order in args.orders.split(","):
            for seed in range(args.runs):
                t0 = time.perf_counter()
                res = _run(base, folder, ratings, order, args.items, seed)
                table[order].append(res)
                print("#", json.dumps({"order": order, "seed": seed, **res}), flush=True)
                print(
                    f"# {order} seed {seed}: {time.perf_counter() - t0:.0f} s, {res['labels_total']} labels",
                    flush=True,
                )
        header = f"{args.dimension}, {args.items} items a run, {args.runs} runs, ε = 0.2, q = 0.05, neg-rmse"
        summarise(table, truth, header)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
