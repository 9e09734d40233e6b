"""A joint human + LLM-judge truth model in which each judge also has a position bias.

Dawid–Skene (1979) over a pair set, extended so that a judge asked about a pair in both orders
(AB: item A shown first; BA: item B shown first) can have a preference for one slot. Swapped
verdicts then inform both the truth and the bias: a judge that answers "the second one" in both
orders contradicts itself in canonical terms, and the model learns how much of its output is slot
preference rather than judgement.

Model, for units (pairs) i, humans h, judges j and orders o ∈ {AB, BA}::

    z_i ~ Cat(π)
    y_ih  ~ Cat(e_h[z_i, ·])                                   (human: plain Dawid–Skene)
    y_ijo ~ (1 − β_j) · Cat(c_j[z_i, ·]) + β_j · δ(slot_j(o))   (judge: content or slot)

where every verdict is in *canonical* terms (A means item A whichever slot it was shown in) and
``slot_j(o)`` is the label sitting in the judge's preferred slot: for a back-slot judge, B under AB
and A under BA; for a front-slot judge the reverse. The signed bias reported is
``s_j = +β_j`` (prefers the back slot) or ``−β_j`` (prefers the front slot): with probability
``|s_j|`` the judge names that slot regardless of content. Verdicts are independent given z_i,
including a judge's two verdicts on the same pair.

Fitting is EM over (z_i, and for every judge verdict the latent "content or slot" switch)::

    E:  T_ik ∝ π_k Π_h e_h[k, y_ih] Π_{j,o} m_ijo(k),   m_ijo(k) = (1 − β_j) c_j[k, y_ijo] + β_j [y_ijo = slot_j(o)]
        ρ_ijo(k) = β_j [y_ijo = slot_j(o)] / m_ijo(k)         (responsibility of the slot switch)
    M:  β_j = Σ_{i,o,k} T_ik ρ_ijo(k) / n_j
        c_j[k, l] ∝ Σ_{i,o} T_ik (1 − ρ_ijo(k)) [y_ijo = l] + c,   e_h and π as in Dawid–Skene

with pseudo-count c (a symmetric Dirichlet(1 + c) prior on the confusion rows and π). EM
increases the penalised log-likelihood ``ℓ + c Σ log(e, c, π)``, recorded in ``objective``.

The direction of each judge's bias (back or front) is taken from its raw counts (more back-slot
than front-slot verdicts ⇒ back); the magnitude comes from the fit. The profile interval below
is over the signed bias, so it can still reach across 0 into the other direction.

Interval: **profile likelihood**. For judge j the signed bias s is fixed (its direction flips
when s crosses 0) and every other parameter is re-fitted by EM, warm-started from the optimum; the
interval is ``{s : 2 (objective_max − objective_profile(s)) ≤ χ²₁(confidence)}``, its two ends
found by Brent's method on [−0.999, 0.999]. An end that reaches ±0.999 is reported as that bound.

With ``position_bias=False`` every β_j is held at 0: the judge has one confusion matrix for both
orders, i.e. plain Dawid–Skene that ignores order (the baseline the joint model improves on).

References: A. P. Dawid and A. M. Skene, JRSS C 28(1):20–28, 1979 (doi:10.2307/2346806); the
position-bias component follows the "with probability β pick a fixed answer, else judge" mixture
of MACE (Hovy et al., NAACL 2013) with the fixed answer tied to the presentation slot; profile
likelihood intervals as in Venzon & Moolgavkar, JRSS C 37(1):87–94, 1988.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import brentq
from scipy.special import logsumexp
from scipy.stats import chi2

from judgepanel.metrics.truth import (
    FloatArray,
    IntArray,
    _normalise_rows,
    _safe_log,
    argmax_seeded,
    as_codes,
    one_hot,
    vote_counts,
)

_BOUND = 0.999


@dataclass(frozen=True)
class JudgeOrderCounts:
    """Raw counts for one judge, in presented terms.

    Per verdict: ``back_verdicts`` name the item shown second (B under AB, A under BA),
    ``front_verdicts`` the item shown first, ``tie_verdicts`` neither. Per pair seen in both
    orders: ``agree_incl_ties`` / ``disagree_incl_ties`` when the two canonical verdicts are equal
    / differ, ties included (T and T agree; A and T disagree), and among the disagreeing ones
    ``back_wins`` (the back slot both times) and ``front_wins`` (the front slot both times) — the
    counts `metrics bias` runs its sign test on. These are deliberately not called consistent /
    inconsistent: `metrics bias` uses those words for *decisive* pairs only (no tie in either
    order), where consistent + inconsistent = decisive pairs.
    """

    back_verdicts: int
    front_verdicts: int
    tie_verdicts: int
    agree_incl_ties: int
    disagree_incl_ties: int
    back_wins: int
    front_wins: int


@dataclass(frozen=True)
class JudgeBias:
    """One judge's fitted position bias (+ back slot, − front slot) with its profile-likelihood
    interval, next to its raw counts."""

    bias: float
    lower: float
    upper: float
    counts: JudgeOrderCounts


@dataclass(frozen=True, eq=False)
class JointFit:
    labels: IntArray
    posteriors: FloatArray
    priors: FloatArray
    human_confusion: FloatArray  # [h, true k, said l]
    judge_confusion: FloatArray  # [j, true k, said l], the content component
    judges: tuple[JudgeBias, ...]
    log_likelihood: tuple[float, ...]
    objective: tuple[float, ...]
    n_iter: int
    converged: bool
    position_bias: bool
    confidence: float


@dataclass(frozen=True, eq=False)
class _Params:
    priors: FloatArray
    human: FloatArray
    judge: FloatArray
    beta: FloatArray  # magnitude per judge, in [0, 1)
    direction: IntArray  # +1 back, −1 front


@dataclass(frozen=True, eq=False)
class _Data:
    humans: IntArray  # n × H
    judges: tuple[IntArray, IntArray]  # (AB, BA), each n × J
    onehot_h: FloatArray  # n × (H·K)
    onehot_j: tuple[FloatArray, FloatArray]  # n × J × K each
    k: int
    a: int
    b: int
    n_obs: int


def _slot_labels(direction: IntArray, a: int, b: int) -> tuple[IntArray, IntArray]:
    """The label in each judge's preferred slot, under AB and under BA."""
    ab = np.where(direction > 0, b, a).astype(np.int64)
    ba = np.where(direction > 0, a, b).astype(np.int64)
    return ab, ba


def _e_step(
    d: _Data, p: _Params, pseudo: float
) -> tuple[FloatArray, float, float, list[tuple[FloatArray, FloatArray]]]:
    """Posteriors, log-likelihood, penalised objective, and per order (slot indicator, ρ)."""
    n, h = d.humans.shape
    k = d.k
    log_joint = np.tile(_safe_log(p.priors), (n, 1))
    if h:
        mat = _safe_log(p.human).transpose(0, 2, 1).reshape(h * k, k)
        log_joint += d.onehot_h @ mat
    n_judges = p.judge.shape[0]
    slots = _slot_labels(p.direction, d.a, d.b)
    per_order: list[tuple[FloatArray, FloatArray, FloatArray]] = []  # slot indicator, mixture, observed
    for codes, slot in zip(d.judges, slots, strict=True):
        seen = codes >= 0
        safe = np.where(seen, codes, 0)
        # c_j[k, y_ij] for every k: n × J × K
        cg = p.judge[np.arange(n_judges)[None, :], :, safe]
        at_slot = (seen & (codes == slot[None, :])).astype(np.float64)
        mix = (1.0 - p.beta)[None, :, None] * cg + (p.beta[None, :] * at_slot)[:, :, None]
        log_joint += np.where(seen[:, :, None], _safe_log(mix), 0.0).sum(axis=1)
        per_order.append((at_slot, mix, seen.astype(np.float64)))
    norm = logsumexp(log_joint, axis=1, keepdims=True)
    post = np.exp(log_joint - norm)
    ll = float(norm.sum())
    penalty = 0.0
    if pseudo:
        penalty = pseudo * float(
            _safe_log(p.priors).sum() + _safe_log(p.human).sum() + _safe_log(p.judge).sum()
        )
    out: list[tuple[FloatArray, FloatArray]] = []
    for at_slot, mix, observed in per_order:
        rho = (p.beta[None, :] * at_slot)[:, :, None] / np.maximum(mix, 1e-300)
        rho *= observed[:, :, None]
        out.append((observed, rho))
    return post, ll, ll + penalty, out


def _m_step(
    d: _Data,
    post: FloatArray,
    resp: list[tuple[FloatArray, FloatArray]],
    p: _Params,
    pseudo: float,
    free_beta: NDArray[np.bool_],
) -> _Params:
    k = d.k
    h = d.humans.shape[1]
    priors = _normalise_rows(post.sum(axis=0) + pseudo)
    if h:
        counts = (d.onehot_h.T @ post).reshape(h, k, k).transpose(0, 2, 1)
        human = _normalise_rows(counts + pseudo)
    else:
        human = p.human
    n_judges = p.judge.shape[0]
    content = np.zeros((n_judges, k, k))
    slot_mass = np.zeros(n_judges)
    n_j = np.zeros(n_judges)
    for onehot, (observed, rho) in zip(d.onehot_j, resp, strict=True):
        weight = post[:, None, :] * rho  # n × J × K: mass of the slot switch per truth
        content += np.einsum("njk,njl->jkl", post[:, None, :] * observed[:, :, None] - weight, onehot)
        slot_mass += weight.sum(axis=(0, 2))
        n_j += observed.sum(axis=0)
    judge = _normalise_rows(content + pseudo)
    beta = np.where(free_beta, slot_mass / np.maximum(n_j, 1.0), p.beta)
    beta = np.minimum(beta, _BOUND)
    return _Params(priors, human, judge, beta, p.direction)


def _run_em(
    d: _Data,
    p: _Params,
    pseudo: float,
    free_beta: NDArray[np.bool_],
    max_iter: int,
    tol: float,
) -> tuple[_Params, FloatArray, list[float], list[float], bool]:
    lls: list[float] = []
    objs: list[float] = []
    converged = False
    post, ll, obj, resp = _e_step(d, p, pseudo)
    lls.append(ll)
    objs.append(obj)
    for _ in range(max_iter):
        p = _m_step(d, post, resp, p, pseudo, free_beta)
        post, ll, obj, resp = _e_step(d, p, pseudo)
        lls.append(ll)
        objs.append(obj)
        if (objs[-1] - objs[-2]) / d.n_obs < tol:
            converged = True
            break
    return p, post, lls, objs, converged


def order_counts(judge_ab: IntArray, judge_ba: IntArray, a: int, b: int) -> list[JudgeOrderCounts]:
    """Raw back/front/tie and canonical-agreement counts per judge (columns), canonical codes in."""
    out = []
    for j in range(judge_ab.shape[1]):
        ab, ba = judge_ab[:, j], judge_ba[:, j]
        back = int((ab == b).sum() + (ba == a).sum())
        front = int((ab == a).sum() + (ba == b).sum())
        ties = int(((ab >= 0) & (ab != a) & (ab != b)).sum() + ((ba >= 0) & (ba != a) & (ba != b)).sum())
        both = (ab >= 0) & (ba >= 0)
        same = int((both & (ab == ba)).sum())
        back_pairs = int((both & (ab == b) & (ba == a)).sum())
        front_pairs = int((both & (ab == a) & (ba == b)).sum())
        out.append(JudgeOrderCounts(back, front, ties, same, int(both.sum()) - same, back_pairs, front_pairs))
    return out


def joint_dawid_skene(
    humans: ArrayLike,
    judges_ab: ArrayLike,
    judges_ba: ArrayLike,
    n_categories: int | None = None,
    *,
    a_code: int = 0,
    b_code: int = 1,
    position_bias: bool = True,
    pseudo_count: float = 0.01,
    max_iter: int = 1000,
    tol: float = 1e-9,
    confidence: float = 0.95,
    intervals: bool = True,
    seed: int = 0,
) -> JointFit:
    """Fit the joint model (see the module docstring).

    ``humans``: units × H human labels; ``judges_ab`` / ``judges_ba``: units × J verdicts of the
    same J judges asked in order AB and in order BA, all as canonical category codes (NaN or −1
    where missing). ``a_code`` / ``b_code`` are the codes meaning "item A" and "item B"; any other
    code (e.g. a tie) is never a slot. Labels are the posterior argmax, ties broken by
    ``default_rng(seed)``; units nobody labelled get −1.
    """
    h_codes, k_h = as_codes(humans, n_categories)
    ab_codes, k_ab = as_codes(judges_ab, n_categories)
    ba_codes, k_ba = as_codes(judges_ba, n_categories)
    k = max(k_h, k_ab, k_ba, a_code + 1, b_code + 1)
    if n_categories is not None:
        k = int(n_categories)
    if ab_codes.shape != ba_codes.shape or ab_codes.shape[0] != h_codes.shape[0]:
        raise ValueError("humans, judges_ab and judges_ba must have the same units; judges the same columns")
    if a_code == b_code:
        raise ValueError("a_code and b_code must differ")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    n_units, n_h = h_codes.shape
    n_judges = ab_codes.shape[1]
    counts_raw = order_counts(ab_codes, ba_codes, a_code, b_code)
    rated = (h_codes >= 0).any(axis=1) | (ab_codes >= 0).any(axis=1) | (ba_codes >= 0).any(axis=1)
    hc, abc, bac = h_codes[rated], ab_codes[rated], ba_codes[rated]
    n_obs = max(int((hc >= 0).sum() + (abc >= 0).sum() + (bac >= 0).sum()), 1)
    d = _Data(
        humans=hc,
        judges=(abc, bac),
        onehot_h=one_hot(hc, k).reshape(hc.shape[0], n_h * k),
        onehot_j=(one_hot(abc, k), one_hot(bac, k)),
        k=k,
        a=a_code,
        b=b_code,
        n_obs=n_obs,
    )

    # start: vote shares over everything, confusions counted from them, β from the raw counts
    votes = vote_counts(np.concatenate([hc, abc, bac], axis=1), k)
    post0 = votes / np.maximum(votes.sum(axis=1, keepdims=True), 1.0)
    direction = np.array(
        [1 if c.back_verdicts >= c.front_verdicts else -1 for c in counts_raw], dtype=np.int64
    )
    beta0 = np.array(
        [
            min(
                max(
                    abs(c.back_verdicts - c.front_verdicts)
                    / max(c.back_verdicts + c.front_verdicts + c.tie_verdicts, 1),
                    0.02,
                ),
                0.9,
            )
            for c in counts_raw
        ]
    )
    if not position_bias:
        beta0 = np.zeros(n_judges)
    zero = _Params(
        priors=np.full(k, 1.0 / k),
        human=np.full((n_h, k, k), 1.0 / k),
        judge=np.full((n_judges, k, k), 1.0 / k),
        beta=beta0,
        direction=direction,
    )
    free = np.full(n_judges, position_bias)
    _, _, _, resp0 = _e_step(d, zero, pseudo_count)
    # the first M-step sees no slot responsibility so the content confusion starts from the votes
    resp0 = [(obs, np.zeros_like(rho)) for obs, rho in resp0]
    start = _m_step(d, post0, resp0, zero, pseudo_count, np.zeros(n_judges, dtype=bool))
    start = replace(start, beta=beta0)
    params, post, lls, objs, converged = _run_em(d, start, pseudo_count, free, max_iter, tol)

    judges: list[JudgeBias] = []
    for j in range(n_judges):
        signed = float(params.direction[j] * params.beta[j])
        lo = hi = float("nan")
        if position_bias and intervals:
            lo, hi = _profile_interval(d, params, objs[-1], j, pseudo_count, max_iter, tol, confidence)
        judges.append(JudgeBias(signed if position_bias else 0.0, lo, hi, counts_raw[j]))

    posteriors = np.tile(params.priors, (n_units, 1))
    posteriors[rated] = post
    labels = argmax_seeded(posteriors, np.random.default_rng(seed))
    labels[~rated] = -1
    return JointFit(
        labels=labels,
        posteriors=posteriors,
        priors=params.priors,
        human_confusion=params.human,
        judge_confusion=params.judge,
        judges=tuple(judges),
        log_likelihood=tuple(lls),
        objective=tuple(objs),
        n_iter=len(lls) - 1,
        converged=converged,
        position_bias=position_bias,
        confidence=confidence,
    )


def _profile_interval(
    d: _Data,
    best: _Params,
    obj_max: float,
    j: int,
    pseudo: float,
    max_iter: int,
    tol: float,
    confidence: float,
) -> tuple[float, float]:
    """Profile-likelihood interval for judge j's signed bias."""
    drop = chi2.ppf(confidence, df=1) / 2.0
    free = np.ones(best.beta.shape[0], dtype=bool)
    free[j] = False
    s_hat = float(best.direction[j] * best.beta[j])

    def profile(s: float) -> float:
        beta = best.beta.copy()
        direction = best.direction.copy()
        beta[j] = abs(s)
        direction[j] = 1 if s >= 0 else -1
        start = replace(best, beta=beta, direction=direction)
        _, _, _, objs, _ = _run_em(d, start, pseudo, free, max_iter, tol)
        return float(objs[-1] - (obj_max - drop))

    def end(bound: float) -> float:
        # walk out from the optimum in doubling steps until the profile drops below the cut-off,
        # then bisect (Brent) inside that bracket; cheaper than bracketing the whole range
        step = 0.02 if bound > 0 else -0.02
        inner = s_hat
        while True:
            outer = s_hat + step
            if abs(outer) >= abs(bound) or (outer - bound) * step >= 0:
                outer = bound
            if profile(outer) <= 0:
                break
            if outer == bound:
                return bound
            inner, step = outer, step * 2
        lo, hi = (inner, outer) if inner < outer else (outer, inner)
        return float(brentq(profile, lo, hi, xtol=1e-4))

    return end(-_BOUND), end(_BOUND)
