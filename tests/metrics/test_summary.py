"""The meta-evaluation battery and the `metrics summary|truth|heldout` commands.

Library level: on a synthetic two-school panel, every section is recomputed independently
(sklearn κ, scipy correlations, direct calls of the building blocks). CLI level: on the full shared
SummEval file with a 1000-pair set, the JSON is checked against a matrix rebuilt through read-only
SQL (tests/metrics/summeval_pairs.py), against `data pairs` / `data duplicates`, and against the
raw file for the score gaps; the gap lookup itself also runs on PostgreSQL.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from judgepanel.metrics.heldout import leave_one_rater_out
from judgepanel.metrics.matrix import RatingMatrix
from judgepanel.metrics.summary import meta_evaluation, truth_report
from judgepanel.metrics.truth import dawid_skene, mace, majority_vote
from judgepanel.metrics.uncertainty import vote_entropy
from judgepanel.store.pair_scores import pair_items
from tests.helpers import cli
from tests.metrics import summeval_pairs

# ---------------------------------------------------------------- library level, synthetic


def _schools(seed: int = 0, n: int = 300) -> tuple[RatingMatrix, np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    signals = rng.integers(0, 3, size=(2, n))
    cols = []
    for school, size in ((0, 3), (1, 4)):
        for _ in range(size):
            col = signals[school].astype(float)
            wrong = rng.random(n) > 0.8
            col[wrong] = rng.integers(0, 3, size=int(wrong.sum()))
            col[rng.random(n) < 0.1] = np.nan
            cols.append(col)
    values = np.stack(cols, axis=1)
    # the second school copies one row into all its members on some units (duplicated annotation)
    dup = rng.random(n) < 0.2
    values[np.ix_(dup, [3, 4, 5, 6])] = signals[1][dup, None]
    matrix = RatingMatrix(
        values=values,
        unit_ids=tuple(range(100, 100 + n)),
        rater_names=("e1", "e2", "e3", "c1", "c2", "c3", "c4"),
        rater_groups=("expert",) * 3 + ("crowd",) * 4,
        categories=np.array([0.0, 1.0, 2.0]),
        numeric=False,
        category_labels=("A", "B", "T"),
        kind="pair",
    )
    gap = np.abs(signals[0] - 1).astype(float) + rng.random(n)
    return matrix, gap, {"crowd": dup, "expert": np.zeros(n, dtype=bool)}


@pytest.fixture(scope="module")
def battery() -> tuple[Any, RatingMatrix, np.ndarray, dict[str, np.ndarray]]:
    matrix, gap, dups = _schools()
    return meta_evaluation(matrix, train=240, seed=3, score_gap=gap, duplicate_units=dups), matrix, gap, dups


def test_sections_recomputed_independently(battery) -> None:  # type: ignore[no-untyped-def]
    res, matrix, gap, _ = battery
    v = matrix.values
    # label distribution
    crowd = v[:, 3:]
    assert res.labels_by_group["crowd"] == {lab: int(np.sum(crowd == i)) for i, lab in enumerate("ABT")}
    # κ on the first 240 units against sklearn, pairwise complete
    for i, j in ((0, 1), (0, 4), (3, 6)):
        both = ~np.isnan(v[:240, i]) & ~np.isnan(v[:240, j])
        ref = cohen_kappa_score(v[:240, i][both], v[:240, j][both], labels=[0, 1, 2])
        assert res.kappa.kappa[i, j] == pytest.approx(ref)
    assert res.kappa_within["expert"] > 0.3 and res.kappa_between["expert|crowd"] < 0.1
    assert sorted(map(sorted, res.clusters)) == [["c1", "c2", "c3", "c4"], ["e1", "e2", "e3"]]
    # held-out table equals a direct call with the same clusters
    direct = leave_one_rater_out(
        v, 3, train=240, clusters=[[0, 1, 2], [3, 4, 5, 6]], groups=list(matrix.rater_groups), seed=3
    )
    for a, b in zip(res.heldout.raters, direct.raters, strict=True):
        assert a.scores == b.scores
    # entropy vs gap: scipy on the same signal
    h = vote_entropy(v, 3)
    h[(~np.isnan(v)).sum(axis=1) < 2] = np.nan
    corr = next(c for c in res.correlations if c.x == "vote_entropy(all)" and c.y == "score_gap")
    ok = np.isfinite(h)
    assert corr.result.spearman == pytest.approx(spearmanr(h[ok], gap[ok])[0])
    # truth agreement against direct fits
    mv, ds = majority_vote(v, 3, seed=3), dawid_skene(v, 3, seed=3)
    agree = {(a, b): x for a, b, x, _ in res.truth.agreement}
    assert agree[("majority", "dawid_skene")] == pytest.approx(np.mean(mv.labels == ds.labels))
    assert res.truth.distribution["majority"] == {
        lab: int(np.sum(mv.labels == i)) for i, lab in enumerate("ABT")
    }
    assert np.array_equal(res.truth.labels["mace"], mace(v, 3, seed=3).labels)


def test_duplicate_effect_by_hand(battery) -> None:  # type: ignore[no-untyped-def]
    res, matrix, _, dups = battery
    (effect,) = [d for d in res.duplicates if d.group == "crowd"]
    crowd = matrix.values[:, 3:]
    rated = (~np.isnan(crowd)).sum(axis=1) >= 2
    keep = rated & ~dups["crowd"]
    assert effect.flagged_units == int((rated & dups["crowd"]).sum())
    assert effect.units_without == int(keep.sum())

    def mean_kappa(rows: np.ndarray) -> float:
        vals = []
        for i in range(4):
            for j in range(4):
                if i != j:
                    both = rows & ~np.isnan(crowd[:, i]) & ~np.isnan(crowd[:, j])
                    vals.append(cohen_kappa_score(crowd[both, i], crowd[both, j], labels=[0, 1, 2]))
        return float(np.mean(vals))

    assert effect.kappa_with == pytest.approx(mean_kappa(rated))
    assert effect.kappa_without == pytest.approx(mean_kappa(keep))
    # the copied rows inflate the crowd's agreement
    assert effect.kappa_with > effect.kappa_without + 0.05
    # no expert unit is flagged, so nothing changes there
    (expert,) = [d for d in res.duplicates if d.group == "expert"]
    assert expert.flagged_units == 0 and expert.kappa_with == expert.kappa_without


def test_as_dict_is_json_ready_and_split_is_checked(battery) -> None:  # type: ignore[no-untyped-def]
    res, matrix, _, _ = battery
    d = res.as_dict()
    json.dumps(d, allow_nan=True)
    assert d["split"]["train"] == 240 and d["split"]["test"] == 60
    assert set(d["heldout"]["raters"]) == set(matrix.rater_names)
    with pytest.raises(ValueError):
        meta_evaluation(matrix, train=300)


def test_truth_report_majority_accuracy_by_hand() -> None:
    values = np.array([[0, 0, 1], [1, 1, 1], [0, 2, 2]], dtype=float)
    m = RatingMatrix(
        values=values,
        unit_ids=(1, 2, 3),
        rater_names=("a", "b", "c"),
        rater_groups=(None, None, None),
        categories=np.array([0.0, 1.0, 2.0]),
        numeric=False,
        category_labels=("A", "B", "T"),
    )
    rep = truth_report(m, "majority")
    # majority labels: A, B, T; a agrees on 2 of 3, b on 3, c on 2
    assert rep.distribution == {"A": 1, "B": 1, "T": 1}
    assert rep.rater_accuracy == pytest.approx({"a": 2 / 3, "b": 1.0, "c": 2 / 3})
    assert set(rep.agreement_with) == {"dawid_skene", "mace"}


# ---------------------------------------------------------------- CLI on the shared SummEval file


@pytest.fixture(scope="module")
def summeval(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> summeval_pairs.PairMatrix:
    return summeval_pairs.build(shared_data, tmp_path_factory, "summary")


@pytest.fixture(scope="module")
def summary(summeval: summeval_pairs.PairMatrix) -> dict[str, Any]:
    out: dict[str, Any] = cli(
        "metrics", "summary", "--pairs", "p", "--split", "800", "--seed", "0", "--json", db=summeval.db
    ).json()
    return out


def test_summary_on_summeval_matches_independent_computations(
    summary: dict[str, Any], summeval: summeval_pairs.PairMatrix
) -> None:
    db, v, names = summeval.db, summeval.values, summeval.names
    assert summary["units"] == 1000 and summary["split"]["train"] == 800 and summary["split"]["test"] == 200
    # label distribution: what `data pairs` reported when the set was made
    pairs = cli("data", "pairs", "summeval", "--name", "p", "--sample", "1000", "--json", db=db).json()
    assert summary["label_distribution"]["by_group"] == pairs["labels_by_group"]
    # κ on the first 800 pairs, against sklearn on the SQL-built matrix
    order = summary["kappa"]["raters"]
    i, j = order.index("expert_1"), order.index("turker_2")
    a, b = v[:800, names.index("expert_1")], v[:800, names.index("turker_2")]
    both = ~np.isnan(a) & ~np.isnan(b)
    assert summary["kappa"]["matrix"][i][j] == pytest.approx(
        cohen_kappa_score(a[both], b[both], labels=[0, 1, 2])
    )
    # SummEval's two schools
    clusters = sorted(sorted(c["members"]) for c in summary["clusters"])
    assert clusters == [["expert_1", "expert_2", "expert_3"], [f"turker_{k}" for k in range(1, 6)]]
    # duplicates: the flagged item counts are what `data duplicates` says
    dups = cli("data", "duplicates", "summeval", "--json", db=db).json()
    assert summary["duplicate_items"] == dups["by_group"]
    assert summary["duplicates"]["crowd"]["flagged_units"] > 0
    # held-out majority accuracy of expert_1, recomputed here with numpy
    r = names.index("expert_1")
    others = [c for c in range(len(names)) if c != r]
    train_mode = int(np.bincount(v[:800, r][~np.isnan(v[:800, r])].astype(int), minlength=3).argmax())
    correct = 0
    for u in range(800, 1000):
        counts = np.bincount(v[u, others][~np.isnan(v[u, others])].astype(int), minlength=3)
        top = np.flatnonzero(counts == counts.max())
        pred = int(top[0]) if len(top) == 1 and counts.max() > 0 else train_mode
        correct += pred == v[u, r]
    assert summary["heldout"]["raters"]["expert_1"]["majority"] == pytest.approx(correct / 200)
    # entropy: closer pairs are more uncertain
    gap_corr = [c for c in summary["entropy"]["correlations"] if c["y"] == "score_gap"]
    assert all(c["spearman"] < 0 for c in gap_corr if c["x"].startswith("vote_entropy"))
    # truth inference: Dawid–Skene labels as a direct fit on the SQL-built matrix gives them
    ds = dawid_skene(v, 3, seed=0)
    assert summary["truth"]["distribution"]["dawid_skene"] == {
        lab: int(np.sum(ds.labels == k)) for k, lab in enumerate("ABT")
    }


def test_truth_and_heldout_commands(summeval: summeval_pairs.PairMatrix) -> None:
    db, v = summeval.db, summeval.values
    out = cli("metrics", "truth", "--pairs", "p", "--method", "dawid-skene", "--json", db=db).json()
    ds = dawid_skene(v, 3)
    assert out["method"] == "dawid-skene" and out["converged"] is True
    assert out["distribution"] == {lab: int(np.sum(ds.labels == k)) for k, lab in enumerate("ABT")}
    assert set(out["agreement_with"]) == {"majority", "mace"}
    assert np.allclose(out["confusion"]["expert_1"], ds.confusion[summeval.names.index("expert_1")])

    held = cli("metrics", "heldout", "--pairs", "p", "--train", "800", "--json", db=db).json()
    assert held["train"] == 800 and held["test"] == 200
    idx = {n: i for i, n in enumerate(summeval.names)}
    direct = leave_one_rater_out(
        v,
        3,
        train=800,
        clusters=[[idx[n] for n in c] for c in held["clusters"]],
        groups=summeval.groups,
    )
    for r in direct.raters:
        row = held["raters"][summeval.names[r.rater]]
        assert row["majority"] == pytest.approx(r.accuracy("majority"))
        assert row["cluster"] == pytest.approx(r.accuracy("cluster"))
        assert row["dawid-skene"] == pytest.approx(r.accuracy("dawid_skene"))

    items = cli(
        "metrics",
        "truth",
        "--dataset",
        "summeval",
        "--dimension",
        "coherence",
        "--method",
        "majority",
        "--json",
        db=db,
    ).json()
    assert items["categories"] == ["1", "2", "3", "4", "5"] and items["units"] == 1600
    assert sum(items["distribution"].values()) == 1600


def test_readable_forms_and_errors(summeval: summeval_pairs.PairMatrix) -> None:
    db = summeval.db
    # the readable form on a small pair set of the same data (the JSON above covers the figures)
    assert cli("data", "pairs", "summeval", "--name", "small", "--sample", "150", db=db).code == 0
    text = cli("metrics", "summary", "--pairs", "small", db=db)
    assert text.code == 0 and "leave-one-rater-out" in text.stdout and "cluster 1" in text.stdout
    # without the pairs touching items the crowd annotated identically, the crowd's κ collapses
    full = cli("metrics", "summary", "--pairs", "small", "--json", db=db).json()
    clean = cli(
        "metrics", "summary", "--pairs", "small", "--exclude-duplicates", "crowd", "--json", db=db
    ).json()
    assert clean["excluded_duplicates_of"] == "crowd"
    crowd_full, crowd_clean = full["duplicates"]["crowd"], clean["duplicates"]["crowd"]
    assert clean["units"] <= full["units"] - crowd_full["flagged_units"]
    assert crowd_clean["flagged_units"] == 0
    # the crowd-rated pairs left are exactly those the full run kept when it dropped the flagged ones
    assert crowd_clean["units_with"] == crowd_full["units_without"]
    assert crowd_clean["kappa_within_group"]["with"] == pytest.approx(
        crowd_full["kappa_within_group"]["without"]
    )
    assert cli("metrics", "heldout", "--pairs", "small", db=db).code == 0
    assert cli("metrics", "truth", "--pairs", "small", "--method", "mace", db=db).code == 0
    for args, message in [
        (("summary", "--pairs", "nope"), "no pair set named 'nope'"),
        (("summary", "--pairs", "p", "--split", "1000"), "--split"),
        (("truth", "--pairs", "p", "--method", "vote"), "unknown --method"),
        (("heldout", "--pairs", "p", "--train", "0"), "--train must leave units"),
        (("heldout", "--pairs", "p", "--clusters", "0"), "--clusters"),
        (("summary", "--pairs", "p", "--exclude-duplicates", "robots"), "no annotator group 'robots'"),
    ]:
        r = cli("metrics", *args, db=db)
        assert r.code == 2, (args, r.stderr)
        assert message in r.stderr and r.stderr.strip().count("\n") == 0


# ---------------------------------------------------------------- score gaps, both backends


def test_pair_items_score_gap_against_the_raw_file(engine, shared_data: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with gzip.open(shared_data / summeval_pairs.SUMMEVAL, "rt") as f:
        rows = [json.loads(next(f)) for _ in range(48)]
    small = tmp_path / "small.jsonl"
    small.write_text("".join(json.dumps(r) + "\n" for r in rows))
    db = engine.url.render_as_string(hide_password=False)
    assert cli("data", "import-summeval", str(small), db=db).code == 0
    assert cli("data", "pairs", "summeval", "--name", "s", "--sample", "20", db=db).code == 0
    mean = {}
    for r in rows:
        per_annotator = [
            np.mean(list(a.values())) for a in r["expert_annotations"] + (r["turker_annotations"] or [])
        ]
        mean[f"{r['id']}/{r['model_id']}"] = float(np.mean(per_annotator))
    got = pair_items(engine, "s")
    q = cli(
        "query",
        "select p.id, a.external_id ea, b.external_id eb from pair p join item a on a.id = p.item_a_id "
        "join item b on b.id = p.item_b_id order by p.position",
        "--format",
        "csv",
        db=db,
    )
    listed = list(csv.DictReader(io.StringIO(q.stdout)))
    assert [int(x["id"]) for x in listed] == list(got.pair_ids)
    expected = [abs(mean[x["ea"]] - mean[x["eb"]]) for x in listed]
    assert np.allclose(got.score_gap, expected)
    experts = pair_items(engine, "s", group="expert")
    assert not math.isnan(float(experts.mean_a[0]))
    assert cli("metrics", "summary", "--pairs", "s", "--split", "15", "--json", db=db).code == 0
