"""A joint human + LLM-judge truth model in which each judge also has a position bias.

Dawid–Skene (1979) over a pair set, extended so that a judge asked about a pair in both orders
(AB: item A shown first; BA: item B shown first) can prefer a slot. Swapped verdicts then inform
both the truth and the bias: a judge that answers "the second one" in both orders contradicts
itself in canonical terms, and the model learns how much of its output is slot preference rather
than judgement.

Model, for units (pairs) i, humans h, judges j and orders o ∈ {AB, BA}::

    z_i   ~ Cat(π)
    y_ih  ~ Cat(e_h[z_i, ·])                                   (human: plain Dawid–Skene)
    v_ij  ~ Cat(c_j[z_i, ·])                                   (judge j's content verdict, once per pair)
    y_ijo = back_o with prob. b_j, front_o with prob. f_j, else v_ij   (independently per order)

Every verdict is in *canonical* terms (A means item A whichever slot it was shown in); the back
slot holds B under AB and A under BA, the front slot the reverse. The judge forms **one** opinion
of the pair's content (it reads the same two texts in both orders) and each order's answer is
that opinion unless the slot overrides it. (An earlier version drew the content verdict afresh
for each order, independently given z_i; a real judge's two readings of one pair are nearly
identical, so that model mistook content agreement for extra information and its intervals were
1.3–1.8× too wide.) The reported signed bias is ``s_j = b_j − f_j`` (+ back, − front): the net
probability of naming the back slot. Per pair, the back-minus-front verdict count of the two
orders has expectation 2 s_j whatever the content, so s_j is what the sign test's counts move with.

Fitting is EM over z_i, v_ij and each verdict's switch (back / front / content)::

    L_ij(k) = Σ_v c_j[k, v] Π_o P_o(y_ijo | v),   P_o(y | v) = b_j [y = back_o] + f_j [y = front_o] + (1 − b_j − f_j) [y = v]
    E:  T_ik ∝ π_k Π_h e_h[k, y_ih] Π_j L_ij(k);   W_ijkv = T_ik c_j[k, v] Π_o P_o(y_ijo | v) / L_ij(k)
    M:  c_j[k, v] ∝ Σ_i W_ijkv + c;   b_j = n_back / n_j, f_j = n_front / n_j

where n_back / n_front are the expected switch counts (the responsibilities of the back / front
branch of each P_o, weighted by the posterior of v) over the judge's n_j verdicts; e_h and π as in
Dawid–Skene. Pseudo-count c (a symmetric Dirichlet(1 + c) prior on the confusion rows and π); EM
increases the penalised log-likelihood ``ℓ + c Σ log(e, c, π)``, recorded in ``objective``.

Interval: **profile likelihood**. For judge j the signed bias s is fixed and every other parameter
is re-fitted by EM, warm-started from the optimum; with s fixed the M-step for the slot mass
m = b + f (b = (m + s)/2, f = (m − s)/2) maximises n_back log b + n_front log f + n_content log(1 − m),
whose stationary point is the root in [|s|, 1] of N m² − [n_b + n_f + s(n_b − n_f)] m − [s(n_f − n_b)
+ n_c s²] = 0. The interval is ``{s : 2 (objective_max − objective_profile(s)) ≤ χ²₁(confidence)}``,
its ends found by bisection between the estimate and ±0.999 (both ends, and many panels in
:func:`joint_bias_batch`, side by side); an end that reaches ±0.999 is reported as that
bound. Planted simulations (tests/metrics/test_joint.py) cover at the nominal rate.

With ``position_bias=False`` every s_j is held at 0 (b_j = f_j): the judge may still name a slot
now and then, but neither slot more than the other — the order-blind baseline the joint model
improves on.

References: A. P. Dawid and A. M. Skene, JRSS C 28(1):20–28, 1979 (doi:10.2307/2346806); the
slot component follows the "with probability β pick a fixed answer, else judge" mixture of MACE
(Hovy et al., NAACL 2013) with the fixed answer tied to the presentation slot; profile
likelihood intervals as in Venzon & Moolgavkar, JRSS C 37(1):87–94, 1988.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgepanel.metrics.truth import (
    FloatArray,
    IntArray,
    _normalise_rows,
    _safe_log,
    argmax_seeded,
    as_codes,
    one_hot,
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


# Every internal array carries a leading batch axis r: independent data sets fitted side by side
# (the two ends of a profile interval, or many simulated panels), each with its own parameters.


@dataclass(frozen=True, eq=False)
class _Params:
    priors: FloatArray  # r × K
    human: FloatArray  # r × H × K × K
    judge: FloatArray  # r × J × K × K, content confusion [true k, content v]
    back: FloatArray  # r × J, b_j
    front: FloatArray  # r × J, f_j

    def take(self, idx: IntArray) -> _Params:
        return _Params(self.priors[idx], self.human[idx], self.judge[idx], self.back[idx], self.front[idx])


@dataclass(frozen=True, eq=False)
class _Data:
    onehot_h: FloatArray  # r × n × (H·K)
    onehot_j: tuple[FloatArray, FloatArray]  # (AB, BA), r × n × J × K each
    seen: tuple[FloatArray, FloatArray]  # r × n × J each, 1 where the order was answered
    slots: tuple[tuple[FloatArray, FloatArray], tuple[FloatArray, FloatArray]]  # per order: at back, at front
    judged: FloatArray  # r × n × J: at least one order answered
    n_verdicts: FloatArray  # r × J
    n_humans: int
    k: int
    n_obs: FloatArray  # r

    def take(self, idx: IntArray) -> _Data:
        def t(x: FloatArray) -> FloatArray:
            return x[idx]

        return _Data(
            onehot_h=t(self.onehot_h),
            onehot_j=(t(self.onehot_j[0]), t(self.onehot_j[1])),
            seen=(t(self.seen[0]), t(self.seen[1])),
            slots=((t(self.slots[0][0]), t(self.slots[0][1])), (t(self.slots[1][0]), t(self.slots[1][1]))),
            judged=t(self.judged),
            n_verdicts=t(self.n_verdicts),
            n_humans=self.n_humans,
            k=self.k,
            n_obs=t(self.n_obs),
        )


def _data(h: IntArray, ab: IntArray, ba: IntArray, k: int, a: int, b: int) -> _Data:
    """Batched model data from r × n × H human and r × n × J judge codes (−1 missing)."""
    r, n, n_h = h.shape
    n_j = ab.shape[2]

    def hot(codes: IntArray, cols: int) -> FloatArray:
        return one_hot(codes.reshape(r * n, cols), k).reshape(r, n, cols, k)

    # the back slot holds B under AB and A under BA; the front slot the other item
    slots = tuple(
        ((codes == back).astype(np.float64), (codes == front).astype(np.float64))
        for codes, back, front in ((ab, b, a), (ba, a, b))
    )
    seen_ab, seen_ba = (ab >= 0).astype(np.float64), (ba >= 0).astype(np.float64)
    return _Data(
        onehot_h=hot(h, n_h).reshape(r, n, n_h * k),
        onehot_j=(hot(ab, n_j), hot(ba, n_j)),
        seen=(seen_ab, seen_ba),
        slots=(slots[0], slots[1]),
        judged=np.maximum(seen_ab, seen_ba),
        n_verdicts=seen_ab.sum(axis=1) + seen_ba.sum(axis=1),
        n_humans=n_h,
        k=k,
        n_obs=np.maximum(
            (h >= 0).sum(axis=(1, 2)) + (ab >= 0).sum(axis=(1, 2)) + (ba >= 0).sum(axis=(1, 2)), 1
        ).astype(np.float64),
    )


@dataclass(frozen=True, eq=False)
class _Expected:
    """What the M-step needs from the E-step."""

    post: FloatArray  # r × n × K
    content: FloatArray  # r × J × K × K expected (truth, content) counts
    back: FloatArray  # r × J expected back-slot switches
    front: FloatArray  # r × J expected front-slot switches


def _emissions(d: _Data, p: _Params) -> list[FloatArray]:
    """P_o(y_ijo | v) for every v, per order: r × n × J × K, 1 where the order is missing."""
    gamma = 1.0 - p.back - p.front
    out = []
    for onehot, seen, (at_back, at_front) in zip(d.onehot_j, d.seen, d.slots, strict=True):
        e = (p.back[:, None, :] * at_back + p.front[:, None, :] * at_front)[..., None]
        e = e + gamma[:, None, :, None] * onehot
        out.append(np.where(seen[..., None] > 0, e, 1.0))
    return out


def _e_step(d: _Data, p: _Params, pseudo: float) -> tuple[_Expected, FloatArray, FloatArray]:
    """Expected counts, log-likelihood and penalised objective (one per batch member)."""
    from scipy.special import logsumexp  # on first use: SciPy is slow to import

    k, h = d.k, d.n_humans
    r, n = d.judged.shape[:2]
    log_joint = np.broadcast_to(_safe_log(p.priors)[:, None, :], (r, n, k)).copy()
    if h:
        mat = _safe_log(p.human).transpose(0, 1, 3, 2).reshape(r, h * k, k)
        log_joint += d.onehot_h @ mat
    e_ab, e_ba = _emissions(d, p)
    pv = e_ab * e_ba  # r × n × J × V
    pv_t = pv.transpose(0, 2, 1, 3)  # r × J × n × V, so the sums over v and n are batched matmuls
    # L_ij(k) = Σ_v c_j[k, v] pv_ijv; 1 for a pair the judge never answered
    lik = (pv_t @ np.swapaxes(p.judge, 2, 3)).transpose(0, 2, 1, 3)
    log_joint += _safe_log(lik).sum(axis=2)
    norm = logsumexp(log_joint, axis=2, keepdims=True)
    post = np.exp(log_joint - norm)
    ll = norm.sum(axis=(1, 2))
    penalty = np.zeros(r)
    if pseudo:
        penalty = pseudo * (
            _safe_log(p.priors).sum(axis=1)
            + _safe_log(p.human).sum(axis=(1, 2, 3))
            + _safe_log(p.judge).sum(axis=(1, 2, 3))
        )
    # W_ijkv = q_ijk c_j[k, v] pv_ijv with q = T_ik / L_ij(k) over the pairs the judge answered;
    # summed over i (content counts) and over k (posterior of the content verdict), never built
    q = post[:, :, None, :] / np.maximum(lik, 1e-300) * d.judged[..., None]
    q_t = q.transpose(0, 2, 1, 3)  # r × J × n × K
    content = p.judge * (np.swapaxes(q_t, 2, 3) @ pv_t)
    wv = pv * (q_t @ p.judge).transpose(0, 2, 1, 3)  # r × n × J × V
    back = np.zeros(p.back.shape)
    front = np.zeros(p.front.shape)
    for e, seen, (at_back, at_front) in zip((e_ab, e_ba), d.seen, d.slots, strict=True):
        share = (wv / np.maximum(e, 1e-300)).sum(axis=3) * seen  # r × n × J
        back += p.back * (share * at_back).sum(axis=1)
        front += p.front * (share * at_front).sum(axis=1)
    return _Expected(post, content, back, front), ll, ll + penalty


def _slot_mass(n_b: FloatArray, n_f: FloatArray, n: FloatArray, s: FloatArray) -> FloatArray:
    """The slot mass m = b + f maximising n_b log b + n_f log f + (n − n_b − n_f) log(1 − m) with
    b − f = s held fixed (module docstring), clipped to [|s|, bound]."""
    n_c = np.maximum(n - n_b - n_f, 0.0)
    lin = n_b + n_f + s * (n_b - n_f)
    const = s * (n_f - n_b) + n_c * s * s
    nn = np.maximum(n, 1e-12)
    m = (lin + np.sqrt(np.maximum(lin * lin + 4.0 * nn * const, 0.0))) / (2.0 * nn)
    return np.asarray(np.clip(m, np.abs(s), _BOUND), dtype=np.float64)


def _m_step(
    d: _Data, x: _Expected, p: _Params, pseudo: float, fixed: NDArray[np.bool_], s_fixed: FloatArray
) -> _Params:
    """``fixed[r, j]``: judge j's signed bias is held at ``s_fixed[r, j]`` (its slot mass stays free)."""
    k, h = d.k, d.n_humans
    r = x.post.shape[0]
    priors = _normalise_rows(x.post.sum(axis=1) + pseudo)
    if h:
        counts = (np.swapaxes(d.onehot_h, 1, 2) @ x.post).reshape(r, h, k, k).transpose(0, 1, 3, 2)
        human = _normalise_rows(counts + pseudo)
    else:
        human = p.human
    judge = _normalise_rows(x.content + pseudo)
    nj = np.maximum(d.n_verdicts, 1.0)
    back, front = x.back / nj, x.front / nj
    total = back + front
    scale = np.where(total > _BOUND, _BOUND / np.maximum(total, 1e-300), 1.0)
    back, front = back * scale, front * scale
    if fixed.any():
        m = _slot_mass(x.back, x.front, d.n_verdicts, s_fixed)
        back = np.where(fixed, (m + s_fixed) / 2.0, back)
        front = np.where(fixed, (m - s_fixed) / 2.0, front)
    return _Params(priors, human, judge, back, front)


def _run_em(
    d: _Data,
    p: _Params,
    pseudo: float,
    fixed: NDArray[np.bool_],
    s_fixed: FloatArray,
    max_iter: int,
    tol: float,
) -> tuple[_Params, FloatArray, list[FloatArray], list[FloatArray], bool]:
    """EM until every batch member's objective gains less than ``tol`` per observation."""
    lls: list[FloatArray] = []
    objs: list[FloatArray] = []
    converged = False
    x, ll, obj = _e_step(d, p, pseudo)
    lls.append(ll)
    objs.append(obj)
    for _ in range(max_iter):
        p = _m_step(d, x, p, pseudo, fixed, s_fixed)
        x, ll, obj = _e_step(d, p, pseudo)
        lls.append(ll)
        objs.append(obj)
        if float(np.max((objs[-1] - objs[-2]) / d.n_obs)) < tol:
            converged = True
            break
    return p, x.post, lls, objs, converged


def _start(d: _Data, counts: FloatArray, pseudo: float, position_bias: bool) -> _Params:
    """Vote shares over everything, confusions counted from them; slot rates from the raw
    back-wins / front-wins shares (never 0, so a self-contradicting pair stays possible).
    ``counts``: r × J × 3 (back wins, front wins, pairs answered in both orders)."""
    k, h = d.k, d.n_humans
    r, n = d.judged.shape[:2]
    votes = d.onehot_h.reshape(r, n, h, k).sum(axis=2) + d.onehot_j[0].sum(axis=2) + d.onehot_j[1].sum(axis=2)
    post0 = votes / np.maximum(votes.sum(axis=2, keepdims=True), 1.0)
    both = np.maximum(counts[..., 2], 1.0)
    back0 = np.clip(counts[..., 0] / both, 0.02, 0.45)
    front0 = np.clip(counts[..., 1] / both, 0.02, 0.45)
    if not position_bias:
        back0 = front0 = (back0 + front0) / 2.0
    content0 = np.einsum("rnk,rnjl->rjkl", post0, d.onehot_j[0] + d.onehot_j[1])
    human0 = (np.swapaxes(d.onehot_h, 1, 2) @ post0).reshape(r, h, k, k).transpose(0, 1, 3, 2)
    return _Params(
        priors=_normalise_rows(post0.sum(axis=1) + pseudo),
        human=_normalise_rows(human0 + pseudo),
        judge=_normalise_rows(content0 + pseudo),
        back=back0,
        front=front0,
    )


def _profile_intervals(
    d: _Data,
    best: _Params,
    obj_max: FloatArray,
    j: int,
    pseudo: float,
    max_iter: int,
    tol: float,
    confidence: float,
    steps: int = 16,
) -> tuple[FloatArray, FloatArray]:
    """Profile-likelihood interval of judge j's signed bias for every batch member: both ends of
    every member bisected side by side (``steps`` halvings of [ŝ, ±bound], width 2⁻¹⁶·2 ≈ 3e-5)."""
    from scipy.stats import chi2  # on first use: SciPy is slow to import

    r = obj_max.shape[0]
    drop = chi2.ppf(confidence, df=1) / 2.0
    idx = np.concatenate([np.arange(r), np.arange(r)])
    dd, start = d.take(idx), best.take(idx)
    cut = np.concatenate([obj_max, obj_max]) - drop
    s_hat = start.back[:, j] - start.front[:, j]
    bound = np.concatenate([np.full(r, -_BOUND), np.full(r, _BOUND)])
    fixed = np.zeros(start.back.shape, dtype=bool)
    fixed[:, j] = True

    # each bisection step starts EM from the previous step's fit, whose s is at most twice as far
    warm = [start]

    def above(s: FloatArray, base: _Params) -> NDArray[np.bool_]:
        """Is the profile objective at s still above the cut-off?"""
        m = np.clip(np.maximum(base.back[:, j] + base.front[:, j], np.abs(s) + 1e-6), 0.0, _BOUND)
        back, front = base.back.copy(), base.front.copy()
        back[:, j], front[:, j] = (m + s) / 2.0, (m - s) / 2.0
        target = np.zeros_like(back)
        target[:, j] = s
        fit, _, _, objs, _ = _run_em(
            dd, replace(base, back=back, front=front), pseudo, fixed, target, max_iter, tol
        )
        warm[0] = fit
        return np.asarray(objs[-1] > cut)

    inner, outer = s_hat.copy(), bound.copy()
    for _ in range(steps):
        mid = (inner + outer) / 2.0
        up = above(mid, warm[0])
        inner = np.where(up, mid, inner)
        outer = np.where(up, outer, mid)
    ends = (inner + outer) / 2.0
    open_end = outer == bound  # never below the cut-off on the way out: is it at the bound?
    if open_end.any():
        open_end &= above(bound, warm[0])
    ends = np.where(open_end, bound, ends)
    return ends[:r], ends[r:]


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


def _codes(
    humans: ArrayLike, judges_ab: ArrayLike, judges_ba: ArrayLike, n_categories: int | None, a: int, b: int
) -> tuple[IntArray, IntArray, IntArray, int]:
    h_codes, k_h = as_codes(humans, n_categories)
    ab_codes, k_ab = as_codes(judges_ab, n_categories)
    ba_codes, k_ba = as_codes(judges_ba, n_categories)
    k = int(n_categories) if n_categories is not None else max(k_h, k_ab, k_ba, a + 1, b + 1)
    if ab_codes.shape != ba_codes.shape or ab_codes.shape[0] != h_codes.shape[0]:
        raise ValueError("humans, judges_ab and judges_ba must have the same units; judges the same columns")
    if a == b:
        raise ValueError("a_code and b_code must differ")
    return h_codes, ab_codes, ba_codes, k


def _raw(counts: list[JudgeOrderCounts]) -> FloatArray:
    return np.array(
        [[c.back_wins, c.front_wins, c.agree_incl_ties + c.disagree_incl_ties] for c in counts],
        dtype=np.float64,
    ).reshape(len(counts), 3)


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
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    h_codes, ab_codes, ba_codes, k = _codes(humans, judges_ab, judges_ba, n_categories, a_code, b_code)
    n_units = h_codes.shape[0]
    n_judges = ab_codes.shape[1]
    counts_raw = order_counts(ab_codes, ba_codes, a_code, b_code)
    rated = (h_codes >= 0).any(axis=1) | (ab_codes >= 0).any(axis=1) | (ba_codes >= 0).any(axis=1)
    d = _data(h_codes[rated][None], ab_codes[rated][None], ba_codes[rated][None], k, a_code, b_code)
    start = _start(d, _raw(counts_raw)[None], pseudo_count, position_bias)
    fixed = np.full((1, n_judges), not position_bias)
    params, post, lls, objs, converged = _run_em(
        d, start, pseudo_count, fixed, np.zeros((1, n_judges)), max_iter, tol
    )

    judges: list[JudgeBias] = []
    for j in range(n_judges):
        signed = float(params.back[0, j] - params.front[0, j])
        lo = hi = float("nan")
        if position_bias and intervals:
            low, high = _profile_intervals(d, params, objs[-1], j, pseudo_count, max_iter, tol, confidence)
            lo, hi = float(low[0]), float(high[0])
        judges.append(JudgeBias(signed if position_bias else 0.0, lo, hi, counts_raw[j]))

    posteriors = np.tile(params.priors[0], (n_units, 1))
    posteriors[rated] = post[0]
    labels = argmax_seeded(posteriors, np.random.default_rng(seed))
    labels[~rated] = -1
    return JointFit(
        labels=labels,
        posteriors=posteriors,
        priors=params.priors[0],
        human_confusion=params.human[0],
        judge_confusion=params.judge[0],
        judges=tuple(judges),
        log_likelihood=tuple(float(v[0]) for v in lls),
        objective=tuple(float(v[0]) for v in objs),
        n_iter=len(lls) - 1,
        converged=converged,
        position_bias=position_bias,
        confidence=confidence,
    )


@dataclass(frozen=True, eq=False)
class BatchBias:
    """Signed biases and their profile intervals for many panels fitted side by side: r × J."""

    bias: FloatArray
    lower: FloatArray
    upper: FloatArray


def joint_bias_batch(
    humans: ArrayLike,
    judges_ab: ArrayLike,
    judges_ba: ArrayLike,
    n_categories: int,
    *,
    a_code: int = 0,
    b_code: int = 1,
    pseudo_count: float = 0.01,
    max_iter: int = 1000,
    tol: float = 1e-9,
    confidence: float = 0.95,
    steps: int = 16,
) -> BatchBias:
    """The position-bias part of :func:`joint_dawid_skene` for r independent panels at once
    (r × units × H humans, r × units × J judges per order; every unit labelled by someone): the
    same model and interval, vectorised over the panels, for simulation studies of coverage."""
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    hs, abs_, bas = (np.asarray(x) for x in (humans, judges_ab, judges_ba))
    if hs.ndim != 3 or abs_.ndim != 3 or abs_.shape != bas.shape or hs.shape[:2] != abs_.shape[:2]:
        raise ValueError("humans and judges must be r × units × raters arrays with the same r and units")
    r, n, n_h = hs.shape
    n_j = abs_.shape[2]
    h_codes, ab_codes, ba_codes, k = _codes(
        hs.reshape(r * n, n_h),
        abs_.reshape(r * n, n_j),
        bas.reshape(r * n, n_j),
        n_categories,
        a_code,
        b_code,
    )
    h3, ab3, ba3 = h_codes.reshape(r, n, n_h), ab_codes.reshape(r, n, n_j), ba_codes.reshape(r, n, n_j)
    d = _data(h3, ab3, ba3, k, a_code, b_code)
    raw = np.stack([_raw(order_counts(ab3[i], ba3[i], a_code, b_code)) for i in range(r)])
    start = _start(d, raw, pseudo_count, True)
    no = np.zeros((r, n_j), dtype=bool)
    params, _, _, objs, _ = _run_em(d, start, pseudo_count, no, np.zeros((r, n_j)), max_iter, tol)
    lower, upper = np.empty((r, n_j)), np.empty((r, n_j))
    for j in range(n_j):
        lower[:, j], upper[:, j] = _profile_intervals(
            d, params, objs[-1], j, pseudo_count, max_iter, tol, confidence, steps
        )
    return BatchBias(params.back - params.front, lower, upper)
