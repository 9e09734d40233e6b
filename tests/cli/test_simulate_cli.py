"""`simulate designs` options for class-dependent annotators and hard items, through the real CLI."""

from __future__ import annotations

import pytest

from tests.helpers import cli


def test_class_profiles_hard_items_and_standard_errors(sqlite_url: str) -> None:
    out = cli(
        "simulate",
        "designs",
        "--n",
        "80",
        "--class-shares",
        "0.8,0.2",
        "--accuracy",
        "0.9/0.8",
        "--judges",
        "0.92/0.45,0.8",
        "--hard-share",
        "0.2",
        "--hard-accuracy",
        "0.7",
        "--hard-judges",
        "0.5,0.6",
        "--coverage",
        "0.25",
        "--designs",
        "random,strat",
        "--replications",
        "20",
        "--json",
        db=sqlite_url,
    ).json()
    params = out["params"]
    assert params["prevalence"] == [0.8, 0.2] and params["accuracy"] == [0.9, 0.8]
    assert params["judges"] == [[0.92, 0.45], 0.8] and params["hard_judges"] == [0.5, 0.6]
    rnd, strat = out["cells"]
    assert set(rnd["judges"]) == {"0.92/0.45", "0.8"}
    # expected accuracy: 0.8 (0.8·0.92 + 0.2·0.45) + 0.2·0.5
    assert rnd["judges"]["0.92/0.45"]["accuracy"] == pytest.approx(0.8 * (0.736 + 0.09) + 0.1)
    assert rnd["vs_random"] is None
    assert strat["vs_random"]["fr"] == pytest.approx(strat["fr"] - rnd["fr"])
    assert {"fr_se", "fa_se", "wdr_se"} <= set(strat)
    text = cli("simulate", "designs", "--n", "60", "--replications", "5", "--coverage", "0.5", db=sqlite_url)
    assert text.code == 0 and "ΔFR" in text.stdout and "± " in text.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--judges", "0.9/0.4/0.1"], "2 values"),
        (["--accuracy", "0.9/x"], "--accuracy"),
        (["--hard-share", "0.2", "--hard-judges", "0.5"], "one hard-item accuracy per judge"),
        (["--hard-share", "1.5"], "hard share"),
    ],
)
def test_bad_options_are_one_line_errors(sqlite_url: str, args: list[str], message: str) -> None:
    r = cli("simulate", "designs", "--n", "40", "--replications", "2", *args, db=sqlite_url)
    assert r.code == 2 and message in r.stderr and r.stderr.strip().count("\n") == 0
