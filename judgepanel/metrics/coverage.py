"""How often a bootstrap interval covers the truth when items share a group (a coverage simulation).

Items within an article are not independent: a planted random effect per group,

    y_gi = u_g + e_gi,   u_g ~ N(0, icc),   e_gi ~ N(0, 1 − icc),

gives the within-group correlation ``icc`` (the intraclass correlation) and a known mean 0. For
each of ``n_sims`` simulated data sets of ``n_groups × group_size`` items the mean's percentile
interval is computed twice with the library's own resampling (:func:`~judgepanel.metrics.bootstrap.
count_matrix` for items, :func:`~judgepanel.metrics.bootstrap.cluster_count_matrix` for groups) and
the share of intervals containing 0 is the coverage. The item bootstrap treats the
``n_groups·group_size`` items as independent; its variance is too small by the design effect
``1 + (group_size − 1)·icc`` (Kish 1965), so its coverage falls below nominal, while resampling
groups keeps close to it (a little under for few groups, as percentile intervals do).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from judgepanel.errors import BadInput
from judgepanel.metrics.bootstrap import cluster_count_matrix, count_matrix, percentile_bounds


@dataclass(frozen=True)
class Coverage:
    n_groups: int
    group_size: int
    icc: float
    n_sims: int
    n_boot: int
    confidence: float
    seed: int
    coverage: dict[str, float]  # resample mode -> share of intervals that contain the truth
    mean_width: dict[str, float]

    @property
    def design_effect(self) -> float:
        return 1.0 + (self.group_size - 1) * self.icc

    def as_dict(self) -> dict[str, object]:
        return {
            "n_groups": self.n_groups,
            "group_size": self.group_size,
            "icc": self.icc,
            "design_effect": round(self.design_effect, 6),
            "n_sims": self.n_sims,
            "n_boot": self.n_boot,
            "confidence": self.confidence,
            "seed": self.seed,
            "coverage": {k: round(v, 4) for k, v in self.coverage.items()},
            "mean_width": {k: round(v, 4) for k, v in self.mean_width.items()},
        }


def clustered_mean_coverage(
    *,
    n_groups: int = 30,
    group_size: int = 8,
    icc: float = 0.3,
    n_sims: int = 400,
    n_boot: int = 400,
    confidence: float = 0.95,
    seed: int = 0,
) -> Coverage:
    """Coverage of the item and the group bootstrap for the mean under planted within-group
    correlation (see the module docstring)."""
    if n_groups < 2 or group_size < 1 or n_sims < 1 or n_boot < 2:
        raise BadInput("coverage needs at least 2 groups, 1 item per group, 1 simulation, 2 replicates")
    if not 0.0 <= icc < 1.0:
        raise BadInput(f"the intraclass correlation must lie in [0, 1), got {icc}")
    rng = np.random.default_rng(seed)
    n = n_groups * group_size
    codes = np.repeat(np.arange(n_groups), group_size)
    hits = {"items": 0, "groups": 0}
    width = {"items": 0.0, "groups": 0.0}
    for sim in range(n_sims):
        y = rng.normal(0.0, np.sqrt(icc), n_groups)[codes] + rng.normal(0.0, np.sqrt(1.0 - icc), n)
        for mode, w in (
            ("items", count_matrix(n, n_boot, seed + 1 + sim)),
            ("groups", cluster_count_matrix(codes, n_groups, n_boot, seed + 1 + sim)),
        ):
            reps = (w @ y) / w.sum(axis=1)
            b = percentile_bounds(reps, confidence)
            assert b is not None
            hits[mode] += int(b[0] <= 0.0 <= b[1])
            width[mode] += b[1] - b[0]
    return Coverage(
        n_groups,
        group_size,
        icc,
        n_sims,
        n_boot,
        confidence,
        seed,
        {k: v / n_sims for k, v in hits.items()},
        {k: v / n_sims for k, v in width.items()},
    )


# ---------------------------------------------------------------- few groups (issue 30 §1)


@dataclass(frozen=True)
class SmallGroupCoverage:
    """Coverage of the group-bootstrap percentile interval (``percentile``, the old rule) and of
    the interval :func:`~judgepanel.metrics.group_ci.group_interval` chooses (``chosen``: CR1 t
    below 20 groups, the percentile interval at 20 or more) for a mean over ``n_groups`` groups."""

    n_groups: int
    group_size: int
    icc: float
    outcome: str
    n_sims: int
    n_boot: int
    seed: int
    method: str
    coverage: dict[str, float]
    mean_width: dict[str, float]

    def as_dict(self) -> dict[str, object]:
        return {
            "n_groups": self.n_groups,
            "group_size": self.group_size,
            "icc": self.icc,
            "outcome": self.outcome,
            "n_sims": self.n_sims,
            "n_boot": self.n_boot,
            "seed": self.seed,
            "method": self.method,
            "coverage": {k: round(v, 4) for k, v in self.coverage.items()},
            "mean_width": {k: round(v, 4) for k, v in self.mean_width.items()},
        }


def small_group_coverage(
    *,
    n_groups: int,
    icc: float,
    group_size: int = 16,
    outcome: str = "normal",
    n_sims: int = 1000,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> SmallGroupCoverage:
    """Coverage at few groups, every data set at once (vectorised over simulations; the bootstrap
    is drawn in blocks of simulations so memory stays bounded).

    ``outcome="normal"``: ``y = u_g + e``, ``u_g ~ N(0, icc)``, ``e ~ N(0, 1 − icc)``, truth 0.
    ``outcome="binary"``: an indicator (say, exact agreement with humans) with a per-group rate
    ``p_g ~ Beta(a, b)`` of mean 0.3 and intraclass correlation ``1/(a + b + 1) = icc`` (icc 0: one
    rate for all), truth 0.3. The percentile interval draws ``n_groups`` groups with replacement
    ``n_boot`` times; the chosen interval is :func:`~judgepanel.metrics.group_ci.group_interval`
    with the CR1 standard error of :func:`~judgepanel.metrics.group_ci.cr1_ratio_se`."""
    from judgepanel.metrics.group_ci import method_for, t_quantile, uses_t

    if n_groups < 2 or group_size < 1 or n_sims < 1 or n_boot < 2:
        raise BadInput("coverage needs at least 2 groups, 1 item per group, 1 simulation, 2 replicates")
    if not 0.0 <= icc < 1.0:
        raise BadInput(f"the intraclass correlation must lie in [0, 1), got {icc}")
    if outcome not in ("normal", "binary"):
        raise BadInput(f"outcome must be normal or binary, got {outcome!r}")
    rng = np.random.default_rng(seed)
    g, m = n_groups, group_size
    if outcome == "normal":
        truth = 0.0
        sums = rng.normal(0.0, np.sqrt(icc), (n_sims, g)) * m + rng.normal(
            0.0, np.sqrt((1.0 - icc) * m), (n_sims, g)
        )
    else:
        truth = 0.3
        if icc == 0.0:
            rate = np.full((n_sims, g), truth)
        else:
            total = 1.0 / icc - 1.0
            rate = rng.beta(truth * total, (1.0 - truth) * total, (n_sims, g))
        sums = rng.binomial(m, rate).astype(np.float64)
    n = g * m
    est = sums.sum(axis=1) / n
    # CR1 (cr1_ratio_se, vectorised over simulations): every group has m items
    se = np.sqrt(g / (g - 1) * ((sums - est[:, None] * m) ** 2).sum(axis=1)) / n
    tail = 100.0 * (1.0 - confidence) / 2.0
    pct = np.empty((n_sims, 2))
    block = max(1, 2_000_000 // (n_boot * g))
    for start in range(0, n_sims, block):
        s = sums[start : start + block]
        counts = rng.multinomial(g, np.full(g, 1.0 / g), size=(s.shape[0], n_boot)).astype(np.float64)
        reps = np.einsum("sbg,sg->sb", counts, s) / n  # every replicate holds g groups of m items
        pct[start : start + block] = np.percentile(reps, [tail, 100.0 - tail], axis=1).T
    method = method_for(g, mean=True)
    if uses_t(g):
        q = t_quantile(g - 1, confidence)
        chosen = np.column_stack([est - q * se, est + q * se])
    else:
        chosen = pct
    bounds = {"percentile": pct, "chosen": chosen}
    hits = {k: float(((b[:, 0] <= truth) & (truth <= b[:, 1])).mean()) for k, b in bounds.items()}
    width = {k: float((b[:, 1] - b[:, 0]).mean()) for k, b in bounds.items()}
    return SmallGroupCoverage(
        g,
        m,
        icc,
        outcome,
        n_sims,
        n_boot,
        seed,
        method,
        hits,
        width,
    )
