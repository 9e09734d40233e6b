"""Rating matrices built from the store, on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from judgepanel.errors import BadInput, NotFound
from judgepanel.metrics.matrix import with_categories
from judgepanel.store.matrices import (
    MatrixRequest,
    MatrixScope,
    RaterColumn,
    item_matrix,
    merge_rater_columns,
    pair_matrix,
    register_rater_source,
    select_matrix,
    unregister_rater_source,
)
from judgepanel.store.models import Dataset, Item
from tests.helpers import cli

# item, annotator, group, kind, dimension, value: a 1–5 scale where nobody used 3, one text dimension
LABELS = [
    ("i1", "ann", "expert", "human", "score", "1"),
    ("i1", "bob", "expert", "human", "score", "2"),
    ("i1", "cy", "crowd", "human", "score", "5"),
    ("i2", "ann", "expert", "human", "score", "4"),
    ("i2", "cy", "crowd", "human", "score", "4"),
    ("i3", "bob", "expert", "human", "score", "5"),
    ("i3", "gpt", "judges", "llm", "score", "5"),
    ("i4", "cy", "crowd", "human", "score", "2"),
    ("i1", "ann", "expert", "human", "topic", "sports"),
    ("i1", "bob", "expert", "human", "topic", "arts"),
    ("i2", "ann", "expert", "human", "topic", "sports"),
    ("i5", "cy", "crowd", "human", "topic", "news"),
]


@pytest.fixture
def labelled(engine: Engine, db_url: str, tmp_path: Path) -> Engine:
    path = tmp_path / "labels.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["item_id", "annotator", "group", "kind", "dimension", "value"])
        w.writerows(LABELS)
    assert cli("data", "import-labels", str(path), "--dataset", "toy", db=db_url).code == 0
    return engine


def _item_ids(engine: Engine) -> dict[str, int]:
    with Session(engine) as s:
        return {ext: i for ext, i in s.execute(select(Item.external_id, Item.id))}


def test_numeric_item_matrix_keeps_the_scale(labelled: Engine) -> None:
    m = item_matrix(labelled, "toy", "score", with_judges=["all"])
    ids = _item_ids(labelled)
    assert m.rater_names == ("ann", "bob", "cy", "gpt")
    assert m.rater_groups == ("expert", "expert", "crowd", "judges")
    assert m.rater_kinds == ("human", "human", "human", "llm")
    assert m.numeric and m.kind == "item" and m.dimension == "score"
    assert m.categories.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]  # 3 unused, still a level
    assert m.category_labels == ("1", "2", "3", "4", "5")
    assert m.unit_ids == (ids["i1"], ids["i2"], ids["i3"], ids["i4"])  # i5 has no score
    nan = np.nan
    expected = np.array([[1, 2, 5, nan], [4, nan, 4, nan], [nan, 5, nan, 5], [nan, nan, 2, nan]])
    assert np.array_equal(m.values, expected, equal_nan=True)


def test_raters_and_groups_select_columns_and_drop_empty_rows(labelled: Engine) -> None:
    m = item_matrix(labelled, "toy", "score", raters=["cy", "ann"])
    assert m.rater_names == ("cy", "ann") and m.n_units == 3  # i3 has neither
    assert m.values[:, 0].tolist() == [5.0, 4.0, 2.0]
    e = item_matrix(labelled, "toy", "score", group="expert")
    assert e.rater_names == ("ann", "bob") and e.n_units == 3
    with pytest.raises(NotFound, match="no rater named 'zed'"):
        item_matrix(labelled, "toy", "score", raters=["zed"])
    with pytest.raises(NotFound, match="no rater group 'nobody'"):
        item_matrix(labelled, "toy", "score", group="nobody")
    with pytest.raises(BadInput, match="not in group"):
        item_matrix(labelled, "toy", "score", raters=["cy"], group="expert")


def test_text_labels_are_coded_in_sorted_order(labelled: Engine) -> None:
    m = item_matrix(labelled, "toy", "topic")
    assert not m.numeric
    assert m.category_labels == ("arts", "news", "sports")
    assert m.categories.tolist() == [0.0, 1.0, 2.0]
    assert m.label(m.column("bob")[0]) == "arts"
    assert m.label(m.column("ann")[1]) == "sports"


def test_dimension_is_required_when_there_are_several(labelled: Engine) -> None:
    with pytest.raises(BadInput, match=r"--dimension \(score, topic\)"):
        item_matrix(labelled, "toy")
    with pytest.raises(NotFound, match="no dimension 'x'"):
        item_matrix(labelled, "toy", "x")
    with pytest.raises(NotFound, match="no dataset named 'nope'"):
        item_matrix(labelled, "nope", "score")


def test_excluded_items_are_left_out(labelled: Engine) -> None:
    ids = _item_ids(labelled)
    m = item_matrix(labelled, "toy", "score", exclude_items=[ids["i2"]])
    assert ids["i2"] not in m.unit_ids and m.n_units == 3


def test_rater_sources_merge_judge_columns(labelled: Engine) -> None:
    ids = _item_ids(labelled)
    seen: list[MatrixScope] = []

    def judge(_s: Session, scope: MatrixScope) -> list[RaterColumn]:
        seen.append(scope)
        return [
            RaterColumn("openai:gpt-4o-mini", {ids["i1"]: 2.5, ids["i4"]: 2.0, 10**9: 1.0}, group="judge")
        ]

    register_rater_source(judge)
    try:
        human = item_matrix(labelled, "toy", "score")
        m = item_matrix(labelled, "toy", "score", with_judges=["all"])
    finally:
        unregister_rater_source(judge)
    assert human.rater_names == ("ann", "bob", "cy")  # judges join only when named
    assert seen[0].kind == "item" and seen[0].dimension == "score" and seen[0].pair_set_id is None
    assert m.rater_names[-1] == "openai:gpt-4o-mini" and m.rater_kinds[-1] == "judge"
    assert m.column("openai:gpt-4o-mini")[[0, 3]].tolist() == [2.5, 2.0]
    assert 2.5 in m.categories.tolist()  # a new score value extends a numeric scale
    assert item_matrix(labelled, "toy", "score", group="judge").n_raters == 1  # unregistered: gone again


def test_a_selection_of_the_humans_asks_no_rater_source(labelled: Engine) -> None:
    """Rater sources add machine raters, which a selection of the humans drops: such a selection
    does not ask them (issue 20 §2: `metrics agreement` then reads no campaign), and gives what
    selecting the humans from the merged matrix gives."""
    ids = _item_ids(labelled)
    asked: list[MatrixScope] = []

    def judge(_s: Session, scope: MatrixScope) -> list[RaterColumn]:
        asked.append(scope)
        return [RaterColumn("j", {ids["i1"]: 2.5, ids["i4"]: 2.0}, group="judge")]

    register_rater_source(judge)
    try:
        humans = [item_matrix(labelled, "toy", "score"), item_matrix(labelled, "toy", "score", group="human")]
        assert asked == []
        merged = item_matrix(labelled, "toy", "score", with_judges=["all"])
        assert len(asked) == 1
        for named in (["ann"], ["j"]):  # named raters may be judges: the sources are asked
            item_matrix(labelled, "toy", "score", raters=named)
        assert len(asked) == 3
    finally:
        unregister_rater_source(judge)
    want = merged.select(group="human")
    for m in humans:
        assert m.rater_names == want.rater_names == ("ann", "bob", "cy")
        assert m.unit_ids == want.unit_ids
        np.testing.assert_allclose(m.values, want.values, rtol=0, atol=1e-12)  # NaN where unrated
        assert m.categories.tolist() == want.categories.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_merge_into_label_matrices_checks_labels(labelled: Engine) -> None:
    m = item_matrix(labelled, "toy", "topic")
    merged = merge_rater_columns(m, [RaterColumn("j", {m.unit_ids[0]: "news"})])
    assert merged.label(merged.column("j")[0]) == "news"
    with pytest.raises(BadInput, match="'weather' is not one of arts, news, sports"):
        merge_rater_columns(m, [RaterColumn("j", {m.unit_ids[0]: "weather"})])
    with pytest.raises(BadInput, match="already in the matrix"):
        merge_rater_columns(m, [RaterColumn("ann", {})])


def test_pair_matrix_codes_and_order(engine: Engine, db_url: str, shared_data: Path, tmp_path: Path) -> None:
    with gzip.open(shared_data / "summeval/model_annotations.reconstructed.jsonl.gz", "rt") as f:
        rows = [json.loads(next(f)) for _ in range(16)]  # one article: 120 within-group pairs
    src = tmp_path / "one.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli("data", "import-summeval", str(src), db=db_url).code == 0
    assert cli("data", "pairs", "summeval", "--name", "p", "--sample", "50", db=db_url).code == 0
    m = pair_matrix(engine, "p")
    assert m.kind == "pair" and not m.numeric and m.n_units == 50
    assert m.category_labels == ("A", "B", "T") and m.categories.tolist() == [0.0, 1.0, 2.0]
    labels = cli(
        "query",
        "select p.id pair_id, a.name, pl.value from pair_label pl join pair p on p.id = pl.pair_id "
        "join annotator a on a.id = pl.annotator_id order by p.position",
        "--json",
        db=db_url,
    ).json()["rows"]
    for row in labels:
        got = m.values[m.unit_ids.index(row["pair_id"]), m.rater_names.index(row["name"])]
        assert m.label(got) == row["value"]
    # pairs come in sampled order
    order = cli("query", "select id from pair order by position", "--json", db=db_url).json()["rows"]
    assert list(m.unit_ids) == [r["id"] for r in order]
    sel = select_matrix(engine, MatrixRequest(pairs="p", group="expert"))
    assert sel.dataset == "summeval" and sel.matrix.rater_names == ("expert_1", "expert_2", "expert_3")
    with pytest.raises(BadInput, match="belongs to dataset 'summeval'"):
        select_matrix(engine, MatrixRequest(dataset="other", pairs="p"))


def test_default_is_the_humans_and_judges_join_only_when_named(labelled: Engine) -> None:
    m = item_matrix(labelled, "toy", "score")
    assert m.rater_names == ("ann", "bob", "cy") and set(m.rater_kinds) == {"human"}
    assert m.n_units == 4 and m.values.shape == (4, 3)
    assert item_matrix(labelled, "toy", "score", group="human").rater_names == m.rater_names
    assert item_matrix(labelled, "toy", "score", group="judge").rater_names == ("gpt",)
    assert item_matrix(labelled, "toy", "score", group="judges").rater_names == ("gpt",)  # imported group
    assert item_matrix(labelled, "toy", "score", raters=["gpt", "ann"]).rater_names == ("gpt", "ann")
    both = item_matrix(labelled, "toy", "score", group="expert", with_judges=["gpt"])
    assert both.rater_names == ("ann", "bob", "gpt")
    with pytest.raises(BadInput, match="'ann' is not a judge"):
        item_matrix(labelled, "toy", "score", with_judges=["ann"])
    with pytest.raises(NotFound, match=r"known: crowd, expert, human, judge, judges"):
        item_matrix(labelled, "toy", "score", group="nobody")


def test_categories_come_from_the_selected_raters(labelled: Engine) -> None:
    # crowd used 2, 4, 5: the scale is 2..5 for them, 1..5 once ann's 1 is in
    assert item_matrix(labelled, "toy", "score", group="crowd").categories.tolist() == [2.0, 3.0, 4.0, 5.0]
    assert item_matrix(labelled, "toy", "score").categories.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    experts = item_matrix(labelled, "toy", "topic", group="expert")
    assert experts.category_labels == ("arts", "sports")  # news is only the crowd's
    assert experts.label(experts.column("bob")[0]) == "arts"


def test_a_declared_scale_and_categories_option_fix_the_categories(labelled: Engine) -> None:
    with Session(labelled) as s:
        ds = s.scalar(select(Dataset).where(Dataset.name == "toy"))
        assert ds is not None
        ds.meta = {**ds.meta, "scale": {"score": [1, 2, 3, 4, 5, 6, 7]}}
        s.commit()
    crowd = item_matrix(labelled, "toy", "score", group="crowd")
    assert crowd.categories.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0] and crowd.scale_declared
    sel = select_matrix(
        labelled,
        MatrixRequest(dataset="toy", dimension="topic", group="expert", categories=("sports", "arts", "x")),
    )
    m = sel.matrix
    assert m.category_labels == ("sports", "arts", "x") and m.label(m.column("bob")[0]) == "arts"
    with pytest.raises(BadInput, match="'news' is used but not one of the categories sports, arts"):
        select_matrix(
            labelled, MatrixRequest(dataset="toy", dimension="topic", categories=("sports", "arts"))
        )
    with pytest.raises(BadInput, match="rating 5 is not one of the categories 1, 2"):
        with_categories(item_matrix(labelled, "toy", "score", raters=["bob"]), [1, 2])
