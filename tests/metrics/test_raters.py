"""κ matrices against scikit-learn pair by pair, and clusters on planted rater blocks."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from judgepanel.errors import BadInput
from judgepanel.metrics.raters import KappaMatrix, cluster_raters, kappa_matrix

NAN = np.nan
ABT = np.array([0.0, 1.0, 2.0])


def planted_blocks(seed: int = 0, units: int = 300) -> tuple[np.ndarray, list[str]]:
    """Raters h1..h3 follow one latent label, j1..j2 another (weakly related): two blocks."""
    rng = np.random.default_rng(seed)
    t1 = rng.integers(0, 3, units)
    t2 = np.where(rng.random(units) < 0.3, t1, rng.integers(0, 3, units))
    cols = []
    for truth, n in ((t1, 3), (t2, 2)):
        for _ in range(n):
            cols.append(np.where(rng.random(units) < 0.8, truth, rng.integers(0, 3, units)))
    r = np.column_stack(cols).astype(float)
    r[rng.random(r.shape) < 0.15] = NAN
    return r, ["h1", "h2", "h3", "j1", "j2"]


def test_kappa_matrix_matches_sklearn_pairwise_complete() -> None:
    r, names = planted_blocks()
    km = kappa_matrix(r, ABT, names=names)
    assert isinstance(km, KappaMatrix) and km.names == tuple(names) and km.n_units == 300
    for i in range(5):
        for j in range(5):
            both = ~np.isnan(r[:, i]) & ~np.isnan(r[:, j])
            assert km.n_common[i, j] == both.sum()
            expected = cohen_kappa_score(r[both, i], r[both, j], labels=ABT)
            assert km.kappa[i, j] == pytest.approx(expected, abs=1e-12)
    assert np.allclose(np.diag(km.kappa), 1.0)
    assert np.allclose(km.kappa, km.kappa.T)


def test_first_n_units_is_a_training_split() -> None:
    r, names = planted_blocks()
    km = kappa_matrix(r, ABT, first=120, names=names)
    assert km.n_units == 120 and km.first == 120
    both = ~np.isnan(r[:120, 0]) & ~np.isnan(r[:120, 3])
    expected = cohen_kappa_score(r[:120][both, 0], r[:120][both, 3], labels=ABT)
    assert km.kappa[0, 3] == pytest.approx(expected, abs=1e-12)
    with pytest.raises(BadInput, match="at least 1"):
        kappa_matrix(r, ABT, first=0)


def test_weighted_kappa_matrix() -> None:
    r, _ = planted_blocks(1)
    km = kappa_matrix(r, ABT, weights="quadratic")
    both = ~np.isnan(r[:, 1]) & ~np.isnan(r[:, 4])
    assert km.kappa[1, 4] == pytest.approx(
        cohen_kappa_score(r[both, 1], r[both, 4], labels=ABT, weights="quadratic"), abs=1e-12
    )


def test_no_overlap_and_single_category_are_nan() -> None:
    r = np.array(
        [
            [0, 0, NAN, 1],
            [1, 1, NAN, 1],
            [2, 1, NAN, 1],
            [NAN, NAN, 0, 1],
            [NAN, NAN, 1, NAN],
        ],
        dtype=float,
    )
    km = kappa_matrix(r, ABT, names=["a", "b", "c", "d"])
    assert km.n_common[0, 2] == 0 and math.isnan(km.kappa[0, 2]) and math.isnan(km.kappa[2, 0])
    # d used one category: κ with itself, and with b (who used 1 on their common units too), undefined
    assert math.isnan(km.kappa[3, 3])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert math.isnan(cohen_kappa_score(r[:3, 3], r[:3, 3], labels=ABT))
    assert km.kappa[0, 1] == pytest.approx(cohen_kappa_score(r[:3, 0], r[:3, 1], labels=ABT))
    assert km.as_dict()["kappa"][0][2] != km.as_dict()["kappa"][0][2]  # NaN stays NaN until JSON


def test_clusters_recover_planted_blocks() -> None:
    r, names = planted_blocks()
    km = kappa_matrix(r, ABT, names=names)
    assert cluster_raters(km.kappa, names, k=2) == [["h1", "h2", "h3"], ["j1", "j2"]]
    assert cluster_raters(km) == [["h1", "h2", "h3"], ["j1", "j2"]]
    assert cluster_raters(km, k=1) == [names]
    assert cluster_raters(km, k=10) == [[n] for n in names]


def test_threshold_cut_is_on_average_kappa() -> None:
    r, names = planted_blocks()
    km = kappa_matrix(r, ABT, names=names)
    within = min(km.kappa[0, 1], km.kappa[0, 2], km.kappa[1, 2], km.kappa[3, 4])
    between = km.kappa[:3, 3:].mean()  # average linkage merges the blocks at their mean κ
    assert between < within
    assert cluster_raters(km, threshold=(between + within) / 2) == [["h1", "h2", "h3"], ["j1", "j2"]]
    assert cluster_raters(km, threshold=between - 0.01) == [names]
    assert cluster_raters(km, threshold=1.0) == [[n] for n in names]


def test_nan_distance_is_chance_by_default() -> None:
    # a and b agree (κ .9), c never overlaps anyone: at chance distance 1 it is its own cluster
    kappa = np.array([[1.0, 0.9, NAN], [0.9, 1.0, NAN], [NAN, NAN, 1.0]])
    assert cluster_raters(kappa, ["a", "b", "c"], k=2) == [["a", "b"], ["c"]]
    # against raters who disagree worse than chance, an unknown pair is the closer one
    kappa2 = np.array([[1.0, -0.5, NAN], [-0.5, 1.0, -0.2], [NAN, -0.2, 1.0]])
    assert cluster_raters(kappa2, ["a", "b", "c"], k=2) == [["a", "c"], ["b"]]
    assert cluster_raters(kappa2, ["a", "b", "c"], k=2, nan_distance=2.0) == [["a"], ["b", "c"]]


def test_cluster_edge_cases_and_bad_input() -> None:
    assert cluster_raters(np.array([[1.0]]), ["only"]) == [["only"]]
    assert cluster_raters(np.zeros((0, 0)), []) == []
    with pytest.raises(BadInput, match="at least 1"):
        cluster_raters(np.eye(3), ["a", "b", "c"], k=0)
    with pytest.raises(BadInput, match="names"):
        cluster_raters(np.eye(3), ["a", "b"])
    with pytest.raises(BadInput, match="between"):
        cluster_raters(np.eye(3), ["a", "b", "c"], threshold=2.0)
