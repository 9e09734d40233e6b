"""`metrics agreement` and `metrics matrix` on the real SummEval file, checked against reference
libraries run on matrices rebuilt independently from the raw file (not from the store)."""

from __future__ import annotations

import gzip
import itertools
import json
import random
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from tests.helpers import cli, migrate_db
from tests.metrics import summeval_pairs

SUMMEVAL = "summeval/model_annotations.reconstructed.jsonl.gz"
DIMS = ("coherence", "consistency", "fluency", "relevance")
EXPERTS = [f"expert_{i}" for i in range(1, 4)]
TURKERS = [f"turker_{i}" for i in range(1, 6)]
RATERS = EXPERTS + TURKERS
CODE = {"A": 0.0, "B": 1.0, "T": 2.0}


class Raw:
    """The shared SummEval file read directly: per row, each annotator's four scores."""

    def __init__(self, path: Path, limit: int | None = None) -> None:
        with gzip.open(path, "rt") as f:
            self.rows = [json.loads(line) for line in itertools.islice(f, limit)]
        self.scores: list[dict[str, dict[str, float]]] = []
        for row in self.rows:
            by_rater: dict[str, dict[str, float]] = {}
            for i, ann in enumerate(row["expert_annotations"]):
                by_rater[EXPERTS[i]] = {d: float(ann[d]) for d in DIMS}
            for i, ann in enumerate(row["turker_annotations"] or []):
                by_rater[TURKERS[i]] = {d: float(ann[d]) for d in DIMS}
            self.scores.append(by_rater)

    def item_matrix(self, dim: str, raters: list[str], skip: set[int] = frozenset()) -> np.ndarray:  # type: ignore[assignment]
        m = np.array(
            [
                [s[r][dim] if r in s else np.nan for r in raters]
                for i, s in enumerate(self.scores)
                if i not in skip
            ]
        )
        return m[~np.isnan(m).all(axis=1)]

    def pairs(self, seed: int = 42, sample: int = 1000) -> list[tuple[int, int]]:
        groups: dict[str, list[int]] = {}
        for i, row in enumerate(self.rows):
            groups.setdefault(row["id"], []).append(i)
        every = [p for members in groups.values() for p in itertools.combinations(members, 2)]
        return random.Random(seed).sample(every, sample)

    def pair_matrix(self, pairs: list[tuple[int, int]], raters: list[str]) -> np.ndarray:
        out = np.full((len(pairs), len(raters)), np.nan)
        for u, (a, b) in enumerate(pairs):
            for j, r in enumerate(raters):
                if r in self.scores[a] and r in self.scores[b]:
                    diff = np.mean(list(self.scores[a][r].values())) - np.mean(
                        list(self.scores[b][r].values())
                    )
                    out[u, j] = CODE["A"] if diff > 1e-6 else CODE["B"] if diff < -1e-6 else CODE["T"]
        return out

    def duplicates(self, raters: list[str]) -> set[int]:
        """Rows where every rater of the group who rated gave the identical full vector (≥ 2)."""
        out = set()
        for i, s in enumerate(self.scores):
            vectors = [tuple(s[r][d] for d in DIMS) for r in raters if r in s]
            if len(vectors) >= 2 and len(set(vectors)) == 1:
                out.add(i)
        return out


@pytest.fixture(scope="module")
def raw(shared_data: Path) -> Raw:
    return Raw(shared_data / SUMMEVAL)


@pytest.fixture(scope="module")
def db(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The shared SummEval file with its articles and pair set `p` of 1000 pairs (imported once per
    run, shared with tests/metrics: `summeval_pairs.world`)."""
    return summeval_pairs.world(shared_data, tmp_path_factory, "summeval")


def _run(db: str, *args: str) -> Any:
    return cli("metrics", *args, "--json", db=db).json()


def _kappa(m: np.ndarray, i: int, j: int) -> float:
    both = ~np.isnan(m[:, i]) & ~np.isnan(m[:, j])
    return float(cohen_kappa_score(m[both, i], m[both, j], labels=[0.0, 1.0, 2.0]))


def test_matrix_over_pairs_matches_sklearn_on_the_raw_file(db: str, raw: Raw) -> None:
    out = _run(db, "matrix", "--pairs", "p")
    assert out["raters"] == RATERS
    m = raw.pair_matrix(raw.pairs(), RATERS)
    for i in range(8):
        for j in range(8):
            assert out["kappa"][i][j] == pytest.approx(_kappa(m, i, j), abs=1e-12), (i, j)
    # the two human blocks come out as the two clusters
    assert out["clusters"] == [EXPERTS, TURKERS]
    assert out["groups"]["expert_1"] == "expert" and out["groups"]["turker_5"] == "crowd"
    assert out["n_units"] == 1000


def test_matrix_first_n_is_a_training_split(db: str, raw: Raw) -> None:
    out = _run(db, "matrix", "--pairs", "p", "--first", "800", "--clusters", "3")
    m = raw.pair_matrix(raw.pairs()[:800], RATERS)
    assert out["n_units"] == 800 and out["first"] == 800
    assert out["kappa"][0][4] == pytest.approx(_kappa(m, 0, 4), abs=1e-12)
    assert len(out["clusters"]) == 3 and sorted(itertools.chain(*out["clusters"])) == sorted(RATERS)


def test_matrix_over_item_scores(db: str, raw: Raw) -> None:
    args = ("matrix", "--dataset", "summeval", "--dimension", "fluency", "--group", "expert")
    out = _run(db, *args)
    m = raw.item_matrix("fluency", EXPERTS)
    expected = cohen_kappa_score(m[:, 0], m[:, 2], labels=[1, 2, 3, 4, 5])
    assert out["kappa"][0][2] == pytest.approx(expected, abs=1e-12)
    w = _run(db, *args, "--weights", "linear")
    expected_w = cohen_kappa_score(m[:, 0], m[:, 2], labels=[1, 2, 3, 4, 5], weights="linear")
    assert w["kappa"][0][2] == pytest.approx(expected_w, abs=1e-12)


def test_agreement_over_pairs(db: str, raw: Raw) -> None:
    m = raw.pair_matrix(raw.pairs(), RATERS)
    alpha = _run(db, "agreement", "--pairs", "p", "--metric", "alpha")
    assert set(alpha) >= {"metric", "level", "value", "n_units", "n_raters", "ci"}
    assert alpha["metric"] == "alpha" and alpha["level"] == "nominal" and alpha["ci"] is None
    assert alpha["value"] == pytest.approx(krippendorff.alpha(m.T, level_of_measurement="nominal"), abs=1e-12)
    assert alpha["n_units"] == 1000 and alpha["n_raters"] == 8
    experts = _run(db, "agreement", "--pairs", "p", "--group", "expert", "--metric", "fleiss")
    table, _ = aggregate_raters(m[:, :3].astype(int))
    assert experts["value"] == pytest.approx(sm_fleiss_kappa(table), abs=1e-12)
    two = _run(db, "agreement", "--pairs", "p", "--raters", "turker_2,expert_1", "--metric", "cohen")
    assert two["value"] == pytest.approx(_kappa(m[:, [4, 0]], 0, 1), abs=1e-12)
    assert two["raters"] == ["turker_2", "expert_1"]


def test_agreement_bootstrap_is_seeded(db: str) -> None:
    args = ("agreement", "--pairs", "p", "--metric", "ac1", "--bootstrap", "300")
    one = _run(db, *args, "--seed", "7")
    assert one["ci"] == _run(db, *args, "--seed", "7")["ci"]
    assert one["ci"] != _run(db, *args, "--seed", "8")["ci"]
    lo, hi = one["ci"]
    assert lo < one["value"] < hi and one["n_boot"] == 300 and one["ci_method"] == "percentile"
    bca = _run(db, *args, "--ci-method", "bca", "--confidence", "0.9")
    assert bca["ci_method"] == "bca" and bca["confidence"] == 0.9


def test_agreement_over_item_scores_at_each_level(db: str, raw: Raw) -> None:
    m = raw.item_matrix("coherence", RATERS)
    for level in ("nominal", "ordinal", "interval", "ratio"):
        out = _run(
            db,
            "agreement",
            "--dataset",
            "summeval",
            "--dimension",
            "coherence",
            "--metric",
            "alpha",
            "--level",
            level,
        )
        expected = krippendorff.alpha(m.T, level_of_measurement=level, value_domain=[1, 2, 3, 4, 5])
        assert out["value"] == pytest.approx(expected, abs=1e-10), level
        assert out["categories"] == ["1", "2", "3", "4", "5"]


def test_agreement_excluding_duplicated_items(db: str, raw: Raw) -> None:
    flagged = raw.duplicates(TURKERS)
    args = ("agreement", "--dataset", "summeval", "--dimension", "relevance", "--group", "crowd")
    out = _run(db, *args, "--metric", "alpha", "--level", "interval", "--exclude-duplicates", "crowd")
    m = raw.item_matrix("relevance", TURKERS, skip=flagged)
    assert out["excluded_items"] == len(flagged) > 0
    assert out["value"] == pytest.approx(krippendorff.alpha(m.T, level_of_measurement="interval"), abs=1e-10)
    full = _run(db, *args, "--metric", "alpha", "--level", "interval")
    assert full["value"] > out["value"]  # identical rows inflate agreement
    assert full["excluded_items"] is None


def test_readable_output(db: str) -> None:
    r = cli("metrics", "matrix", "--pairs", "p", db=db)
    assert r.code == 0 and "Cohen κ on pair set p" in r.stdout
    assert "cluster 1: expert_1, expert_2, expert_3  (expert ×3)" in r.stdout
    a = cli("metrics", "agreement", "--pairs", "p", "--metric", "alpha", "--bootstrap", "50", db=db)
    assert a.code == 0 and "95% CI" in a.stdout and "alpha" in a.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("agreement", "--pairs", "p", "--metric", "kappa"), "unknown metric 'kappa'"),
        (("agreement", "--pairs", "p", "--metric", "cohen"), "exactly two raters"),
        (("agreement", "--pairs", "p", "--metric", "alpha", "--level", "ordinal"), "nominal"),
        (
            ("agreement", "--pairs", "p", "--metric", "cohen-linear", "--raters", "expert_1,expert_2"),
            "ordered",
        ),
        (("agreement", "--pairs", "nope", "--metric", "alpha"), "no pair set named 'nope'"),
        (("agreement", "--metric", "alpha"), "--dataset"),
        (("agreement", "--dataset", "summeval", "--metric", "alpha"), "--dimension"),
        (
            ("agreement", "--pairs", "p", "--metric", "alpha", "--raters", "expert_9"),
            "no rater named 'expert_9'",
        ),
        (
            ("agreement", "--pairs", "p", "--metric", "alpha", "--exclude-duplicates", "x"),
            "no annotator group 'x'",
        ),
        (
            ("agreement", "--pairs", "p", "--metric", "alpha", "--bootstrap", "10", "--ci-method", "t"),
            "interval method",
        ),
        (("matrix", "--pairs", "p", "--clusters", "0"), "at least 1"),
        (("matrix", "--pairs", "p", "--first", "0"), "at least 1"),
        (("matrix", "--pairs", "p", "--weights", "linear"), "ordered"),
    ],
)
def test_bad_requests_exit_2_with_one_line(db: str, args: tuple[str, ...], message: str) -> None:
    r = cli("metrics", *args, db=db)
    assert r.code == 2, r.stdout
    assert message in r.stderr and r.stderr.strip().count("\n") == 0 and "Traceback" not in r.stderr


def test_both_backends_small(db_url: str, shared_data: Path, tmp_path: Path) -> None:
    raw = Raw(shared_data / SUMMEVAL, limit=32)  # two articles
    src = tmp_path / "two.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in raw.rows))
    migrate_db(db_url)
    assert cli("data", "import-summeval", str(src), db=db_url).code == 0
    assert cli("data", "pairs", "summeval", "--name", "q", "--sample", "100", db=db_url).code == 0
    m = raw.pair_matrix(raw.pairs(sample=100), RATERS)
    out = cli("metrics", "matrix", "--pairs", "q", "--json", db=db_url).json()
    assert out["kappa"][1][2] == pytest.approx(_kappa(m, 1, 2), abs=1e-12)
    a = cli("metrics", "agreement", "--pairs", "q", "--metric", "alpha", "--json", db=db_url).json()
    assert a["n_units"] == 100
    assert a["value"] == pytest.approx(krippendorff.alpha(m.T, level_of_measurement="nominal"), abs=1e-12)
