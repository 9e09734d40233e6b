"""A repair iteration with the real model as editor (and its checker step), and an alignment of
each method with the real model as judge (and editor), on a handful of items (issue 34 §2).

Exit codes are checked against what was left: 0 when every step is done and no judge job failed;
3 with the step pending and the cause said when an editor call failed (then `--retry-failed` is
tried once), or with the count when judge jobs failed. Nothing answered is bought again on a
resume."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers import cli
from tests.real.conftest import KNOWN_CLASSES, LocalModel, assert_every_job_classified, responses

pytestmark = pytest.mark.real


def _steps(db: str, kind: str, name: str) -> dict[str, str]:
    out: dict[str, str] = cli(kind, "status", name, "--json", db=db).json()["steps"]
    return out


def _repair(db: str, args: list[str]) -> Any:
    out = cli(*args, db=db)
    assert out.code in (0, 3), out.stderr
    if out.code == 3:  # only an unusable editor reply stops a repair step; it says why, per cause
        assert "The rewrite step is not done" in out.stderr or "pending" in out.stderr, out.stderr
    return out


def test_a_repair_iteration_with_the_real_editor_and_its_checkers(llm: LocalModel, summeval_db: str) -> None:
    db = summeval_db
    # one real judge beside a simulated one (the selection reads two judges' disagreement), the
    # real model as editor
    args = [
        "repair", "run", "rr", "--dataset", "se", "--rubric", "summeval", "--dimension", "coherence",
        "--judge", llm.spec("qwen", max_tokens=500), "--judge", "sim:judge-a",
        "--editor", llm.spec(max_tokens=400), "--limit", "2", "--control-seed", "7",
        "--bootstrap", "100",
    ]  # fmt: skip
    first = _repair(db, args)
    if first.code == 3:
        assert _steps(db, "repair", "rr")["rewrite"] == "pending"
        _repair(db, ["repair", "run", "rr", "--retry-failed"])
    steps = _steps(db, "repair", "rr")
    assert steps["dev"] == "done" and steps["select"] == "done"
    for camp in ("rr-dev", "rr-editor"):
        assert_every_job_classified(db, camp)
    before = responses(db)
    again = cli("repair", "run", "rr", db=db)  # a resume asks nothing that is answered
    assert again.code in (0, 3) and responses(db) == before
    checkers = cli("repair", "checkers", "rr", "--json", db=db)
    assert checkers.code in (0, 3), checkers.stderr
    if checkers.code == 0:
        rows = checkers.json()
        assert isinstance(rows, dict)
    assert_every_job_classified(db, "rr-checkers")


def _align(db: str, name: str, method: str, judge: str, *extra: str) -> Any:
    args = [
        "align", "run", name, "--dataset", "se", "--judge", judge, "--human-group", "expert",
        "--dimension", "coherence", "--rubric", "summeval", "--method", method, "--limit", "2",
        "--seed", "3", "--bootstrap", "100", *extra, "--json",
    ]  # fmt: skip
    out = cli(*args, db=db)
    # 2: fewshot's --k larger than the items the judge disagrees on (the model may agree on both)
    assert out.code in (0, 2, 3), out.stderr
    if out.code == 2:
        assert "--k 1 is larger than the 0 development items where the judge disagrees" in out.stderr
        return None
    if out.code == 3 and "failed_jobs" in out.stdout:
        result = out.json(code=3)
        assert result["failed_jobs"] and "judge job(s) failed" in out.stderr
        comparison = result["comparison"]
        if comparison is not None:
            n = {v: d["agreement"]["items"] for v, d in comparison["versions"].items()}
            assert len(set(n.values())) == 1  # every version on the same items
        return result
    if out.code == 3:  # an editor round failed: the step is pending and the cause is said
        assert "the editor gave no usable revision" in out.stderr
        assert _steps(db, "align", name)["align"] == "pending"
        return None
    result = out.json()
    assert set(result["steps"].values()) == {"done"} and result["failed_jobs"] == {}
    return result


def test_an_alignment_of_each_method(llm: LocalModel, summeval_db: str, tmp_path: Path) -> None:
    db = summeval_db
    judge = llm.spec("qwen", max_tokens=160)
    _align(db, "ra-few", "fewshot", judge, "--k", "1")
    _align(
        db,
        "ra-ins",
        "instructions",
        judge,
        "--editor",
        llm.spec(max_tokens=400),
        "--rounds",
        "1",
    )
    other = tmp_path / "strict.txt"
    other.write_text(
        "Coherence: judge how well the sentences of the summary build on each other. Penalise abrupt "
        "topic jumps, unclear references and repeated statements.",
        encoding="utf-8",
    )
    _align(db, "ra-grid", "grid", judge, "--grid-instructions", str(other))
    for name in ("ra-few", "ra-ins", "ra-grid"):
        status = cli("align", "status", name, "--json", db=db)
        if status.code != 0:
            continue
        for role, camp in status.json()["campaigns"].items():
            ran = camp and not role.startswith("editor")
            if ran and cli("campaign", "status", camp, "--json", db=db).code == 0:
                states = assert_every_job_classified(db, camp)
                assert all(c in KNOWN_CLASSES for s, c in states if s == "failed")
    # the three alignments share the original judge's campaigns' requests: answered from the cache
    cached = cli("query", "SELECT count(*) AS n FROM response WHERE cached_from IS NOT NULL", "--format", "json",
                 db=db).json()["rows"][0]["n"]  # fmt: skip
    assert cached > 0
