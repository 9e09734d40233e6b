"""Issue 18 §1: the seeded item sample spread over articles, editor isolation, a version equal to
the original evaluated once, and chained iterations with their stopping rule."""

from __future__ import annotations

import json

from sqlalchemy import create_engine, text

from judgepanel.repair.isolation import editor_shares_family_with, model_family
from judgepanel.repair.iteration import RepairInputs, run_iteration
from judgepanel.repair.sample import spread_sample
from judgepanel.store import repair as store
from tests.helpers import cli
from tests.repair.conftest import PANEL_SIM, prepare_db, prepare_db_five_eval, run_args

AGREEING = ("sim:judge-a?noise=0", "sim:judge-b?noise=0")  # noiseless: they never disagree


def test_spread_sample_covers_groups_round_robin_and_is_seeded() -> None:
    members = [(f"a{g}-{k}", f"a{g}") for g in range(5) for k in range(8)] + [("lone", None)]
    s = spread_sample(members, 12, seed=3, label="eval")
    per = [sum(1 for e in s.items if e.startswith(f"a{g}-")) for g in range(5)]
    assert len(s.items) == 12 and s.groups == 6 and s.of_groups == 6 and s.of_items == 41
    assert max(per) - min(per) <= 1  # no article gives more than one item more than another
    assert list(s.items) == [e for e, _g in members if e in s.items]  # dataset order
    assert spread_sample(members, 12, seed=3, label="eval") == s
    assert spread_sample(members, 12, seed=4, label="eval").items != s.items
    assert spread_sample(members, 100, seed=3, label="eval").items == tuple(e for e, _ in members)
    # the old rule, the first 12 in file order, would have drawn 2 articles
    assert len({e.split("-")[0] for e, _g in members[:12]}) == 2


def test_limit_judges_the_recorded_sample_spread_over_articles(sqlite_url: str) -> None:
    prepare_db(sqlite_url)
    out = cli(*run_args("s1", PANEL_SIM, "sim:editor"), "--stop-after", "dev", "--json", db=sqlite_url).json()
    sample = out["inputs"]["sample"]
    assert sample["seed"] == 7 and sample["limit"] == 12
    assert len(sample["dev"]["items"]) == 12 and sample["dev"]["groups"] == sample["dev"]["of_groups"] == 4
    eng = create_engine(sqlite_url)
    with eng.connect() as c:
        judged = set(
            c.execute(
                text(
                    "SELECT DISTINCT i.external_id FROM job j JOIN campaign c ON c.id = j.campaign_id "
                    "JOIN item i ON i.id = j.item_id WHERE c.name = 's1-dev'"
                )
            ).scalars()
        )
        per_article = c.execute(
            text(
                "SELECT i.group_key, count(DISTINCT i.id) FROM job j JOIN campaign c ON c.id = j.campaign_id "
                "JOIN item i ON i.id = j.item_id WHERE c.name = 's1-dev' GROUP BY i.group_key"
            )
        ).all()
    assert judged == set(sample["dev"]["items"])
    assert sorted(n for _g, n in per_article) == [3, 3, 3, 3]


def test_editor_isolation() -> None:
    assert model_family("gpt-4o-mini") == model_family("gpt-4.1") == "gpt"
    assert model_family("Qwen/Qwen2.5-7B-Instruct") == "qwen" and model_family("claude-haiku-4-5") == "claude"
    judges = [
        "openai:gpt-4o-mini",
        "anthropic:claude-haiku-4-5",
        "openai:qwen2.5-7b?base_url=http://127.0.0.1:8000/v1",
    ]
    assert editor_shares_family_with("anthropic:claude-sonnet-4-5", judges) == {
        "anthropic:claude-haiku-4-5": ["provider", "model family"]
    }
    assert editor_shares_family_with("openai:gpt-4.1", judges) == {
        "openai:gpt-4o-mini": ["provider", "model family"]
    }
    # a local server is not OpenAI; its model family still counts
    local = editor_shares_family_with("openai:qwen2.5-72b?base_url=http://10.0.0.2:9000/v1", judges)
    assert local == {"openai:qwen2.5-7b?base_url=http://127.0.0.1:8000/v1": ["model family"]}
    assert editor_shares_family_with("openai:llama-3.1-70b?base_url=http://x:1/v1", judges) == {}


def test_a_version_equal_to_the_original_is_evaluated_once(sqlite_url: str) -> None:
    """Judges that never disagree leave nothing to rewrite: both edited versions are the original,
    whose verdicts they share, so every Δ is exactly 0 (no second, noisier run of the same rubric)."""
    prepare_db(sqlite_url)
    r = cli(*run_args("z1", AGREEING, "sim:editor", "--criterion", "delta>=0.03,ci_low>0;human_margin=0.05"),
            "--json", db=sqlite_url)  # fmt: skip
    assert r.code == 0, r.stderr
    cmp_ = r.json()["comparison"]
    assert cmp_["same_as_original"] == ["contested", "control"]
    assert r.json()["campaigns"]["contested"] == r.json()["campaigns"]["original"] == "z1-original"
    assert cmp_["delta"]["contested_vs_original"]["value"] == 0.0
    assert cmp_["delta"]["contested_vs_original"]["ci"] == [0.0, 0.0]
    assert cmp_["human_delta"]["contested_vs_original"]["spearman"]["value"] == 0.0
    # 4 evaluation articles: no verdict is stated (issue 30 §1), the TOST still shows equivalence
    assert cmp_["verdict"] == {"inter_judge": "too few groups", "human": "too few groups"}
    assert cmp_["human_equivalence"]["equivalent"] is True
    eng = create_engine(sqlite_url)
    with eng.connect() as c:
        names = set(c.execute(text("SELECT name FROM campaign")).scalars())
    assert "z1-contested" not in names and "z1-control" not in names
    # the chain stops here: the inter-judge criterion has no verdict (too few groups)
    stop = cli("repair", "run", "z2", "--from", "z1", db=sqlite_url)
    assert stop.code == 2 and "the chain stops at 'z1'" in stop.stderr and stop.stderr.count("\n") == 1
    assert "too few groups" in stop.stderr


def test_chained_iteration_repairs_the_edited_rubric_on_fresh_items(sqlite_url: str) -> None:
    # 5 evaluation articles and 20 items a split: a verdict is stated (issue 30 §1)
    prepare_db_five_eval(sqlite_url)
    args = run_args("c1", PANEL_SIM, "sim:editor")
    args[args.index("--limit") + 1] = "20"
    first = cli(*args, "--json", db=sqlite_url).json()
    assert first["comparison"]["verdict"]["inter_judge"] == "pass"
    second = cli("repair", "run", "c2", "--from", "c1", "--json", db=sqlite_url)
    assert second.code == 0, second.stderr
    rec2 = second.json()
    assert rec2["rubrics"]["original"] == first["rubrics"]["contested"] and rec2["from"] == "c1"
    assert rec2["criterion"] == first["criterion"]
    dev1 = set(first["inputs"]["sample"]["dev"]["items"])
    dev2 = set(rec2["inputs"]["sample"]["dev"]["items"])
    assert len(dev2) == 20 and not dev1 & dev2  # fresh development items
    assert rec2["inputs"]["sample"]["eval"] == first["inputs"]["sample"]["eval"]  # the same evaluation items
    status = cli("repair", "status", "c1", "--json", db=sqlite_url).json()
    assert [c["iteration"] for c in status["chain"]] == ["c1", "c2"]
    assert (
        status["chain"][1]["from"] == "c1" and status["chain"][0]["contested"] == status["chain"][1]["rubric"]
    )
    shown = cli("repair", "status", "c2", db=sqlite_url).stdout
    assert "chain: c1 (" in shown and "=>  c2 (" in shown


def test_a_chain_stops_when_no_clause_is_disputed(sqlite_url: str) -> None:
    """The stopping rule's other arm: on the fresh items the judges agree on every clause."""
    prepare_db(sqlite_url)
    assert cli(*run_args("q1", AGREEING, "sim:editor"), db=sqlite_url).code == 0
    engine = create_engine(sqlite_url)
    inputs = RepairInputs(
        "se",
        "summeval@1",
        AGREEING,
        "sim:editor",
        "dev",
        "eval",
        ("coherence",),
        12,
        7,
        None,
        200,
        parent="q1",
    )
    rec = run_iteration(engine, "q2", inputs, criterion="delta>=0.03,ci_low>0")
    assert rec.steps == {
        "dev": "done",
        "select": "done",
        "rewrite": "stopped",
        "evaluate": "stopped",
        "compare": "stopped",
    }
    assert "no clause has a positive disagreement rate" in str(store.get_iteration(engine, "q2").selection)
    again = cli("repair", "run", "q2", "--json", db=sqlite_url)
    assert again.code == 0 and again.json()["stopped"].startswith("no clause")
    follow = cli("repair", "run", "q3", "--from", "q2", db=sqlite_url)
    assert follow.code == 2 and "the chain stops at 'q2'" in follow.stderr
    assert (
        json.loads(cli("repair", "status", "q2", "--json", db=sqlite_url).stdout)["chain"][0]["iteration"]
        == "q1"
    )


def test_an_editor_that_returns_clauses_unchanged_is_reported(sqlite_url: str) -> None:
    """Issue 18: an unchanged clause is said to be unchanged (not an empty edited-clauses table
    without a word), and the versions equal to the original are not evaluated again."""
    prepare_db(sqlite_url)
    r = cli(*run_args("k1", PANEL_SIM, "sim:editor?keep_rate=1"), "--json", db=sqlite_url)
    assert r.code == 0, r.stderr
    cmp_ = r.json()["comparison"]
    rw = cli("repair", "rewrite", "k1", "--json", db=sqlite_url).json()["rewrites"]
    assert rw and all(x["unchanged"] and x["new"] == x["old"] and "kept" in x["reason"] for x in rw.values())
    assert cmp_["clauses_edited"] == {"contested": 0, "control": 0}
    assert sorted(cmp_["clauses_unchanged"]["contested"]) == sorted(
        c for c, x in rw.items() if "contested" in x["sets"]
    )
    assert cmp_["same_as_original"] == ["contested", "control"]
    shown = cli("repair", "compare", "k1", db=sqlite_url).stdout
    assert "returned unchanged by the editor: contested" in shown
    assert "contested-edited equals the original rubric" in shown
