"""`metrics conditions` end to end: a real pointwise campaign (the offline `sim` judge) under
none / criteria / rubric on a small USR-format dataset, on SQLite and PostgreSQL; the figures are
recomputed from the stored rows with scikit-learn and scipy."""

from __future__ import annotations

import json
import math
import random
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from judgepanel.datasets.usr import DIMENSIONS
from tests.helpers import cli, migrate_db

JUDGE = "sim:judge-a?q_low=0.3&q_span=0.3"
FACTS = [
    "the saxophone was invented by adolphe sax in the 1840s in belgium .",
    "the great wall of china is more than twenty thousand kilometres long .",
    "honey never spoils and edible honey was found in ancient egyptian tombs .",
    "octopuses have three hearts and blue blood that carries copper .",
    "the first video game console sold in stores was the magnavox odyssey .",
    "bananas are berries while strawberries are not berries at all .",
]


def _usr_file(path: Path, seed: int = 3) -> Path:
    rng = random.Random(seed)
    contexts = []
    for ci, fact in enumerate(FACTS):
        responses = []
        for model, text in [
            ("Original Ground Truth", f"did you know {fact} i find that amazing , do you ?"),
            ("Argmax Decoding", "i do n't know . i do n't know . i do n't know ."),
            ("New Human Generated", f"yes ! {fact.split(' . ')[0]} and that is a fun fact to share"),
            ("Nucleus Decoding (p = 0.5)", f"maybe , i like talking about topic {ci} with my friends"),
        ]:
            ratings = {
                key: [rng.randint(lo, hi) for _ in range(3)] for key, (_, lo, hi) in DIMENSIONS.items()
            }
            responses.append({"response": text, "model": model, **ratings})
        contexts.append(
            {
                "context": f"hello there ! \n what do you know about topic {ci} ?",
                "fact": fact,
                "annotators": ["a1", "a2", "a3"],
                "responses": responses,
            }
        )
    path.write_text(json.dumps(contexts, indent=2))
    return path


@pytest.fixture
def study_db(db_url: str, tmp_path: Path) -> str:
    migrate_db(db_url)
    assert cli("data", "import-usr", str(_usr_file(tmp_path / "usr.json")), db=db_url).code == 0
    assert cli("rubric", "add", "usr", db=db_url).code == 0
    args = ["campaign", "create", "c1", "--dataset", "usr", "--protocol", "pointwise", "--rubric", "usr"]
    args += [
        "--condition",
        "none,criteria,rubric",
        "--dimension",
        "naturalness,knowledge_use",
        "--judge",
        JUDGE,
    ]
    assert cli(*args, db=db_url).code == 0
    r = cli("campaign", "run", "c1", db=db_url)
    assert r.code == 0, r.stderr
    return db_url


def _rows(db: str, sql: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = cli("query", sql, "--json", db=db).json()["rows"]
    return rows


def _stored(db: str, dimension: str) -> tuple[dict[str, dict[str, float]], dict[str, list[float]]]:
    """Judge scores by condition and item, and human ratings by item, straight from the tables."""
    scores: dict[str, dict[str, float]] = defaultdict(dict)
    for r in _rows(
        db,
        "select j.condition c, i.external_id e, v.score s from verdict v join job j on j.id = v.job_id "
        f"join item i on i.id = j.item_id where v.parse_status = 'ok' and j.dimension = '{dimension}'",
    ):
        scores[r["c"]][r["e"]] = r["s"]
    humans: dict[str, list[float]] = defaultdict(list)
    for r in _rows(
        db,
        "select i.external_id e, l.value_num v from label l join item i on i.id = l.item_id "
        f"where l.dimension = '{dimension}' order by i.position",
    ):
        humans[r["e"]].append(r["v"])
    return scores, humans


def _reference(judge: list[float], human: list[float], cats: list[float]) -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "exact": float(np.mean(np.array(judge) == np.array(human))),
            "kappa": float(cohen_kappa_score(judge, human, labels=cats)),
            "qwk": float(cohen_kappa_score(judge, human, labels=cats, weights="quadratic")),
            "spearman": float(spearmanr(judge, human).statistic),
        }


def _close(got: float | None, want: float) -> bool:
    return (got is None and math.isnan(want)) or (got is not None and abs(got - want) < 1e-9)


@pytest.mark.parametrize(
    ("dimension", "cats"), [("naturalness", [1.0, 2.0, 3.0]), ("knowledge_use", [0.0, 1.0])]
)
def test_figures_match_the_stored_rows(study_db: str, dimension: str, cats: list[float]) -> None:
    out = cli(
        "metrics", "conditions", "--campaign", "c1", "--human-group", "expert", "--dimension", dimension,
        "--bootstrap", "200", "--cases", "2", "--json", db=study_db,
    ).json()  # fmt: skip
    assert list(out["conditions"]) == ["none", "criteria", "rubric"]
    for c in [*out["conditions"].values(), *out["deltas"].values()]:
        assert {"exact", "kappa", "qwk", "spearman"} <= set(c)
        assert all(
            set(c[s]) == {"value", "ci", "ci_method"} and len(c[s]["ci"]) == 2
            for s in ("exact", "kappa", "qwk", "spearman")
        )
    assert all({"n", "items"} <= set(c) for c in out["conditions"].values())
    assert set(out["deltas"]) == {"criteria_vs_none", "rubric_vs_none"}
    assert out["scale"] == [cats[0], cats[-1]] and out["dimension"] == dimension
    # issue 19 §3: `judge` = the short name, `spec` = the full spec (`judge_name` kept)
    assert (out["judge"], out["spec"], out["judge_name"]) == ("judge-a", JUDGE, "judge-a")
    scores, humans = _stored(study_db, dimension)
    ref_of = {e: float(math.floor(sum(v) / len(v) + 0.5)) for e, v in humans.items()}
    for cond, c in out["conditions"].items():
        items = sorted(scores[cond])
        assert c["n"] == c["items"] == len(items) == 24
        ref = _reference([scores[cond][e] for e in items], [ref_of[e] for e in items], cats)
        for stat, value in ref.items():
            assert _close(c[stat]["value"], value), (cond, stat)
            lo, hi = c[stat]["ci"]
            if lo is not None:
                assert lo <= c[stat]["value"] + 1e-12 and c[stat]["value"] - 1e-12 <= hi
    for key, d in out["deltas"].items():
        cond = key.split("_vs_")[0]
        assert d["items"] == 24
        for stat in ("exact", "kappa", "qwk", "spearman"):
            a, b = out["conditions"][cond][stat]["value"], out["conditions"]["none"][stat]["value"]
            if a is not None and b is not None:
                assert d[stat]["value"] == pytest.approx(a - b, abs=1e-12)
    # cases: each a real disagreement, largest gap first, the judge's rationale next to the humans
    assert out["cases"]
    for case in out["cases"]:
        assert case["judge"] != case["human"] and case["human"] == ref_of[case["item"]]
        assert case["judge"] == scores[case["condition"]][case["item"]]
        assert case["judge_rationale"].startswith("[simulated]")
        assert sorted(h["value"] for h in case["human_ratings"]) == sorted(humans[case["item"]])
        assert [h["annotator"] for h in case["human_ratings"]] == ["a1", "a2", "a3"]
    by_cond: dict[str, list[float]] = defaultdict(list)
    for case in out["cases"]:
        by_cond[case["condition"]].append(abs(case["gap"]))
    assert all(len(g) <= 2 and g == sorted(g, reverse=True) for g in by_cond.values())


def test_judge_option_takes_the_name_or_any_spelling_of_the_spec(study_db: str) -> None:
    base = [
        "metrics",
        "conditions",
        "--campaign",
        "c1",
        "--human-group",
        "expert",
        "--dimension",
        "naturalness",
    ]
    a = cli(*base, "--bootstrap", "20", "--json", db=study_db).json()
    b = cli(
        *base, "--bootstrap", "20", "--judge", "sim:judge-a?q_span=0.30&q_low=0.3", "--json", db=study_db
    ).json()
    c = cli(*base, "--bootstrap", "20", "--judge", "judge-a", "--json", db=study_db).json()
    assert a == b == c and b["spec"] == JUDGE


def test_per_human_compares_with_every_rating(study_db: str) -> None:
    out = cli(
        "metrics", "conditions", "--campaign", "c1", "--human-group", "expert", "--dimension", "naturalness",
        "--per-human", "--bootstrap", "50", "--json", db=study_db,
    ).json()  # fmt: skip
    assert out["reference"] == "each human"
    scores, humans = _stored(study_db, "naturalness")
    for cond, c in out["conditions"].items():
        judge = [scores[cond][e] for e in sorted(scores[cond]) for _ in humans[e]]
        human = [h for e in sorted(scores[cond]) for h in humans[e]]
        assert c["n"] == len(judge) == 72 and c["items"] == 24
        ref = _reference(judge, human, [1.0, 2.0, 3.0])
        for stat, value in ref.items():
            assert _close(c[stat]["value"], value), (cond, stat)


def test_table_output_and_bad_input(study_db: str) -> None:
    r = cli("metrics", "conditions", "--campaign", "c1", "--human-group", "expert", "--dimension",
            "naturalness", "--bootstrap", "20", "--cases", "1", db=study_db)  # fmt: skip
    assert r.code == 0 and "rubric − none" in r.stdout and "criteria − none" in r.stdout
    assert (
        "t(5)·SE over 6 groups" in r.stdout and "rounded group mean" in r.stdout
    )  # 6 dialogues: issue 30 §1
    assert "[simulated]" in r.stdout
    bad = [
        (["--campaign", "nope", "--human-group", "expert"], "no campaign named 'nope'"),
        (["--campaign", "c1", "--human-group", "expert"], "several dimensions"),
        (["--campaign", "c1", "--human-group", "crowd", "--dimension", "naturalness"], "no human group 'crowd'"),
        (["--campaign", "c1", "--human-group", "expert", "--dimension", "fluency"], "no dimension 'fluency'"),
        (["--campaign", "c1", "--human-group", "expert", "--dimension", "naturalness", "--judge", "x"], "no judge"),
        (["--campaign", "c1", "--human-group", "expert", "--dimension", "naturalness", "--bootstrap", "0"], "at least 1"),
        (["--campaign", "c1", "--human-group", "expert", "--dimension", "naturalness", "--cases", "-1"], "--cases"),
    ]  # fmt: skip
    for args, message in bad:
        r = cli("metrics", "conditions", *args, "--json", db=study_db)
        assert r.code == 2, args
        assert r.stderr.strip().count("\n") == 0 and message in r.stderr, (args, r.stderr)
        assert r.stdout == ""


def test_refuses_a_pairwise_campaign(db_url: str, tmp_path: Path) -> None:
    migrate_db(db_url)
    assert cli("data", "import-usr", str(_usr_file(tmp_path / "u.json")), db=db_url).code == 0
    assert cli("data", "pairs", "usr", "--name", "p", "--sample", "5", db=db_url).code == 0
    args = ["campaign", "create", "pw", "--dataset", "usr", "--pairs", "p", "--protocol", "pairwise"]
    assert cli(*args, "--judge", "sim:a", db=db_url).code == 0
    r = cli("metrics", "conditions", "--campaign", "pw", "--human-group", "expert", db=db_url)
    assert r.code == 2 and "needs a pointwise campaign" in r.stderr
    # a pointwise campaign not yet run has no verdicts to compare
    args = [
        "campaign",
        "create",
        "pt",
        "--dataset",
        "usr",
        "--protocol",
        "pointwise",
        "--dimension",
        "naturalness",
    ]
    assert cli(*args, "--judge", "sim:a", db=db_url).code == 0
    r = cli("metrics", "conditions", "--campaign", "pt", "--human-group", "expert", db=db_url)
    assert r.code == 2 and "no accepted verdicts" in r.stderr


def test_resample_groups_by_default_and_items_on_request(study_db: str) -> None:
    base = ["metrics", "conditions", "--campaign", "c1", "--human-group", "expert", "--dimension", "naturalness",
            "--bootstrap", "100", "--json"]  # fmt: skip
    by_group = cli(*base, db=study_db).json()
    by_item = cli(*base, "--resample", "items", db=study_db).json()
    # the study's dialogues each hold several items: groups are the default
    assert by_group["resample"] == "groups" and by_group["n_groups"] is not None and by_group["n_groups"] < 24
    assert by_item["resample"] == "items" and by_item["n_groups"] is None
    for c in ("none", "rubric"):
        assert by_group["conditions"][c]["exact"]["value"] == by_item["conditions"][c]["exact"]["value"]
    assert by_group["conditions"]["none"]["exact"]["ci"] != by_item["conditions"]["none"]["exact"]["ci"]
    bad = cli(*base, "--resample", "articles", db=study_db)
    assert (
        bad.code == 2
        and bad.stderr.count("\n") == 1
        and "--resample must be one of groups, items" in bad.stderr
    )


def test_one_dialogue_gives_no_interval_and_a_failed_job_is_counted(db_url: str, tmp_path: Path) -> None:
    """Issue 34 §1: over one group the study printed zero-width intervals ("1000 resamples of 1
    groups") and a job that ended failed was in no count. Now: null intervals, the reason in the
    header, `skipped.jobs_failed`, and a warning naming the groups."""
    usr = json.loads(_usr_file(tmp_path / "all.json").read_text())[:1]  # one dialogue, 4 replies
    (tmp_path / "one.json").write_text(json.dumps(usr))
    migrate_db(db_url)
    assert cli("data", "import-usr", str(tmp_path / "one.json"), db=db_url).code == 0
    args = [
        "campaign",
        "create",
        "c1",
        "--dataset",
        "usr",
        "--protocol",
        "pointwise",
        "--dimension",
        "naturalness",
    ]
    assert cli(*args, "--judge", "sim:judge-a?q_low=0.3&q_span=0.3&parse_error_rate=0.6", db=db_url).code == 0
    assert cli("campaign", "run", "c1", db=db_url).code == 3  # some jobs end failed
    failed = _rows(db_url, "select count(*) n from job where status = 'failed'")[0]["n"]
    assert failed >= 1
    base = ["metrics", "conditions", "--campaign", "c1", "--human-group", "expert", "--bootstrap", "100"]
    out = cli(*base, "--json", db=db_url).json()
    assert out["n_groups"] == 1 and out["skipped"]["jobs_failed"] == failed
    for stat in ("exact", "kappa", "qwk", "spearman"):
        assert out["conditions"]["none"][stat]["ci"] == [None, None]
    assert any("only 1 of the groups (articles): no interval" in w for w in out["warnings"])
    text = cli(*base, db=db_url)
    assert text.code == 0 and "resamples of 1 groups" not in text.stdout
    assert "no interval: the items come from 1 group" in text.stdout and "only 1 of the groups" in text.stderr
