"""`judgepanel data import-inspect` on logs the real Inspect AI wrote (tests/datasets/graded_logs.py):
a grader served by the fake server through Inspect's `openai-api` provider, and `mockllm`.

Every stored grade is checked against what Inspect's own `read_eval_log` reads from the same log,
on SQLite and PostgreSQL; `.eval` and `.json` give the same verdicts; epochs stay separate verdicts;
unscored samples, sample errors and cancelled samples are counted; a re-import is recognised.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from tests.datasets.graded_logs import GRADER_KEY, N_SUMMARIES
from tests.helpers import cli, load_summeval_sample

MINI = "model_graded_qa (openai-api/fake/grader-mini)"
BIG = "model_graded_qa1 (openai-api/fake/grader-big)"
CPI = {"C": 2.0, "P": 1.0, "I": 0.0}


def _rows(url: str, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    eng = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with eng.connect() as c:
            return [tuple(r) for r in c.execute(text(sql), params)]
    finally:
        eng.dispose()


VERDICTS = """
select i.external_id, j.repeat, j.dimension, v.value_presented, v.value_canonical, v.score, v.rationale,
       c.spec, jd.name, r.messages, rs.raw_body
from verdict v join job j on j.id = v.job_id join item i on i.id = j.item_id
join campaign c on c.id = j.campaign_id join judge jd on jd.id = j.judge_id
join request r on r.id = v.request_id join response rs on rs.request_id = r.id
where c.name = :name order by i.external_id, j.repeat, jd.name
"""


def _names(spec: Any) -> dict[str, str]:
    spec = spec if isinstance(spec, dict) else __import__("json").loads(spec)
    return dict(zip(spec["judges"], spec["judge_names"], strict=True))


@pytest.fixture(scope="module")
def imported(module_db_url: str, inspect_logs: dict[str, Path]) -> str:
    load_summeval_sample(module_db_url, articles=False)
    r = cli(
        "data", "import-inspect", str(inspect_logs["graded"]), "--name", "ig", "--dimension", "coherence",
        "--json", db=module_db_url,
    )  # fmt: skip
    out = r.json()
    assert out["verdicts"] == N_SUMMARIES * 2 * 2, out  # samples × epochs × graders
    return module_db_url


def test_every_grade_is_stored_as_inspect_reads_it(imported: str, inspect_logs: dict[str, Path]) -> None:
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(inspect_logs["graded"]))
    want = {}
    for s in log.samples or []:
        for key, score in (s.scores or {}).items():
            name = MINI if key == "model_graded_qa" else BIG
            want[(str(s.id), s.epoch - 1, name)] = (str(score.value), score.explanation)
    got = {}
    for ext, rep, dim, shown, canon, score, why, spec, judge, messages, raw in _rows(
        imported, VERDICTS, name="ig"
    ):
        name = _names(spec)[judge]
        got[(ext, rep, name)] = (shown, why)
        assert dim == "coherence"
        number = CPI[shown] if name == BIG else float(shown)  # C/P/I -> 2/1/0; numbers as given
        assert float(canon) == pytest.approx(number, abs=1e-12) and score == pytest.approx(number, abs=1e-12)
        assert "[Submission]:" in str(messages) and "[simulated]" in (why or "")
        assert '"value"' in raw
    assert got == want
    assert {k[1] for k in got} == {0, 1}  # both epochs kept, not averaged


def test_source_scale_and_judges_are_recorded(imported: str, inspect_logs: dict[str, Path]) -> None:
    import json

    (spec,) = _rows(imported, "select spec from campaign where name = 'ig'")[0]
    spec = spec if isinstance(spec, dict) else json.loads(spec)
    src = spec["source"]
    assert src["tool"] == "inspect" and src["counts"] == {"grades": 144, "samples": 72}
    (one,) = src["sources"]
    assert one["task"] == "summeval_graders" and one["path"] == str(inspect_logs["graded"])
    assert one["eval_id"] and one["model"] == "mockllm/model" and one["epochs"] == 2
    params = {
        name: p if isinstance(p, dict) else json.loads(p)
        for name, p in _rows(imported, "select name, params from judge where provider = 'inspect'")
    }
    by_short = {_names(spec)[k]: v for k, v in params.items() if k in _names(spec)}
    assert by_short[BIG]["scale"] == CPI and by_short[BIG]["scale_name"] == "CPI"
    assert (
        by_short[MINI]["scale_name"] == "numeric"
        and by_short[MINI]["grader_model"] == "openai-api/fake/grader-mini"
    )


def test_no_key_reaches_the_database(imported: str) -> None:
    from tests.datasets.test_hostile_imports import dump

    assert GRADER_KEY not in repr(dump(imported))


def test_json_log_gives_the_same_verdicts(imported: str, inspect_logs: dict[str, Path]) -> None:
    def rows() -> set[tuple[Any, ...]]:
        return {
            (e, rep, shown, canon, why, _names(spec)[j])
            for e, rep, _d, shown, canon, _s, why, spec, j, _m, _r in _rows(imported, VERDICTS, name="ig")
        }

    def load(log: str, *extra: str) -> Any:
        return cli("data", "import-inspect", str(inspect_logs[log]), "--name", "ig", "--dimension", "coherence",
                   *extra, "--json", db=imported)  # fmt: skip

    from_eval = rows()
    # the same eval id under another name: recognised as the log already imported as `ig`
    r = cli("data", "import-inspect", str(inspect_logs["graded_json"]), "--name", "igj", db=imported)
    assert r.code == 2 and "already imported as 'ig'" in r.stderr, r.stderr
    assert load("graded_json", "--replace").json()["verdicts"] == 144
    assert rows() == from_eval and len(from_eval) == 144
    assert load("graded", "--replace").json()["verdicts"] == 144  # back as the other tests expect


def test_mockllm_grades_unscored_and_errors_are_counted(imported: str, inspect_logs: dict[str, Path]) -> None:
    out = cli(
        "data", "import-inspect", str(inspect_logs["mocked"]), "--name", "im", "--json", db=imported
    ).json()
    assert out["counts"] == {"grades": 3, "sample_errors": 1, "samples": 5, "unscored": 1}
    assert out["verdicts"] == 3 and out["failed"] == 1
    (judge,) = out["judges"].values()
    assert judge == {"verdicts": 3, "unscored": 1, "errors": 0, "scale": "CPI"}
    got = dict(_rows(imported, "select i.external_id, v.value_canonical from verdict v join job j on j.id = v.job_id "
                               "join item i on i.id = j.item_id join campaign c on c.id = j.campaign_id where c.name = 'im'"))  # fmt: skip
    assert got == {"m0": "2", "m1": "1", "m2": "0"}
    failed = _rows(imported, "select j.status, j.error_class, rs.error_message from job j join campaign c on c.id = j.campaign_id "
                             "join request r on r.job_id = j.id join response rs on rs.request_id = r.id "
                             "where c.name = 'im' and j.status = 'failed'")  # fmt: skip
    assert failed == [("failed", "parse", "unscored: no grade")]
    status = cli("campaign", "status", "im", "--json", db=imported).json()
    assert status["failed_by_class"] == {"parse": 1} and status["done"] == 3


def test_cancelled_samples_are_counted(imported: str, inspect_logs: dict[str, Path]) -> None:
    out = cli(
        "data", "import-inspect", str(inspect_logs["cancelled"]), "--name", "ic", "--json", db=imported
    ).json()
    assert out["counts"]["cancelled"] == N_SUMMARIES * 2 - 10 and out["counts"]["samples"] == 10


def test_reimport_is_recognised_refused_or_replaced(imported: str, inspect_logs: dict[str, Path]) -> None:
    from tests.datasets.test_hostile_imports import dump

    again = cli("data", "import-inspect", str(inspect_logs["graded"]), "--name", "ig", "--dimension", "coherence",
                "--json", db=imported)  # fmt: skip
    assert again.json()["unchanged"] is True
    before = dump(imported)
    other = cli("data", "import-inspect", str(inspect_logs["mocked"]), "--name", "ig", db=imported)
    assert other.code == 2 and "pass --replace" in other.stderr and other.stderr.count("\n") == 1
    assert dump(imported) == before


def test_replace_keeps_human_labels_added_to_the_dataset(
    db_url: str, inspect_logs: dict[str, Path], tmp_path: Path
) -> None:
    load_summeval_sample(db_url, articles=False)
    assert cli("data", "import-inspect", str(inspect_logs["mocked"]), "--name", "keep", db=db_url).code == 0
    labels = tmp_path / "labels.csv"
    labels.write_text("item_id,annotator,group,dimension,value\nm0,ann,expert,,2\nm1,ann,expert,,1\n")
    r = cli("data", "import-labels", str(labels), "--dataset", "keep", db=db_url)
    assert r.code == 0, r.stderr
    r = cli("data", "import-inspect", str(inspect_logs["mocked_json"]), "--name", "keep", "--replace", "--json",
            db=db_url)  # fmt: skip
    assert r.json()["verdicts"] == 3 and r.json()["items_added"] == 0
    n = _rows(db_url, "select count(*) from label l join annotator a on a.id = l.annotator_id "
                      "join dataset d on d.id = a.dataset_id where d.name = 'keep'")  # fmt: skip
    assert n == [(2,)]
    assert _rows(db_url, "select count(*) from campaign") == [(1,)]


def test_attaching_to_an_existing_dataset(db_url: str, inspect_logs: dict[str, Path]) -> None:
    from tests.datasets.test_hostile_imports import dump

    load_summeval_sample(db_url, articles=False)
    before = dump(db_url)
    r = cli(
        "data", "import-inspect", str(inspect_logs["mocked"]), "--name", "ia", "--dataset", "se", db=db_url
    )
    assert r.code == 2 and "names no item of the dataset" in r.stderr and r.stderr.count("\n") == 1
    assert dump(db_url) == before
    r = cli("data", "import-inspect", str(inspect_logs["cancelled"]), "--name", "ia", "--dataset", "se",
            "--dimension", "coherence", "--json", db=db_url)  # fmt: skip
    assert r.json()["items_added"] == 0 and r.json()["dataset"] == "se" and r.json()["verdicts"] == 20


def test_an_imported_campaign_is_not_run(imported: str) -> None:
    for args in (("campaign", "run", "ig"), ("campaign", "plan", "ig")):
        r = cli(*args, db=imported)
        assert r.code == 2 and "was imported from inspect" in r.stderr and r.stderr.count("\n") == 1
