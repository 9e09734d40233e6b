"""Issue 30 §5: held-out splits by article. Whole groups train or test; the item design is the
battery's old one exactly; the inner CV keeps groups together."""

from __future__ import annotations

import numpy as np
import pytest

from judgepanel.metrics.heldout_splits import (
    group_codes,
    group_splits,
    inner_group_folds,
    item_splits,
    splits,
    training_groups,
)


def test_the_item_design_is_the_old_one() -> None:
    (one,) = item_splits(50, 40, 1, 7)
    assert np.array_equal(one.order, np.arange(50)) and one.train == 40
    rng = np.random.default_rng(7)
    for s in item_splits(50, 40, 3, 7):
        assert np.array_equal(s.order, rng.permutation(50)) and (s.train, s.test) == (40, 10)


def test_group_splits_keep_every_group_whole_on_one_side() -> None:
    keys = [f"art{i % 13}" for i in range(97)] + [None, None]  # two units without a group
    codes, g = group_codes(keys)
    assert g == 15  # 13 articles, and each unkeyed unit its own group
    for s in group_splits(codes, 78, 5, 0):
        train, test = set(codes[s.order[: s.train]]), set(codes[s.order[s.train :]])
        assert not train & test
        assert len(train) == training_groups(15, 78, 99) == 12 and len(test) == 3
        assert sorted(s.order.tolist()) == list(range(99))
    # one split: the groups in order of first appearance, training groups first
    (first,) = group_splits(codes, 78, 1, 0)
    assert set(codes[first.order[: first.train]]) == set(range(12))


def test_group_splits_are_seeded_and_differ_between_folds() -> None:
    codes, _ = group_codes([i // 4 for i in range(80)])
    a = group_splits(codes, 60, 3, 1)
    b = group_splits(codes, 60, 3, 1)
    assert all(np.array_equal(x.order, y.order) for x, y in zip(a, b, strict=True))
    assert not np.array_equal(a[0].order, a[1].order)


def test_inner_folds_by_group_keep_groups_together() -> None:
    codes = np.repeat(np.array([4, 9, 2, 7, 5, 11, 3]), [3, 1, 5, 2, 4, 2, 3])
    fold = inner_group_folds(codes, 0)
    for c in np.unique(codes):
        assert len(set(fold[codes == c].tolist())) == 1
    assert set(fold.tolist()) == set(range(5))
    assert set(inner_group_folds(codes[:4], 0).tolist()) == {0, 1}  # two groups: two folds


def test_bad_designs() -> None:
    with pytest.raises(ValueError, match="split_by must be"):
        splits(10, 8, 1, 0, split_by="pairs")
    with pytest.raises(ValueError, match="one group code per unit"):
        splits(10, 8, 1, 0, split_by="group")
    with pytest.raises(ValueError, match="at least two groups"):
        group_splits(np.zeros(10, dtype=np.int64), 8, 1, 0)
