"""`plan overlap`, `plan allocate` and `simulate designs` through the real CLI."""

from __future__ import annotations

import csv
import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

from tests.helpers import cli, migrate_db


def _panel(tmp_path: Path, n: int = 90) -> Path:
    """Humans h1..h3 and judges m1, m2 on n items, labels 'a'/'b'/'c'."""
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 3, n)
    cats = np.array(["a", "b", "c"])
    humans, llms = {}, {}
    for name, acc in (("h1", 0.9), ("h2", 0.8), ("h3", 0.8)):
        lab = np.where(rng.random(n) < acc, truth, rng.integers(0, 3, n))
        humans[name] = {f"t{i}__x": str(cats[lab[i]]) for i in range(n)}
    for name, acc in (("m1", 0.85), ("m2", 0.6)):
        lab = np.where(rng.random(n) < acc, truth, rng.integers(0, 3, n))
        llms[name] = {f"t{i}__x": str(cats[lab[i]]) for i in range(n)}
    folder = tmp_path / "panel"
    folder.mkdir()
    (folder / "human_annotations.json").write_text(json.dumps(humans))
    (folder / "llm_annotations.json").write_text(json.dumps(llms))
    return folder


@pytest.fixture
def loaded(db_url: str, tmp_path: Path) -> str:
    migrate_db(db_url)  # a copy of the run's one migrated database (`tests.helpers.migrate_db`)
    assert cli("data", "import-alttest", str(_panel(tmp_path)), "--name", "toy", db=db_url).code == 0
    return db_url


def test_plan_overlap_from_given_values(sqlite_url: str) -> None:
    out = cli(
        "plan",
        "overlap",
        "--sigma0",
        "0.4",
        "--mu-d",
        "0.01",
        "--delta-min",
        "0.05",
        "--judges",
        "4",
        "--epsilon",
        "0.05",
        "--n",
        "400",
        "--coverage",
        "0.3",
        "--json",
        db=sqlite_url,
    ).json()
    z_cert, z_rank = norm.ppf(0.975), norm.ppf(1 - 0.05 / 3)
    assert out["m_cert"] == {"judge": math.ceil(z_cert**2 * 0.16 / 0.06**2)}
    assert out["m_rank"] == math.ceil(2 * z_rank**2 * 0.16 / 0.05**2)
    assert out["expected_overlap"]["secondary_pair"] == pytest.approx(0.09 * 400)
    assert out["expected_overlap"]["with_primary"] == pytest.approx(0.3 * 400)
    r = cli("plan", "overlap", "--sigma0", "0.4", db=sqlite_url)
    assert r.code == 2 and "--mu-d" in r.stderr
    r = cli("plan", "overlap", "--sigma0", "0.4", "--mu-d", "0", "--dataset", "x", db=sqlite_url)
    assert r.code == 2 and "not both" in r.stderr


def test_plan_overlap_says_no_overlap_certifies_a_judge_below_the_margin(sqlite_url: str) -> None:
    argv = ("plan", "overlap", "--sigma0", "0.4", "--mu-d", "-0.1", "--epsilon", "0.05")
    out = cli(*argv, "--json", db=sqlite_url).json()
    assert out["m_cert"] == {"judge": None}
    assert "below -epsilon" in out["reason"]["judge"]
    text = cli(*argv, db=sqlite_url).stdout
    assert "none (μ_d < −ε)" in text and "no overlap can certify it" in text


def test_plan_overlap_estimates_from_the_store(sqlite_url: str, tmp_path: Path) -> None:
    migrate_db(sqlite_url)
    folder = _panel(tmp_path)
    cli("data", "import-alttest", str(folder), "--name", "toy", db=sqlite_url)
    out = cli(
        "plan",
        "overlap",
        "--dataset",
        "toy",
        "--judge",
        "m1",
        "--judge",
        "m2",
        "--epsilon",
        "0.05",
        "--json",
        db=sqlite_url,
    ).json()
    humans = json.loads((folder / "human_annotations.json").read_text())
    llms = json.loads((folder / "llm_annotations.json").read_text())
    diffs: dict[str, list[float]] = {}
    for m, labels in llms.items():
        for h in humans:
            others = [o for o in humans if o != h]
            for i, lab in humans[h].items():
                judge = np.mean([labels[i] == humans[o][i] for o in others])
                human = np.mean([lab == humans[o][i] for o in others])
                diffs.setdefault(m, []).append(judge - human)
    d1, d2 = np.array(diffs["m1"]), np.array(diffs["m2"])
    pooled = math.sqrt(
        (((d1 - d1.mean()) ** 2).sum() + ((d2 - d2.mean()) ** 2).sum()) / (d1.size + d2.size - 2)
    )
    assert out["sigma0"] == pytest.approx(pooled)
    assert out["mu_d"] == {"m1": pytest.approx(d1.mean()), "m2": pytest.approx(d2.mean())}
    assert out["delta_min"] == pytest.approx(abs(d1.mean() - d2.mean()))
    assert out["n_items"] == 90
    z = norm.ppf(0.975)
    assert out["m_cert"]["m1"] == math.ceil(z * z * pooled**2 / (d1.mean() + 0.05) ** 2)


def _csv_items(path: Path) -> list[str]:
    with path.open() as f:
        return [row["item_id"] for row in csv.DictReader(f)]


@pytest.mark.parametrize("design", ["random", "strat", "seq-refined", "seq-coverage"])
def test_allocate_writes_files_records_and_meets_coverage(loaded: str, tmp_path: Path, design: str) -> None:
    out_dir = tmp_path / f"out-{design}"
    out = cli(
        "plan",
        "allocate",
        "--dataset",
        "toy",
        "--primary",
        "h1",
        "--annotators",
        "s1,s2,h2",
        "--coverage",
        "0.2",
        "--design",
        design,
        "--seed",
        "5",
        "--out",
        str(out_dir),
        "--name",
        design,
        "--json",
        db=loaded,
    ).json()
    assert out["n_items"] == 90 and out["items_per_annotator"] == 18
    assert out["coverage"] == {"s1": 0.2, "s2": 0.2, "h2": 0.2}
    files = {a: out_dir / f"{a}.csv" for a in ("s1", "s2", "h2")}
    lists = {a: _csv_items(p) for a, p in files.items()}
    assert all(len(v) == 18 and len(set(v)) == 18 for v in lists.values())
    for a in lists:
        for b in lists:
            if a != b:
                assert out["overlaps"][a][b] == len(set(lists[a]) & set(lists[b]))
    if design == "seq-coverage":
        assert all(v == 0 for row in out["overlaps"].values() for v in row.values())
    stored = cli(
        "query",
        "select ai.annotator a, i.external_id e from allocation_item ai join allocation al on al.id = "
        f"ai.allocation_id join item i on i.id = ai.item_id where al.name = '{design}' order by ai.annotator, "
        "ai.position",
        "--json",
        db=loaded,
    ).json()["rows"]
    by_annotator: dict[str, list[str]] = {}
    for row in stored:
        by_annotator.setdefault(row["a"], []).append(row["e"])
    assert by_annotator == lists


def test_allocate_is_reproducible_and_idempotent(loaded: str, tmp_path: Path) -> None:
    base = [
        "plan",
        "allocate",
        "--dataset",
        "toy",
        "--primary",
        "h1",
        "--annotators",
        "x,y",
        "--coverage",
        "0.3",
    ]
    first = cli(
        *base, "--design", "strat", "--seed", "1", "--out", str(tmp_path / "a"), "--name", "a1", db=loaded
    )
    assert first.code == 0, first.stderr
    twin = cli(
        *base, "--design", "strat", "--seed", "1", "--out", str(tmp_path / "b"), "--name", "a2", db=loaded
    )
    assert twin.code == 0
    for f in ("x.csv", "y.csv"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()
    other = cli(
        *base, "--design", "strat", "--seed", "2", "--out", str(tmp_path / "c"), "--name", "a3", db=loaded
    )
    assert other.code == 0
    assert (tmp_path / "a" / "x.csv").read_bytes() != (tmp_path / "c" / "x.csv").read_bytes()

    def digest() -> str:
        rows = cli("query", "select * from allocation_item order by id", "--format", "csv", db=loaded).stdout
        return hashlib.sha256(rows.encode()).hexdigest()

    before = digest()
    again = cli(
        *base,
        "--design",
        "strat",
        "--seed",
        "1",
        "--out",
        str(tmp_path / "a"),
        "--name",
        "a1",
        "--json",
        db=loaded,
    ).json()
    assert again["unchanged"] is True and digest() == before
    clash = cli(
        *base, "--design", "random", "--seed", "1", "--out", str(tmp_path / "a"), "--name", "a1", db=loaded
    )
    assert clash.code == 2 and "--replace" in clash.stderr and digest() == before
    replaced = cli(
        *base,
        "--design",
        "random",
        "--seed",
        "1",
        "--out",
        str(tmp_path / "d"),
        "--name",
        "a1",
        "--replace",
        "--json",
        db=loaded,
    ).json()
    assert replaced["design"] == "random" and replaced["unchanged"] is False


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--primary", "ghost", "--annotators", "x"], "no annotator 'ghost'"),
        (["--primary", "h1", "--annotators", "x,x"], "named twice"),
        (["--primary", "h1", "--annotators", "h1,x"], "cannot also be a secondary"),
        (["--primary", "h1", "--annotators", "x", "--coverage", "0"], "coverage must be"),
        (["--primary", "h1", "--annotators", "x", "--design", "clever"], "unknown design"),
    ],
)
def test_allocate_bad_input(sqlite_url: str, tmp_path: Path, extra: list[str], message: str) -> None:
    migrate_db(sqlite_url)
    cli("data", "import-alttest", str(_panel(tmp_path)), "--name", "toy", db=sqlite_url)
    args = ["plan", "allocate", "--dataset", "toy", "--out", str(tmp_path / "o"), "--name", "n"]
    if "--coverage" not in extra:
        args += ["--coverage", "0.2"]
    r = cli(*args, *extra, db=sqlite_url)
    assert r.code == 2 and message in r.stderr and r.stderr.strip().count("\n") == 0


def test_simulate_designs_cli(sqlite_url: str) -> None:
    out = cli(
        "simulate",
        "designs",
        "--n",
        "100",
        "--humans",
        "4",
        "--classes",
        "5",
        "--judges",
        "0.7,0.9",
        "--coverage",
        "0.1,0.5",
        "--replications",
        "30",
        "--seed",
        "2",
        "--json",
        db=sqlite_url,
    ).json()
    assert out["params"]["classes"] == 5 and len(out["cells"]) == 2 * 4
    for cell in out["cells"]:
        assert set(cell["judges"]) == {"0.7", "0.9"}
        for j in cell["judges"].values():
            assert 0.0 <= j["fr"] <= 1.0 and j["wdr"] == pytest.approx(j["fr"] + j["fa"])
    r = cli("simulate", "designs", "--judges", "x", db=sqlite_url)
    assert r.code == 2 and "--judges" in r.stderr
    text = cli("simulate", "designs", "--n", "60", "--replications", "5", db=sqlite_url)
    assert text.code == 0 and "WDR" in text.stdout
