"""Intervals over few groups and the TOST's size: the full tables behind issue 30 §1–§2.

1. Coverage (``metrics.coverage.small_group_coverage``): for G = 4, 5, 10, 30 articles of 16
   summaries and ICC 0, 0.2, 0.5, 1,000 simulated data sets each, the share of 95 % intervals that
   cover the truth — the old group-bootstrap percentile interval and the interval the library now
   chooses (``t(G−1)·CR1 SE`` below 20 groups, the percentile interval from 20) — for a normal
   outcome and for an indicator (exact agreement, mean 0.3, Beta-binomial by article).
2. Size of the TOST at the margin (``metrics.equivalence``): 10,000 data sets of G articles × 8
   items whose true mean difference equals the margin, SE ≈ 0.1·margin (a design with power): the
   share declared equivalent by the old normal reference on the group-bootstrap SD
   (``bootstrap_tost``) and by ``group_tost`` (t(G−1), jackknife SE).

Run: ``.venv/bin/python benchmarks/study_small_groups.py [--sims 1000] [--tost-sims 10000]``
(about a minute on one core).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from judgepanel.metrics.bootstrap import resample_indices
from judgepanel.metrics.coverage import small_group_coverage
from judgepanel.metrics.equivalence import bootstrap_tost, group_tost


def coverage_table(sims: int) -> None:
    print("| outcome | articles | ICC | percentile (old) | chosen (new) | method | width old / new |")
    print("|---|---:|---:|---:|---:|---|---:|")
    for outcome in ("normal", "binary"):
        for g in (4, 5, 10, 30):
            for icc in (0.0, 0.2, 0.5):
                c = small_group_coverage(
                    n_groups=g, icc=icc, outcome=outcome, n_sims=sims, n_boot=1000, seed=11
                )
                print(
                    f"| {outcome} | {g} | {icc:g} | {c.coverage['percentile']:.3f} | {c.coverage['chosen']:.3f} "
                    f"| {c.method} | {c.mean_width['percentile']:.3f} / {c.mean_width['chosen']:.3f} |",
                    flush=True,
                )


def tost_size(sims: int) -> None:
    print("\n| articles | old (normal, bootstrap SD) | new (t(G−1), jackknife SE) |")
    print("|---:|---:|---:|")
    for g in (5, 10, 20):
        rng = np.random.default_rng(g)
        size, margin = 8, 1.0
        codes = np.repeat(np.arange(g), size)
        draws = resample_indices(g, 1000, 7)
        old = new = 0
        for _ in range(sims):
            y = margin + rng.normal(0, 0.2, g)[codes] + rng.normal(0, 0.2, codes.size)
            sums = np.bincount(codes, weights=y)
            est = float(y.mean())
            jack = (sums.sum() - sums) / (codes.size - size)
            reps = sums[draws].sum(axis=1) / codes.size
            new += int(group_tost(est, margin, g, replicates=reps, jackknife=jack).equivalent)
            old += int(bootstrap_tost(est, reps, margin).equivalent)
        print(f"| {g} | {old / sims:.3f} | {new / sims:.3f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sims", type=int, default=1000)
    ap.add_argument("--tost-sims", type=int, default=10000)
    args = ap.parse_args()
    t = time.perf_counter()
    coverage_table(args.sims)
    tost_size(args.tost_sims)
    print(f"\n({time.perf_counter() - t:.0f} s)")


if __name__ == "__main__":
    main()
