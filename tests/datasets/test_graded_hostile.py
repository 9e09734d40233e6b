"""Broken and hostile Inspect logs and promptfoo results: each is one line on stderr, exit 2, and
the database is untouched (every row of every table compared before and after, on SQLite and
PostgreSQL), including files that fail only part-way through their samples, after rows were
already written inside the import's transaction.

Files are derived from real ones: the Inspect logs of tests/datasets/graded_logs.py (content
changes written back with Inspect's own writer; damage done to the bytes) and the kept promptfoo
results file. The 500 MB results file is written at test time and read in a subprocess whose peak
memory is measured: the importer refuses it after at most 32 MB of one record, never holding it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.datasets.promptfoo_runs import FIXTURE
from tests.datasets.test_hostile_imports import _one_line_error, dump
from tests.helpers import cli, load_summeval_sample


@pytest.fixture(scope="module")
def baseline(module_db_url: str, inspect_logs: dict[str, Path]) -> str:
    """A database already holding a dataset and an imported campaign, so 'untouched' means more
    than 'still empty' (not one of the files the cases derive from: that would be refused as a
    re-import before any damage is read)."""
    load_summeval_sample(module_db_url, articles=False)
    r = cli("data", "import-inspect", str(inspect_logs["cancelled"]), "--name", "kept", db=module_db_url)
    assert r.code == 0, r.stderr
    return module_db_url


def _refused(db: str, args: list[str], message: str) -> None:
    before = dump(db)
    err = _one_line_error(cli(*args, db=db))
    assert message in err, err
    assert dump(db) == before


# ---------------------------------------------------------------- Inspect logs


def _truncated(src: Path, out: Path, share: float) -> Path:
    data = src.read_bytes()
    out.write_bytes(data[: int(len(data) * share)])
    return out


def _edited_bytes(src: Path, out: Path, old: bytes, new: bytes) -> Path:
    data = src.read_bytes()
    assert old in data
    out.write_bytes(data.replace(old, new, 1))
    return out


def _rewritten(src: Path, out: Path, change: Callable[[object], None]) -> Path:
    """`src` read and written back by Inspect after `change(log)`."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(src))
    change(log)
    write_eval_log(log, str(out), format="json")
    return out


def _duplicate_sample(log: object) -> None:
    samples = log.samples  # type: ignore[attr-defined]
    samples.append(samples[0].model_copy())


def _grade_outside_scale(log: object) -> None:
    log.samples[0].scores["model_graded_qa"].value = "maybe"  # type: ignore[attr-defined]


INSPECT_CASES = {
    "truncated .eval": (
        lambda logs, tmp: _truncated(logs["graded"], tmp / "cut.eval", 0.5),
        "cut.eval: cannot read as an Inspect log",
    ),
    "truncated .json": (
        lambda logs, tmp: _truncated(logs["graded_json"], tmp / "cut.json", 0.6),
        "cut.json: cannot read as an Inspect log",
    ),
    "newer schema": (
        lambda logs, tmp: _edited_bytes(
            logs["graded_json"], tmp / "v3.json", b'"version": 2', b'"version": 3'
        ),
        "v3.json: Inspect log schema version 3; judgepanel reads version 2",
    ),
    "older schema": (
        lambda logs, tmp: _edited_bytes(
            logs["graded_json"], tmp / "v1.json", b'"version": 2', b'"version": 1'
        ),
        "v1.json: Inspect log schema version 1; judgepanel reads version 2",
    ),
    "duplicate sample ids": (
        lambda logs, tmp: _rewritten(logs["graded"], tmp / "dup.json", _duplicate_sample),
        "(epoch 1): graded twice by 'model_graded_qa (openai-api/fake/grader-mini)'; nothing was imported",
    ),
    "grade outside any scale": (
        lambda logs, tmp: _rewritten(logs["mocked"], tmp / "maybe.json", _grade_outside_scale),
        "grade 'maybe' is outside every known scale",
    ),
    "not UTF-8": (
        lambda logs, tmp: _edited_bytes(
            logs["graded_json"], tmp / "latin.json", b"Summarise this", b"Summ\xe4rise this"
        ),
        "latin.json: cannot read as an Inspect log: not valid JSON near byte",
    ),
    "not a log": (
        lambda logs, tmp: _edited_bytes(FIXTURE, tmp / "other.json", b"{", b"{"),
        "other.json: Inspect log schema version None",
    ),
}


@pytest.mark.parametrize("case", list(INSPECT_CASES))
def test_hostile_inspect_log(baseline: str, inspect_logs: dict[str, Path], tmp_path: Path, case: str) -> None:
    make, message = INSPECT_CASES[case]
    path = make(inspect_logs, tmp_path)
    _refused(baseline, ["data", "import-inspect", str(path), "--name", "bad"], message)


# ---------------------------------------------------------------- promptfoo results


def _fixture() -> dict[str, object]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def _written(tmp: Path, name: str, data: object) -> Path:
    (tmp / name).write_text(json.dumps(data), encoding="utf-8")
    return tmp / name


def _version(tmp: Path) -> Path:
    data = _fixture()
    data["results"]["version"] = 2  # type: ignore[index]
    return _written(tmp, "v2.json", data)


def _duplicate_id(tmp: Path) -> Path:
    data = _fixture()
    results = data["results"]["results"]  # type: ignore[index]
    results[-1]["vars"]["id"] = results[0]["vars"]["id"]  # another test (other vars) under a taken id
    return _written(tmp, "dup.json", data)


def _score(tmp: Path) -> Path:
    data = _fixture()
    data["results"]["results"][3]["gradingResult"]["componentResults"][0]["score"] = "high"  # type: ignore[index]
    return _written(tmp, "high.json", data)


PROMPTFOO_CASES = {
    "truncated": (lambda tmp: _truncated(FIXTURE, tmp / "cut.json", 0.7), "cut.json: cannot read as a promptfoo results file: not valid JSON"),
    "other schema version": (_version, "v2.json: promptfoo results version 2; judgepanel reads version 3"),
    "duplicate ids": (_duplicate_id, "': two different test cases carry it (nothing was imported)"),
    "score outside any scale": (_score, "score \"high\" is outside every known scale"),
    "not UTF-8": (
        lambda tmp: _edited_bytes(FIXTURE, tmp / "latin.json", b"[simulated]", b"[simul\xe4ted]"),
        "latin.json: cannot read as a promptfoo results file: not valid JSON near byte",
    ),
    "not promptfoo": (lambda tmp: _written(tmp, "other.json", {"results": [1, 2]}), "other.json: not a promptfoo results file"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(PROMPTFOO_CASES))
def test_hostile_promptfoo_results(baseline: str, tmp_path: Path, case: str) -> None:
    make, message = PROMPTFOO_CASES[case]
    _refused(baseline, ["data", "import-promptfoo", str(make(tmp_path)), "--name", "bad"], message)


def _giant(path: Path, megabytes: int) -> Path:
    """A promptfoo results file whose one output is `megabytes` MB long."""
    head = b'{"evalId": "eval-giant", "results": {"version": 3, "timestamp": "t", "prompts": [], "results": ['
    head += b'{"vars": {"id": "a"}, "testIdx": 0, "promptIdx": 0, "response": {"output": "'
    block = b"a" * (1 << 20)
    with path.open("wb") as f:
        f.write(head)
        for _ in range(megabytes):
            f.write(block)
        f.write(b'"}}]}}')
    return path


@pytest.mark.slow
def test_a_500_mb_results_file_is_refused_in_bounded_memory(baseline: str, tmp_path: Path) -> None:
    if not baseline.startswith("sqlite"):
        pytest.skip("the bound is the reader's; once is enough")
    path = _giant(tmp_path / "giant.json", 500)
    assert path.stat().st_size > 500 * 10**6
    before = dump(baseline)
    # the peak is VmHWM, this process image's own: ru_maxrss survives exec on Linux, so a child of
    # a pytest worker holding 700 MB reported those 700 MB (CI, and full local runs: 621-715 MB
    # where the import alone peaks at ~85 MB)
    code = (
        "import sys\n"
        "from judgepanel.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n"
        "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]\n"
        "    print(hwm, file=sys.stdout)\n    raise\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, f"--db={baseline}", "data", "import-promptfoo", str(path), "--name", "giant"],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "a record larger than 32 MB" in done.stderr, done.stderr
    peak_mb = int(done.stdout.split()[-1]) / 1024  # VmHWM is in kB
    assert peak_mb < 350, f"peak {peak_mb:.0f} MB while refusing a 500 MB record"
    assert dump(baseline) == before
