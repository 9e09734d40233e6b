"""Cumulative-link (proportional-odds) logistic regression with an L2 penalty (numpy + scipy).

For a label with ordered levels ``0 < 1 < … < K−1`` (``ranks``; for a pairwise A/B/T label the
order B < T < A of "how much A is preferred") and features ``x`` (p values), one latent score
``η = x·β`` and K − 1 increasing thresholds ``θ₀ < … < θ_{K−2}`` give

    P(rank ≤ j | x) = σ(θ_j − η),   P(rank = j) = σ(θ_j − η) − σ(θ_{j−1} − η)

(σ the logistic function, θ_{−1} = −∞, θ_{K−1} = +∞; McCullagh 1980, *JRSS B* 42:109–142). The fit
minimises ``C · Σ_i −log P(y_i | x_i) + ½ ‖β‖²`` (thresholds unpenalised), parametrised as
statsmodels' ``OrderedModel`` is — ``θ₀`` and the log increments ``log(θ_j − θ_{j−1})`` — so the
thresholds stay ordered; for large C it is ``OrderedModel(distr="logit")``'s maximum likelihood,
which the tests use as the reference. One weight vector instead of one per class: a third of
the multinomial model's weights, at the price of assuming a tie lies between the two preferences.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
TINY = 1e-300


@dataclass(frozen=True, eq=False)
class OrdinalFit:
    coef: FloatArray  # p
    thresholds: FloatArray  # K − 1, increasing
    ranks: IntArray  # label code -> rank
    n_iter: int
    converged: bool

    def predict_proba(self, x: ArrayLike) -> FloatArray:
        """Probabilities per label code (columns in code order, not rank order)."""
        from scipy.special import expit

        eta = np.asarray(x, dtype=np.float64) @ self.coef
        cum = expit(self.thresholds[None, :] - eta[:, None])
        n = eta.shape[0]
        cum = np.hstack([np.zeros((n, 1)), cum, np.ones((n, 1))])
        by_rank = np.clip(np.diff(cum, axis=1), 0.0, 1.0)
        return np.asarray(by_rank[:, self.ranks], dtype=np.float64)

    def log_proba(self, x: ArrayLike) -> FloatArray:
        return np.asarray(np.log(np.maximum(self.predict_proba(x), TINY)))


def fit_ordinal_many(
    x: ArrayLike,
    y: ArrayLike,
    ranks: Sequence[int],
    *,
    c: float = 1.0,
    tol: float = 1e-6,
    max_iter: int = 1000,
) -> list[OrdinalFit]:
    """Fit R independent models at once: ``x`` R × n × p, ``y`` R × n label codes (−1: row
    unused), ``ranks[code]`` the ordered level of each code (a permutation of 0 … K−1)."""
    from scipy.optimize import minimize
    from scipy.special import expit

    xs = np.asarray(x, dtype=np.float64)
    ys = np.asarray(y, dtype=np.int64)
    rank_of = np.asarray(ranks, dtype=np.int64)
    k = rank_of.size
    if xs.ndim != 3 or ys.shape != xs.shape[:2]:
        raise ValueError("x must be R × n × p with one label (or −1) per row")
    if sorted(rank_of.tolist()) != list(range(k)) or k < 2:
        raise ValueError("ranks must be a permutation of 0 … K−1, K ≥ 2")
    if ys.size and ys.max() >= k:
        raise ValueError("labels must lie in 0 … K−1 (−1: row unused)")
    if c <= 0:
        raise ValueError("c must be positive")
    n_models, _, p = xs.shape
    used = ys >= 0
    yr = np.where(used, rank_of[np.where(used, ys, 0)], 0)  # rank per row
    weight = used.astype(np.float64)
    n_used = max(1.0, float(weight.sum(axis=1).max(initial=0.0)))
    # start: no weights, thresholds at the logits of the cumulative shares (smoothed)
    a0 = np.zeros((n_models, k - 1))
    for r in range(n_models):
        counts = np.bincount(yr[r][used[r]], minlength=k).astype(np.float64) + 0.5
        cum = np.cumsum(counts)[:-1] / counts.sum()
        th = np.log(cum / (1.0 - cum))
        a0[r, 0] = th[0]
        a0[r, 1:] = np.log(np.maximum(np.diff(th), 1e-3))
    is_low = yr == 0
    is_high = yr == k - 1

    def unpack(theta: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        beta = theta[: n_models * p].reshape(n_models, p)
        a = theta[n_models * p :].reshape(n_models, k - 1)
        inc = np.exp(a[:, 1:])
        th = np.concatenate([a[:, :1], a[:, :1] + np.cumsum(inc, axis=1)], axis=1)
        return beta, a, th

    def objective(theta: FloatArray) -> tuple[float, FloatArray]:
        beta, a, th = unpack(theta)
        eta = np.einsum("rnp,rp->rn", xs, beta)
        # upper and lower cut of each row's level (±inf at the ends)
        up_t = np.take_along_axis(th, np.minimum(yr, k - 2), axis=1)
        lo_t = np.take_along_axis(th, np.maximum(yr - 1, 0), axis=1)
        fu = np.where(is_high, 1.0, expit(up_t - eta))
        fl = np.where(is_low, 0.0, expit(lo_t - eta))
        prob = np.maximum(fu - fl, TINY)
        du = np.where(is_high, 0.0, fu * (1.0 - fu)) / prob  # d log p / d upper cut
        dl = np.where(is_low, 0.0, fl * (1.0 - fl)) / prob  # −d log p / d lower cut
        loss = -c * float((weight * np.log(prob)).sum()) + 0.5 * float((beta * beta).sum())
        g_eta = c * weight * (du - dl)  # d loss / d η
        g_beta = np.einsum("rn,rnp->rp", g_eta, xs) + beta
        g_th = np.zeros((n_models, k - 1))
        for j in range(k - 1):
            g_th[:, j] = -c * (weight * (np.where(yr == j, du, 0.0) - np.where(yr - 1 == j, dl, 0.0))).sum(
                axis=1
            )
        # θ_j = a₀ + Σ_{m ≤ j, m ≥ 1} exp(a_m)
        tail = np.cumsum(g_th[:, ::-1], axis=1)[:, ::-1]  # Σ_{j ≥ m} ∂/∂θ_j
        g_a = np.concatenate([tail[:, :1], tail[:, 1:] * np.exp(a[:, 1:])], axis=1)
        return loss, np.concatenate([g_beta.ravel(), g_a.ravel()])

    theta0 = np.concatenate([np.zeros(n_models * p), a0.ravel()])
    res = minimize(
        objective,
        theta0,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": tol * max(1.0, c * n_used), "ftol": 1e-13},
    )
    beta, _, th = unpack(np.asarray(res.x, dtype=np.float64))
    return [
        OrdinalFit(beta[r].copy(), th[r].copy(), rank_of.copy(), int(res.nit), bool(res.success))
        for r in range(n_models)
    ]


def fit_ordinal(
    x: ArrayLike, y: ArrayLike, ranks: Sequence[int], *, c: float = 1.0, tol: float = 1e-6
) -> OrdinalFit:
    """One model: ``x`` n × p, ``y`` n label codes."""
    xs = np.asarray(x, dtype=np.float64)
    ys = np.asarray(y, dtype=np.int64)
    if xs.ndim != 2 or ys.shape != (xs.shape[0],):
        raise ValueError("x must be n × p with one label per row")
    return fit_ordinal_many(xs[None], ys[None], ranks, c=c, tol=tol)[0]
