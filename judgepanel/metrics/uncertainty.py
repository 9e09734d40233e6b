"""How uncertain is each unit's label, and does that uncertainty mean anything?

* :func:`vote_entropy` — entropy (natural log) of each unit's empirical vote distribution,
  ``H_i = −Σ_k p_ik ln p_ik`` with ``p_ik`` the share of unit i's raters who chose k.
* :func:`posterior_entropy` — the same over a model's posterior ``P(z_i = k | data)``
  (e.g. Dawid–Skene): ``H_i = −Σ_k q_ik ln q_ik``, with ``0 ln 0 = 0``.
* :func:`rank_correlation` — Spearman's ρ and Kendall's τ-b (scipy) between two per-unit signals,
  e.g. vote entropy against the absolute gap between the two items' mean human scores (a hard
  pair has a small gap and should have a high entropy, so the expected sign is negative).
* :func:`expected_calibration_error` — ECE of a posterior against held-out labels
  (Naeini, Cooper & Hauskrecht, AAAI 2015; Guo et al., ICML 2017): units are binned by the
  confidence ``max_k q_ik`` into equal-width bins over [0, 1] and
  ``ECE = Σ_b (n_b / n) |acc_b − conf_b|``, where ``acc_b`` is the share of units in bin b whose
  held-out label equals the posterior argmax and ``conf_b`` their mean confidence.

Entropies are in nats; a unit with no votes (or a NaN posterior row) gets NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from judgepanel.metrics.truth import FloatArray, IntArray, as_codes, vote_counts


def _entropy_rows(p: FloatArray) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    out = terms.sum(axis=1)
    out[np.any(np.isnan(p), axis=1)] = np.nan
    return np.asarray(out)


def vote_entropy(ratings: ArrayLike, n_categories: int | None = None) -> FloatArray:
    """Per-unit entropy (nats) of the raters' label shares; NaN for units with no rating."""
    codes, k = as_codes(ratings, n_categories)
    counts = vote_counts(codes, k)
    n = counts.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = np.where(n > 0, counts / np.where(n > 0, n, 1.0), np.nan)
    return _entropy_rows(shares)


def posterior_entropy(posteriors: ArrayLike) -> FloatArray:
    """Per-unit entropy (nats) of a posterior (units × K, rows summing to 1)."""
    p = np.asarray(posteriors, dtype=np.float64)
    if p.ndim != 2:
        raise ValueError("posteriors must be units × categories")
    return _entropy_rows(p)


@dataclass(frozen=True)
class RankCorrelation:
    """Spearman ρ and Kendall τ-b over the units where both signals are finite, with scipy's
    two-sided p-values. NaN (with n reported) when fewer than 3 units remain or either signal is
    constant over them."""

    spearman: float
    spearman_p: float
    kendall: float
    kendall_p: float
    n: int

    def as_dict(self) -> dict[str, float | int]:
        return {
            "spearman": self.spearman,
            "spearman_p": self.spearman_p,
            "kendall": self.kendall,
            "kendall_p": self.kendall_p,
            "n": self.n,
        }


def rank_correlation(x: ArrayLike, y: ArrayLike) -> RankCorrelation:
    from scipy.stats import kendalltau, spearmanr  # on first use: SciPy is slow to import

    a = np.asarray(x, dtype=np.float64).ravel()
    b = np.asarray(y, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError("the two signals must have one value per unit each")
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    n = int(a.size)
    nan = float("nan")
    if n < 3 or np.all(a == a[0]) or np.all(b == b[0]):
        return RankCorrelation(nan, nan, nan, nan, n)
    rho, rho_p = spearmanr(a, b)
    tau, tau_p = kendalltau(a, b)
    return RankCorrelation(float(rho), float(rho_p), float(tau), float(tau_p), n)


@dataclass(frozen=True, eq=False)
class Calibration:
    """Expected calibration error and its reliability table (one row per non-empty bin)."""

    ece: float
    n: int
    bin_edges: FloatArray
    bin_counts: IntArray
    bin_accuracy: FloatArray  # NaN for empty bins
    bin_confidence: FloatArray  # NaN for empty bins

    def as_dict(self) -> dict[str, object]:
        return {
            "ece": self.ece,
            "n": self.n,
            "bins": [
                {
                    "lower": float(self.bin_edges[b]),
                    "upper": float(self.bin_edges[b + 1]),
                    "n": int(self.bin_counts[b]),
                    "accuracy": float(self.bin_accuracy[b]),
                    "confidence": float(self.bin_confidence[b]),
                }
                for b in range(self.bin_counts.size)
                if self.bin_counts[b]
            ],
        }


def expected_calibration_error(posteriors: ArrayLike, labels: ArrayLike, *, n_bins: int = 10) -> Calibration:
    """ECE of ``posteriors`` (units × K) against ``labels`` (codes; −1 or NaN = no label).

    Confidence ``c_i = max_k q_ik``, prediction its argmax (first index on exact ties). Bin b is
    ``(b/B, (b+1)/B]``, the first bin also takes 0. Units without a label or with a NaN posterior
    are left out; ECE is NaN when none remain.
    """
    if n_bins < 1:
        raise ValueError("n_bins must be >= 1")
    q = np.asarray(posteriors, dtype=np.float64)
    raw = np.asarray(labels, dtype=np.float64).ravel()
    if q.ndim != 2 or q.shape[0] != raw.size:
        raise ValueError("posteriors must be units × K with one label per unit")
    ok = np.isfinite(raw) & (raw >= 0) & ~np.any(np.isnan(q), axis=1)
    q, y = q[ok], raw[ok].astype(np.int64)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    conf = q.max(axis=1) if q.size else np.zeros(0)
    correct = (q.argmax(axis=1) == y).astype(np.float64) if q.size else np.zeros(0)
    # the tolerance keeps 0.3 · 10 = 3.0000000000000004 in the bin (0.2, 0.3]
    idx = np.clip(np.ceil(conf * n_bins - 1e-9).astype(np.int64) - 1, 0, n_bins - 1)
    counts = np.bincount(idx, minlength=n_bins)
    acc_sum = np.bincount(idx, weights=correct, minlength=n_bins)
    conf_sum = np.bincount(idx, weights=conf, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = np.where(counts > 0, acc_sum / np.maximum(counts, 1), np.nan)
        mean_conf = np.where(counts > 0, conf_sum / np.maximum(counts, 1), np.nan)
    n = int(counts.sum())
    ece = float(np.nansum(counts / n * np.abs(acc - mean_conf))) if n else float("nan")
    return Calibration(ece, n, edges, counts.astype(np.int64), acc, mean_conf)
