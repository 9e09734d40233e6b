"""Pair sets can be found (issue 19 §6): `data list` shows them beside the datasets and
`data pairs --list [DATASET]` lists them, with counts that match the stored rows."""

from __future__ import annotations

from tests.helpers import cli, load_summeval_sample


def test_pair_sets_are_listed(db_url: str) -> None:
    load_summeval_sample(db_url)
    a = cli(
        "data", "pairs", "se", "--name", "se-small", "--sample", "5", "--seed", "3", "--json", db=db_url
    ).json()
    b = cli("data", "pairs", "se", "--name", "se-all", "--sample", "100000", "--json", db=db_url).json()
    listed = cli("data", "pairs", "--list", "--json", db=db_url).json()["pair_sets"]
    assert [p["name"] for p in listed] == ["se-small", "se-all"]
    small, every = listed
    assert (small["dataset"], small["pairs"], small["pairs_total"], small["seed"], small["sample"]) == (
        "se",
        a["sampled"],
        a["pairs_total"],
        3,
        5,
    )
    assert every["pairs"] == b["sampled"] == b["pairs_total"]
    stored = cli(
        "query",
        "select count(*) as n from pair_label pl join pair p on p.id = pl.pair_id "
        "join pair_set s on s.id = p.pair_set_id where s.name = 'se-small'",
        "--json",
        db=db_url,
    ).json()["rows"][0]["n"]
    assert small["labels"] == stored == sum(a["labels"].values())

    both = cli("data", "list", "--json", db=db_url).json()
    assert both["pair_sets"] == listed and [d["name"] for d in both["datasets"]] == ["se"]
    shown = cli("data", "list", db=db_url)
    assert shown.code == 0 and "pair sets" in shown.stdout and "se-small" in shown.stdout
    shown = cli("data", "pairs", "se", "--list", db=db_url)
    assert shown.code == 0 and "se-all" in shown.stdout


def test_pairs_without_a_name_is_one_line(db_url: str) -> None:
    load_summeval_sample(db_url)
    for args, needle in ((("se",), "missing --name"), ((), "missing DATASET")):
        r = cli("data", "pairs", *args, db=db_url)
        assert r.code == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_listing_the_pair_sets_of_an_unknown_dataset_is_one_line(db_url: str) -> None:
    """A mistyped DATASET used to list nothing with exit 0, which reads as "no pair sets yet"."""
    load_summeval_sample(db_url)
    cli("data", "pairs", "se", "--name", "se-small", "--sample", "5", "--json", db=db_url)
    for extra in ((), ("--json",)):
        r = cli("data", "pairs", "nosuch", "--list", *extra, db=db_url)
        assert r.code == 2 and r.stdout == ""
        assert r.stderr.strip().splitlines() == [r.stderr.strip()]
        assert "no dataset named 'nosuch'" in r.stderr and "se" in r.stderr
    # a known dataset without pair sets is still an empty list
    load_summeval_sample(db_url, "se2")
    r = cli("data", "pairs", "se2", "--list", "--json", db=db_url)
    assert r.code == 0 and r.json()["pair_sets"] == []
