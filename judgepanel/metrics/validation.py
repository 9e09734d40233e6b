"""May a judge replace a human? Leave-one-annotator-out tests over a sparse human panel.

Inputs are a units × K matrix of human labels (NaN where a human did not label the unit) and a
vector of the judge's labels. Categorical and text labels are passed as codes (indices into a
category list); numeric labels as their values.

Leave-one-annotator-out rule (:func:`loo_rule`)
-----------------------------------------------
For each human k, on the units labelled by k, by the judge and by at least one other human, with
pool P_u = the other humans on unit u, over the observable (unit, pool-human) pairs (so a unit with
more pool labels weighs more)::

    S(judge; pool) = agreement of the judge's labels with the pool labels over those pairs
    S(k; pool)     = agreement of k's labels with the same pool labels
    d_k = S(judge; pool) − S(k; pool),   T_k = 1[d_k ≥ −ε],   ω = mean_k T_k,   accept iff ω ≥ 0.5.

Agreement is observed agreement by default; Cohen's κ, Krippendorff's α and Gwet's AC1 are computed
over the stacked (label, pool label) pairs with ``metrics.agreement``.

Alternative annotator test (:func:`alt_test`; Calderon, Reichart & Dror, ACL 2025)
-------------------------------------------------------------------------------------
For each held-out human h, the instances labelled by h, by the judge and by at least
``min_humans`` humans counting h. Per instance, with R = the remaining humans' labels, a scorer
gives the alignment ``S(x, R)``: accuracy ``mean_r 1[x = r]``, neg-rmse ``−√(mean_r (x − r)²)``, or
(a lexical *proxy* for the paper's embedding similarity on free text) the mean character-trigram
cosine. Then ``W_judge = 1[S_judge ≥ S_h]``, ``W_h = 1[S_h ≥ S_judge]`` (ties count for both;
alignments within 1e-12 of each other are ties, so float summation order never decides), and a
one-sided one-sample t-test of ``W_h − W_judge`` against ε, ``H1: mean < ε``::

    t = (mean − ε) / (s / √n),  p = F_{t, n−1}(t).

Humans with fewer than ``min_instances`` eligible instances are untested. The tested humans'
p-values go through the Benjamini–Yekutieli step-up procedure at level q; ω = rejected / tested,
pass iff ω ≥ 0.5, and ρ = mean over tested humans of mean ``W_judge`` (the advantage probability,
the paper's score for comparing judges). A zero-variance difference (every instance the same) has
no t statistic; it is taken as p = 0 when its mean is below ε and p = 1 otherwise (the reference
notebook gets NaN there and never rejects).

Both tests also report, per held-out human, the overlap used and the overlap the planner asks for
(``metrics.design.m_cert`` with σ0, μ_d estimated from that human's per-item advantages), and warn
when the overlap falls short.

Ranking (:func:`rank_judges`) orders J judges by ρ (or by the mean LOO advantage) and bootstraps
the units to give each judge's probability of being top-1 and each pairwise order probability.

References
----------
- Calderon, N., Reichart, R., Dror, R. (2025). The Alternative Annotator Test for LLM-as-a-Judge:
  How to Statistically Justify Replacing Human Annotators with LLMs. ACL 2025, 16051–16081.
- Benjamini, Y., Yekutieli, D. (2001). The control of the false discovery rate in multiple testing
  under dependency. *Ann. Statist.* 29(4), 1165–1188.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from judgepanel.errors import BadInput
from judgepanel.metrics import agreement as agr
from judgepanel.metrics.design import m_cert

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

AGREEMENTS: tuple[str, ...] = ("observed", "cohen", "alpha", "ac1")
SCORERS: tuple[str, ...] = ("accuracy", "neg-rmse", "trigram-cosine")
RANK_BY: tuple[str, ...] = ("rho", "loo")
# absorbs floating-point error: a d_k exactly on −ε passes, and two alignments equal in exact
# arithmetic (e.g. mean trigram cosines summed in another order) are a tie, whatever the rounding
_TOL = 1e-12


# ---------------------------------------------------------------- scorers


class Scorer(Protocol):
    """Alignment of one label with a set of reference labels: ``combine(mean_r pairwise(x, r))``."""

    @property
    def name(self) -> str: ...

    @property
    def proxy(self) -> bool:
        """True when the scorer only stands in for the one the method prescribes."""

    def pairwise(self, a: FloatArray, b: FloatArray) -> FloatArray: ...

    def combine(self, mean: FloatArray) -> FloatArray: ...


@dataclass(frozen=True)
class Accuracy:
    name: str = "accuracy"
    proxy: bool = False

    def pairwise(self, a: FloatArray, b: FloatArray) -> FloatArray:
        return np.asarray(a == b, dtype=np.float64)

    def combine(self, mean: FloatArray) -> FloatArray:
        return mean


@dataclass(frozen=True)
class NegRmse:
    name: str = "neg-rmse"
    proxy: bool = False

    def pairwise(self, a: FloatArray, b: FloatArray) -> FloatArray:
        return np.asarray((a - b) ** 2, dtype=np.float64)

    def combine(self, mean: FloatArray) -> FloatArray:
        return np.asarray(-np.sqrt(mean), dtype=np.float64)


_ARTICLE = re.compile(r"^(a|an|the)\s+")
_NON_WORD = re.compile(r"[^\w\s]")


def normalise_text(text: str) -> str:
    """Lower-case, punctuation removed, whitespace collapsed, a leading article dropped."""
    s = " ".join(_NON_WORD.sub(" ", text.lower()).split())
    return _ARTICLE.sub("", s)


def trigram_vector(text: str) -> Counter[str]:
    s = f" {normalise_text(text)} "
    return Counter(s[i : i + 3] for i in range(len(s) - 2))


def trigram_cosine(a: str, b: str) -> float:
    """Cosine similarity of character-trigram count vectors of the normalised strings."""
    va, vb = trigram_vector(a), trigram_vector(b)
    dot = sum(c * vb[g] for g, c in va.items())
    na = math.sqrt(sum(c * c for c in va.values()))
    nb = math.sqrt(sum(c * c for c in vb.values()))
    return dot / (na * nb) if na and nb else float(normalise_text(a) == normalise_text(b))


@dataclass(frozen=True)
class TrigramCosine:
    """A lexical proxy for the embedding cosine the paper uses on free text (KiloGram): labels are
    codes into ``texts``. It sees spelling, not meaning ("bird" and "eagle" score low)."""

    texts: tuple[str, ...]
    name: str = "trigram-cosine"
    proxy: bool = True
    _cache: dict[tuple[int, int], float] = field(default_factory=dict, compare=False, repr=False)

    def pairwise(self, a: FloatArray, b: FloatArray) -> FloatArray:
        out = np.empty(a.shape, dtype=np.float64)
        for idx, (x, y) in enumerate(
            zip(a.astype(np.int64).tolist(), b.astype(np.int64).tolist(), strict=True)
        ):
            key = (x, y) if x <= y else (y, x)
            v = self._cache.get(key)
            if v is None:
                v = self._cache[key] = trigram_cosine(self.texts[x], self.texts[y])
            out[idx] = v
        return out

    def combine(self, mean: FloatArray) -> FloatArray:
        return mean


def make_scorer(name: str, texts: Sequence[str] | None = None) -> Scorer:
    if name == "accuracy":
        return Accuracy()
    if name == "neg-rmse":
        return NegRmse()
    if name == "trigram-cosine":
        if texts is None:
            raise BadInput("trigram-cosine needs text labels")
        return TrigramCosine(tuple(texts))
    raise BadInput(f"unknown scorer {name!r}; use one of {', '.join(SCORERS)}")


# ---------------------------------------------------------------- shared pieces


def _as_panel(humans: Any, judge: Any) -> tuple[FloatArray, FloatArray]:
    h = np.asarray(humans, dtype=np.float64)
    j = np.asarray(judge, dtype=np.float64)
    if h.ndim != 2:
        raise BadInput(f"human labels must be a units × humans matrix, got {h.ndim} dimensions")
    if j.shape != (h.shape[0],):
        raise BadInput(f"the judge needs one label per unit ({h.shape[0]}), got shape {j.shape}")
    if h.shape[1] < 2:
        raise BadInput(f"leave-one-out needs at least 2 humans, got {h.shape[1]}")
    return h, j


def _names(names: Sequence[str] | None, k: int) -> list[str]:
    if names is None:
        return [f"human_{i + 1}" for i in range(k)]
    if len(names) != k:
        raise BadInput(f"{len(names)} names for {k} humans")
    return list(names)


def _pairwise_tables(h: FloatArray, j: FloatArray, scorer: Scorer) -> tuple[FloatArray, FloatArray]:
    """P[u, a, b] = pairwise(h_a, h_b) and Q[u, a] = pairwise(judge, h_a) where both are present;
    0 elsewhere (masks say which entries count)."""
    obs = ~np.isnan(h)
    n, k = h.shape
    p = np.zeros((n, k, k))
    u, a, b = np.nonzero(obs[:, :, None] & obs[:, None, :])
    if u.size:
        p[u, a, b] = scorer.pairwise(h[u, a], h[u, b])
    q = np.zeros((n, k))
    u2, a2 = np.nonzero(obs & ~np.isnan(j)[:, None])
    if u2.size:
        q[u2, a2] = scorer.pairwise(np.broadcast_to(j[:, None], h.shape)[u2, a2], h[u2, a2])
    return p, q


@dataclass(frozen=True)
class _Alignment:
    """Per (unit, held-out human): eligibility, pool size and both alignments (NaN if ineligible)."""

    eligible: BoolArray  # n × K
    pool: NDArray[np.int64]  # n × K: other humans on the unit
    s_judge: FloatArray  # n × K
    s_human: FloatArray  # n × K


def _alignment(h: FloatArray, j: FloatArray, scorer: Scorer, min_humans: int) -> _Alignment:
    obs = ~np.isnan(h)
    p, q = _pairwise_tables(h, j, scorer)
    total = obs.sum(axis=1)
    pool = (total[:, None] - obs).astype(np.int64)  # others on the unit, for each held-out human
    eligible = obs & ~np.isnan(j)[:, None] & (pool >= 1) & (pool + 1 >= min_humans)
    # Σ_{o≠h} pairwise(h, o): the row sum of P minus its own diagonal entry
    diag = np.diagonal(p, axis1=1, axis2=2)
    sum_h = np.where(obs, (p * obs[:, None, :]).sum(axis=2) - diag, 0.0)
    sum_j = np.where(obs, (q * obs).sum(axis=1, keepdims=True) - q, 0.0)
    denom = np.where(eligible, pool, 1)
    s_h = np.where(eligible, scorer.combine(sum_h / denom), np.nan)
    s_j = np.where(eligible, scorer.combine(sum_j / denom), np.nan)
    return _Alignment(eligible, pool, s_j, s_h)


def one_sided_t(x: FloatArray, mu0: float) -> tuple[float, float]:
    """(t, p) of a one-sample t-test of H1: mean(x) < mu0; degenerate samples as documented above."""
    from scipy.stats import t as student_t  # on first use: SciPy is slow to import

    n = x.size
    if n < 2:
        raise BadInput("a t-test needs at least 2 observations")
    mean = float(x.mean())
    sd = float(x.std(ddof=1))
    if sd == 0.0:
        if mean < mu0:
            return -math.inf, 0.0
        return (math.inf if mean > mu0 else math.nan), 1.0
    t = (mean - mu0) / (sd / math.sqrt(n))
    return t, float(student_t.cdf(t, df=n - 1))


def benjamini_yekutieli(p_values: Sequence[float], q: float) -> tuple[BoolArray, FloatArray]:
    """The BY step-up procedure (Benjamini & Yekutieli 2001, Thm 1.3): with c(m) = Σ_{i≤m} 1/i and
    p-values sorted ascending, reject the k smallest for the largest k with
    ``p_(k) ≤ k q / (m c(m))``. Also returns adjusted p-values
    ``min(1, min_{j≥k} m c(m) p_(j) / j)`` (as statsmodels' ``fdr_by``)."""
    if not 0.0 < q < 1.0:
        raise BadInput(f"q must be in (0, 1), got {q}")
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    if m == 0:
        return np.zeros(0, dtype=bool), np.zeros(0)
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise BadInput("p-values must be in [0, 1]")
    order = np.argsort(p, kind="stable")
    ranks = np.arange(1, m + 1)
    cm = float((1.0 / ranks).sum())
    below = p[order] <= ranks * q / (m * cm)
    rejected = np.zeros(m, dtype=bool)
    if below.any():
        rejected[order[: int(np.nonzero(below)[0].max()) + 1]] = True
    adjusted_sorted = np.minimum.accumulate((p[order] * m * cm / ranks)[::-1])[::-1]
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(adjusted_sorted, 1.0)
    return rejected, adjusted


def _required(diff: FloatArray, epsilon: float, alpha: float) -> int | None:
    """The planner's m*_cert for this held-out human, from its own per-item advantages."""
    if diff.size < 2:
        return None
    return m_cert(float(diff.std(ddof=1)), float(diff.mean()), epsilon, alpha)


def _overlap_warning(name: str, n: int, need: int | None, what: str) -> str | None:
    if need is None:
        # metrics.design.m_cert: the mean advantage is at or below −ε (or too few items to say)
        return f"{name}: no m*_cert: the judge's advantage is not above −ε, no overlap certifies it ({what})"
    if n < need:
        return f"{name}: {n} shared {what}, below the planner's m*_cert = {need}"
    return None


# ---------------------------------------------------------------- alternative annotator test


@dataclass(frozen=True)
class AltHuman:
    name: str
    n: int  # eligible instances
    n_pairs: int  # (instance, remaining human) comparisons behind the alignments
    tested: bool
    t: float | None
    p_value: float | None
    p_adjusted: float | None
    rejected: bool
    mean_diff: float | None  # mean of W_h − W_judge
    w_judge: float | None  # mean W_judge: this human's advantage probability
    w_human: float | None
    m_required: int | None
    overlap_ok: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "p_value": self.p_value,
            "rejected": self.rejected,
            "tested": self.tested,
            "t": self.t,
            "p_adjusted": self.p_adjusted,
            "n_pairs": self.n_pairs,
            "mean_diff": self.mean_diff,
            "w_judge": self.w_judge,
            "w_human": self.w_human,
            "m_required": self.m_required,
            "overlap_ok": self.overlap_ok,
        }


@dataclass(frozen=True)
class AltTestResult:
    omega: float | None
    rho: float | None
    passed: bool
    epsilon: float
    q: float
    scorer: str
    scorer_is_proxy: bool
    min_instances: int
    min_humans: int
    humans: tuple[AltHuman, ...]
    warnings: tuple[str, ...]

    @property
    def tested(self) -> int:
        return sum(h.tested for h in self.humans)

    @property
    def rejected(self) -> int:
        return sum(h.rejected for h in self.humans)

    def as_dict(self) -> dict[str, Any]:
        return {
            "omega": self.omega,
            "rho": self.rho,
            "passed": self.passed,
            "epsilon": self.epsilon,
            "q": self.q,
            "scorer": self.scorer,
            "scorer_is_proxy": self.scorer_is_proxy,
            "min_instances": self.min_instances,
            "min_humans": self.min_humans,
            "tested": self.tested,
            "rejected": self.rejected,
            "humans": {h.name: h.as_dict() for h in self.humans},
            "warnings": list(self.warnings),
        }


def _check_alt_args(epsilon: float, q: float, min_instances: int, min_humans: int) -> None:
    if not 0.0 <= epsilon <= 1.0:
        raise BadInput(f"epsilon must be in [0, 1], got {epsilon}")
    if not 0.0 < q < 1.0:
        raise BadInput(f"q must be in (0, 1), got {q}")
    if min_instances < 2:
        raise BadInput(f"min-instances must be at least 2 (a t-test needs two), got {min_instances}")
    if min_humans < 2:
        raise BadInput(f"min-humans must be at least 2 (it counts the held-out human), got {min_humans}")


def alt_test(
    humans: Any,
    judge: Any,
    *,
    epsilon: float,
    scorer: Scorer | None = None,
    q: float = 0.05,
    min_instances: int = 30,
    min_humans: int = 2,
    alpha: float = 0.05,
    names: Sequence[str] | None = None,
) -> AltTestResult:
    """The alternative annotator test of one judge against a human panel (see module docstring)."""
    _check_alt_args(epsilon, q, min_instances, min_humans)
    h, j = _as_panel(humans, judge)
    sc = scorer or Accuracy()
    labels = _names(names, h.shape[1])
    al = _alignment(h, j, sc, min_humans)
    rows: list[dict[str, Any]] = []
    warnings: list[str] = []
    for k, name in enumerate(labels):
        e = al.eligible[:, k]
        n = int(e.sum())
        row: dict[str, Any] = {"name": name, "n": n, "n_pairs": int(al.pool[e, k].sum()), "tested": False}
        if n:
            sj, sh = al.s_judge[e, k], al.s_human[e, k]
            w_j = (sj >= sh - _TOL).astype(np.float64)
            w_h = (sh >= sj - _TOL).astype(np.float64)
            diff = w_h - w_j
            need = _required(-diff, epsilon, alpha)
            row |= {
                "mean_diff": float(diff.mean()),
                "w_judge": float(w_j.mean()),
                "w_human": float(w_h.mean()),
                "m_required": need,
                "overlap_ok": need is not None and n >= need,
            }
            if n >= min_instances:
                t, p = one_sided_t(diff, epsilon)
                row |= {"tested": True, "t": t, "p_value": p}
            if n >= 2 and (w := _overlap_warning(name, n, need, "instances")):
                warnings.append(w)
        if not row["tested"]:
            warnings.append(f"{name}: untested, {n} eligible instances < min-instances {min_instances}")
        rows.append(row)
    tested = [r for r in rows if r["tested"]]
    rejected, adjusted = benjamini_yekutieli([r["p_value"] for r in tested], q)
    for r, rej, adj in zip(tested, rejected.tolist(), adjusted.tolist(), strict=True):
        r["rejected"], r["p_adjusted"] = bool(rej), float(adj)
    if not tested:
        warnings.append("no human could be tested: the winning rate is undefined and the judge fails")
    omega = float(rejected.sum()) / len(tested) if tested else None
    rho = float(np.mean([r["w_judge"] for r in tested])) if tested else None
    return AltTestResult(
        omega=omega,
        rho=rho,
        passed=omega is not None and omega >= 0.5,
        epsilon=epsilon,
        q=q,
        scorer=sc.name,
        scorer_is_proxy=sc.proxy,
        min_instances=min_instances,
        min_humans=min_humans,
        humans=tuple(
            AltHuman(
                name=r["name"],
                n=r["n"],
                n_pairs=r["n_pairs"],
                tested=r["tested"],
                t=r.get("t"),
                p_value=r.get("p_value"),
                p_adjusted=r.get("p_adjusted"),
                rejected=r.get("rejected", False),
                mean_diff=r.get("mean_diff"),
                w_judge=r.get("w_judge"),
                w_human=r.get("w_human"),
                m_required=r.get("m_required"),
                overlap_ok=r.get("overlap_ok", False),
            )
            for r in rows
        ),
        warnings=tuple(warnings),
    )


# ---------------------------------------------------------------- leave-one-annotator-out rule


@dataclass(frozen=True)
class LooHuman:
    name: str
    d: float | None
    n_units: int
    n_pairs: int
    s_judge: float | None
    s_human: float | None
    passed: bool  # T_k
    m_required: int | None
    overlap_ok: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "d": self.d,
            "n_units": self.n_units,
            "n_pairs": self.n_pairs,
            "s_judge": self.s_judge,
            "s_human": self.s_human,
            "passed": self.passed,
            "m_required": self.m_required,
            "overlap_ok": self.overlap_ok,
        }


@dataclass(frozen=True)
class LooResult:
    omega: float | None
    accepted: bool
    epsilon: float
    agreement: str
    humans: tuple[LooHuman, ...]
    warnings: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "omega": self.omega,
            "accepted": self.accepted,
            "epsilon": self.epsilon,
            "agreement": self.agreement,
            "humans": {h.name: h.as_dict() for h in self.humans},
            "warnings": list(self.warnings),
        }


def _pair_agreement(
    agreement: str, x: FloatArray, pool: FloatArray, categories: FloatArray, level: str
) -> float:
    """Agreement between labels ``x`` and ``pool`` over stacked (label, pool label) pairs."""
    if agreement == "observed":
        return float((x == pool).mean())
    if agreement == "cohen":
        return agr.cohen_kappa(x, pool, categories)
    pairs = np.column_stack([x, pool])
    if agreement == "alpha":
        return agr.krippendorff_alpha(pairs, level, categories)
    return agr.gwet_ac1(pairs, categories)


def loo_rule(
    humans: Any,
    judge: Any,
    *,
    epsilon: float = 0.05,
    agreement: str = "observed",
    level: str = "nominal",
    categories: Any = None,
    alpha: float = 0.05,
    names: Sequence[str] | None = None,
) -> LooResult:
    """The leave-one-annotator-out acceptance rule (see module docstring). ``categories`` (all
    possible label values) matter for κ and AC1; by default the observed values."""
    if agreement not in AGREEMENTS:
        raise BadInput(f"unknown agreement {agreement!r}; use one of {', '.join(AGREEMENTS)}")
    if not 0.0 <= epsilon <= 1.0:
        raise BadInput(f"epsilon must be in [0, 1], got {epsilon}")
    h, j = _as_panel(humans, judge)
    labels = _names(names, h.shape[1])
    if categories is None:
        both = np.concatenate([h.ravel(), j])
        cats = np.unique(both[~np.isnan(both)])
    else:
        cats = np.asarray(categories, dtype=np.float64)
    al = _alignment(h, j, Accuracy(), 2)
    rows: list[LooHuman] = []
    warnings: list[str] = []
    obs = ~np.isnan(h)
    for k, name in enumerate(labels):
        e = al.eligible[:, k]
        n_units = int(e.sum())
        if not n_units:
            rows.append(LooHuman(name, None, 0, 0, None, None, False, None, False))
            warnings.append(f"{name}: no unit shared with the judge and another human; left out of ω")
            continue
        others = obs & e[:, None]
        others[:, k] = False
        u, o = np.nonzero(others)
        pool = h[u, o]
        s_j = _pair_agreement(agreement, j[u], pool, cats, level)
        s_h = _pair_agreement(agreement, h[u, k], pool, cats, level)
        d = s_j - s_h if math.isfinite(s_j) and math.isfinite(s_h) else None
        # per-unit observed-agreement advantage, for the planner's overlap requirement
        need = _required(al.s_judge[e, k] - al.s_human[e, k], epsilon, alpha)
        rows.append(
            LooHuman(
                name=name,
                d=d,
                n_units=n_units,
                n_pairs=int(u.size),
                s_judge=s_j if math.isfinite(s_j) else None,
                s_human=s_h if math.isfinite(s_h) else None,
                passed=d is not None and d >= -epsilon - _TOL,
                m_required=need,
                overlap_ok=need is not None and n_units >= need,
            )
        )
        if d is None:
            warnings.append(f"{name}: {agreement} is undefined on these pairs; left out of ω")
        if n_units >= 2 and (w := _overlap_warning(name, n_units, need, "units")):
            warnings.append(w)
    counted = [r for r in rows if r.d is not None]
    omega = sum(r.passed for r in counted) / len(counted) if counted else None
    if not counted:
        warnings.append("no held-out human has a defined advantage: ω is undefined and the judge is rejected")
    return LooResult(
        omega=omega,
        accepted=omega is not None and omega >= 0.5,
        epsilon=epsilon,
        agreement=agreement,
        humans=tuple(rows),
        warnings=tuple(warnings),
    )


def loo_differences(humans: Any, judge: Any, scorer: Scorer | None = None) -> FloatArray:
    """Per-(unit, held-out human) advantages ``S_judge − S_h`` under a scorer (accuracy: the
    observed-agreement advantage), flattened over eligible entries: a pilot for the planner."""
    h, j = _as_panel(humans, judge)
    al = _alignment(h, j, scorer or Accuracy(), 2)
    return np.asarray((al.s_judge - al.s_human)[al.eligible], dtype=np.float64)


# ---------------------------------------------------------------- ranking J judges


@dataclass(frozen=True)
class RankedJudge:
    name: str
    score: float | None
    rank: int
    p_top1: float
    ci: tuple[float, float] | None  # bootstrap percentile interval of the score
    omega: float | None
    passed: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "rank": self.rank,
            "p_top1": self.p_top1,
            "ci": list(self.ci) if self.ci else None,
            "omega": self.omega,
            "passed": self.passed,
        }


@dataclass(frozen=True)
class Ranking:
    by: str
    n_boot: int
    seed: int
    judges: tuple[RankedJudge, ...]  # best first
    pairwise: dict[str, dict[str, float]]  # P(row judge ranks above column judge)

    def as_dict(self) -> dict[str, Any]:
        return {
            "by": self.by,
            "bootstrap": self.n_boot,
            "seed": self.seed,
            "order": [j.name for j in self.judges],
            "judges": {j.name: j.as_dict() for j in self.judges},
            "pairwise": self.pairwise,
        }


def _score_parts(
    h: FloatArray, j: FloatArray, by: str, scorer: Scorer, min_humans: int
) -> tuple[FloatArray, FloatArray]:
    """Numerator and denominator contributions per (unit, human): the score for unit weights w is
    the mean over humans of (w @ num) / (w @ den)."""
    if by == "rho":
        al = _alignment(h, j, scorer, min_humans)
        num = np.where(al.eligible, al.s_judge >= al.s_human - _TOL, False).astype(np.float64)
        return num, al.eligible.astype(np.float64)
    # loo: d_k over pairs = (agree_judge − agree_k) / pairs, both observed agreement
    al = _alignment(h, j, Accuracy(), 2)
    pool = np.where(al.eligible, al.pool, 0).astype(np.float64)
    diff = np.where(al.eligible, (al.s_judge - al.s_human) * al.pool, 0.0)
    return diff, pool


def rank_judges(
    humans: Any,
    judges: Any,
    *,
    judge_names: Sequence[str],
    by: str = "rho",
    scorer: Scorer | None = None,
    epsilon: float = 0.1,
    q: float = 0.05,
    min_instances: int = 30,
    min_humans: int = 2,
    n_boot: int = 1000,
    seed: int = 0,
    human_names: Sequence[str] | None = None,
) -> Ranking:
    """Order judges (columns of ``judges``) by ρ or by the mean LOO advantage, with a unit bootstrap
    of that score (the humans tested are those with ≥ ``min_instances`` eligible units in the data;
    a resample in which a human has none skips that human)."""
    if by not in RANK_BY:
        raise BadInput(f"unknown ranking score {by!r}; use one of {', '.join(RANK_BY)}")
    if n_boot < 1:
        raise BadInput(f"bootstrap must be at least 1, got {n_boot}")
    hm = np.asarray(humans, dtype=np.float64)
    jm = np.asarray(judges, dtype=np.float64)
    if jm.ndim != 2 or jm.shape[0] != hm.shape[0] or jm.shape[1] != len(judge_names):
        raise BadInput("judges must be a units × J matrix with one name per column")
    if jm.shape[1] < 2:
        raise BadInput("ranking needs at least 2 judges")
    sc = scorer or Accuracy()
    rng = np.random.default_rng(seed)
    n = hm.shape[0]
    weights = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(np.float64)
    point: list[float] = []
    boot = np.empty((n_boot, jm.shape[1]))
    omegas: list[float | None] = []
    passed: list[bool] = []
    for c in range(jm.shape[1]):
        res = alt_test(
            hm,
            jm[:, c],
            epsilon=epsilon,
            scorer=sc,
            q=q,
            min_instances=min_instances,
            min_humans=min_humans,
            names=human_names,
        )
        if by == "rho":
            tested = np.array([x.tested for x in res.humans])
            omegas.append(res.omega)
            passed.append(res.passed)
        else:
            loo = loo_rule(hm, jm[:, c], epsilon=epsilon, names=human_names)
            tested = np.array([x.d is not None for x in loo.humans])
            omegas.append(loo.omega)
            passed.append(loo.accepted)
        num, den = _score_parts(hm, jm[:, c], by, sc, min_humans)
        num, den = num[:, tested], den[:, tested]
        if not tested.any():
            point.append(math.nan)
            boot[:, c] = math.nan
            continue
        point.append(float(np.mean(num.sum(axis=0) / den.sum(axis=0))))
        with np.errstate(invalid="ignore", divide="ignore"):
            per_human = (weights @ num) / (weights @ den)
        ok = np.isfinite(per_human)
        counts = ok.sum(axis=1)
        boot[:, c] = np.where(
            counts > 0, np.where(ok, per_human, 0.0).sum(axis=1) / np.maximum(counts, 1), np.nan
        )
    names = list(judge_names)
    filled = np.where(np.isnan(boot), -np.inf, boot)
    best = filled.max(axis=1, keepdims=True)
    at_top = filled == best
    p_top1 = (at_top / at_top.sum(axis=1, keepdims=True)).mean(axis=0)
    above = (filled[:, :, None] > filled[:, None, :]) + 0.5 * (filled[:, :, None] == filled[:, None, :])
    prob = above.mean(axis=0)
    order = sorted(
        range(len(names)), key=lambda c: (-(point[c] if math.isfinite(point[c]) else -math.inf), c)
    )
    ranked = []
    for r, c in enumerate(order, start=1):
        col = boot[:, c][np.isfinite(boot[:, c])]
        ci = (float(np.quantile(col, 0.025)), float(np.quantile(col, 0.975))) if col.size else None
        ranked.append(
            RankedJudge(
                name=names[c],
                score=point[c] if math.isfinite(point[c]) else None,
                rank=r,
                p_top1=float(p_top1[c]),
                ci=ci,
                omega=omegas[c],
                passed=passed[c],
            )
        )
    pairwise = {
        names[a]: {names[b]: float(prob[a, b]) for b in range(len(names)) if b != a}
        for a in range(len(names))
    }
    return Ranking(by=by, n_boot=n_boot, seed=seed, judges=tuple(ranked), pairwise=pairwise)
