"""Leave-one-rater-out prediction: a case worked by hand, and a synthetic panel of two schools in
which only the cluster rule can predict the minority school."""

from __future__ import annotations

import math

import numpy as np
import pytest

from judgepanel.metrics.heldout import leave_one_rater_out, split_units
from judgepanel.metrics.truth import dawid_skene


def test_tiny_case_by_hand() -> None:
    values = np.array(
        [
            [0, 0, 1],  # train
            [0, 0, 1],  # train
            [1, 1, 1],  # train
            [0, 0, 1],  # test
            [1, 0, 1],  # test
            [0, 1, np.nan],  # test
        ]
    )
    res = leave_one_rater_out(values, 2, train=3, clusters=[[0, 1], [2]], groups=["x", "x", "y"])
    r0, r1, r2 = res.raters
    # rater 0 (fallback: its training mode 0). others on u3: 0,1 tie -> 0 ok; u4: 0,1 tie -> 0
    # (truth 1) wrong; u5: only rater 1 -> 1 (truth 0) wrong.
    assert r0.fallback_label == 0
    assert (r0.scores["majority"].correct, r0.scores["majority"].n, r0.scores["majority"].fallbacks) == (
        1,
        3,
        2,
    )
    # cluster mate rater 1: u3 0 ok, u4 0 wrong, u5 1 wrong
    assert (r0.scores["cluster"].correct, r0.scores["cluster"].fallbacks) == (1, 0)
    # rater 1 (fallback 0): others u3 0,1 tie -> 0 ok; u4 1,1 -> 1 (truth 0) wrong; u5 0 (truth 1) wrong
    assert r1.scores["majority"].correct == 1
    # rater 2 (fallback 1, no label on u5): u3 others 0,0 -> 0 wrong; u4 1,0 tie -> 1 ok
    assert r2.fallback_label == 1 and r2.n_test == 2
    assert r2.scores["majority"].correct == 1
    # alone in its cluster: every prediction is the fallback 1, both right
    assert (
        r2.cluster_mates == () and r2.scores["cluster"].correct == 2 and r2.scores["cluster"].fallbacks == 2
    )
    groups = {g.group: g for g in res.groups}
    assert groups["x"].micro["majority"] == pytest.approx(2 / 6)
    assert groups["y"].micro["majority"] == pytest.approx(1 / 2)
    assert groups["all"].micro["majority"] == pytest.approx(3 / 8)
    assert groups["all"].macro["majority"] == pytest.approx((1 / 3 + 1 / 3 + 1 / 2) / 3)
    assert groups["all"].n == 8
    assert list(res.train) == [0, 1, 2] and list(res.test) == [3, 4, 5]


def test_dawid_skene_prediction_is_the_posterior_of_the_others() -> None:
    rng = np.random.default_rng(0)
    values = rng.integers(0, 3, size=(60, 4)).astype(float)
    res = leave_one_rater_out(values, 3, train=40)
    for r in range(4):
        others = [c for c in range(4) if c != r]
        fit = dawid_skene(values[:, others], 3)
        pred = fit.posteriors[40:].argmax(axis=1)
        truth = values[40:, r]
        assert res.raters[r].scores["dawid_skene"].correct == int(np.sum(pred == truth))
        assert 0 <= res.raters[r].dawid_skene_ece <= 1


def _two_schools(seed: int, n: int = 500) -> tuple[np.ndarray, list[list[int]], list[str]]:
    """Raters 0–2 follow one signal with 85 % accuracy, raters 3–7 an independent one."""
    rng = np.random.default_rng(seed)
    signals = rng.integers(0, 3, size=(2, n))
    cols = []
    for school, size in ((0, 3), (1, 5)):
        for _ in range(size):
            col = signals[school].copy()
            wrong = rng.random(n) > 0.85
            col[wrong] = rng.integers(0, 3, size=int(wrong.sum()))
            cols.append(col)
    return np.stack(cols, axis=1).astype(float), [[0, 1, 2], [3, 4, 5, 6, 7]], ["small"] * 3 + ["large"] * 5


def test_cluster_majority_beats_global_majority_for_a_minority_school() -> None:
    values, clusters, groups = _two_schools(3)
    res = leave_one_rater_out(values, 3, train=400, clusters=clusters, groups=groups)
    small = next(g for g in res.groups if g.group == "small")
    assert small.micro["cluster"] > small.micro["majority"] + 0.3
    assert small.micro["majority"] < 0.5  # the other school drowns them out
    large = next(g for g in res.groups if g.group == "large")
    assert large.micro["cluster"] > 0.8
    for r in res.raters[:3]:
        assert r.accuracy("cluster") > r.accuracy("majority")


def test_split_units_and_validation() -> None:
    tr, te = split_units(5, 3)
    assert list(tr) == [0, 1, 2] and list(te) == [3, 4]
    tr, te = split_units(5, np.array([True, False, True, False, False]))
    assert list(tr) == [0, 2] and list(te) == [1, 3, 4]
    with pytest.raises(ValueError):
        split_units(5, 5)
    with pytest.raises(ValueError):
        split_units(5, [0, 1], [1, 2])
    with pytest.raises(ValueError):
        leave_one_rater_out(np.zeros((4, 2)), 2, train=2, groups=["a"])


def test_rater_without_test_labels_and_single_rater() -> None:
    values = np.array([[0, 1], [0, 1], [1, np.nan], [0, np.nan]])
    res = leave_one_rater_out(values, 2, train=2)
    assert res.raters[1].n_test == 0
    assert math.isnan(res.raters[1].accuracy("majority"))
    solo = leave_one_rater_out(np.array([[0.0], [1.0], [1.0]]), 2, train=2)
    # nobody else: every rule falls back to the rater's training mode (lowest code on a tie: 0)
    assert solo.raters[0].scores["dawid_skene"].fallbacks == 1
    assert solo.raters[0].scores["majority"].correct == 0
