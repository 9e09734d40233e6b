"""`metrics heldout`: the fitted models beside the baselines over real stored pair sets, with LLM
scores attached by `data import-alttest --into`."""

from __future__ import annotations

import json
import random

import pytest

from tests.helpers import cli, migrate_db

DIMS = ("coherence", "consistency", "fluency", "relevance")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Three articles × eight systems, experts on every row, turkers on half; two LLMs."""
    folder = tmp_path_factory.mktemp("heldout")
    rng = random.Random(0)
    rows, llms = [], {"m1": {}, "m2": {}}
    for a in ("a1", "a2", "a3"):
        for s in range(8):
            quality = rng.uniform(1, 5)

            def score(noise: float, q: float = quality) -> int:
                return max(1, min(5, round(q + rng.gauss(0, noise))))

            rows.append(
                {
                    "id": a,
                    "model_id": f"M{s}",
                    "decoded": "x",
                    "expert_annotations": [{d: score(0.6) for d in DIMS} for _ in range(3)],
                    "turker_annotations": [{d: score(1.2) for d in DIMS} for _ in range(5)]
                    if s % 2
                    else None,
                }
            )
            for name, noise in (("m1", 0.7), ("m2", 1.0)):
                for d in DIMS:
                    llms[name][f"{a}__M{s}__{d}"] = score(noise)
    (folder / "se.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    panel = folder / "panel"
    panel.mkdir()
    (panel / "llm_annotations.json").write_text(json.dumps(llms))
    url = f"sqlite:///{folder / 'h.db'}"
    migrate_db(url)  # `db upgrade`, run once per test run and copied
    assert cli("data", "import-summeval", str(folder / "se.jsonl"), db=url).code == 0
    assert cli("data", "import-alttest", str(panel), "--into", "summeval", db=url).code == 0
    assert cli("data", "pairs", "summeval", "--name", "p", "--sample", "84", db=url).code == 0
    return url


def test_humans_only_runs_the_human_models_and_keeps_todays_keys(db: str) -> None:
    out = cli(
        "metrics", "heldout", "--pairs", "p", "--train", "60", "--bootstrap", "100", "--json", db=db
    ).json()
    assert list(out["methods"]) == ["majority", "cluster", "dawid-skene", "scores-humans", "labels-humans"]
    assert out["train"] == 60 and out["test"] == 24 and out["folds"]["k"] == 1
    for g, v in out["groups"].items():  # the existing keys, and `cluster` computed as before
        assert out["methods"]["cluster"]["accuracy"][g] == v["micro"]["cluster"]
        assert out["methods"]["majority"]["accuracy"][g] == v["micro"]["majority"]
    assert set(out["raters"]) == {*(f"expert_{i}" for i in (1, 2, 3)), *(f"turker_{i}" for i in range(1, 6))}
    sh = out["methods"]["scores-humans"]
    assert set(sh["accuracy"]) == {"expert", "crowd", "all"}
    assert sh["log_loss"]["all"] > 0 and 0 <= sh["ece"]["all"] <= 1
    lo, hi = sh["delta_vs_cluster"]["all"]["ci"]
    assert lo <= sh["delta_vs_cluster"]["all"]["value"] <= hi
    assert out["methods"]["cluster"]["log_loss"]["all"] is None


def test_judges_joint_model_and_folds(db: str) -> None:
    out = cli(
        "metrics", "heldout", "--pairs", "p", "--train", "60", "--with-judges", "all",
        "--method", "scores-joint,scores-judges", "--folds", "3", "--bootstrap", "50", "--json", db=db,
    ).json()  # fmt: skip
    assert list(out["methods"])[3:] == ["scores-joint", "scores-judges"]
    assert out["folds"]["k"] == 3 and out["folds"]["split"] == "random permutations"
    assert "llm" in out["methods"]["scores-joint"]["accuracy"]
    spread = out["folds"]["accuracy"]["scores-joint"]["expert"]
    assert spread["min"] <= out["methods"]["scores-joint"]["accuracy"]["expert"] <= spread["max"]
    text = cli(
        "metrics",
        "heldout",
        "--pairs",
        "p",
        "--train",
        "60",
        "--with-judges",
        "all",
        "--bootstrap",
        "20",
        db=db,
    )
    assert text.code == 0 and "group expert: accuracy by method" in text.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--folds", "0"), "--folds must be at least 1"),
        (("--bootstrap", "0"), "--bootstrap must be at least 1"),
        (("--method", "scores-judges"), "no judges in the selection"),
        (("--method", "nope"), "unknown --method nope"),
        (("--method", ","), "--method needs"),
    ],
)
def test_bad_options(db: str, args: tuple[str, ...], needle: str) -> None:
    r = cli("metrics", "heldout", "--pairs", "p", "--train", "60", *args, db=db)
    assert r.code == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_item_labels_get_label_models_only(db: str) -> None:
    out = cli(
        "metrics", "heldout", "--dataset", "summeval", "--dimension", "coherence", "--train", "16",
        "--bootstrap", "20", "--json", db=db,
    ).json()  # fmt: skip
    assert list(out["methods"])[3:] == ["labels-humans"]
    r = cli(
        "metrics", "heldout", "--dataset", "summeval", "--dimension", "coherence", "--train", "16",
        "--method", "scores-humans", db=db,
    )  # fmt: skip
    assert r.code == 2 and "pair sets only" in r.stderr


def test_score_differences_agree_with_the_stored_labels(db: str) -> None:
    """The models' score channel is the number `data pairs` thresholded: its sign is each label."""
    import numpy as np
    from sqlalchemy import create_engine

    from judgepanel.store.matrices import pair_matrix
    from judgepanel.store.pair_scores import pair_score_differences

    engine = create_engine(db)
    m = pair_matrix(engine, "p", with_judges=["all"])
    d = pair_score_differences(engine, "p", m)
    engine.dispose()
    assert np.array_equal(np.isnan(d), np.isnan(m.values))
    ok = ~np.isnan(d)
    want = np.where(d > 1e-6, 0.0, np.where(d < -1e-6, 1.0, 2.0))
    assert np.array_equal(want[ok], m.values[ok])
    assert np.isnan(d[:, m.rater_names.index("turker_1")]).any()  # turkers skipped half the rows


def test_dims_method_with_inner_cv_through_the_cli(db: str) -> None:
    """Three experts and one turker (who skipped half the rows) beside the judges: every kind of
    rater the dims models meet, at half the fits of all eight humans (each rater's inner CV over
    the C grid is the cost)."""
    out = cli(
        "metrics", "heldout", "--pairs", "p", "--train", "60", "--with-judges", "all", "--folds", "3",
        "--raters", "expert_1,expert_2,expert_3,turker_1",
        "--method", "dims-humans,dims-joint,mace", "--bootstrap", "50", "--json", db=db,
    ).json()  # fmt: skip
    assert list(out["methods"]) == ["majority", "cluster", "dawid-skene", "mace", "dims-humans", "dims-joint"]
    assert out["ci_method"] == "nadeau-bengio corrected resampled t over 3 splits"
    chosen = out["methods"]["dims-joint"]["chosen_c"]
    assert set(chosen) >= {"expert_1", "m1"} and all(len(v) == 3 for v in chosen.values())
    assert all(c in out["c_grid"] for v in chosen.values() for c in v if c is not None)
    ja = out["judges_add"]["dims"]["expert"]
    assert (
        ja["with_judges"] == "dims-joint" and ja["humans_only"] == "dims-humans" and len(ja["per_split"]) == 3
    )
    assert ja["verdict"] in {"adds >= 1 point", "adds < 1 point", "inconclusive"}


def test_groups_method_through_the_cli_reads_dimension_differences(db: str) -> None:
    """The same four humans as the dims test (three experts, one turker who skipped half the
    rows) beside the judges."""
    out = cli(
        "metrics", "heldout", "--pairs", "p", "--train", "60", "--with-judges", "all", "--folds", "3",
        "--raters", "expert_1,expert_2,expert_3,turker_1",
        "--method", "groups-humans,groups-joint", "--bootstrap", "50", "--json", db=db,
    ).json()  # fmt: skip
    assert list(out["methods"]) == ["majority", "cluster", "dawid-skene", "groups-humans", "groups-joint"]
    chosen = out["methods"]["groups-joint"]["chosen_c"]
    assert set(chosen) >= {"expert_1", "turker_1", "m1"} and all(len(v) == 3 for v in chosen.values())
    ja = out["judges_add"]["groups"]["expert"]
    assert ja["with_judges"] == "groups-joint" and ja["humans_only"] == "groups-humans"
    # the mean accuracy's corrected interval brackets the mean
    spread = out["folds"]["accuracy"]["groups-joint"]["expert"]
    assert spread["ci"][0] <= spread["mean"] <= spread["ci"][1]


def test_select_method_through_the_cli_names_each_raters_choice(db: str) -> None:
    """select-joint asks for dimension differences like groups-*, and reports per rater the
    candidate the nested CV chose (three experts and the judges, one split: kept cheap)."""
    out = cli(
        "metrics", "heldout", "--pairs", "p", "--train", "60", "--with-judges", "all",
        "--raters", "expert_1,expert_2,expert_3", "--method", "select-joint", "--bootstrap", "20",
        "--json", db=db,
    ).json()  # fmt: skip
    assert list(out["methods"]) == ["majority", "cluster", "dawid-skene", "select-joint"]
    chosen = out["methods"]["select-joint"]["chosen_model"]
    assert {"expert_1", "expert_2", "expert_3"} <= set(chosen)
    for picks in chosen.values():
        assert len(picks) == 1 and picks[0].split(" ")[0] in {"l2", "enet", "ordinal", "additive"}
    assert 0.0 <= out["methods"]["select-joint"]["accuracy"]["expert"] <= 1.0


def test_split_by_group_holds_out_whole_articles_with_the_ceiling_and_registered_comparisons(db: str) -> None:
    """Issue 30 §5: `--split-by group` (three articles: two train, one tests), the ceiling band per
    group and the registered comparisons in the JSON; one test article is too few for a verdict."""
    out = cli(
        "metrics", "heldout", "--pairs", "p", "--train", "60", "--with-judges", "all", "--split-by", "group",
        "--method", "scores-humans,scores-joint,scores-judges", "--bootstrap", "50", "--json", db=db,
    ).json()  # fmt: skip
    assert out["split_by"] == "group" and "whole articles" in out["folds"]["split"]
    assert out["folds"]["test_groups"] == [1]
    assert out["folds"]["train_units"][0] + out["folds"]["test_units"][0] == 84
    assert out["ci_method"] == "no interval: 1 test article"
    expert = out["ceiling"]["expert"]
    assert expert["method"] == "lp-identification-bounds" and expert["n_raters"] == 3
    assert expert["observed_agreement"] <= expert["low"] <= expert["high"] <= 1
    assert out["ceiling"]["crowd"]["n_raters"] == 5 and out["ceiling"]["all"] is None
    reg = out["registered"]
    assert (reg["model"], reg["judges_only"], reg["humans_only"]) == (
        "scores-joint",
        "scores-judges",
        "scores-humans",
    )
    assert reg["margin"] == -0.02 and reg["ece_max"] == 0.05 and reg["log_loss_gain"] == 0.02
    e = reg["groups"]["expert"]
    assert set(e) == {"accuracy", "model_vs_peers", "judges_vs_second_rater", "calibration", "missing"}
    assert e["accuracy"]["model"] == out["methods"]["scores-joint"]["accuracy"]["expert"]
    assert e["model_vs_peers"]["verdict"] == "too few groups"
    assert e["calibration"]["verdict"] == "too few groups"
    text = cli(
        "metrics", "heldout", "--pairs", "p", "--train", "60", "--with-judges", "all", "--split-by", "group",
        "--method", "scores-humans,scores-joint,scores-judges", "--bootstrap", "20", db=db,
    )  # fmt: skip
    assert text.code == 0
    assert "group expert: registered comparisons" in text.stdout and "ceiling band [" in text.stdout


def test_split_by_refuses_an_unknown_design(db: str) -> None:
    r = cli("metrics", "heldout", "--pairs", "p", "--split-by", "pairs", db=db)
    assert r.code == 2 and "--split-by must be one of items, group" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
