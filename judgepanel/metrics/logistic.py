"""Multinomial logistic regression with an L2 penalty, fitted by L-BFGS (numpy + scipy).

For features ``x_i`` (p values) and a label ``y_i ∈ {0 … K−1}`` the model is
``P(y = k | x) = softmax_k(W x + b)`` with one weight row ``W_k`` and intercept ``b_k`` per class
(the symmetric, over-parametrised form; the penalty makes it identifiable). The fit minimises

    C · Σ_i −log P(y_i | x_i) + ½ ‖W‖²_F

with the intercepts unpenalised — the same objective as scikit-learn's
``LogisticRegression(C=C)`` with the lbfgs solver on a multiclass target, which the tests use as
the reference. The objective is strictly convex in W; the gradient is exact:
``∂/∂W = C (P − Y)ᵀ X + W`` and ``∂/∂b = C Σ_i (P − Y)_i``.

A class that never occurs in the training labels gets an intercept driven towards −∞; L-BFGS
stops at ``max_iter`` with a very small but positive probability for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class MultinomialFit:
    coef: FloatArray  # K × p
    intercept: FloatArray  # K
    n_iter: int
    converged: bool

    def log_proba(self, x: ArrayLike) -> FloatArray:
        from scipy.special import log_softmax  # on first use: SciPy is slow to import

        z = np.asarray(x, dtype=np.float64) @ self.coef.T + self.intercept
        return np.asarray(log_softmax(z, axis=1))

    def predict_proba(self, x: ArrayLike) -> FloatArray:
        return np.asarray(np.exp(self.log_proba(x)))


def fit_multinomial(
    x: ArrayLike, y: ArrayLike, n_classes: int, *, c: float = 1.0, tol: float = 1e-6, max_iter: int = 500
) -> MultinomialFit:
    """Fit the penalised multinomial model (see the module docstring) to rows ``x`` (n × p) and
    integer labels ``y`` in ``0 … n_classes−1``."""
    xs = np.asarray(x, dtype=np.float64)
    ys = np.asarray(y, dtype=np.int64)
    if xs.ndim != 2 or ys.shape != (xs.shape[0],):
        raise ValueError("x must be n × p with one label per row")
    return fit_multinomial_many(xs[None], ys[None], n_classes, c=c, tol=tol, max_iter=max_iter)[0]


def fit_multinomial_many(
    x: ArrayLike,
    y: ArrayLike,
    n_classes: int,
    *,
    c: float = 1.0,
    tol: float = 1e-6,
    max_iter: int = 500,
) -> list[MultinomialFit]:
    """Fit R independent models at once: ``x`` is R × n × p, ``y`` R × n with −1 for rows a model
    does not use. The objective is the sum of the R objectives, which share no parameter, so its
    minimiser is each model's own; one L-BFGS run replaces R (the per-call overhead dominates
    these small fits, though the joint problem needs as many iterations as its slowest member).
    ``tol`` bounds the largest gradient component relative to C · n."""
    from scipy.optimize import minimize  # on first use: SciPy is slow to import

    xs, used, onehot, n_used = stacked_problem(x, y, n_classes)
    if c <= 0:
        raise ValueError("c must be positive")
    n_models, _, p = xs.shape
    k = n_classes
    size_w = n_models * k * p

    def objective(theta: FloatArray) -> tuple[float, FloatArray]:
        w = theta[:size_w].reshape(n_models, k, p)
        b = theta[size_w:].reshape(n_models, k)
        z = np.matmul(xs, w.transpose(0, 2, 1)) + b[:, None, :]
        z -= z.max(axis=2, keepdims=True)
        ez = np.exp(z)
        total = ez.sum(axis=2, keepdims=True)
        logp = z - np.log(total)
        loss = -c * float((onehot * logp).sum()) + 0.5 * float((w * w).sum())
        g = c * used[:, :, None] * (ez / total - onehot)
        grad = np.concatenate([(np.matmul(g.transpose(0, 2, 1), xs) + w).ravel(), g.sum(axis=1).ravel()])
        return loss, grad

    # gtol bounds the gradient of a sum over rows: scale it so the stopping point does not depend
    # on the sample size
    res = minimize(
        objective,
        np.zeros(size_w + n_models * k),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": tol * max(1.0, c * n_used), "ftol": 1e-13},
    )
    theta = np.asarray(res.x, dtype=np.float64)
    w = theta[:size_w].reshape(n_models, k, p)
    b = theta[size_w:].reshape(n_models, k)
    return [
        MultinomialFit(w[r].copy(), b[r].copy(), int(res.nit), bool(res.success)) for r in range(n_models)
    ]


def stacked_problem(
    x: ArrayLike, y: ArrayLike, n_classes: int
) -> tuple[FloatArray, FloatArray, FloatArray, float]:
    """The stacked problem of R multinomial fits, checked: ``x`` as R × n × p floats, the rows each
    model uses (1.0, else 0.0: label −1), the labels one-hot (R × n × K) and the largest number of
    rows a model uses (at least 1; the penalty is scaled by it). Shared by the L2 fit here and the
    elastic-net fit (`metrics.elasticnet`)."""
    xs = np.asarray(x, dtype=np.float64)
    ys = np.asarray(y, dtype=np.int64)
    if xs.ndim != 3 or ys.shape != xs.shape[:2]:
        raise ValueError("x must be R × n × p with one label (or −1) per row")
    if ys.size and ys.max() >= n_classes:
        raise ValueError("labels must lie in 0 … n_classes−1 (−1: row unused)")
    n_models, n, _ = xs.shape
    used = (ys >= 0).astype(np.float64)
    onehot = np.zeros((n_models, n, n_classes))
    mi, ri = np.nonzero(ys >= 0)
    onehot[mi, ri, ys[mi, ri]] = 1.0
    n_used = max(1.0, float(used.sum(axis=1).max(initial=0.0)))
    return xs, used, onehot, n_used
