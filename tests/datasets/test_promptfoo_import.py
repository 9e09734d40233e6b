"""`judgepanel data import-promptfoo` on results the real promptfoo CLI wrote: the kept fixture
(tests/data/promptfoo/README.md says how it was made) and, where `promptfoo` is installed, a fresh
run against the fake server. Every assertion result of the file, read here with the standard
library's json, must be one stored verdict (its score, pass/fail as presented, its reason) or one
counted grader error; repeats stay separate verdicts; the key promptfoo copies into the file is
never stored.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.datasets.promptfoo_runs import FIXTURE, KEY, VERSION, promptfoo_command, run, write_config
from tests.datasets.test_hostile_imports import dump
from tests.datasets.test_inspect_import import _rows
from tests.helpers import cli, load_summeval_sample, migrate_db

STORED = """
select i.external_id, j.repeat, j.dimension, j.status, v.value_presented, v.score, v.rationale, c.spec, jd.name
from job j join item i on i.id = j.item_id join campaign c on c.id = j.campaign_id
join judge jd on jd.id = j.judge_id left join verdict v on v.job_id = j.id
where c.name = :name
"""


def _expected(results: Path) -> Counter[tuple[Any, ...]]:
    """(test id, dimension, presented, score or 'error', reason) of every assertion result."""
    data = json.loads(results.read_text(encoding="utf-8"))
    assert data["results"]["version"] == 3
    want: Counter[tuple[Any, ...]] = Counter()
    for r in data["results"]["results"]:
        for comp in r["gradingResult"]["componentResults"]:
            dim = comp["assertion"].get("metric") or ""
            if comp.get("metadata", {}).get("graderError") or comp["reason"].startswith("API error"):
                want[(r["vars"]["id"], dim, None, "error", None)] += 1
            else:
                want[
                    (
                        r["vars"]["id"],
                        dim,
                        "pass" if comp["pass"] else "fail",
                        float(comp["score"]),
                        comp["reason"],
                    )
                ] += 1
    return want


def _stored(url: str, name: str) -> Counter[tuple[Any, ...]]:
    got: Counter[tuple[Any, ...]] = Counter()
    for ext, _rep, dim, status, shown, score, why, _spec, _judge in _rows(url, STORED, name=name):
        got[(ext, dim, shown, "error" if status == "failed" else score, why)] += 1
    return got


@pytest.fixture(scope="module")
def imported(module_db_url: str) -> str:
    load_summeval_sample(module_db_url, articles=False)
    out = cli("data", "import-promptfoo", str(FIXTURE), "--name", "pf", "--json", db=module_db_url).json()
    assert out["counts"] == {"grader_errors": 2, "grades": 22, "samples": 12}, out
    return module_db_url


def test_every_assertion_result_is_a_verdict_or_a_counted_error(imported: str) -> None:
    assert _stored(imported, "pf") == _expected(FIXTURE)


def test_repeats_stay_separate_verdicts(imported: str) -> None:
    per_item = Counter((ext, rep) for ext, rep, *_ in _rows(imported, STORED, name="pf"))
    assert {rep for _ext, rep in per_item} == {0, 1}
    assert set(per_item.values()) == {2}  # two graders per test and repeat
    assert len({ext for ext, _rep in per_item}) == 6


def test_one_sample_per_chunk_stores_the_same_verdicts(
    imported: str, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Repeats meet across chunks: each repeat of a test is numbered from the jobs an earlier chunk
    stored, as when the whole file is one chunk."""
    from judgepanel.store import graded_imports

    monkeypatch.setattr(graded_imports, "CHUNK", 1)
    load_summeval_sample(db_url, articles=False)
    assert cli("data", "import-promptfoo", str(FIXTURE), "--name", "pf", db=db_url).code == 0
    rows = Counter(tuple(r[:7]) for r in _rows(db_url, STORED, name="pf"))
    assert rows == Counter(tuple(r[:7]) for r in _rows(imported, STORED, name="pf"))


def test_source_and_judges_are_recorded(imported: str) -> None:
    (spec,) = _rows(imported, "select spec from campaign where name = 'pf'")[0]
    spec = spec if isinstance(spec, dict) else json.loads(spec)
    (src,) = spec["source"]["sources"]
    assert src["promptfoo"] == VERSION and src["results_version"] == 3 and src["eval_id"].startswith("eval-")
    assert src["path"] == str(FIXTURE)
    assert spec["judge_names"] == [
        "llm-rubric/coherence (openai:chat:grader-mini)",
        "llm-rubric (openai:chat:grader-big)",
        "llm-rubric (openai:chat:grader-big!500)",
    ]
    params = [
        p if isinstance(p, dict) else json.loads(p)
        for (p,) in _rows(imported, "select params from judge where provider = 'promptfoo' order by id")
    ]
    assert params[0]["scale_name"] == "promptfoo score" and "pass" in params[0]["scale"]


def test_no_key_reaches_the_database(imported: str) -> None:
    assert KEY in FIXTURE.read_text(encoding="utf-8")  # promptfoo wrote it into the file
    assert KEY not in repr(dump(imported))


def test_without_an_id_var_repeats_still_meet(db_url: str) -> None:
    migrate_db(db_url)
    out = cli(
        "data", "import-promptfoo", str(FIXTURE), "--name", "anon", "--id-var", "nope", "--json", db=db_url
    ).json()
    assert out["items_added"] == 6 and out["verdicts"] == 22
    ids = {ext for ext, *_ in _rows(db_url, STORED, name="anon")}
    assert all(i.startswith("t-") for i in ids) and len(ids) == 6


def test_grades_attach_to_an_existing_dataset(db_url: str) -> None:
    load_summeval_sample(db_url, articles=False)
    out = cli(
        "data", "import-promptfoo", str(FIXTURE), "--name", "pfse", "--dataset", "se", "--json", db=db_url
    ).json()
    assert out["items_added"] == 0 and out["dataset"] == "se" and out["verdicts"] == 22


def test_the_real_cli_against_the_fake_server(tmp_path: Path, sqlite_url: str) -> None:
    command = promptfoo_command()
    if command is None:
        why = "promptfoo is not installed (it needs Node.js and npm; .ci/run installs promptfoo@0.121.20)"
        if os.environ.get("JUDGEPANEL_REQUIRE_PROMPTFOO", "") not in ("", "0"):
            pytest.fail(why + " but JUDGEPANEL_REQUIRE_PROMPTFOO is set")
        pytest.skip(why)
    from judgepanel.fake.server import FakeServer

    out = tmp_path / "results.json"
    with FakeServer(seed=11) as fake:
        done = run(command, write_config(tmp_path, fake.url, n=3), out, tmp_path / "home")
    assert out.exists(), done.stderr[-2000:]
    assert json.loads(out.read_text())["metadata"]["promptfooVersion"]
    migrate_db(sqlite_url)
    r = cli("data", "import-promptfoo", str(out), "--name", "live", "--json", db=sqlite_url).json()
    assert r["counts"]["samples"] == 6  # 3 tests × 2 repeats
    assert _stored(sqlite_url, "live") == _expected(out)
