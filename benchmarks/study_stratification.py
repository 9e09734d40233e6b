"""When does stratified allocation lower false rejects and raise false accepts? The evidence.

For each setting, Random and Strat (and, where asked, Strat with *fair rounding*) at ρ = 0.05,
0.25 (and 0.5), R replications with common random numbers, so each design minus Random is a
paired difference with a small standard error. Printed per cell: FR and FA (± SE, averaged over
the judges), the paired ΔFR and ΔFA against Random (± SE, and in SE units), and per judge the
full-matrix acceptance rate and the mean shift of the sparse ranking score (mean d_k) against the
full one.

Fair rounding (the ablation) is Strat with the rounding remainder given to strata at random, each
stratum getting its extra item with probability equal to its fractional quota (systematic sampling
over the fractional parts, drawn independently for each secondary), so every item has inclusion
probability exactly m/n. It keeps what stratification does to composition noise and removes the
remainder-to-the-largest-strata rule's over-representation of the primary's majority label.

Last, on the real categorical alt-test panels: is a lenient profile realistic? For every ordered
pair of humans (P as the primary, t as a secondary) and every item both labelled, the LLM's
advantage 1[judge = P] − 1[t = P], averaged separately over items where P gave the panel's most
frequent label and items where P gave another; a judge with a positive gap is "lenient" in the
sense above (its advantage lies on the majority label), a negative gap "strict".

Run: ``.venv/bin/python benchmarks/study_stratification.py [--replications 8000] [--only NAME]``
(about 20–35 s per setting at R = 8000 on one core).
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import os
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

from judgepanel.metrics.design import allocate_batch, items_per_annotator, pick_within_strata, stratum_sizes
from judgepanel.metrics.simulate import (
    BLOCK,
    SimConfig,
    class_counts,
    draw_panel,
    loo_batch,
    mean_se,
)

SHARED = Path(
    os.environ.get("JUDGEPANEL_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)
REAL_PANELS = ("framing", "lgbteen", "mtbench", "wax", "cebab_aspects")
LENIENT = ((0.92, 0.45), (0.9, 0.4), (0.88, 0.35))

# name -> (what it shows, config, with the fair-rounding ablation)
SETTINGS: dict[str, tuple[str, SimConfig, bool]] = {
    "lenient": (
        "THE PATTERN: shares 0.8/0.2, humans 0.85 on both classes, lenient judges (right on most "
        "majority-class items, miss most minority-class items)",
        SimConfig(prevalence=(0.8, 0.2), judges=LENIENT, coverages=(0.05, 0.25, 0.5)),
        True,
    ),
    "symmetric": (
        "CONTROL, Strat ≡ Random in theory: uniform shares, class-independent accuracies (defaults)",
        SimConfig(),
        False,
    ),
    "skewed": (
        "skewed shares 0.8/0.2 but class-independent accuracies (judges uniformly worse or better)",
        SimConfig(prevalence=(0.8, 0.2)),
        True,
    ),
    "lenient-uniform": (
        "lenient judges but uniform shares: no majority stratum to over-represent",
        SimConfig(judges=((0.96, 0.64), (0.94, 0.6), (0.93, 0.57))),
        False,
    ),
    "strict": (
        "REVERSAL: shares 0.8/0.2, strict judges (good on the minority class, worse on the majority)",
        SimConfig(prevalence=(0.8, 0.2), judges=((0.75, 0.95), (0.73, 0.93), (0.71, 0.91))),
        False,
    ),
    "hard": (
        "30% hard items (humans 0.7, judges 0.55 on them), otherwise judges = humans, shares 0.8/0.2",
        SimConfig(
            prevalence=(0.8, 0.2),
            judges=(0.85, 0.86, 0.84),
            hard_share=0.3,
            hard_accuracy=0.7,
            hard_judges=(0.55, 0.55, 0.55),
        ),
        False,
    ),
    "humans-miss-minority": (
        "humans 0.9/0.7 (they miss minority items too), lenient judges, shares 0.8/0.2",
        SimConfig(
            prevalence=(0.8, 0.2), accuracy=(0.9, 0.7), judges=((0.95, 0.4), (0.93, 0.35), (0.91, 0.3))
        ),
        False,
    ),
    "cohen": (
        "the lenient setting under Cohen's κ (judges recalibrated: κ punishes a lenient judge's marginals)",
        SimConfig(prevalence=(0.8, 0.2), judges=((0.97, 0.7), (0.96, 0.65), (0.95, 0.6)), agreement="cohen"),
        False,
    ),
    "five-classes": (
        "L = 5, shares 0.55/0.2/0.12/0.08/0.05, judges better on class 0 than on the others",
        SimConfig(
            classes=5,
            prevalence=(0.55, 0.2, 0.12, 0.08, 0.05),
            judges=(
                (0.95, 0.7, 0.7, 0.7, 0.7),
                (0.94, 0.66, 0.66, 0.66, 0.66),
                (0.93, 0.62, 0.62, 0.62, 0.62),
            ),
        ),
        True,
    ),
}

Allocator = Callable[[np.ndarray, int, int, np.random.Generator, int], np.ndarray]


def fair_strat(primary: np.ndarray, t: int, m: int, rng: np.random.Generator, classes: int) -> np.ndarray:
    """Strat with fair rounding; draws its keys exactly as ``allocate_batch`` does (same items
    within strata as Strat and Random), then the rounding uniforms."""
    r, n = primary.shape
    keys = rng.random((r, t, n))
    sizes = stratum_sizes(primary, classes)
    exact = m * sizes / n
    base = np.floor(exact).astype(np.int64)
    frac = exact - base
    out = np.zeros((r, t, n), dtype=bool)
    for s in range(t):
        order = np.argsort(rng.random((r, classes)), axis=1)
        cum = np.cumsum(np.take_along_axis(frac, order, axis=1), axis=1)
        u = rng.random((r, 1))
        before = np.concatenate([np.zeros((r, 1)), cum[:, :-1]], axis=1)
        # stratum gets +1 when a point of u, u + 1, u + 2, … falls in its slice of the cumulated fractions
        hit = (np.floor(cum - u + 1.0) - np.floor(before - u + 1.0)).astype(np.int64)
        extra = np.empty_like(hit)
        np.put_along_axis(extra, order, hit, axis=1)
        quota = base + extra
        assert (quota.sum(axis=1) == m).all()
        out[:, s] = pick_within_strata(primary, quota, keys[:, s])
    return out


def library(design: str) -> Allocator:
    def alloc(primary: np.ndarray, t: int, m: int, rng: np.random.Generator, classes: int) -> np.ndarray:
        return allocate_batch(primary, t, m, design, rng, n_classes=classes)

    return alloc


def run(config: SimConfig, allocators: dict[str, Allocator]) -> None:
    """The simulator's loop (same streams as ``simulate_designs``) with pluggable allocators."""
    r_all, n, k, l_ = config.replications, config.n, config.humans, config.classes
    full_acc: list[np.ndarray] = []
    full_score: list[np.ndarray] = []
    acc: dict[tuple[float, str], list[np.ndarray]] = {}
    score: dict[tuple[float, str], list[np.ndarray]] = {}
    for block, first in enumerate(range(0, r_all, BLOCK)):
        r = min(BLOCK, r_all - first)
        _, humans, judges = draw_panel(config, np.random.default_rng([config.seed, block]), r)
        mask = np.ones((r, n, k), dtype=bool)
        a, s = loo_batch(humans, mask, judges, l_, config.epsilon, config.agreement)
        full_acc.append(a)
        full_score.append(s)
        for cov in config.coverages:
            m = items_per_annotator(n, cov)
            for name, alloc in allocators.items():
                rng = np.random.default_rng([config.seed, block, round(cov * 1e6)])
                assigned = alloc(humans[..., 0], k - 1, m, rng, l_)
                sparse = np.concatenate([np.ones((r, n, 1), dtype=bool), np.moveaxis(assigned, 1, 2)], axis=2)
                counts = class_counts(humans, sparse, l_)
                a2, s2 = loo_batch(humans, sparse, judges, l_, config.epsilon, config.agreement, counts)
                acc.setdefault((cov, name), []).append(a2)
                score.setdefault((cov, name), []).append(s2)
    full = np.concatenate(full_acc)
    fscore = np.concatenate(full_score)
    print("   full-matrix acceptance per judge: " + ", ".join(f"{a:.3f}" for a in full.mean(axis=0)))
    for cov in config.coverages:
        base = np.concatenate(acc[cov, "random"])
        b_fr, b_fa = (full & ~base).mean(axis=1), (~full & base).mean(axis=1)
        for name in allocators:
            sp = np.concatenate(acc[cov, name])
            fr, fa = (full & ~sp).mean(axis=1), (~full & sp).mean(axis=1)
            (m_fr, s_fr), (m_fa, s_fa) = mean_se(fr), mean_se(fa)
            line = f"   ρ = {cov:<4} {name:12s} FR {m_fr:.4f} ± {s_fr:.4f}   FA {m_fa:.4f} ± {s_fa:.4f}"
            if name != "random":
                (d_fr, e_fr), (d_fa, e_fa) = mean_se(fr - b_fr), mean_se(fa - b_fa)
                line += (
                    f"   ΔFR {d_fr:+.4f} ± {e_fr:.4f} ({d_fr / e_fr:+.1f} SE)"
                    f"   ΔFA {d_fa:+.4f} ± {e_fa:.4f} ({d_fa / e_fa:+.1f} SE)"
                )
            shift = np.nanmean(np.concatenate(score[cov, name]) - fscore, axis=0)
            print(line + "   score shift " + " ".join(f"{x:+.4f}" for x in shift))


def _read(path: Path) -> dict[str, dict[str, object]]:
    if path.exists():
        return dict(json.loads(path.read_text()))
    with gzip.open(f"{path}.gz", "rt") as f:
        return dict(json.load(f))


def real_panels() -> None:
    """Each LLM's advantage over a secondary, against the primary's label, by that label."""
    if not (SHARED / "alttest").is_dir():
        print(f"   skipped: {SHARED / 'alttest'} not found")
        return
    for name in REAL_PANELS:
        humans = _read(SHARED / "alttest" / name / "human_annotations.json")
        llms = _read(SHARED / "alttest" / name / "llm_annotations.json")
        major = Counter(str(v) for d in humans.values() for v in d.values()).most_common(1)[0][0]
        rows = []
        for llm, judge in llms.items():
            sums = {True: [0.0, 0], False: [0.0, 0]}
            for p, by_p in humans.items():
                for t, by_t in humans.items():
                    if t == p:
                        continue
                    for item, v in by_p.items():
                        if item in by_t:
                            acc = sums[str(v) == major]
                            acc[0] += float(str(judge[item]) == str(v)) - float(str(by_t[item]) == str(v))
                            acc[1] += 1
            d_major = sums[True][0] / sums[True][1]
            d_other = sums[False][0] / max(sums[False][1], 1)
            rows.append(f"{llm} {d_major:+.3f}/{d_other:+.3f} (gap {d_major - d_other:+.2f})")
        print(f"   {name} (majority label {major!r}): " + "; ".join(rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replications", type=int, default=8000)
    ap.add_argument("--only", choices=sorted(SETTINGS), action="append")
    args = ap.parse_args()
    for name in args.only or SETTINGS:
        what, config, ablate = SETTINGS[name]
        config = dataclasses.replace(config, replications=args.replications)
        if name != "lenient":
            config = dataclasses.replace(config, coverages=(0.05, 0.25))
        allocators: dict[str, Allocator] = {"random": library("random"), "strat": library("strat")}
        if ablate:
            allocators["fair-strat"] = fair_strat
        start = time.perf_counter()
        print(f"== {name}: {what}")
        print(f"   judges {', '.join(map(str, config.judges))}; R = {config.replications}")
        run(config, allocators)
        print(f"   ({time.perf_counter() - start:.0f} s)", flush=True)
    print("== real panels: each LLM's advantage d | primary says the majority label / another label")
    real_panels()


if __name__ == "__main__":
    main()
