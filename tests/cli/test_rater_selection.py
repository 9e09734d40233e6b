"""Human statistics keep their meaning when campaigns run over the same data: every command that
selects raters reports the humans unless judges are named (`--raters`, `--group judge`,
`--with-judges`), and its JSON says who was used. Cross-checked against the krippendorff package
on the human matrix rebuilt from the raw SummEval file."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest

from judgepanel.datasets.pairs import preference
from tests.helpers import cli, migrate_db

SUMMEVAL = "summeval/model_annotations.reconstructed.jsonl.gz"
HUMANS = [f"expert_{i}" for i in range(1, 4)] + [f"turker_{i}" for i in range(1, 6)]
PAIRWISE = ("sim:fair?noise=0.2", "sim:leaning?position_bias=0.5&noise=0.2")
CODE = {"A": 0.0, "B": 1.0, "T": 2.0}
ROWS = 32  # two articles of 16 summaries: 240 within-article pairs


def _raw(shared: Path) -> list[dict[str, Any]]:
    with gzip.open(shared / SUMMEVAL, "rt") as f:
        return [json.loads(line) for line in itertools.islice(f, ROWS)]


def _scores(row: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Each human's four scores for one summary, read from the raw row."""
    out: dict[str, dict[str, float]] = {}
    for prefix, key in (("expert", "expert_annotations"), ("turker", "turker_annotations")):
        for i, ann in enumerate(row[key] or [], 1):
            out[f"{prefix}_{i}"] = {d: float(v) for d, v in ann.items()}
    return out


def _run(db: str, *args: str) -> dict[str, Any]:
    r = cli(*args, "--json", db=db)
    assert r.code == 0, r.stderr
    out: dict[str, Any] = r.json()
    return out


FIGURES: dict[str, tuple[str, ...]] = {
    "pairs alpha": ("metrics", "agreement", "--pairs", "p", "--metric", "alpha"),
    "pairs ac1": ("metrics", "agreement", "--pairs", "p", "--metric", "ac1"),
    "items alpha": (
        "metrics",
        "agreement",
        "--dataset",
        "summeval",
        "--dimension",
        "coherence",
        "--metric",
        "alpha",
        "--level",
        "interval",
    ),
    "items ac1": (
        "metrics",
        "agreement",
        "--dataset",
        "summeval",
        "--dimension",
        "coherence",
        "--metric",
        "ac1",
    ),
    "matrix": ("metrics", "matrix", "--pairs", "p"),
    "truth": ("metrics", "truth", "--pairs", "p", "--method", "dawid-skene"),
    "heldout": ("metrics", "heldout", "--pairs", "p"),
    "summary": ("metrics", "summary", "--pairs", "p"),
}


def test_campaign_judges_do_not_leak_into_human_figures(
    db_url: str, shared_data: Path, tmp_path: Path
) -> None:
    rows = _raw(shared_data)
    src = tmp_path / "two.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    migrate_db(db_url)  # `db upgrade`, run once per test run and copied
    assert cli("data", "import-summeval", str(src), db=db_url).code == 0
    assert (
        cli("data", "pairs", "summeval", "--name", "p", "--sample", "80", "--seed", "3", db=db_url).code == 0
    )
    before = {name: _run(db_url, *argv) for name, argv in FIGURES.items()}

    judges = [a for j in PAIRWISE for a in ("--judge", j)]
    create = ("campaign", "create")
    assert (
        cli(
            *create,
            "pw",
            "--dataset",
            "summeval",
            "--pairs",
            "p",
            "--protocol",
            "pairwise",
            *judges,
            db=db_url,
        ).code
        == 0
    )
    pointwise = (
        "--protocol",
        "pointwise",
        "--condition",
        "none",
        "--dimension",
        "coherence",
        "--judge",
        "sim:pt",
    )
    assert cli(*create, "pt", "--dataset", "summeval", *pointwise, db=db_url).code == 0
    for c in ("pw", "pt"):
        assert cli("campaign", "run", c, db=db_url).code == 0
    after = {name: _run(db_url, *argv) for name, argv in FIGURES.items()}

    # every human figure is unchanged by the campaigns, and says it is over the 8 humans
    for name in FIGURES:
        assert after[name] == before[name], name
        assert after[name]["selection"]["raters"] == HUMANS, name
        assert after[name]["selection"]["judges"] == [] and after[name]["selection"]["humans"] == 8
    alpha = after["pairs alpha"]
    assert alpha["n_raters"] == 8 and alpha["raters"] == HUMANS

    # cross-check: Krippendorff's α over the humans' A/B/T labels rebuilt from the raw file
    by_id = {f"{r['id']}/{r['model_id']}": _scores(r) for r in rows}
    pair_rows = _run(
        db_url,
        "query",
        "select a.external_id ea, b.external_id eb from pair p join item a on a.id = p.item_a_id "
        "join item b on b.id = p.item_b_id order by p.position",
    )["rows"]
    assert len(pair_rows) == 80
    human = np.full((8, len(pair_rows)), np.nan)
    for u, pr in enumerate(pair_rows):
        a, b = by_id[pr["ea"]], by_id[pr["eb"]]
        for r, name in enumerate(HUMANS):
            if name in a and name in b:
                pref = preference(a[name], b[name], 1e-6)
                if pref is not None:
                    human[r, u] = CODE[pref]
    ref = krippendorff.alpha(
        reliability_data=human, level_of_measurement="nominal", value_domain=[0.0, 1.0, 2.0]
    )
    assert alpha["value"] == pytest.approx(ref, abs=1e-12)
    coh = np.array([[by_id[k].get(n, {}).get("coherence", np.nan) for k in by_id] for n in HUMANS])
    ref_items = krippendorff.alpha(reliability_data=coh, level_of_measurement="interval")
    assert after["items alpha"]["value"] == pytest.approx(ref_items, abs=1e-12)

    # judges join only when named, and then the JSON says so
    # columns carry the judges' short names (issue 19 §3); the spec form still selects them
    pw_specs = [f"{j}@pw" for j in ("sim:fair?noise=0.2", "sim:leaning?noise=0.2&position_bias=0.5")]
    pw_cols = ["fair@pw", "leaning@pw"]
    pooled = _run(db_url, *FIGURES["pairs alpha"], "--with-judges", "all")
    assert pooled["n_raters"] == 10 and pooled["selection"]["judges"] == pw_cols
    assert pooled["value"] != alpha["value"]
    only = _run(db_url, *FIGURES["pairs alpha"], "--group", "judge")
    assert only["raters"] == pw_cols and only["selection"]["rule"] == "group judge"
    named = _run(db_url, *FIGURES["pairs alpha"], "--raters", f"expert_1,{pw_cols[0]}")
    assert named["raters"] == ["expert_1", pw_cols[0]]
    by_spec = _run(db_url, *FIGURES["pairs alpha"], "--raters", f"expert_1,{pw_specs[0]}")
    assert by_spec["raters"] == ["expert_1", pw_cols[0]] and by_spec["value"] == named["value"]
    items = _run(db_url, *FIGURES["items ac1"], "--with-judges", "sim:pt@pt")
    # named by its spec, reported by its short name (issue 19 §3)
    assert items["n_raters"] == 9 and items["selection"]["judges"] == ["pt@pt"]
    summary = _run(db_url, "metrics", "summary", "--pairs", "p", "--group", "judge")
    assert [r["name"] for r in summary["raters"]] == pw_cols
    truth = _run(db_url, *FIGURES["truth"], "--with-judges", pw_cols[1])
    assert truth["raters"] == [*HUMANS, pw_cols[1]]
    heldout = _run(db_url, *FIGURES["heldout"], "--group", "expert")
    assert set(heldout["raters"]) == {"expert_1", "expert_2", "expert_3"}

    # naming a human as a judge, or an unknown judge, is bad input
    r = cli(*FIGURES["pairs alpha"], "--with-judges", "expert_1", db=db_url)
    assert r.code == 2 and "'expert_1' is not a judge" in r.stderr
    r = cli(*FIGURES["pairs alpha"], "--with-judges", "sim:nobody@pw", db=db_url)
    assert r.code == 2 and "no rater named 'sim:nobody@pw'" in r.stderr


def test_no_humans_says_how_to_name_judges(sqlite_url: str, tmp_path: Path) -> None:
    path = tmp_path / "llm.csv"
    path.write_text("item_id,annotator,group,kind,dimension,value\ni1,m1,llm,llm,s,1\ni1,m2,llm,llm,s,2\n")
    migrate_db(sqlite_url)
    assert cli("data", "import-labels", str(path), "--dataset", "d", db=sqlite_url).code == 0
    r = cli("metrics", "agreement", "--dataset", "d", "--metric", "percent", db=sqlite_url)
    assert r.code == 2 and "no human raters here" in r.stderr and "--group judge" in r.stderr
    out = _run(
        sqlite_url, "metrics", "agreement", "--dataset", "d", "--metric", "percent", "--group", "judge"
    )
    assert out["raters"] == ["m1", "m2"] and out["value"] == 0.0
