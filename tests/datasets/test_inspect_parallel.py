"""A `.eval` log of several batches is read by child processes (issue 35 §4: Inspect's reading of
full samples is most of an import's CPU); what is read, counted, stored and refused must not
depend on it. The logs are the real ones Inspect wrote (tests/datasets/graded_logs.py), read in
batches small enough that a dozen samples make several."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from judgepanel.datasets import inspect_log
from judgepanel.datasets.graded import GradedLog
from tests.datasets.test_hostile_imports import dump
from tests.helpers import cli, migrate_db


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _read(path: Path, readers: int, batch: int) -> tuple[list[Any], GradedLog]:
    log = inspect_log.read_inspect([path], "coherence", readers=readers, batch=batch)
    return list(log.samples), log


def test_a_log_of_several_batches_is_read_by_child_processes(inspect_logs: dict[str, Path]) -> None:
    before = {p.pid for p in multiprocessing.active_children()}
    log = inspect_log.read_inspect([inspect_logs["graded"]], "coherence", readers=2, batch=7)
    first = next(log.samples)
    readers = [p for p in multiprocessing.active_children() if p.pid not in before]
    assert len(readers) == 2  # 72 samples in 11 batches: both readers started
    parallel = [first, *log.samples]
    assert not any(p.is_alive() for p in readers)  # and ended with the stream

    serial, one = _read(inspect_logs["graded"], 1, 7)
    assert parallel == serial and len(serial) == 72  # the same samples, grades and texts, in order
    assert log.counts == one.counts == {"samples": 72, "grades": 144}
    assert log.scales == one.scales and log.graders == one.graders


def test_cancelled_samples_are_counted_by_child_readers(inspect_logs: dict[str, Path]) -> None:
    """The cancelled log names 72 samples and holds 10: the children meet the missing ones (Inspect's
    IndexError, halved down to the one missing sample) and the parent counts what they counted."""
    parallel, log = _read(inspect_logs["cancelled"], 2, 4)
    serial, one = _read(inspect_logs["cancelled"], 1, 4)
    assert parallel == serial and len(serial) == 10
    assert log.counts == one.counts and log.counts["cancelled"] == 62


def test_stream_closed_early_ends_its_readers(inspect_logs: dict[str, Path]) -> None:
    before = {p.pid for p in multiprocessing.active_children()}
    log = inspect_log.read_inspect([inspect_logs["graded"]], "coherence", readers=2, batch=5)
    next(log.samples)
    log.samples.close()  # type: ignore[attr-defined]  # what a refused import does to the stream
    assert not [p for p in multiprocessing.active_children() if p.pid not in before]


def _bad_grade_in_a_late_batch(src: Path, out: Path) -> Path:
    """The log, rewritten by Inspect as `.eval`, with one grade outside every scale in its 60th
    sample (a batch that the second reader reads)."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(src))
    assert log.samples is not None and log.samples[59].scores is not None
    log.samples[59].scores["model_graded_qa"].value = "maybe"
    write_eval_log(log, str(out))
    return out


def test_a_bad_grade_a_child_reads_refuses_the_whole_import(
    db_url: str, inspect_logs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inspect_log, "BATCH", 6)
    migrate_db(db_url)
    ok = cli("data", "import-inspect", str(inspect_logs["mocked"]), "--name", "kept", db=db_url)
    assert ok.code == 0, ok.stderr
    before = dump(db_url)
    bad = _bad_grade_in_a_late_batch(inspect_logs["graded"], tmp_path / "maybe.eval")
    r = cli("data", "import-inspect", str(bad), "--name", "bad", db=db_url)
    assert r.code == 2 and r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1 and "grade 'maybe' is outside every known scale" in r.stderr, r.stderr
    assert "maybe.eval: sample" in r.stderr
    assert dump(db_url) == before  # nothing of the batches before it was kept


def test_a_parallel_import_stores_what_a_serial_one_stores(
    db_url: str, inspect_logs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole import through the CLI, the log read by two children (batches of 8) and then, in a
    second database, in this process: every stored row but ids and times is the same."""
    from tests.datasets.test_inspect_import import VERDICTS, _rows

    monkeypatch.setattr(inspect_log, "BATCH", 8)
    monkeypatch.setattr(inspect_log, "READERS", 2)
    args = ("data", "import-inspect", str(inspect_logs["graded"]), "--name", "ig", "--json")
    serial_db = f"sqlite:///{tmp_path / 'serial.db'}"
    migrate_db(db_url)
    migrate_db(serial_db)
    parallel = cli(*args, db=db_url)
    assert parallel.code == 0, parallel.stderr
    monkeypatch.setattr(inspect_log, "READERS", 1)
    serial = cli(*args, db=serial_db)
    assert serial.code == 0, serial.stderr
    assert parallel.json() == serial.json() and parallel.json()["verdicts"] == 144

    def rows(url: str) -> list[tuple[Any, ...]]:
        return [
            (ext, rep, dim, shown, float(canon), score, why, judge, _json(messages), raw)
            for ext, rep, dim, shown, canon, score, why, _spec, judge, messages, raw in _rows(
                url, VERDICTS, name="ig"
            )
        ]

    assert rows(db_url) == rows(serial_db)


def test_a_larger_log_is_read_in_larger_batches(
    inspect_logs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each batch parses the archive's directory again, which grows with the log: a batch is a
    `BATCHES`-th of the log when that is more than `BATCH`, up to `MAX_BATCH`."""
    header = inspect_log._header(inspect_logs["graded"])  # 36 ids × 2 epochs
    monkeypatch.setattr(inspect_log, "BATCH", 5)
    monkeypatch.setattr(inspect_log, "BATCHES", 4)
    assert [len(b) for b in inspect_log._batches(header, None)] == [18] * 4
    monkeypatch.setattr(inspect_log, "MAX_BATCH", 10)
    assert [len(b) for b in inspect_log._batches(header, None)] == [10] * 7 + [2]
    monkeypatch.setattr(inspect_log, "BATCHES", 40)  # a 40th is 2: BATCH wins
    batches = inspect_log._batches(header, None)
    assert [len(b) for b in batches] == [5] * 14 + [2]
    assert [x for b in batches for x in b] == [(i, e) for i in header.eval.dataset.sample_ids for e in (1, 2)]
    assert [len(b) for b in inspect_log._batches(header, 7)] == [7] * 10 + [2]  # as asked


def test_ctrl_c_is_left_to_the_parent(inspect_logs: dict[str, Path]) -> None:
    """Ctrl-C reaches the whole process group: a reader must not die of it (printing its traceback
    under the CLI's one line) but leave it to the parent, which ends its readers."""
    import os
    import signal

    before = {p.pid for p in multiprocessing.active_children()}
    log = inspect_log.read_inspect([inspect_logs["graded"]], "coherence", readers=2, batch=2)
    first = next(log.samples)
    readers = [p for p in multiprocessing.active_children() if p.pid not in before]
    assert len(readers) == 2 and all(p.pid is not None for p in readers)
    for p in readers:
        os.kill(p.pid, signal.SIGINT)  # type: ignore[arg-type]
    assert len([first, *log.samples]) == 72  # they read on
