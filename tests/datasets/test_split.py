"""`judgepanel data split`: seeded, complete, groups kept whole, bad input refused untouched."""

from __future__ import annotations

from collections import Counter

import pytest
from sqlalchemy import create_engine, text

from judgepanel.datasets.splits import assign_splits, parse_fractions, split_counts
from judgepanel.errors import BadInput
from tests.helpers import cli, load_summeval_sample


def _splits(db: str) -> list[tuple[str, str | None, str | None]]:
    eng = create_engine(db)
    with eng.connect() as c:
        rows = c.execute(text("SELECT external_id, group_key, split FROM item ORDER BY position")).all()
    eng.dispose()
    return [tuple(r) for r in rows]  # type: ignore[misc]


def test_split_by_group_keeps_groups_whole_and_is_seeded(db_url: str) -> None:
    load_summeval_sample(db_url)
    out = cli(
        "data",
        "split",
        "se",
        "--fractions",
        "dev=0.5,eval=0.5",
        "--seed",
        "3",
        "--by",
        "group",
        "--json",
        db=db_url,
    ).json()
    rows = _splits(db_url)
    assert all(s in ("dev", "eval") for _e, _g, s in rows)
    by_group: dict[str | None, set[str | None]] = {}
    for _e, g, s in rows:
        by_group.setdefault(g, set()).add(s)
    assert all(len(v) == 1 for v in by_group.values())
    assert out["splits"] == dict(Counter(s for _e, _g, s in rows))
    groups = Counter(next(iter(v)) for v in by_group.values())
    assert out["groups"] == {k: groups[k] for k in ("dev", "eval")}
    # half of the groups each way (largest remainder, ties to dev)
    n = len(by_group)
    assert out["groups"]["dev"] == n - n // 2 and out["groups"]["eval"] == n // 2
    # same seed: same assignment; another seed: another one
    cli("data", "split", "se", "--fractions", "dev=0.5,eval=0.5", "--seed", "3", "--by", "group", db=db_url)
    assert _splits(db_url) == rows
    cli("data", "split", "se", "--fractions", "dev=0.5,eval=0.5", "--seed", "4", "--by", "group", db=db_url)
    assert _splits(db_url) != rows


def test_split_by_item_counts(sqlite_url: str) -> None:
    load_summeval_sample(sqlite_url)
    out = cli("data", "split", "se", "--fractions", "a=0.2,b=0.3,c=0.5", "--json", db=sqlite_url).json()
    n = len(_splits(sqlite_url))
    assert sum(out["splits"].values()) == n
    assert out["splits"] == split_counts(n, {"a": 0.2, "b": 0.3, "c": 0.5})


@pytest.mark.parametrize(
    "fractions", ["dev=0.5", "dev=0.5,eval=0.6", "dev=-0.5,eval=1.5", "dev", "dev=x,eval=1", "a=0.5,a=0.5"]
)
def test_bad_fractions_exit_2_untouched(sqlite_url: str, fractions: str) -> None:
    load_summeval_sample(sqlite_url)
    before = _splits(sqlite_url)
    r = cli("data", "split", "se", "--fractions", fractions, db=sqlite_url)
    assert r.code == 2 and r.stderr.count("\n") == 1
    assert _splits(sqlite_url) == before


def test_unknown_dataset_and_bad_by(sqlite_url: str) -> None:
    load_summeval_sample(sqlite_url)
    assert cli("data", "split", "nope", db=sqlite_url).code == 2
    assert cli("data", "split", "se", "--by", "article", db=sqlite_url).code == 2


def test_counts_and_assignment() -> None:
    assert split_counts(5, {"a": 0.5, "b": 0.5}) == {"a": 3, "b": 2}
    assert split_counts(10, {"a": 1 / 3, "b": 1 / 3, "c": 1 / 3}) == {"a": 4, "b": 3, "c": 3}
    units = [f"u{i}" for i in range(11)]
    got = assign_splits(units, {"x": 0.5, "y": 0.5}, 7)
    assert set(got) == set(units) and Counter(got.values()) == {"x": 6, "y": 5}
    assert got == assign_splits(units, {"x": 0.5, "y": 0.5}, 7)
    assert parse_fractions("dev=0.25, eval=0.75") == {"dev": 0.25, "eval": 0.75}
    with pytest.raises(BadInput):
        assign_splits(["a", "a"], {"x": 1.0}, 0)
