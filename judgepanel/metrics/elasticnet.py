"""Multinomial logistic regression with an elastic-net (L1 + L2) penalty (numpy + scipy).

For features ``x_i`` (p values) and a label ``y_i ∈ {0 … K−1}``, ``P(y = k | x) = softmax_k(W x + b)``
as in ``metrics.logistic``; the fit minimises

    C · Σ_i −log P(y_i | x_i) + ρ ‖W‖₁ + (1 − ρ)/2 ‖W‖²_F

(``ρ`` = ``l1_ratio``; intercepts unpenalised) — scikit-learn's ``LogisticRegression(penalty=
"elasticnet", C=C, l1_ratio=ρ)`` objective, which the tests use as the reference (saga, and
``penalty="l1"`` with ρ = 1). ρ = 0 is ``metrics.logistic``'s L2 fit.

The solver splits each weight into its positive and negative parts, ``W = W⁺ − W⁻`` with
``W⁺, W⁻ ≥ 0``: ‖W‖₁ becomes the linear ``Σ (W⁺ + W⁻)`` and the problem a smooth one under
bounds, which L-BFGS-B solves exactly (a weight the L1 term removes sits at both bounds, so it
is exactly 0). Any optimum has ``min(W⁺, W⁻) = 0`` for ρ > 0 (moving both down by the smaller lowers
the L1 term and changes nothing else), so its W is the elastic-net minimiser.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgepanel.metrics.logistic import MultinomialFit, stacked_problem

FloatArray = NDArray[np.float64]


def fit_enet_many(
    x: ArrayLike,
    y: ArrayLike,
    n_classes: int,
    *,
    c: float = 1.0,
    l1_ratio: float = 0.5,
    tol: float = 1e-6,
    max_iter: int = 1000,
    init: list[MultinomialFit] | None = None,
) -> list[MultinomialFit]:
    """Fit R independent elastic-net models at once (``x`` R × n × p, ``y`` R × n with −1 for
    rows a model does not use), as ``logistic.fit_multinomial_many`` does for L2. ``init``
    warm-starts from earlier fits (e.g. the previous C of a grid)."""
    from scipy.optimize import minimize  # on first use: SciPy is slow to import

    xs, used, onehot, n_used = stacked_problem(x, y, n_classes)
    if c <= 0 or not 0.0 <= l1_ratio <= 1.0:
        raise ValueError("c must be positive and l1_ratio in [0, 1]")
    n_models, _, p = xs.shape
    k = n_classes
    size_w = n_models * k * p
    l1, l2 = l1_ratio, 1.0 - l1_ratio

    def objective(theta: FloatArray) -> tuple[float, FloatArray]:
        wp = theta[:size_w].reshape(n_models, k, p)
        wn = theta[size_w : 2 * size_w].reshape(n_models, k, p)
        b = theta[2 * size_w :].reshape(n_models, k)
        w = wp - wn
        z = np.matmul(xs, w.transpose(0, 2, 1)) + b[:, None, :]
        z -= z.max(axis=2, keepdims=True)
        ez = np.exp(z)
        total = ez.sum(axis=2, keepdims=True)
        logp = z - np.log(total)
        loss = (
            -c * float((onehot * logp).sum())
            + l1 * float(wp.sum() + wn.sum())
            + 0.5 * l2 * float((w * w).sum())
        )
        g = c * used[:, :, None] * (ez / total - onehot)
        gw = np.matmul(g.transpose(0, 2, 1), xs) + l2 * w
        grad = np.concatenate([(gw + l1).ravel(), (-gw + l1).ravel(), g.sum(axis=1).ravel()])
        return loss, grad

    theta0 = np.zeros(2 * size_w + n_models * k)
    if init is not None:
        w0 = np.stack([f.coef for f in init])
        theta0[:size_w] = np.maximum(w0, 0.0).ravel()
        theta0[size_w : 2 * size_w] = np.maximum(-w0, 0.0).ravel()
        theta0[2 * size_w :] = np.stack([f.intercept for f in init]).ravel()
    bounds = [(0.0, None)] * (2 * size_w) + [(None, None)] * (n_models * k)
    res = minimize(
        objective,
        theta0,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": max_iter, "gtol": tol * max(1.0, c * n_used), "ftol": 1e-13},
    )
    theta = np.asarray(res.x, dtype=np.float64)
    w = (theta[:size_w] - theta[size_w : 2 * size_w]).reshape(n_models, k, p)
    b = theta[2 * size_w :].reshape(n_models, k)
    return [
        MultinomialFit(w[r].copy(), b[r].copy(), int(res.nit), bool(res.success)) for r in range(n_models)
    ]


def fit_enet(
    x: ArrayLike, y: ArrayLike, n_classes: int, *, c: float = 1.0, l1_ratio: float = 0.5, tol: float = 1e-6
) -> MultinomialFit:
    """One elastic-net model: ``x`` n × p, ``y`` n labels in 0 … n_classes−1."""
    xs = np.asarray(x, dtype=np.float64)
    ys = np.asarray(y, dtype=np.int64)
    if xs.ndim != 2 or ys.shape != (xs.shape[0],):
        raise ValueError("x must be n × p with one label per row")
    return fit_enet_many(xs[None], ys[None], n_classes, c=c, l1_ratio=l1_ratio, tol=tol)[0]
