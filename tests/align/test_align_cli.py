"""Whole alignments through the CLI, offline with `sim`: the three methods, the JSON contract of
`align compare`, leakage (no evaluation item in any request that made a choice), determinism and
bad input."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from tests.align.conftest import ok, run_args
from tests.helpers import cli
from tests.repair.conftest import PANEL_SIM, prepare_db
from tests.repair.conftest import run_args as repair_args

STATS = {"exact", "kappa", "qwk", "spearman"}


def _rows(url: str, sql: str, **params: Any) -> list[Any]:
    eng = create_engine(url)
    try:
        with eng.connect() as c:
            return list(c.execute(text(sql), params).all())
    finally:
        eng.dispose()


def _words(text_: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text_.lower()))


def _requests(url: str, campaign: str) -> list[tuple[str, str | None]]:
    """(the request's message texts as words, the external id of the job's item)."""
    rows = _rows(
        url,
        "SELECT r.messages, i.external_id FROM request r JOIN job j ON j.id = r.job_id "
        "JOIN campaign c ON c.id = j.campaign_id LEFT JOIN item i ON i.id = j.item_id WHERE c.name = :c",
        c=campaign,
    )
    out = []
    for messages, ext in rows:
        msgs = json.loads(messages) if isinstance(messages, str) else messages
        out.append((_words(" ".join(str(m.get("content", "")) for m in msgs)), ext))
    return out


def _eval_items(url: str) -> dict[str, tuple[str, str]]:
    """external id -> (output text as words, group) of every evaluation-split item of the dataset."""
    return {
        e: (_words(o), g)
        for e, o, g in _rows(url, "SELECT external_id, output, group_key FROM item WHERE split = 'eval'")
    }


def _check_no_leak(url: str, status: dict[str, Any]) -> int:
    """Every request of every campaign that made a choice holds no evaluation item (id or text);
    every evaluation request holds its own item and no other evaluation item. Returns the number
    of choice requests scanned."""
    evals = _eval_items(url)
    scanned = 0
    for role, camp in status["campaigns"].items():
        bodies = _requests(url, camp)
        assert bodies, camp
        if role.startswith("eval-"):
            for body, own in bodies:
                assert own is not None and evals[own][0] in body
                # an extractive summary of the same article is found in the article it quotes
                others = [e for e, (o, g) in evals.items() if o in body and g != evals[own][1]]
                assert others == [], (camp, others)
            continue
        for body, _own in bodies:
            scanned += 1
            for e, (o, _g) in evals.items():
                assert _words(e) not in body and o not in body, (camp, e)
    return scanned


def test_three_methods_json_contract_and_no_leak(sqlite_url: str) -> None:
    prepare_db(sqlite_url)
    outs = {
        "fewshot": ok(*run_args("f", "fewshot", "--k", "3"), db=sqlite_url),
        "instructions": ok(
            *run_args("i", "instructions", "--editor", "sim:editor", "--rounds", "2"), db=sqlite_url
        ),
        "grid": ok(*run_args("g", "grid", "--grid-judge", "b=sim:judge-b"), db=sqlite_url),  # NAME=SPEC too
    }
    for method, out in outs.items():
        assert set(out["steps"].values()) == {"done"}, method
        assert out["simulated"] is True
        c = cli("align", "compare", out["alignment"], "--json", db=sqlite_url).json()
        assert {"versions", "delta", "overfit_gap", "equivalence", "cost_usd", "simulated"} <= set(c)
        assert set(c["versions"]) == {"original", "aligned"}
        for v in c["versions"].values():
            assert {"agreement", "dev_agreement"} <= set(v)
            assert STATS | {"omega", "ci"} <= set(v["agreement"])
            assert set(v["agreement"]["ci"]) == STATS
        assert set(c["delta"]) == {"aligned_vs_original"}
        assert set(c["overfit_gap"]) == STATS
        assert set(c["equivalence"]) == {"aligned_vs_original"}
        assert {"original", "aligned", "alignment_choices"} <= set(c["cost_usd"])
        assert set(c["binary"]["versions"]) == {"original", "aligned"} and c["binary"]["threshold"] == 4.0
        assert set(c["binary"]["relative_change"]) == {"aligned"}
        assert c["simulated"] is True and c["resample"] == "groups" and c["units"]["eval"] == 16
        # the stored comparison is what `run` printed
        assert c == out["comparison"]
        scanned = _check_no_leak(
            sqlite_url, cli("align", "status", out["alignment"], "--json", db=sqlite_url).json()
        )
        assert scanned >= 16
    few = outs["fewshot"]["choices"]
    assert len(few["examples"]["items"]) == 3 and sum(few["examples"]["strata"].values()) == 3
    dev_ids = set(outs["fewshot"]["inputs"]["sample"]["dev"]["items"])
    assert set(few["examples"]["items"]) <= dev_ids
    # the examples are in the aligned template (a new version, another sha256)
    t = outs["fewshot"]["templates"]
    assert t["aligned"]["sha256"] != t["original"]["sha256"]
    assert [e["item"] for e in t["aligned"]["examples"]] == few["examples"]["items"]
    ins = outs["instructions"]["choices"]
    assert ins["rounds"][0]["round"] == 0 and len(ins["rounds"]) >= 2
    assert "[simulated editor]" in ins["rounds"][1]["reason"]
    grid = outs["grid"]["choices"]
    assert [c["spec"] for c in grid["configs"]] == ["sim:judge-a", "sim:judge-b"]
    assert [c["judge"] for c in grid["configs"]] == ["judge-a", "b"]  # short names, a given one kept


def test_same_seed_same_choices(sqlite_url: str) -> None:
    prepare_db(sqlite_url)
    a = ok(*run_args("d1", "fewshot", "--k", "4", "--stop-after", "align"), db=sqlite_url)
    b = ok(*run_args("d2", "fewshot", "--k", "4", "--stop-after", "align"), db=sqlite_url)
    assert (
        a["choices"] == b["choices"]
        and a["templates"]["aligned"]["sha256"] == b["templates"]["aligned"]["sha256"]
    )
    assert a["inputs"]["sample"] == b["inputs"]["sample"]
    # the examples cover as many human levels as they can (stratified)
    ex = a["choices"]["examples"]
    assert len(ex["strata"]) == min(4, len(ex["available"]))
    other = ok(*run_args("d3", "fewshot", "--k", "4", "--stop-after", "align", "--seed", "11"), db=sqlite_url)
    assert other["inputs"]["sample"] != a["inputs"]["sample"]
    i1 = ok(*run_args("e1", "instructions", "--editor", "sim:editor", "--stop-after", "align"), db=sqlite_url)
    i2 = ok(*run_args("e2", "instructions", "--editor", "sim:editor", "--stop-after", "align"), db=sqlite_url)
    strip = lambda c: [{k: v for k, v in r.items() if k != "dev_campaign"} for r in c["rounds"]]  # noqa: E731
    assert strip(i1["choices"]) == strip(i2["choices"])
    assert i1["choices"]["best_round"] == i2["choices"]["best_round"]


def test_resume_buys_nothing_again(db_url: str) -> None:
    sqlite_url = db_url  # on SQLite and PostgreSQL
    prepare_db(sqlite_url)
    part = ok(*run_args("r", "fewshot", "--stop-after", "dev"), db=sqlite_url)
    assert part["steps"] == {"dev": "done", "align": "pending", "evaluate": "pending", "compare": "pending"}
    n = _rows(sqlite_url, "SELECT count(*) FROM request")[0][0]
    again = ok("align", "run", "r", db=sqlite_url)
    assert set(again["steps"].values()) == {"done"}
    assert _rows(sqlite_url, "SELECT count(*) FROM request")[0][0] > n
    n = _rows(sqlite_url, "SELECT count(*) FROM request")[0][0]
    ok("align", "run", "r", db=sqlite_url)
    assert _rows(sqlite_url, "SELECT count(*) FROM request")[0][0] == n
    # other inputs under the same name are refused
    r = cli(*run_args("r", "fewshot", "--k", "5"), db=sqlite_url)
    assert r.code == 2 and r.stderr.count("\n") == 1


def test_bad_input_is_one_line_exit_2_and_nothing_written(sqlite_url: str) -> None:
    prepare_db(sqlite_url)
    # a split whose articles are in both dev and eval
    _rows(sqlite_url, "SELECT 1")
    eng = create_engine(sqlite_url)
    with eng.begin() as c:
        c.execute(
            text("UPDATE item SET split = 'mixed' WHERE id IN (SELECT min(id) FROM item GROUP BY group_key)")
        )
    eng.dispose()
    before = _rows(sqlite_url, "SELECT count(*) FROM campaign")[0][0]
    cases = [
        [*run_args("b1", "fewshot")[:4], "nope", *run_args("b1", "fewshot")[5:]],
        run_args("b2", "fewshot", "--dev-split", "mixed"),
        run_args("b3", "fewshot", "--k", "500"),
        run_args("b4", "nomethod"),
        run_args("b5", "instructions"),  # no --editor
        run_args("b6", "grid"),  # nothing to search over
        run_args("b7", "fewshot", "--eval-split", "dev"),
        run_args("b8", "fewshot", "--human-group", "nobody"),
        ["align", "run", "b9", "--dataset", "se"],
        ["align", "compare", "nope"],
    ]
    for args in cases:
        r = cli(*args, db=sqlite_url)
        assert r.code == 2 and r.stderr.count("\n") == 1, (args, r.stderr)
    assert _rows(sqlite_url, "SELECT count(*) FROM alignment")[0][0] == 0
    assert _rows(sqlite_url, "SELECT count(*) FROM campaign")[0][0] == before


def test_k_larger_than_disagreements_is_refused_without_a_template(sqlite_url: str) -> None:
    from judgepanel.align.common import dev_items, split_data
    from judgepanel.store.align import get_alignment
    from judgepanel.store.engine import make_engine

    prepare_db(sqlite_url)
    args = run_args("k0", "fewshot", "--stop-after", "dev")
    args[args.index("--limit") + 1] = "8"
    ok(*args, db=sqlite_url)
    eng = make_engine(sqlite_url)
    rec = get_alignment(eng, "k0")
    wrong = sum(d.judge != d.human for d in dev_items(split_data(eng, rec, rec.campaigns["dev-original"])))
    eng.dispose()
    assert wrong < 8  # the sim judge agrees on some items, so k = wrong + 1 passes the up-front check
    args = run_args("k1", "fewshot", "--k", str(wrong + 1))
    args[args.index("--limit") + 1] = "8"
    r = cli(*args, db=sqlite_url)
    assert r.code == 2 and "disagrees" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    rec1 = cli("align", "status", "k1", "--json", db=sqlite_url).json()
    assert rec1["steps"]["align"] == "pending" and rec1["templates"] is None and rec1["choices"] is None
    assert _rows(sqlite_url, "SELECT count(*) FROM campaign WHERE name LIKE 'k1-dev-aligned%'")[0][0] == 0


def test_compare_with_a_repair_iteration(sqlite_url: str) -> None:
    prepare_db(sqlite_url)
    # the repair chooses on the dev split, the alignment compares on eval: disjoint items
    assert cli(*repair_args("rp", PANEL_SIM, "sim:editor"), "--json", db=sqlite_url).code == 0
    ok(*run_args("a", "fewshot"), db=sqlite_url)
    c = cli("align", "compare", "a", "--repair", "rp", "--json", db=sqlite_url).json()
    assert set(c["versions"]) == {
        "original",
        "aligned",
        "repair_original",
        "repair_contested",
        "repair_control",
    }
    assert set(c["delta"]) == {f"{v}_vs_original" for v in c["versions"] if v != "original"} | {
        "repair_contested_vs_repair_original",
        "repair_control_vs_repair_original",
    }
    # the repair's edited clauses reach the judge: its versions' requests differ from the original's
    bodies = {
        v: sorted(
            _rows(
                sqlite_url,
                "SELECT r.template_hash FROM request r JOIN job j ON j.id = r.job_id "
                "JOIN campaign c ON c.id = j.campaign_id WHERE c.name = :c",
                c=c["versions"][v]["campaign"],
            )
        )
        for v in ("repair_original", "repair_contested")
    }
    assert bodies["repair_original"] != bodies["repair_contested"]
    assert c["versions"]["repair_contested"]["dev_agreement"] is None
    assert c["cost_usd"]["repair"] is not None and c["calls"]["repair"] > 0
    for v in c["versions"].values():
        assert v["agreement"]["items"] == 16
    # the stored comparison stays the one without the repair
    assert set(cli("align", "compare", "a", "--json", db=sqlite_url).json()["versions"]) == {
        "original",
        "aligned",
    }


def test_compare_statistics_match_references(sqlite_url: str) -> None:
    """The stored comparison recomputed from the stored verdicts and human labels with
    scikit-learn, scipy and statsmodels."""
    import numpy as np
    from scipy.stats import spearmanr
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.weightstats import ttost_paired

    from judgepanel.align.common import split_data
    from judgepanel.store.align import get_alignment
    from judgepanel.store.engine import make_engine

    prepare_db(sqlite_url)
    out = ok(*run_args("s", "grid", "--grid-judge", "sim:judge-b", "--margin", "0.1"), db=sqlite_url)
    c = out["comparison"]
    eng = make_engine(sqlite_url)
    rec = get_alignment(eng, "s")
    scores = {}
    group_of: dict[str, str | None] = {}
    for v in ("original", "aligned"):
        d = split_data(eng, rec, rec.campaigns[f"eval-{v}"])
        (by,) = d.rows.scores.values()
        scores[v] = {d.rows.items[k]: (s.score, d.reference[k]) for k, s in by.items()}
        group_of |= dict(zip(d.rows.items, d.rows.groups, strict=True))
    eng.dispose()
    common = sorted(set(scores["original"]) & set(scores["aligned"]))
    h = np.array([scores["original"][e][1] for e in common])
    ref = {}
    for v in ("original", "aligned"):
        j = np.array([scores[v][e][0] for e in common])
        ref[v] = {
            "exact": float(np.mean(j == h)),
            "kappa": float(cohen_kappa_score(j, h)),
            "qwk": float(cohen_kappa_score(j, h, weights="quadratic")),
            "spearman": float(spearmanr(j, h).statistic),
        }
        for s, x in ref[v].items():
            got = c["versions"][v]["agreement"][s]
            assert got == pytest.approx(x, abs=1e-9), (v, s)
            lo, hi = c["versions"][v]["agreement"]["ci"][s]
            assert lo <= got <= hi
    for s in STATS:
        assert c["delta"]["aligned_vs_original"][s]["value"] == pytest.approx(
            ref["aligned"][s] - ref["original"][s], abs=1e-9
        )
    xa = np.array([scores["aligned"][e][0] == scores["aligned"][e][1] for e in common], dtype=float)
    xo = np.array([scores["original"][e][0] == scores["original"][e][1] for e in common], dtype=float)
    eq = c["equivalence"]["aligned_vs_original"]
    if np.all(xa == xo):  # no item changed: a zero difference with no spread (statsmodels divides by 0)
        assert eq["p"] == 0.0 and eq["equivalent"] is True
    else:
        # issue 30 §2: article-level, as the intervals are — the TOST on statsmodels' clustered SE
        # of the mean difference with t(G − 1); resampling items, statsmodels' ttost_paired
        import statsmodels.api as sm
        from scipy.stats import t as student

        codes = np.unique([group_of[e] for e in common], return_inverse=True)[1]
        fit = sm.OLS(xa - xo, np.ones(xa.size)).fit(cov_type="cluster", cov_kwds={"groups": codes})
        d_, se, df = float(fit.params[0]), float(fit.bse[0]), int(codes.max())
        p = max(student.sf((d_ + 0.1) / se, df), student.cdf((d_ - 0.1) / se, df))
        assert eq["p"] == pytest.approx(p, abs=1e-6) and eq["df"] == df
        items = cli("align", "compare", "s", "--resample", "items", "--json", db=sqlite_url).json()
        p, _lo, _hi = ttost_paired(xa, xo, -0.1, 0.1)
        assert items["equivalence"]["aligned_vs_original"]["p"] == pytest.approx(p, abs=1e-6)
    # issue 30 §1–§2: 4 evaluation articles — t intervals, and no verdict on the gain; the verdict
    # is the choice statistic's alone (QWK), the others secondary
    assert c["groups_in_data"] == 4 and c["warnings"] and "only 4 groups" in c["warnings"][0]
    assert c["versions"]["original"]["agreement"]["ci_method"] == {
        "exact": "t-cr1",
        "kappa": "t-jackknife",
        "qwk": "t-jackknife",
        "spearman": "t-jackknife",
    }
    assert c["delta"]["aligned_vs_original"]["qwk"]["ci_method"] == "t-jackknife"
    assert c["gain"] == {
        "statistic": "qwk",
        "verdict": "too few groups",
        "survives": None,
        "secondary": ["exact", "kappa", "spearman"],
        "n_groups": 4,
    }
    assert set(c["gain_survives"].values()) == {None}
    # the relative change of false positives / negatives: its interval and McNemar's exact test
    from statsmodels.stats.contingency_tables import mcnemar

    fp_a = (np.array([scores["aligned"][e][0] for e in common]) >= 4) & (h < 4)
    fp_o = (np.array([scores["original"][e][0] for e in common]) >= 4) & (h < 4)
    paired = c["binary"]["paired"]["aligned"]["fp"]
    table = [[int((fp_a & fp_o).sum()), int((fp_a & ~fp_o).sum())], [int((~fp_a & fp_o).sum()), 0]]
    assert (paired["version"], paired["original"]) == (int(fp_a.sum()), int(fp_o.sum()))
    if table[0][1] + table[1][0]:
        assert paired["p_exact"] == pytest.approx(mcnemar(table, exact=True).pvalue, abs=1e-6)
    # development agreement: the choices' scores, recomputed the same way
    dev = out["choices"]["dev_agreement"]
    assert c["versions"]["aligned"]["dev_agreement"] == dev["aligned"]
    gap = c["overfit_gap"]["qwk"]
    assert gap["value"] == pytest.approx(gap["dev_gain"]["value"] - gap["eval_gain"]["value"], abs=1e-9)
    assert gap["dev_gain"]["value"] == pytest.approx(dev["aligned"]["qwk"] - dev["original"]["qwk"], abs=1e-9)


def test_budget_stops_a_step_and_a_larger_cap_resumes(sqlite_url: str) -> None:
    """`--max-cost` is each campaign's cap (the runner's): a step stops with exit 3 and nothing
    bought past the cap; the same command with a larger cap resumes without buying anything twice."""
    prepare_db(sqlite_url)
    price = "price_in=1000&price_out=1000"
    unpriced = "openai:no-such-model?base_url=http://127.0.0.1:9/v1"
    r = cli(*run_args("p0", "fewshot", judge=unpriced), "--max-cost", "1", db=sqlite_url)
    assert r.code == 2 and "price" in r.stderr and r.stderr.count("\n") == 1
    assert _rows(sqlite_url, "SELECT count(*) FROM alignment")[0][0] == 0
    judge = f"sim:judge-a?{price}"
    stopped = cli(*run_args("p", "fewshot", judge=judge), "--max-cost", "10", db=sqlite_url)
    assert stopped.code == 3 and "larger --max-cost" in stopped.stderr, stopped.stderr
    status = cli("align", "status", "p", "--json", db=sqlite_url).json()
    assert status["steps"]["dev"] == "pending"
    spent = _rows(
        sqlite_url,
        "SELECT sum(s.cost_usd) FROM response s JOIN request r ON r.id = s.request_id JOIN job j ON j.id = r.job_id "
        "JOIN campaign c ON c.id = j.campaign_id WHERE c.name = 'p-dev-original'",
    )[0][0]
    assert spent is not None and 0 < spent <= 10 + 1e-9
    bought = _rows(sqlite_url, "SELECT count(*) FROM response WHERE cached_from IS NULL")[0][0]
    done = cli(*run_args("p", "fewshot", judge=judge), "--max-cost", "1000", "--json", db=sqlite_url).json()
    assert set(done["steps"].values()) == {"done"}
    per_job = _rows(
        sqlite_url,
        "SELECT j.id, count(s.id) FROM job j JOIN request r ON r.job_id = j.id "
        "JOIN response s ON s.request_id = r.id WHERE s.cached_from IS NULL GROUP BY j.id",
    )
    assert all(n == 1 for _j, n in per_job) and len(per_job) > bought
