"""Design-study simulator and judge-validation speed, measured in the same run.

1. ``simulate designs`` on its default grid (n = 500, K = 5, p = 0.85, judges 0.8/0.85/0.9,
   ρ ∈ {0.05, 0.25, 0.5}, four designs, R = 300) for L = 2 and L = 5, and on the same grid in the
   lenient setting (class shares 0.8/0.2, judges 0.92/0.45, 0.9/0.4, 0.88/0.35): wall time, the
   best of two. Then the lenient setting at R = 10 000, ρ = 0.05, Random and Strat (the size of
   the pattern test), with Strat's paired ΔFR and ΔFA.
2. The same study done one replication at a time — per replication and cell, the one-panel
   ``loo_rule`` for each judge and ``allocate`` for the design — timed on ``LOOP_REPS``
   replications and extrapolated linearly to R = 300 (every replication does the same work); the
   extrapolation is labelled as such.
3. The alternative annotator test on the two largest real panels (SummEval: 6,400 instances × 3
   experts, neg-rmse; KiloGram: 993 × 50 crowd workers, trigram cosine), from the JSON files.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks import timing
from judgepanel.metrics.design import DESIGNS, allocate
from judgepanel.metrics.simulate import SimConfig, annotate, simulate_designs
from judgepanel.metrics.validation import alt_test, loo_rule, make_scorer

LOOP_REPS = 5
LENIENT = SimConfig(prevalence=(0.8, 0.2), judges=((0.92, 0.45), (0.9, 0.4), (0.88, 0.35)))
SHARED = Path(
    os.environ.get("JUDGEPANEL_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)


def best_of(fn: Callable[[], object], repeat: int = 2) -> float:
    return timing.best_of(fn, repeat)[0]


def loop_study(cfg: SimConfig, reps: int) -> None:
    """The design study without vectorisation: one replication, one design, one judge at a time."""
    rng = np.random.default_rng(cfg.seed)
    for _ in range(reps):
        truth = rng.integers(0, cfg.classes, (1, cfg.n))
        humans = annotate(rng, truth, cfg.human_accuracy(), cfg.classes)[0].astype(float)
        judges = annotate(rng, truth, cfg.judge_accuracy(), cfg.classes)[0].astype(float)
        for j in range(judges.shape[1]):
            loo_rule(humans, judges[:, j], epsilon=cfg.epsilon)
        for rho in cfg.coverages:
            for design in cfg.designs:
                a = allocate(
                    humans[:, 0].astype(np.int64),
                    cfg.humans - 1,
                    rho,
                    design,
                    seed=int(rng.integers(1 << 30)),
                    revealed=humans[:, 1:].astype(np.int64),
                )
                sparse = humans.copy()
                sparse[:, 1:][~a.assigned.T] = np.nan
                for j in range(judges.shape[1]):
                    loo_rule(sparse, judges[:, j], epsilon=cfg.epsilon)


def _read(folder: Path, name: str) -> dict[str, dict[str, object]]:
    plain = folder / name
    if plain.exists():
        return dict(json.loads(plain.read_text()))
    with gzip.open(folder / f"{name}.gz", "rt") as f:
        return dict(json.load(f))


def panel(name: str, numeric: bool) -> tuple[np.ndarray, np.ndarray, list[str]]:
    folder = SHARED / "alttest" / name
    humans, llms = _read(folder, "human_annotations.json"), _read(folder, "llm_annotations.json")
    units = sorted({i for d in humans.values() for i in d})
    row = {u: r for r, u in enumerate(units)}
    texts = sorted({str(v) for d in [*humans.values(), *llms.values()] for v in d.values()})
    code = {t: float(c) for c, t in enumerate(texts)}
    h = np.full((len(units), len(humans)), np.nan)
    for k, d in enumerate(humans.values()):
        for i, v in d.items():
            h[row[i], k] = float(v) if numeric else code[str(v)]
    first = next(iter(llms.values()))
    j = np.array([float(first[u]) if numeric else code[str(first[u])] for u in units])
    return h, j, texts


def main() -> None:
    print("1. simulate designs, default grid (R = 300, 3 coverages × 4 designs × 3 judges)")
    for classes in (2, 5):
        cfg = SimConfig(classes=classes)
        result = simulate_designs(cfg)
        wall = best_of(lambda c=cfg: simulate_designs(c))
        low = {d: result.cell(0.05, d) for d in DESIGNS}
        print(
            f"   L = {classes}: {wall:.2f} s (best of 2); ρ = 0.05 WDR "
            + ", ".join(f"{d} {c.wdr:.3f}" for d, c in low.items())
        )
        per_rep = best_of(lambda c=cfg: loop_study(c, LOOP_REPS), repeat=1) / LOOP_REPS
        print(
            f"   one replication at a time: {per_rep * 1000:.0f} ms per replication → "
            f"{per_rep * cfg.replications:.1f} s for R = {cfg.replications} "
            f"(extrapolated from {LOOP_REPS}); vectorised is {per_rep * cfg.replications / wall:.0f}× faster"
        )
    wall = best_of(lambda: simulate_designs(LENIENT))
    print(f"   lenient setting, default grid: {wall:.2f} s (best of 2)")
    big = dataclasses.replace(LENIENT, coverages=(0.05,), designs=("random", "strat"), replications=10_000)
    res = simulate_designs(big)
    v = res.cell(0.05, "strat").vs_random
    assert v is not None
    print(
        f"   lenient setting, R = 10 000, ρ = 0.05, random + strat: {res.seconds:.1f} s; "
        f"Strat − Random ΔFR {v.fr:+.4f} ± {v.fr_se:.4f}, ΔFA {v.fa:+.4f} ± {v.fa_se:.4f}"
    )
    print("2. alt-test on the largest real panels (first LLM of each)")
    if not (SHARED / "alttest").is_dir():
        print(f"   skipped: {SHARED / 'alttest'} not found")
        return
    for name, scorer, eps in (("summeval", "neg-rmse", 0.2), ("kilogram", "trigram-cosine", 0.1)):
        h, j, texts = panel(name, numeric=scorer == "neg-rmse")
        # a fresh scorer per run: the trigram scorer caches similarities
        wall = best_of(
            lambda h=h, j=j, s=scorer, t=texts, e=eps: alt_test(h, j, epsilon=e, scorer=make_scorer(s, t))
        )
        print(f"   {name}: {h.shape[0]} instances × {h.shape[1]} humans, {scorer}: {wall * 1000:.0f} ms")


if __name__ == "__main__":
    main()
