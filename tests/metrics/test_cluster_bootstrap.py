"""The cluster (group) bootstrap: its draws against a direct loop, the default mode, and a coverage
simulation with planted within-group correlation."""

from __future__ import annotations

import numpy as np
import pytest

from judgepanel.errors import BadInput
from judgepanel.metrics.bootstrap import (
    cluster_count_matrix,
    group_codes,
    resample_indices,
    resample_mode,
    resample_weights,
)
from judgepanel.metrics.coverage import clustered_mean_coverage


def test_cluster_counts_equal_a_direct_loop_over_drawn_groups() -> None:
    groups = ["b", "a", "b", None, "c", "a", None]
    codes, n = group_codes(groups)
    assert codes.tolist() == [0, 1, 0, 2, 3, 1, 4] and n == 5  # a None is a group of its own
    w = cluster_count_matrix(codes, n, 60, 9)
    for b, row in enumerate(resample_indices(n, 60, 9)):
        direct = np.zeros(len(groups))
        for g in row:
            direct[codes == g] += 1
        assert (w[b] == direct).all()
    assert (resample_weights(groups, 7, 60, 9, "groups") == w).all()
    # one unit per group: the item bootstrap, draw for draw
    assert (resample_weights(list("abcdefg"), 7, 30, 2, "groups") == resample_weights(None, 7, 30, 2)).all()


def test_resample_mode_defaults_to_groups_where_items_share_them() -> None:
    assert resample_mode(None, ["a", "a", "b"]) == "groups"
    assert resample_mode(None, ["a", "b", "c"]) == "groups"  # one unit per group: the same draws as items
    assert resample_mode(None, [None, None]) == "items"
    assert resample_mode("items", ["a", "a"]) == "items"
    with pytest.raises(BadInput):
        resample_mode("groups", [None, None])
    with pytest.raises(BadInput):
        resample_mode("articles", ["a"])


def test_group_bootstrap_covers_near_nominal_and_the_item_bootstrap_does_not() -> None:
    """30 articles × 8 summaries, intraclass correlation 0.3 (design effect 3.1): the item
    bootstrap's 95 % interval is too narrow by about √3.1 and covers about 2Φ(1.96/1.76) − 1 ≈ 0.73;
    resampling articles stays near 0.95 (a little under, as percentile intervals with 30 clusters do)."""
    c = clustered_mean_coverage(n_groups=30, group_size=8, icc=0.3, n_sims=300, n_boot=300, seed=1)
    assert 0.89 <= c.coverage["groups"] <= 0.99
    assert c.coverage["items"] <= 0.82
    assert c.coverage["groups"] - c.coverage["items"] >= 0.12
    assert c.mean_width["groups"] > 1.5 * c.mean_width["items"]
    # without within-group correlation both are near nominal
    flat = clustered_mean_coverage(n_groups=30, group_size=8, icc=0.0, n_sims=200, n_boot=300, seed=2)
    assert min(flat.coverage.values()) >= 0.89


def test_paired_difference_resamples_whole_groups() -> None:
    """`paired_bootstrap(..., groups=…)`: each replicate draws articles; against a direct loop that
    concatenates the drawn articles' units and computes κ with scikit-learn."""
    from sklearn.metrics import cohen_kappa_score

    from judgepanel.metrics.bootstrap import function_replicates, paired_bootstrap

    rng = np.random.default_rng(7)
    n, size = 36, 4
    groups = [f"art{i // size}" for i in range(n)]
    truth = rng.integers(0, 3, n)
    a = np.column_stack([truth, np.where(rng.random(n) < 0.8, truth, rng.integers(0, 3, n))]).astype(float)
    b = np.column_stack([truth, np.where(rng.random(n) < 0.5, truth, rng.integers(0, 3, n))]).astype(float)
    got = paired_bootstrap("cohen", a, b, [0, 1, 2], n_boot=150, seed=5, groups=groups)
    members = [np.arange(g * size, g * size + size) for g in range(n // size)]
    reps = []
    for row in resample_indices(n // size, 150, 5):
        idx = np.concatenate([members[g] for g in row])
        ka = cohen_kappa_score(a[idx, 0], a[idx, 1], labels=[0, 1, 2])
        kb = cohen_kappa_score(b[idx, 0], b[idx, 1], labels=[0, 1, 2])
        reps.append(ka - kb)
    assert (got.ci.lo, got.ci.hi) == pytest.approx(tuple(np.quantile(reps, [0.025, 0.975])), abs=1e-9)
    # rank statistics loop over the same kind of draw
    loop = function_replicates(lambda r: float(r[:, 0].mean()), a, 20, 1, groups)
    assert loop.shape == (20,) and np.isfinite(loop).all()
    with pytest.raises(BadInput):
        paired_bootstrap("cohen", a, b, [0, 1, 2], n_boot=10, method="bca", groups=groups)
    with pytest.raises(BadInput):
        paired_bootstrap("cohen", a, b, [0, 1, 2], n_boot=10, groups=groups[:-1])
