"""Raters as a matrix: pairwise Cohen's κ between every two raters, and clusters of raters.

``kappa_matrix`` computes κ for each pair of columns on the units both rated (pairwise-complete),
optionally on the first N units only (a training split). Entry (i, j) is ``(p_o − p_e)/(1 − p_e)``
from the q×q contingency table of raters i and j (see ``metrics.agreement.cohen_kappa``); it is
NaN when the two never rated the same unit or when ``p_e = 1`` (both used a single, identical
category on their common units). The diagonal is a rater's κ with itself: 1, or NaN under the
same single-category condition.

``cluster_raters`` runs average-linkage (UPGMA) hierarchical clustering on the distance
``d_ij = 1 − κ_ij`` (scipy's ``linkage(method="average")``) and cuts the tree into ``k`` clusters
(the first n − k merges of the tree) or at a κ threshold: two clusters stay apart when the average
κ between their members is below ``threshold`` (distance cut at ``1 − threshold``).

Undefined κ in clustering: a NaN distance is replaced by ``nan_distance`` (default 1.0, the
distance of κ = 0): without a common unit there is no evidence that two raters agree beyond
chance, nor that they disagree, so they sit at chance distance rather than at either extreme.

Reference: Sokal, R. R. & Michener, C. D. (1958), UPGMA; Cohen (1960) for κ.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgepanel.errors import BadInput
from judgepanel.metrics.agreement import (
    FloatArray,
    Weights,
    as_categories,
    as_ratings,
    category_codes,
    weight_matrix,
)

_EPS = 1e-12


@dataclass(frozen=True)
class KappaMatrix:
    """``kappa[i, j]``: Cohen's κ of raters i and j on their common units (NaN where undefined);
    ``n_common[i, j]``: how many units both rated; ``n_units``: units considered (after ``first``)."""

    kappa: FloatArray
    n_common: NDArray[np.int64]
    names: tuple[str, ...]
    n_units: int
    first: int | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "raters": list(self.names),
            "kappa": [[float(v) for v in row] for row in self.kappa],
            "n_common": self.n_common.tolist(),
            "n_units": self.n_units,
            "first": self.first,
        }


def kappa_matrix(
    ratings: ArrayLike,
    categories: ArrayLike,
    first: int | None = None,
    *,
    names: Sequence[str] | None = None,
    weights: Weights = None,
) -> KappaMatrix:
    """Rater × rater Cohen κ, pairwise-complete (see the module docstring). ``first`` keeps only
    the first N units (rows), e.g. a training split; ``weights`` gives weighted κ as in
    ``cohen_kappa``. All pairs at once: with ``X_i`` the one-hot units × q matrix of rater i (zero
    rows where missing), the contingency table of raters i and j is ``X_iᵀ X_j``."""
    arr = as_ratings(ratings)
    if first is not None:
        if first < 1:
            raise BadInput(f"--first must be at least 1, got {first}")
        arr = arr[:first]
    n_raters = arr.shape[1]
    labels = tuple(names) if names is not None else tuple(f"r{i}" for i in range(n_raters))
    if len(labels) != n_raters:
        raise BadInput(f"{len(labels)} names for {n_raters} raters")
    cats = as_categories(categories, arr)
    q = cats.size
    w = weight_matrix(cats, weights)
    codes = category_codes(arr, cats)
    onehot = np.zeros((arr.shape[0], n_raters, q))
    u, r = np.nonzero(codes >= 0)
    onehot[u, r, codes[u, r]] = 1.0
    flat = onehot.reshape(arr.shape[0], n_raters * q)
    tables = (flat.T @ flat).reshape(n_raters, q, n_raters, q).transpose(0, 2, 1, 3)  # r × r × q × q
    n = tables.sum(axis=(2, 3))
    safe = np.where(n > 0, n, 1.0)
    po = np.einsum("ijkl,kl->ij", tables, w) / safe
    row = tables.sum(axis=3) / safe[:, :, None]
    col = tables.sum(axis=2) / safe[:, :, None]
    pe = np.einsum("ijk,kl,ijl->ij", row, w, col)
    kappa = np.full((n_raters, n_raters), np.nan)
    ok = (n > 0) & (1.0 - pe > _EPS)
    np.divide(po - pe, 1.0 - pe, out=kappa, where=ok)
    kappa[ok & (np.abs(po - 1.0) <= 1e-12)] = 1.0
    return KappaMatrix(kappa, n.astype(np.int64), labels, int(arr.shape[0]), first)


def cluster_raters(
    kappa: ArrayLike | KappaMatrix,
    names: Sequence[str] | None = None,
    k: int | None = 2,
    *,
    threshold: float | None = None,
    nan_distance: float = 1.0,
) -> list[list[str]]:
    """Average-linkage clusters on ``1 − κ`` cut into at most ``k`` clusters, or, when
    ``threshold`` is given, wherever the average κ between two clusters falls below it. Clusters
    are listed by their first member in ``names`` order, members in ``names`` order. NaN κ counts
    as ``nan_distance`` (default 1.0, i.e. κ = 0). ``k`` larger than the number of raters gives
    singletons; average linkage can merge ties so that fewer than ``k`` clusters come out."""
    from scipy.cluster.hierarchy import linkage  # on first use: SciPy is slow to import
    from scipy.spatial.distance import squareform  # on first use: SciPy is slow to import

    if isinstance(kappa, KappaMatrix):
        labels = list(names) if names is not None else list(kappa.names)
        mat = kappa.kappa
    else:
        mat = np.asarray(kappa, dtype=np.float64)
        labels = list(names) if names is not None else [f"r{i}" for i in range(mat.shape[0])]
    if mat.ndim != 2 or mat.shape[0] != mat.shape[1]:
        raise BadInput(f"κ must be a square matrix, got shape {mat.shape}")
    if len(labels) != mat.shape[0]:
        raise BadInput(f"{len(labels)} names for a {mat.shape[0]}×{mat.shape[0]} κ matrix")
    if threshold is None and (k is None or k < 1):
        raise BadInput(f"the number of clusters must be at least 1, got {k}")
    if threshold is not None and not -1.0 <= threshold <= 1.0:
        raise BadInput(f"a κ threshold lies between −1 and 1, got {threshold}")
    if not np.isfinite(nan_distance) or nan_distance < 0:
        raise BadInput("nan_distance must be a non-negative number")
    if len(labels) < 2:
        return [labels] if labels else []
    dist = 1.0 - mat
    dist = np.where(np.isnan(dist), nan_distance, dist)
    dist = np.clip((dist + dist.T) / 2.0, 0.0, None)
    np.fill_diagonal(dist, 0.0)
    tree = linkage(squareform(dist, checks=False), method="average")
    n = len(labels)
    if threshold is not None:
        n_merges = int((tree[:, 2] <= 1.0 - threshold + 1e-12).sum())  # heights never decrease
    else:
        assert k is not None
        n_merges = max(0, n - k)
    # apply the first merges of the tree ourselves: scipy's fcluster(criterion="maxclust") returns
    # too few clusters when merge heights tie with its internal thresholds (scipy 1.12)
    members: dict[int, list[int]] = {i: [i] for i in range(n)}
    for step in range(n_merges):
        left, right = int(tree[step, 0]), int(tree[step, 1])
        members[n + step] = members.pop(left) + members.pop(right)
    groups = sorted(sorted(m) for m in members.values())
    return [[labels[i] for i in g] for g in groups]
