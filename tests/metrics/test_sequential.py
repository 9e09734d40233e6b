"""The anytime-valid alt-test (`metrics.sequential`): the betting p-value against a direct loop, its
validity under looks after every instance (simulated at the boundary of the null), the inflation
of the fixed-sample t-test looked at the same way (why the queue does not stop on it), the
advantages against `metrics.validation.alt_test`, and the edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from judgepanel.errors import BadInput
from judgepanel.metrics.sequential import (
    GRID,
    advantages,
    anytime_p,
    certification_state,
    sequential_alt_test,
)
from judgepanel.metrics.validation import Accuracy, NegRmse, alt_test, benjamini_yekutieli, one_sided_t

REL = 1e-9


def _loop_p(d: list[float], eps: float, below: bool = True) -> float:
    """The mixture wealth step by step, as the docstring writes it (no vectorisation, no shortcut)."""
    largest = 1.0 / (1.0 - eps) if below else 1.0 / (1.0 + eps)
    lams = [0.5 * largest * (k + 1) / GRID for k in range(GRID)]
    wealth = [1.0] * GRID
    best = 0.0
    for x in d:
        y = (eps - x) if below else (x - eps)
        wealth = [w * (1.0 + lam * y) for w, lam in zip(wealth, lams, strict=True)]
        best = max(best, sum(wealth) / GRID)
    return min(1.0, 1.0 / best) if best > 0 else 1.0


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("below", [True, False])
def test_the_p_value_is_the_mixture_wealth_computed_step_by_step(seed: int, below: bool) -> None:
    rng = np.random.default_rng(seed)
    probs = [0.45, 0.35, 0.2] if below else [0.15, 0.35, 0.5]
    d = rng.choice([-1.0, 0.0, 1.0], size=120, p=probs)
    for eps in (0.0, 0.1, 0.2):
        want = _loop_p(d.tolist(), eps, below)
        assert anytime_p(d, eps, below=below) == pytest.approx(want, rel=REL)
        # the general path (non-ternary values) agrees with the counting shortcut
        assert anytime_p(d * (1 - 1e-15), eps, below=below) == pytest.approx(want, rel=1e-6)
    assert 0 < anytime_p(d, 0.2, below=below) < 1  # the data carry evidence: a real p, not 1


def test_an_empty_stream_and_no_evidence_give_p_one() -> None:
    assert anytime_p(np.array([]), 0.2) == 1.0
    assert anytime_p(np.ones(50), 0.2) == 1.0  # the human always wins: no evidence the mean is below ε


def _boundary_streams(rng: np.random.Generator, runs: int, humans: int, n: int, eps: float) -> np.ndarray:
    """D with mean exactly ε (the null's boundary, its hardest point): P(−1) = a, P(1) = a + ε."""
    a = 0.3
    u = rng.random((runs, humans, n))
    return np.where(u < a, -1.0, np.where(u < 2 * a + eps, 1.0, 0.0))


def _by_rejects_any(p: np.ndarray, q: float) -> np.ndarray:
    """Whether BY at q rejects anything, for p-values along axis 1 (vectorised over the rest): some
    sorted p_(k) ≤ k q / (m c(m))."""
    m = p.shape[1]
    cm = sum(1.0 / i for i in range(1, m + 1))
    ranks = np.arange(1, m + 1).reshape((1, m) + (1,) * (p.ndim - 2))
    return np.asarray((np.sort(p, axis=1) <= ranks * q / (m * cm)).any(axis=1))


def test_stopping_at_the_first_certification_keeps_its_error_within_q() -> None:
    """Two humans (ω ≥ ½ needs one rejection), each null at its boundary (E[D] = ε): a
    certification is an error. Looked at after every instance and stopped at the first
    certification, the anytime rule errs in at most q of the runs (measured 0.0375 of 400); the
    fixed-sample alt-test looked at every 5th instance from 30 on errs in 0.17 (the reason the
    queue does not stop on it). The anytime p-value only falls as instances arrive and BY is
    monotone in the p-values, so "certified at some look up to n" is "certified at n"."""
    from scipy.stats import t as student_t

    rng = np.random.default_rng(7)
    runs, humans, n, eps, q = 400, 2, 300, 0.2, 0.05
    d = _boundary_streams(rng, runs, humans, n, eps)
    assert abs(d.mean() - eps) < 0.01
    anytime = sum(
        certification_state(list(d[r]), epsilon=eps, q=q, min_instances=30) == "certified"
        for r in range(runs)
    )
    looks = np.arange(30, n + 1, 5)
    s1, s2 = np.cumsum(d, axis=2)[:, :, looks - 1], np.cumsum(d * d, axis=2)[:, :, looks - 1]
    mean = s1 / looks
    sd = np.sqrt((s2 - looks * mean**2) / (looks - 1))
    p = student_t.cdf((mean - eps) / (sd / np.sqrt(looks)), df=looks - 1)  # runs × humans × looks
    for r, look in [(0, 0), (1, 10), (2, 40)]:  # the vectorised BY is the project's BY
        assert bool(_by_rejects_any(p[r : r + 1, :, look], q)[0]) == bool(
            benjamini_yekutieli(p[r, :, look], q)[0].any()
        )
        assert p[r, 0, look] == pytest.approx(one_sided_t(d[r, 0, : looks[look]], eps)[1], rel=1e-9)
    naive = int(_by_rejects_any(p, q).any(axis=1).sum())
    se = math.sqrt(q * (1 - q) / runs)
    assert anytime / runs <= q + 2 * se, anytime
    assert naive / runs > q + 3 * se, naive  # optional stopping inflates the fixed-sample test


def test_a_judge_clearly_better_is_certified_and_one_clearly_worse_fails() -> None:
    rng = np.random.default_rng(3)
    better = [rng.choice([-1.0, 0.0, 1.0], size=200, p=[0.4, 0.45, 0.15]) for _ in range(3)]
    worse = [rng.choice([-1.0, 0.0, 1.0], size=200, p=[0.05, 0.35, 0.6]) for _ in range(3)]
    ok = sequential_alt_test(better, epsilon=0.1, names=["a", "b", "c"])
    bad = sequential_alt_test(worse, epsilon=0.1, names=["a", "b", "c"])
    assert ok.state == "certified" and ok.omega == 1.0
    assert ok.certified_at is not None and ok.certified_at <= 0.1
    assert bad.state == "fails" and all(h.not_replaceable for h in bad.humans)
    assert bad.certified_at is None or bad.certified_at > 0.1
    for h in ok.humans:  # the anytime interval holds the observed mean
        assert h.lower is not None and h.upper is not None and h.lower <= h.mean_diff <= h.upper


def test_undecided_names_the_planners_labels_needed_and_few_instances_wait() -> None:
    rng = np.random.default_rng(5)
    few = [rng.choice([-1.0, 0.0, 1.0], size=40, p=[0.3, 0.45, 0.25]) for _ in range(3)]
    res = sequential_alt_test(few, epsilon=0.2)
    assert res.state == "undecided"
    from judgepanel.metrics.design import m_cert

    need = sorted(
        max(0, m_cert(float(x.std(ddof=1)), float(-x.mean()), 0.2, 0.05) - 40)  # type: ignore[operator]
        for x in few
    )
    assert res.labels_needed == max(1, need[1]) * 3  # the second of three humans, × H labels each
    waiting = sequential_alt_test([np.full(10, -1.0)] * 3, epsilon=0.2, min_instances=30)
    assert waiting.state == "undecided" and all(h.p_value == 1.0 for h in waiting.humans)


def test_edge_cases() -> None:
    empty = sequential_alt_test([], epsilon=0.2)
    assert empty.state == "undecided" and empty.omega is None
    one = sequential_alt_test([np.full(80, -1.0)], epsilon=0.2, names=["solo"])
    assert one.state == "certified"  # a single human: ω = 1 of 1
    with pytest.raises(BadInput):
        sequential_alt_test([np.array([2.0])], epsilon=0.2)
    with pytest.raises(BadInput):
        sequential_alt_test([np.zeros(3)], epsilon=1.0)
    with pytest.raises(BadInput):
        sequential_alt_test([np.zeros(3)], epsilon=0.1, names=["a", "b"])


@pytest.mark.parametrize("scorer", [Accuracy(), NegRmse()], ids=["accuracy", "neg-rmse"])
def test_advantages_agree_with_the_alt_test_per_human(scorer: object) -> None:
    """Per held-out human, the mean of D equals `alt_test`'s mean of W_h − W_judge, with missing
    cells (a sparse panel) and ties."""
    rng = np.random.default_rng(11)
    n, k = 120, 4
    h = rng.integers(1, 6, size=(n, k)).astype(float)
    h[rng.random((n, k)) < 0.3] = np.nan
    j = rng.integers(1, 6, size=n).astype(float)
    j[rng.random(n) < 0.1] = np.nan
    d = advantages(h, j, scorer)  # type: ignore[arg-type]
    ref = alt_test(h, j, epsilon=0.2, scorer=scorer, min_instances=2)  # type: ignore[arg-type]
    for c, human in enumerate(ref.humans):
        col = d[:, c][~np.isnan(d[:, c])]
        assert col.size == human.n
        assert float(col.mean()) == pytest.approx(human.mean_diff, rel=REL)
    perfect = advantages(np.column_stack([j, j, j]), j, scorer)  # type: ignore[arg-type]
    ok = ~np.isnan(perfect)
    assert ok.any() and (perfect[ok] == 0).all()  # a judge identical to every human: ties only


@pytest.mark.parametrize(
    "probs",
    [[0.3, 0.4, 0.3], [0.45, 0.35, 0.2], [0.1, 0.3, 0.6], [0.5, 0.0, 0.5], [0.0, 0.6, 0.4], [1.0, 0.0, 0.0]],
    ids=["balanced", "below", "above", "no-ties", "no-losses", "one-value"],
)
def test_a_long_stream_reads_its_maximum_at_the_hulls_vertices_exactly(
    probs: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream of thousands of instances evaluates p at the extreme times of its count path only
    (`_extreme_times`); every p-value, both directions, every bisection bound and the whole test
    equal the same computed over every time, bit for bit (streams with two values lie in a plane
    and one value on a ray: both handled)."""
    from judgepanel.metrics import sequential

    rng = np.random.default_rng(17)
    streams = [rng.choice([-1.0, 0.0, 1.0], size=n, p=probs) for n in (5_000, 3_000, 300)]
    fast = sequential._Path(streams[0])
    assert fast.extreme is not None and fast.extreme.shape[1] < 600  # a few hundred vertices, not 5,000
    hulled = sequential_alt_test(streams, epsilon=0.1, names=["a", "b", "c"])
    monkeypatch.setattr(sequential, "_HULL_FROM", 10**9)
    full = sequential._Path(streams[0])
    assert full.extreme is not None and full.extreme.shape[1] == 5_000
    for eps in np.linspace(-0.99, 0.99, 23):
        for below in (True, False):
            assert fast.p(float(eps), below=below) == full.p(float(eps), below=below)
    assert sequential_alt_test(streams, epsilon=0.1, names=["a", "b", "c"]) == hulled
