"""Agreement speed against the reference libraries, measured in the same run.

1. Bootstrap of Krippendorff's α, 1,000 replicates over 10,000 units × 5 raters (1–5 scale, 20 %
   missing): ours (multinomial counts × precomputed per-unit coincidences, one matrix product)
   against a loop that resamples units and calls ``krippendorff.alpha`` on each replicate. The loop
   is timed on ``LOOP_REPS`` replicates and extrapolated linearly to 1,000 (each replicate does the
   same work, so the time per replicate is constant); the extrapolation is labelled as such.
2. Point estimates on the same matrix: ours against krippendorff, irrCAC, statsmodels, sklearn.
"""

from __future__ import annotations

from collections.abc import Callable

import krippendorff
import numpy as np
import pandas as pd
from irrCAC.raw import CAC
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from benchmarks import timing
from judgepanel.metrics.agreement import cohen_kappa, fleiss_kappa, gwet_ac1, krippendorff_alpha
from judgepanel.metrics.bootstrap import bootstrap_ci

UNITS, RATERS, N_BOOT, LOOP_REPS = 10_000, 5, 1_000, 20
SCALE = np.arange(1.0, 6.0)


def ratings(seed: int = 0, missing: float = 0.2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, UNITS)
    noise = rng.integers(-1, 2, (UNITS, RATERS)) * (rng.random((UNITS, RATERS)) < 0.4)
    r = np.clip(truth[:, None] + noise, 1, 5).astype(float)
    r[rng.random(r.shape) < missing] = np.nan
    return r


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    """The fastest of a few runs: the least disturbed by other work on a shared machine."""
    return timing.best_of(fn, repeat)[0]


def loop_bootstrap(r: np.ndarray, level: str, reps: int, seed: int = 0) -> list[float]:
    rng = np.random.default_rng(seed)
    return [
        krippendorff.alpha(
            r[rng.integers(0, r.shape[0], r.shape[0])].T, level_of_measurement=level, value_domain=SCALE
        )
        for _ in range(reps)
    ]


def main() -> None:
    r = ratings()
    complete = ratings(missing=0.0)
    rows: list[tuple[str, float, float, str]] = []

    for level in ("nominal", "interval", "ordinal"):
        ours = best_of(lambda lv=level: bootstrap_ci("alpha", r, SCALE, level=lv, n_boot=N_BOOT, seed=1), 2)
        loop = best_of(lambda lv=level: loop_bootstrap(r, lv, LOOP_REPS), 1)
        rows.append(
            (
                f"α {level} bootstrap ×{N_BOOT} (ref: loop ×{LOOP_REPS} extrapolated)",
                ours,
                loop * N_BOOT / LOOP_REPS,
                "",
            )
        )
    bca = best_of(lambda: bootstrap_ci("alpha", r, SCALE, n_boot=N_BOOT, seed=1, method="bca"), 2)
    rows.append((f"α nominal BCa ×{N_BOOT} (+ jackknife of {UNITS})", bca, float("nan"), "no reference"))

    df = pd.DataFrame(r[~np.isnan(r).all(axis=1)])  # irrCAC drops all-missing units with a pandas warning
    for level in ("nominal", "ordinal", "interval", "ratio"):
        ours = best_of(lambda lv=level: krippendorff_alpha(r, lv, SCALE))
        ref = best_of(lambda lv=level: krippendorff.alpha(r.T, level_of_measurement=lv, value_domain=SCALE))
        rows.append((f"α {level} point estimate", ours, ref, "krippendorff"))
    rows.append(
        (
            "AC1 point estimate",
            best_of(lambda: gwet_ac1(r, SCALE)),
            best_of(lambda: CAC(df.copy(), categories=list(SCALE)).gwet()),
            "irrCAC",
        )
    )
    rows.append(
        (
            "Fleiss κ, missing cells",
            best_of(lambda: fleiss_kappa(r, SCALE)),
            best_of(lambda: CAC(df.copy(), categories=list(SCALE)).fleiss()),
            "irrCAC",
        )
    )
    rows.append(
        (
            "Fleiss κ, complete",
            best_of(lambda: fleiss_kappa(complete, SCALE)),
            best_of(lambda: sm_fleiss_kappa(aggregate_raters(complete.astype(int))[0])),
            "statsmodels (incl. count table)",
        )
    )
    a, b = complete[:, 0], complete[:, 1]
    rows.append(
        (
            "Cohen κ quadratic",
            best_of(lambda: cohen_kappa(a, b, SCALE, "quadratic")),
            best_of(lambda: cohen_kappa_score(a, b, labels=SCALE, weights="quadratic")),
            "sklearn",
        )
    )

    print(f"agreement on {UNITS:,} units × {RATERS} raters (1–5 scale; 20 % missing unless 'complete')")
    print(f"{'task':<62} {'ours s':>9} {'ref s':>9} {'ref/ours':>9}  reference")
    for task, ours, ref, note in rows:
        ratio = ref / ours if np.isfinite(ref) and ours > 0 else float("nan")
        ref_s = f"{ref:9.3f}" if np.isfinite(ref) else f"{'—':>9}"
        ratio_s = f"{ratio:9.1f}" if np.isfinite(ratio) else f"{'—':>9}"
        print(f"{task:<62} {ours:9.3f} {ref_s} {ratio_s}  {note or 'krippendorff.alpha loop'}")


if __name__ == "__main__":
    main()
