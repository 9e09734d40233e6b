"""`judgepanel demo`: the simulated panel campaigns, bias and agreement, offline, as one JSON object."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import cli


def test_demo_runs_the_panel_and_reports_bias_and_agreement(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    out = cli("demo", "--json", db=url).json()
    steps = out["steps"]
    pairwise = steps["run campaign demo-pairwise (simulated judges, offline)"]
    pointwise = steps["run campaign demo-pointwise (simulated judges, offline)"]
    assert (pairwise["status"], pairwise["jobs"], pairwise["done"]) == ("done", 360, 360)
    assert (pointwise["status"], pointwise["jobs"], pointwise["done"]) == ("done", 360, 360)
    bias = steps["position bias (swapped AB/BA pairs, exact sign test)"]
    a, b, c = (
        bias[f"sim:judge-{k}?position_bias={v}"] for k, v in (("a", "0"), ("b", "0.15"), ("c", "0.35"))
    )
    # more configured bias, more back-slot wins among inconsistent pairs
    assert a["back_wins"] < b["back_wins"] < c["back_wins"]
    assert c["p_value"] < 0.01 < a["p_value"]
    agree = steps["agreement with the experts"]
    assert set(agree["pairs_kappa"]) == set(bias)
    assert all(-1 <= v <= 1 for v in agree["pairs_kappa"].values())
    # the short repair iteration ends the demo: the simulated judges split on vague clauses, so
    # naming the property they read must raise their agreement
    rep = steps["rubric repair iteration (simulated judges and editor)"]
    assert rep["units"] == {"dev": 16, "eval": 16} and rep["clauses_edited"]["contested"] >= 1
    assert rep["delta"]["contested_vs_original"]["value"] > 0
    assert set(rep["verdict"]) == {"inter_judge", "human"}
    # a second run finds everything done and buys nothing
    again = cli("demo", "--json", db=url).json()["steps"]
    assert again["run campaign demo-pairwise (simulated judges, offline)"]["calls"] == 0
