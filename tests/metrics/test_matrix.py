"""Rater selection and category sets on plain rating matrices (no store)."""

from __future__ import annotations

import numpy as np
import pytest

from judgepanel.errors import BadInput
from judgepanel.metrics.matrix import (
    NoRaters,
    RaterColumn,
    RatingMatrix,
    merge_rater_columns,
    with_categories,
)

NAN = np.nan


def _matrix() -> RatingMatrix:
    # two humans (expert, crowd), one imported LLM; scores 1.5 and 4 only from the LLM
    values = np.array([[2.0, 3.0, 1.5], [3.0, NAN, 4.0], [NAN, NAN, 4.0]])
    cats = np.array([1.5, 2.0, 3.0, 4.0])
    return RatingMatrix(
        values=values,
        unit_ids=(10, 11, 12),
        rater_names=("h1", "h2", "llm"),
        rater_groups=("expert", "crowd", "llm"),
        categories=cats,
        numeric=True,
        category_labels=("1.5", "2", "3", "4"),
        rater_kinds=("human", "human", "llm"),
    )


def test_default_selection_is_the_humans_with_their_own_scale() -> None:
    m = _matrix().select()
    assert m.rater_names == ("h1", "h2") and m.unit_ids == (10, 11)  # unit 12: only the LLM
    assert m.categories.tolist() == [2.0, 3.0] and m.category_labels == ("2", "3")
    pooled = _matrix().select(with_judges=["all"])
    assert pooled.rater_names == ("h1", "h2", "llm") and pooled.n_units == 3
    assert pooled.categories.tolist() == [1.5, 2.0, 3.0, 4.0]  # not all integers: the values seen


def test_builtin_groups_go_by_kind() -> None:
    assert _matrix().select(group="judge").rater_names == ("llm",)
    assert _matrix().select(group="human").rater_names == ("h1", "h2")
    assert _matrix().select(group="expert", with_judges=["llm"]).rater_names == ("h1", "llm")
    assert _matrix().select(raters=["llm", "h2"]).rater_names == ("llm", "h2")


def test_empty_selections_say_what_to_do() -> None:
    judges_only = _matrix().select(group="judge")
    with pytest.raises(NoRaters, match="no human raters here; name judges with --raters"):
        judges_only.select()
    humans = _matrix().select()
    with pytest.raises(NoRaters, match="no judges here"):
        humans.select(group="judge")
    with pytest.raises(BadInput, match="there are no judges here"):
        humans.select(with_judges=["all"])
    with pytest.raises(BadInput, match="'h1' is not a judge"):
        _matrix().select(with_judges=["h1"])


def test_with_categories_numeric_and_text() -> None:
    m = with_categories(_matrix().select(), ["1", "2", "3", "4", "5"])
    assert m.categories.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0] and m.scale_declared
    assert m.select(raters=["h2"]).categories.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]  # declared: kept
    with pytest.raises(BadInput, match="rating 3 is not one of the categories 1, 2"):
        with_categories(_matrix().select(), ["1", "2"])
    with pytest.raises(BadInput, match="are not"):
        with_categories(_matrix().select(), ["low", "high"])
    with pytest.raises(BadInput, match="named twice"):
        with_categories(_matrix().select(), ["2", "2"])
    with pytest.raises(BadInput, match="at least one"):
        with_categories(_matrix().select(), ["", "2"])
    text = RatingMatrix(
        values=np.array([[0.0, 2.0], [2.0, NAN]]),
        unit_ids=(1, 2),
        rater_names=("a", "b"),
        rater_groups=(None, None),
        categories=np.array([0.0, 1.0, 2.0]),
        numeric=False,
        category_labels=("no", "skip", "yes"),
    )
    assert text.select().category_labels == ("no", "yes")  # "skip" unused by these raters
    relabelled = with_categories(text, ["yes", "no", "skip"])
    assert relabelled.values[0].tolist() == [1.0, 0.0] and relabelled.label(0.0) == "yes"


def test_merged_judge_columns_are_judges() -> None:
    m = merge_rater_columns(_matrix(), [RaterColumn("j@c", {10: 5.0})])
    assert m.kinds[-1] == "judge" and m.select(group="judge").rater_names == ("llm", "j@c")
    assert 5.0 not in m.select().categories.tolist()
