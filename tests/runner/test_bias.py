"""Position bias: counts by hand and the exact sign test against a hand-summed binomial."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest

from judgepanel.metrics.bias import position_bias


def hand_two_sided(k: int, n: int) -> float:
    """Exact two-sided binomial test at p = 1/2: the probability of every outcome no likelier than k."""
    probs = [comb(n, i) / 2**n for i in range(n + 1)]
    return min(1.0, sum(p for p in probs if p <= probs[k] * (1 + 1e-12)))


def test_counts_by_hand() -> None:
    ab = ["A", "B", "B", "B", "A", "T", "B", "A"]
    ba = ["B", "A", "B", "B", "A", "A", "tie", "A"]
    # pair: 0 consistent, 1 consistent, 2 back, 3 back, 4 front, 5 tie, 6 tie, 7 front
    b = position_bias(ab, ba)
    assert (b.pairs, b.decisive, b.consistent, b.inconsistent) == (8, 6, 2, 4)
    assert (b.back_wins, b.front_wins) == (2, 2)
    assert b.p_value == pytest.approx(1.0)


@pytest.mark.parametrize(("back", "front"), [(9, 1), (1, 9), (12, 3), (30, 14), (5, 5), (7, 0)])
def test_sign_test_matches_hand_binomial_sum(back: int, front: int) -> None:
    consistent = 11
    ab = ["B"] * back + ["A"] * front + ["A"] * consistent
    ba = ["B"] * back + ["A"] * front + ["B"] * consistent
    b = position_bias(np.array(ab), np.array(ba))
    assert (b.back_wins, b.front_wins, b.consistent) == (back, front, consistent)
    assert b.p_value == pytest.approx(hand_two_sided(back, back + front), rel=1e-12)


def test_no_inconsistent_pair_means_no_evidence() -> None:
    b = position_bias(["A", "B", "T"], ["B", "A", "T"])
    assert b.inconsistent == 0 and b.p_value == 1.0
    assert np.isnan(b.back_share)
    empty = position_bias([], [])
    assert empty.pairs == 0 and empty.p_value == 1.0


def test_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="equal length"):
        position_bias(["A"], ["A", "B"])
    with pytest.raises(ValueError, match="as presented"):
        position_bias(["C"], ["A"])
