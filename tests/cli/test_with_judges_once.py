"""Issue 17 §4: `--with-judges all` counts one judge once per (judge spec, request). A second
campaign whose verdicts were all copied from the first one's cache adds no second vote (which
silently inflated agreement), and `metrics heldout` says which campaigns' judges it counted."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import cli, load_summeval_sample


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('once') / 'j.db'}"
    load_summeval_sample(url, "se")
    assert cli("data", "pairs", "se", "--name", "p", "--sample", "60", db=url).code == 0
    return url


def _campaign(url: str, name: str, judge: str) -> None:
    made = cli(
        "campaign", "create", name, "--dataset", "se", "--pairs", "p", "--protocol", "pairwise",
        "--judge", judge, db=url,
    )  # fmt: skip
    assert made.code == 0, made.stderr
    ran = cli("campaign", "run", name, "--json", db=url)
    assert ran.code == 0, ran.stderr


def _heldout(url: str) -> dict[str, Any]:
    got = cli(
        "metrics", "heldout", "--pairs", "p", "--with-judges", "all", "--bootstrap", "50", "--json", db=url
    )
    assert got.code == 0, got.stderr
    out: dict[str, Any] = got.json()
    return out


def _agreement(url: str) -> dict[str, Any]:
    got = cli(
        "metrics", "agreement", "--pairs", "p", "--with-judges", "all", "--metric", "alpha", "--json", db=url
    )
    assert got.code == 0, got.stderr
    out: dict[str, Any] = got.json()
    return out


def test_a_campaign_answered_from_anothers_cache_is_not_counted_twice(db: str) -> None:
    _campaign(db, "c1", "sim:a?noise=0.1")
    before, alpha_before = _heldout(db), _agreement(db)
    assert before["judge_campaigns"] == ["c1"]
    _campaign(db, "c2", "sim:a?noise=0.1")  # the same judge spec, the same requests: all from the cache
    cached = cli("query", "select count(*) as n from response where cached_from is not null", "--json", db=db)
    assert cached.json()["rows"][0]["n"] > 0  # the premise: c2's verdicts are copies of c1's
    after, alpha_after = _heldout(db), _agreement(db)
    assert after["judge_campaigns"] == ["c1"]
    assert [r for r in after["raters"] if "@" in r] == [r for r in before["raters"] if "@" in r]
    assert after["selection"]["judges"] == before["selection"]["judges"]
    for key in ("methods", "raters", "groups"):
        assert after[key] == before[key], key
    assert alpha_after["value"] == pytest.approx(alpha_before["value"], abs=1e-12)
    assert alpha_after["n_raters"] == alpha_before["n_raters"]

    _campaign(db, "c3", "sim:b?noise=0.3")  # another judge is another vote
    third = _heldout(db)
    assert third["judge_campaigns"] == ["c1", "c3"]
    assert len(third["selection"]["judges"]) == len(before["selection"]["judges"]) + 1
