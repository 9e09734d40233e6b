"""`judgepanel compare A B` (issue 33 §2) on a copy of the demo database with a second pairwise
campaign (other position biases, 40 of the demo's pairs): changed verdicts counted from the stored
rows, what differs, agreement with humans cross-checked against scikit-learn, and the paired
difference equal to B − A on the same units; bad input is one line and exit 2."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score
from sqlalchemy import create_engine, text

from judgepanel.demo import PAIRWISE, POINTWISE
from judgepanel.protocol.pairs import as_label, combine_orders
from tests.helpers import cli, copy_db

JUDGES = (
    "judge-a=sim:judge-a?position_bias=0.3",
    "judge-b=sim:judge-b?position_bias=0.15",
    "judge-c=sim:judge-c?position_bias=0",
)


@pytest.fixture(scope="module")
def two(demo_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url = copy_db(Path(demo_url.removeprefix("sqlite:///")), tmp_path_factory.mktemp("compare"), "cmp.db")
    args = ["campaign", "create", "pw2", "--dataset", "summeval-sample", "--pairs", "summeval-sample-pairs"]
    args += ["--protocol", "pairwise", "--limit", "40"] + [x for j in JUDGES for x in ("--judge", j)]
    assert cli(*args, db=url).code == 0
    assert cli("campaign", "run", "pw2", db=url).code == 0
    yield url


def _combined(url: str, campaign: str) -> dict[tuple[str, int], str]:
    eng = create_engine(url)
    with eng.connect() as conn:
        rows = conn.execute(
            text(
                'SELECT cj.name, j.pair_id, j."order", v.value_canonical FROM verdict v JOIN job j ON j.id = v.job_id '
                "JOIN judge cj ON cj.id = j.judge_id JOIN campaign c ON c.id = j.campaign_id "
                "WHERE c.name = :c AND v.parse_status = 'ok' ORDER BY j.id, v.id"
            ),
            {"c": campaign},
        ).all()
    eng.dispose()
    by: dict[tuple[str, int], dict[str, str]] = {}
    for spec, pair, order, value in rows:
        name = spec.split(":", 1)[1].split("?", 1)[0]  # sim:judge-a?… → judge-a
        by.setdefault((name, pair), {})[order] = value
    return {k: combine_orders(o.get("AB"), o.get("BA")) for k, o in by.items() if "AB" in o and "BA" in o}


def _plurality(url: str) -> dict[int, str]:
    eng = create_engine(url)
    with eng.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT pl.pair_id, pl.value FROM pair_label pl JOIN annotator a ON a.id = pl.annotator_id "
                "WHERE a.kind = 'human'"
            )
        ).all()
    eng.dispose()
    by: dict[int, list[str]] = {}
    for p, v in rows:
        by.setdefault(p, []).append(v)
    out = {}
    for p, vs in by.items():
        top = Counter(vs).most_common()
        if len(top) == 1 or top[0][1] > top[1][1]:
            out[p] = top[0][0]
    return out


def test_compare_counts_changes_and_agrees_with_sklearn(two: str) -> None:
    out = cli("compare", PAIRWISE, "pw2", "--bootstrap", "200", "--rows", "1000", "--json", db=two).json()
    a, b = _combined(two, PAIRWISE), _combined(two, "pw2")
    assert out["units"] == 40 and out["simulated"] is True
    assert {d["what"] for d in out["differs"]} == {"judge specs"}  # same judge names, other biases
    human = _plurality(two)
    for col in out["columns"]:
        judge = col["judge_a"]
        shared = sorted(p for (j, p) in a if j == judge and (j, p) in b)
        assert col["units"] == len(shared)
        assert col["changed"] == sum(a[(judge, p)] != b[(judge, p)] for p in shared)
        ref = [p for p in shared if p in human]
        assert col["with_human_reference"] == len(ref)
        h = [human[p] for p in ref]
        for side, verdicts in (("a", a), ("b", b)):
            j = [as_label(verdicts[(judge, p)]) for p in ref]
            assert col["agreement"][side]["exact"] == pytest.approx(accuracy_score(h, j), abs=1e-12)
            assert col["agreement"][side]["kappa"] == pytest.approx(
                cohen_kappa_score(h, j, labels=["A", "B", "T"]), abs=1e-12
            )
            lo, hi = col["agreement"][side]["ci"]["exact"]
            assert lo <= col["agreement"][side]["exact"] <= hi
        for s in ("exact", "kappa"):
            d = col["delta"][s]
            assert d["value"] == pytest.approx(col["agreement"]["b"][s] - col["agreement"]["a"][s], abs=1e-12)
        if col["changed"] == 0:  # the same verdicts: no difference, and no interval around it
            assert col["delta"]["exact"] == {"value": 0.0, "ci": [0.0, 0.0]}
    assert sum(c["changed"] for c in out["columns"]) == out["changed"] > 0
    assert [r["changed"] for r in out["rows"]] == sorted((r["changed"] for r in out["rows"]), reverse=True)
    inconsistent = [v for r in out["rows"] for v in r["verdicts"] if "inconsistent" in (v["a"], v["b"])]
    assert inconsistent  # shown as what it is, never as T


def test_a_campaign_with_itself_changes_nothing(two: str) -> None:
    out = cli("compare", POINTWISE, POINTWISE, "--bootstrap", "50", "--json", db=two).json()
    assert out["changed"] == 0 and out["differs"] == [] and out["columns"]
    for col in out["columns"]:
        for s in ("exact", "kappa", "qwk", "spearman"):
            assert col["delta"][s]["value"] in (0.0, None)


def test_bad_input_is_one_line_exit_2(two: str) -> None:
    for args, needle in [
        ((PAIRWISE, POINTWISE), "pairwise"),
        ((PAIRWISE, "no-such"), "no campaign named"),
        ((PAIRWISE, "pw2", "--bootstrap", "0"), "--bootstrap"),
        ((PAIRWISE, "pw2", "--resample", "x"), "--resample"),
        (("demo-repair-dev", "demo-repair-original"), "clause"),
    ]:
        r = cli("compare", *args, db=two)
        assert r.code in (1, 2) and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, (args, r)
        assert r.code == 2 or "no campaign" in r.stderr


def test_the_compare_page_and_its_twin(two: str) -> None:
    from starlette.testclient import TestClient

    from judgepanel.store.readonly import read_only_engine
    from judgepanel.view.app import create_app

    eng = read_only_engine(two)
    with TestClient(create_app(eng, n_boot=50), base_url="http://127.0.0.1") as c:
        api: dict[str, Any] = c.get(f"/api/compare?a={PAIRWISE}&b=pw2").json()
        cli_out = cli(
            "compare", PAIRWISE, "pw2", "--bootstrap", "50", "--rows", "1000", "--json", db=two
        ).json()
        for k in ("a", "b", "protocol", "differs", "units", "changed", "columns", "unmatched"):
            assert api[k] == cli_out[k], k
        page = c.get(f"/compare?a={PAIRWISE}&b=pw2").text
        assert page.count('class="changed"') == cli_out["changed"]
        only = c.get(f"/api/compare?a={PAIRWISE}&b=pw2&changed=1").json()
        assert only["rows"] and all(r["changed"] for r in only["rows"])
        assert c.get(f"/api/compare?a={PAIRWISE}&b={POINTWISE}").status_code == 400
        assert c.get("/api/compare?a=nope&b=pw2").status_code == 404
        assert c.get("/compare").status_code == 200
    eng.dispose()
