"""Rubric-repair statistics: selection and the before/after comparison, against a straightforward
pandas implementation measured in the same run.

100,000 (item, judge, clause) cells per version: 2,000 items × 5 judges × 10 clauses (two dimensions of five),
judges flipping a latent met/not-met with clause-specific probability and 3 % missing. Selection
reads one version (disagreement rate per clause, top k per dimension, seeded control); the
comparison reads three (original, contested, control) plus human ratings, with a paired item
bootstrap of `BOOT` replicates for inter-judge α (nominal), Spearman and α (interval) with humans.
The pandas side groups a long frame by (item, clause) and loops over replicates, merging the drawn
items in as distinct units; both sides draw the same item indices, and their point values are
checked equal. Each timing is the fastest of a few runs on a shared machine.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from benchmarks.timing import best_of
from judgepanel.metrics.bootstrap import resample_indices
from judgepanel.repair.compare import compare_versions
from judgepanel.repair.select import ClauseVerdicts, select_clauses

ITEMS, JUDGES, CLAUSES, BOOT = 2_000, 5, 10, 100
DIMS = [0] * 5 + [1] * 5


def tensor(rng: np.random.Generator, flip: np.ndarray) -> np.ndarray:
    truth = rng.integers(0, 2, size=(ITEMS, 1, CLAUSES)).astype(float)
    met = np.where(rng.random((ITEMS, JUDGES, CLAUSES)) < flip, 1 - truth, truth)
    met[rng.random(met.shape) < 0.03] = np.nan
    return met


def long(met: np.ndarray) -> pd.DataFrame:
    i, j, c = np.nonzero(~np.isnan(met))
    return pd.DataFrame({"item": i, "judge": j, "clause": c, "met": met[i, j, c].astype(int)})


def verdicts(met: np.ndarray) -> ClauseVerdicts:
    i, j, c = np.nonzero(~np.isnan(met))
    ids = tuple(f"d{DIMS[k]}.{k}" for k in range(CLAUSES))
    return ClauseVerdicts(i, j, c, met[i, j, c] > 0.5, ids, tuple(f"d{d}" for d in DIMS), ITEMS, JUDGES)


# ---------------------------------------------------------------- the pandas reference


def pandas_select(df: pd.DataFrame) -> dict[str, list[int]]:
    cells = df.groupby(["item", "clause"])["met"].agg(["sum", "count"]).reset_index()
    cells["split"] = cells["sum"] * (cells["count"] - cells["sum"])
    cells["pairs"] = cells["count"] * (cells["count"] - 1) // 2
    per = cells.groupby("clause")[["split", "pairs"]].sum()
    per["rate"] = per["split"] / per["pairs"]
    per["dim"] = [DIMS[c] for c in per.index]
    out = {}
    for d, g in per.reset_index().groupby("dim"):
        g = g[g["rate"] > 0].sort_values(["rate", "clause"], ascending=[False, True])
        out[f"d{d}"] = list(g["clause"][: min(5, 5 // 2)])
    return out


def pandas_alpha(df: pd.DataFrame) -> float:
    cells = df.groupby(["unit", "clause"])["met"].agg(["sum", "count"])
    cells = cells[cells["count"] >= 2]
    d = (2 * cells["sum"] * (cells["count"] - cells["sum"]) / (cells["count"] - 1)).sum()
    n, n1 = cells["count"].sum(), cells["sum"].sum()
    return float(1 - (n - 1) * d / (2 * n1 * (n - n1)))


def pandas_scores(df: pd.DataFrame) -> pd.Series:
    df = df.assign(dim=np.asarray(DIMS)[df["clause"]])
    share = df.groupby(["unit", "judge", "dim"])["met"].mean()
    return (share.groupby(["unit", "dim"]).mean() * 4 + 1).round(9)


def pandas_interval_alpha(a: np.ndarray, b: np.ndarray) -> float:
    v = np.concatenate([a, b])
    n = len(v)
    return float(1 - (n - 1) * ((a - b) ** 2).sum() / (n * ((v - v.mean()) ** 2).sum()))


def pandas_compare(frames: dict[str, pd.DataFrame], human: np.ndarray) -> dict[str, Any]:
    hum = pd.DataFrame(human).stack()
    hum.index.names = ["item", "dim"]
    idx = resample_indices(ITEMS, BOOT, 0)
    hidx = resample_indices(ITEMS, BOOT, 1)
    out: dict[str, Any] = {}
    for v, df in frames.items():
        point = pandas_alpha(df.assign(unit=df["item"]))
        reps = []
        for row in idx:
            draw = pd.DataFrame({"item": row, "unit": np.arange(ITEMS)})
            reps.append(pandas_alpha(draw.merge(df, on="item")))
        s = pandas_scores(df.assign(unit=df["item"]))
        rho, alp = [], []
        for row in hidx:
            draw = pd.DataFrame({"item": row, "unit": np.arange(ITEMS)})
            sc = pandas_scores(draw.merge(df, on="item"))
            h = hum.loc[list(zip(np.repeat(row, 2), np.tile([0, 1], ITEMS), strict=True))].to_numpy()
            rho.append(spearmanr(sc.to_numpy(), h)[0])
            alp.append(pandas_interval_alpha(sc.to_numpy(), h))
        out[v] = {
            "alpha": point,
            "reps": np.array(reps),
            "scores": s,
            "rho": np.array(rho),
            "alp": np.array(alp),
        }
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    flips = {
        "original": np.linspace(0.05, 0.4, CLAUSES),
        "contested": np.linspace(0.05, 0.15, CLAUSES),
        "control": np.linspace(0.05, 0.35, CLAUSES),
    }
    met = {v: tensor(rng, f) for v, f in flips.items()}
    human = rng.integers(1, 6, size=(ITEMS, 2)).astype(float)
    frames = {v: long(m) for v, m in met.items()}
    cv = verdicts(met["original"])
    n_verdicts = len(frames["original"])

    t_ours_sel, sel = best_of(lambda: select_clauses(cv, control_seed=0), 5)
    t_pd_sel, pd_sel = best_of(lambda: pandas_select(frames["original"]), 2)
    ours_ids = {d: [int(c.split(".")[1]) for c in ids] for d, ids in sel.selected.items()}
    assert ours_ids == pd_sel, (ours_ids, pd_sel)

    t_ours_cmp, cmp_ = best_of(lambda: compare_versions(met, DIMS, human, n_boot=BOOT, seed=0), 3)
    t_pd_cmp, ref = best_of(lambda: pandas_compare(frames, human), 1)
    for v in met:
        assert abs((cmp_.alpha[v]["value"] or 0) - ref[v]["alpha"]) < 1e-6
        lo, hi = np.percentile(ref[v]["reps"], [2.5, 97.5])
        assert np.allclose(cmp_.alpha[v]["ci"], [lo, hi], atol=1e-6)
        lo, hi = np.percentile(ref[v]["rho"], [2.5, 97.5])
        assert np.allclose(cmp_.human[v]["ci"]["spearman"], [lo, hi], atol=1e-6)

    print(
        f"{n_verdicts:,} clause verdicts per version ({ITEMS} items × {JUDGES} judges × {CLAUSES} clauses, 3 % missing)"
    )
    print(
        f"selection:  judgepanel {t_ours_sel * 1000:8.1f} ms   pandas {t_pd_sel * 1000:8.1f} ms   ratio {t_pd_sel / t_ours_sel:6.1f}×"
    )
    print(
        f"comparison (3 versions, {BOOT} paired bootstrap replicates): judgepanel {t_ours_cmp:6.2f} s   "
        f"pandas {t_pd_cmp:6.2f} s   ratio {t_pd_cmp / t_ours_cmp:6.1f}×"
    )
    print("same selection and the same α, CIs and Spearman CIs on both sides (checked)")


if __name__ == "__main__":
    main()
