"""Truth inference: what is the label of each unit, given several raters who disagree?

Three estimators over one rating matrix, each returning a frozen dataclass:

* :func:`majority_vote` — the most frequent label per unit; exact ties are broken uniformly at
  random by a generator seeded with ``seed`` (never the global random state).
* :func:`dawid_skene` — Dawid & Skene (1979): each rater has a confusion matrix, fitted by EM.
* :func:`mace` — MACE, Hovy et al. (2013): each rater either knows the answer or "spams" from a
  private label distribution; fitted by EM or variational Bayes, with random restarts.

Input convention (shared by every module in ``judgepanel.metrics`` that calls :func:`as_codes`):
a units × raters array whose cells are category *codes* ``0 … K−1`` (indices into an explicit
category list, so a 1–5 scale keeps its unused levels), with missing cells given as ``NaN`` in a
float array — the shape ``metrics.matrix.RatingMatrix.values`` has — or as ``-1`` in an integer
array. Internally everything runs on an ``int64`` array with ``-1`` for missing.

Units that nobody rated get label ``-1``; their posterior row is the fitted prior (Dawid–Skene),
uniform (MACE), or ``NaN`` (majority vote, which has no model to fall back on).

References
----------
A. P. Dawid and A. M. Skene. Maximum likelihood estimation of observer error-rates using the EM
algorithm. *Journal of the Royal Statistical Society C* 28(1):20–28, 1979. doi:10.2307/2346806

D. Hovy, T. Berg-Kirkpatrick, A. Vaswani and E. Hovy. Learning whom to trust with MACE.
*NAACL-HLT 2013*, 1120–1130. https://aclanthology.org/N13-1132
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# log(0) is replaced by log(TINY): finite, so 0 · log θ stays 0 in the matrix products below.
_TINY = np.finfo(np.float64).tiny
_TIE_ATOL = 1e-12


# ---------------------------------------------------------------- input and shared helpers


def as_codes(ratings: ArrayLike, n_categories: int | None = None) -> tuple[IntArray, int]:
    """A units × raters ``int64`` array with ``-1`` for missing, and the number of categories K.

    Accepts float arrays with ``NaN`` for missing or integer arrays with ``-1``; every present
    value must be an integer code in ``0 … K−1``. K defaults to the largest code + 1.
    """
    arr = np.asarray(ratings)
    if arr.ndim != 2:
        raise ValueError(f"ratings must be a units × raters matrix, got shape {arr.shape}")
    if arr.dtype.kind == "f":
        missing = np.isnan(arr)
        filled = np.where(missing, -1.0, arr)
        if np.any(filled != np.round(filled)):
            raise ValueError("ratings must hold integer category codes (NaN for missing)")
        codes = filled.astype(np.int64)
    elif arr.dtype.kind in "iu" or arr.dtype.kind == "b":
        codes = arr.astype(np.int64)
    else:
        raise ValueError(f"ratings must be numeric codes, got dtype {arr.dtype}")
    if np.any(codes < -1):
        raise ValueError("negative codes other than -1 (missing) are not allowed")
    top = int(codes.max(initial=-1))
    k = top + 1 if n_categories is None else int(n_categories)
    if k < 1:
        k = 1
    if top >= k:
        raise ValueError(f"code {top} is outside 0..{k - 1} for {k} categories")
    return codes, k


def one_hot(codes: IntArray, k: int) -> FloatArray:
    """units × raters × K indicators; all zeros where the cell is missing."""
    n, r = codes.shape
    out = np.zeros((n, r, k))
    rows, cols = np.nonzero(codes >= 0)
    out[rows, cols, codes[rows, cols]] = 1.0
    return out


def vote_counts(codes: IntArray, k: int) -> FloatArray:
    """units × K: how many raters gave each category."""
    n = codes.shape[0]
    out = np.zeros((n, k))
    rows, cols = np.nonzero(codes >= 0)
    np.add.at(out, (rows, codes[rows, cols]), 1.0)
    return out


def argmax_seeded(scores: FloatArray, rng: np.random.Generator, atol: float = _TIE_ATOL) -> IntArray:
    """Row-wise argmax; rows whose maximum is shared pick one of the tied columns uniformly at
    random from ``rng``. Rows that are all NaN get -1."""
    n = scores.shape[0]
    if scores.shape[1] == 0:
        return np.full(n, -1, dtype=np.int64)
    empty = np.all(np.isnan(scores), axis=1)
    s = np.where(np.isnan(scores), -np.inf, scores)
    top = s.max(axis=1, keepdims=True)
    is_max = s >= top - atol
    keys = rng.random(s.shape)
    keys[~is_max] = -1.0
    out: IntArray = np.argmax(keys, axis=1).astype(np.int64)
    out[empty] = -1
    return out


def tied_rows(scores: FloatArray, atol: float = _TIE_ATOL) -> NDArray[np.bool_]:
    """Rows whose maximum is attained by more than one column."""
    s = np.where(np.isnan(scores), -np.inf, scores)
    top = s.max(axis=1, keepdims=True) if s.shape[1] else np.zeros((s.shape[0], 1))
    return np.asarray(((s >= top - atol) & np.isfinite(s)).sum(axis=1) > 1)


def _safe_log(x: FloatArray) -> FloatArray:
    return np.asarray(np.log(np.maximum(x, _TINY)))


def _normalise_rows(x: FloatArray) -> FloatArray:
    """Normalise along the last axis; an all-zero row becomes uniform."""
    total = x.sum(axis=-1, keepdims=True)
    k = x.shape[-1]
    return np.where(total > 0, x / np.where(total > 0, total, 1.0), 1.0 / k)


# ---------------------------------------------------------------- majority vote


@dataclass(frozen=True, eq=False)
class MajorityVote:
    """Majority vote over the raters of each unit.

    ``shares[i, k]`` is the fraction of unit i's raters who chose k (NaN rows for unrated units);
    ``labels[i]`` its most frequent label, ties broken by the seeded generator; ``tied[i]`` says
    whether a tie had to be broken.
    """

    labels: IntArray
    shares: FloatArray
    n_votes: IntArray
    tied: NDArray[np.bool_]
    seed: int

    @property
    def posteriors(self) -> FloatArray:
        return self.shares


def majority_vote(ratings: ArrayLike, n_categories: int | None = None, *, seed: int = 0) -> MajorityVote:
    """Most frequent label per unit, with explicit seeded tie-breaking.

    ``labels[i] = argmax_k #{r : y_ir = k}``; when several k share the maximum one of them is
    drawn uniformly by ``numpy.random.default_rng(seed)``, so the same seed gives the same labels.
    """
    codes, k = as_codes(ratings, n_categories)
    counts = vote_counts(codes, k)
    n = counts.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = np.where(n[:, None] > 0, counts / np.where(n > 0, n, 1.0)[:, None], np.nan)
    labels = argmax_seeded(shares, np.random.default_rng(seed))
    tied = tied_rows(shares) & (n > 0)
    return MajorityVote(labels, shares, n.astype(np.int64), tied, seed)


# ---------------------------------------------------------------- Dawid–Skene


# A deliberate mirror (issue 31 §4): `DawidSkeneFit` and `MaceFit` name the fields they share alike
# (labels, posteriors, log_likelihood, n_iter, converged, tied), so `truth_report` reads both alike.
@dataclass(frozen=True, eq=False)
class DawidSkeneFit:
    """A fitted Dawid–Skene model.

    ``posteriors[i, k] = P(z_i = k | data)``; ``confusion[r, k, l] = P(rater r says l | truth k)``
    (rows sum to 1); ``priors[k] = P(z = k)``. ``log_likelihood[t]`` is the observed-data
    log-likelihood after EM iteration t+1 and ``objective[t]`` the quantity EM increases (the
    log-likelihood plus the log of the pseudo-count prior; equal to it when the pseudo-count is 0),
    so ``objective`` is non-decreasing.
    """

    labels: IntArray
    posteriors: FloatArray
    confusion: FloatArray
    priors: FloatArray
    log_likelihood: tuple[float, ...]
    objective: tuple[float, ...]
    n_iter: int
    converged: bool
    tied: NDArray[np.bool_]

    def rater_accuracy(self) -> FloatArray:
        """Each rater's estimated accuracy ``Σ_k π_k θ_r[k, k]``."""
        return np.asarray(np.einsum("k,rkk->r", self.priors, self.confusion))


def _ds_log_joint(onehot_flat: FloatArray, log_conf: FloatArray, log_prior: FloatArray) -> FloatArray:
    """units × K: log π_k + Σ_r log θ_r[k, y_ir] for the observed cells (one BLAS product)."""
    r, k, _ = log_conf.shape
    # log_conf[r, k, l] -> (r·l, k) so that onehot (n, r·l) @ it gives (n, k)
    mat = log_conf.transpose(0, 2, 1).reshape(r * k, k)
    return np.asarray(onehot_flat @ mat + log_prior[None, :])


def _ds_m_step(
    onehot_flat: FloatArray, post: FloatArray, n_raters: int, k: int, pseudo: float
) -> tuple[FloatArray, FloatArray]:
    counts = (onehot_flat.T @ post).reshape(n_raters, k, k).transpose(0, 2, 1)  # [r, true k, said l]
    confusion = _normalise_rows(counts + pseudo)
    priors = _normalise_rows(post.sum(axis=0) + pseudo)
    return confusion, priors


def _ds_penalty(confusion: FloatArray, priors: FloatArray, pseudo: float) -> float:
    if pseudo == 0:
        return 0.0
    return float(pseudo * (_safe_log(confusion).sum() + _safe_log(priors).sum()))


def dawid_skene(
    ratings: ArrayLike,
    n_categories: int | None = None,
    *,
    pseudo_count: float = 0.01,
    max_iter: int = 100,
    tol: float = 1e-7,
    seed: int = 0,
) -> DawidSkeneFit:
    """Dawid–Skene by EM, initialised from the vote shares.

    Model: ``z_i ~ Cat(π)``; rater r labels unit i with ``y_ir ~ Cat(θ_r[z_i, ·])``, raters
    independent given ``z_i``. Starting from ``T_ik`` = the share of unit i's votes for k:

    * M-step (MAP under a symmetric Dirichlet(1 + c) prior, c = ``pseudo_count``)::

          π_k       = (Σ_i T_ik + c) / (N + K c)
          θ_r[k, l] = (Σ_i T_ik [y_ir = l] + c) / (Σ_i T_ik [y_ir observed] + K c)

    * E-step: ``T_ik ∝ π_k Π_{r observed} θ_r[k, y_ir]`` (in log space).

    Iterations stop when the objective (log-likelihood + c Σ log θ + c Σ log π) gains less than
    ``tol`` per observed rating, or after ``max_iter`` iterations (``converged`` is then False).
    Labels are the posterior argmax; exact ties are broken by ``default_rng(seed)``.

    Dawid & Skene (1979), doi:10.2307/2346806.
    """
    from scipy.special import logsumexp  # on first use: SciPy is slow to import

    if pseudo_count < 0:
        raise ValueError("pseudo_count must be >= 0")
    if max_iter < 1:
        raise ValueError("max_iter must be >= 1")
    codes, k = as_codes(ratings, n_categories)
    n_units, n_raters = codes.shape
    rated = (codes >= 0).any(axis=1)
    obs_codes = codes[rated]
    n_obs = max(int((obs_codes >= 0).sum()), 1)
    onehot = one_hot(obs_codes, k).reshape(obs_codes.shape[0], n_raters * k)

    counts = vote_counts(obs_codes, k)
    post = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0)
    log_lik: list[float] = []
    objective: list[float] = []
    converged = False
    confusion = np.full((n_raters, k, k), 1.0 / k)
    priors = np.full(k, 1.0 / k)
    for _ in range(max_iter):
        confusion, priors = _ds_m_step(onehot, post, n_raters, k, pseudo_count)
        joint = _ds_log_joint(onehot, _safe_log(confusion), _safe_log(priors))
        norm = logsumexp(joint, axis=1, keepdims=True) if joint.size else np.zeros((0, 1))
        post = np.exp(joint - norm)
        ll = float(norm.sum())
        obj = ll + _ds_penalty(confusion, priors, pseudo_count)
        log_lik.append(ll)
        objective.append(obj)
        if len(objective) > 1 and (objective[-1] - objective[-2]) / n_obs < tol:
            converged = True
            break

    posteriors = np.tile(priors, (n_units, 1))
    posteriors[rated] = post
    labels = argmax_seeded(posteriors, np.random.default_rng(seed))
    labels[~rated] = -1
    tied = tied_rows(posteriors) & rated
    return DawidSkeneFit(
        labels=labels,
        posteriors=posteriors,
        confusion=confusion,
        priors=priors,
        log_likelihood=tuple(log_lik),
        objective=tuple(objective),
        n_iter=len(log_lik),
        converged=converged,
        tied=tied,
    )


# ---------------------------------------------------------------- MACE


# A deliberate mirror (issue 31 §4): `DawidSkeneFit` and `MaceFit` name the fields they share alike
# (labels, posteriors, log_likelihood, n_iter, converged, tied), so `truth_report` reads both alike.
@dataclass(frozen=True, eq=False)
class MaceFit:
    """A fitted MACE model.

    ``competence[r]`` is θ_r, the probability that rater r is *not* spamming (labels the truth);
    ``strategy[r, l]`` ξ_r, its label distribution when spamming. ``log_likelihood`` is the trace
    of the log marginal likelihood of the chosen restart, ``restart_log_likelihoods`` the final
    value of every restart (the best one is kept).
    """

    labels: IntArray
    posteriors: FloatArray
    competence: FloatArray
    strategy: FloatArray
    log_likelihood: tuple[float, ...]
    restart_log_likelihoods: tuple[float, ...]
    best_restart: int
    n_iter: int
    converged: bool
    method: str
    tied: NDArray[np.bool_]


def _mace_e_step(
    codes: IntArray, onehot: FloatArray, theta: FloatArray, xi: FloatArray
) -> tuple[FloatArray, float, FloatArray, FloatArray]:
    """Posterior over the truth, log marginal likelihood, and the expected counts
    (knowing per rater, spamming per rater × label)."""
    from scipy.special import logsumexp  # on first use: SciPy is slow to import

    n, r = codes.shape
    k = xi.shape[1]
    observed = codes >= 0
    safe = np.where(observed, codes, 0)
    xi_a = xi[np.arange(r)[None, :], safe]  # ξ_r(a_ir), n × r
    spam = (1.0 - theta)[None, :] * xi_a  # P(a | T ≠ a) for the rater
    match = theta[None, :] + spam  # P(a | T = a)
    log_spam = np.where(observed, _safe_log(spam), 0.0)
    log_gain = np.where(observed, _safe_log(match) - _safe_log(spam), 0.0)
    # log P(T = k, A_i) = −log K + Σ_r log spam_ir + Σ_r [a_ir = k] (log match_ir − log spam_ir)
    joint = log_spam.sum(axis=1, keepdims=True) + np.einsum("nrk,nr->nk", onehot, log_gain) - np.log(k)
    norm = logsumexp(joint, axis=1, keepdims=True)
    post = np.exp(joint - norm)
    ll = float(norm.sum())
    # P(S_ir = 0 | A) = P(T = a_ir | A) · θ_r / (θ_r + (1 − θ_r) ξ_r(a_ir))
    p_true_a = post[np.arange(n)[:, None], safe]
    knowing = np.where(observed, p_true_a * theta[None, :] / match, 0.0)
    spamming = np.where(observed, 1.0 - knowing, 0.0)
    know_counts = np.stack([knowing.sum(axis=0), spamming.sum(axis=0)], axis=1)  # [r, (know, spam)]
    strat_counts = np.einsum("nrl,nr->rl", onehot, spamming)
    return post, ll, know_counts, strat_counts


def mace(
    ratings: ArrayLike,
    n_categories: int | None = None,
    *,
    method: Literal["em", "vb"] = "em",
    restarts: int = 10,
    max_iter: int = 500,
    tol: float = 1e-7,
    smoothing: float | None = None,
    alpha: float = 0.5,
    beta: float = 0.5,
    strategy_prior: float = 10.0,
    seed: int = 0,
) -> MaceFit:
    """MACE (Multi-Annotator Competence Estimation) by EM or variational Bayes, with restarts.

    Model (Hovy et al. 2013): ``T_i ~ Uniform(K)``; rater r spams on unit i with
    ``S_ir ~ Bernoulli(1 − θ_r)``; if it does not spam it gives the truth, ``A_ir = T_i``,
    otherwise ``A_ir ~ Cat(ξ_r)``. Hence ``P(A_ir = a | T_i = k) = θ_r [a = k] + (1 − θ_r) ξ_r(a)``.

    E-step: the posterior over ``T_i`` and the expected knowing/spamming counts
    ``P(S_ir = 0 | A) = P(T_i = a_ir | A) θ_r / (θ_r + (1 − θ_r) ξ_r(a_ir))``.

    M-step, ``method="em"``: normalise the expected counts after adding ``smoothing``
    (default 0.01 / K, as in the MACE release). ``method="vb"``: variational Bayes with a
    Beta(``alpha``, ``beta``) prior on θ and a symmetric Dirichlet(``strategy_prior``) prior on ξ;
    the parameters become ``exp ψ(count + prior) / exp ψ(Σ count + Σ prior)`` (``alpha`` adds to
    the knowing count, ``beta`` to the spamming count). Under VB the reported "log marginal
    likelihood" is that of the variational weights, useful to rank restarts, not as a likelihood.

    Each of ``restarts`` runs starts from θ, ξ drawn from a generator seeded with ``seed`` (every
    restart a fresh draw) as ``Uniform(1, 1.5)`` weights normalised, and runs up to ``max_iter``
    iterations or until the log marginal likelihood changes by less than ``tol`` per observed
    rating; the restart with the highest final log marginal likelihood is kept. (The MACE release
    and crowd-kit run a fixed 50 iterations; on the SummEval pairs MACE needs a few hundred to
    settle, hence the larger cap and a stopping rule.)

    Hovy, Berg-Kirkpatrick, Vaswani & Hovy (2013), https://aclanthology.org/N13-1132
    """
    if method not in ("em", "vb"):
        raise ValueError("method must be 'em' or 'vb'")
    if restarts < 1 or max_iter < 1:
        raise ValueError("restarts and max_iter must be >= 1")
    codes, k = as_codes(ratings, n_categories)
    n_units, n_raters = codes.shape
    rated = (codes >= 0).any(axis=1)
    obs = codes[rated]
    onehot = one_hot(obs, k)
    n_obs = max(int((obs >= 0).sum()), 1)
    smooth = 0.01 / k if smoothing is None else float(smoothing)
    rng = np.random.default_rng(seed)

    def m_step(know: FloatArray, strat: FloatArray) -> tuple[FloatArray, FloatArray]:
        from scipy.special import digamma  # on first use: SciPy is slow to import

        if method == "em":
            kn = _normalise_rows(know + smooth)
            return kn[:, 0], _normalise_rows(strat + smooth)
        prior_t = np.array([alpha, beta])
        theta_v = np.exp(digamma(know + prior_t) - digamma((know + prior_t).sum(axis=1, keepdims=True)))
        xi_v = np.exp(
            digamma(strat + strategy_prior) - digamma((strat + strategy_prior).sum(axis=1))[:, None]
        )
        # The variational weights of knowing and spamming are sub-normalised. Scaling both by one
        # constant per rater leaves the E-step's posteriors and counts unchanged (only the reported
        # log marginal likelihood shifts), so θ is kept normalised; ξ stays as the weights.
        return theta_v[:, 0] / theta_v.sum(axis=1), xi_v

    best: tuple[float, int, FloatArray, FloatArray, list[float], bool] | None = None
    finals: list[float] = []
    for restart in range(restarts):
        w = rng.uniform(1.0, 1.5, size=(n_raters, 2))
        theta = w[:, 0] / w.sum(axis=1)
        xi = _normalise_rows(rng.uniform(1.0, 1.5, size=(n_raters, k)))
        trace: list[float] = []
        converged = False
        _, ll, know, strat = _mace_e_step(obs, onehot, theta, xi)
        for _ in range(max_iter):
            theta, xi = m_step(know, strat)
            _, ll, know, strat = _mace_e_step(obs, onehot, theta, xi)
            trace.append(ll)
            if len(trace) > 1 and abs(trace[-1] - trace[-2]) / n_obs < tol:
                converged = True
                break
        finals.append(trace[-1])
        if best is None or trace[-1] > best[0]:
            best = (trace[-1], restart, theta, xi, trace, converged)
    assert best is not None
    _, best_restart, theta, xi, trace, converged = best
    post, _, _, _ = _mace_e_step(obs, onehot, theta, xi)
    posteriors = np.full((n_units, k), 1.0 / k)
    posteriors[rated] = post
    labels = argmax_seeded(posteriors, np.random.default_rng(seed))
    labels[~rated] = -1
    return MaceFit(
        labels=labels,
        posteriors=posteriors,
        competence=theta,
        strategy=xi,
        log_likelihood=tuple(trace),
        restart_log_likelihoods=tuple(finals),
        best_restart=best_restart,
        n_iter=len(trace),
        converged=converged,
        method=method,
        tied=tied_rows(posteriors) & rated,
    )


# ---------------------------------------------------------------- comparing methods


def label_agreement(a: ArrayLike, b: ArrayLike) -> tuple[float, int]:
    """Fraction of units on which two label vectors agree, over units labelled by both (-1 = none),
    and that number of units. NaN when there is no such unit."""
    x = np.asarray(a, dtype=np.int64)
    y = np.asarray(b, dtype=np.int64)
    both = (x >= 0) & (y >= 0)
    n = int(both.sum())
    return (float(np.mean(x[both] == y[both])) if n else float("nan")), n
