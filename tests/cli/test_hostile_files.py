"""Issue 29 §6: hostile input files are one line, exit 2, and an untouched database.

A FIFO, `/dev/zero` or `/dev/urandom` named as a campaign file, a template, a rubric, a price file
or a label file was read for ever; a 60 MB campaign file got no answer; YAML nested 100,000 deep
gave a 2,991-line traceback; `repeats: 1000000000` was planned (and rendered) without an answer;
an item id of 100,000 characters was stored on SQLite although the schema says at most 300.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from judgepanel.store.engine import make_engine
from judgepanel.store.migrate import upgrade
from tests.cli.test_bad_input import _fingerprint, _one_line_error
from tests.helpers import cli
from tests.runner.conftest import load_tiny

LABELS = "item_id,annotator,group,dimension,value\n"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    d = tmp_path_factory.mktemp("hostile")
    os.mkfifo(d / "fifo.yaml")
    os.mkfifo(d / "fifo.csv")
    (d / "zero.csv").symlink_to("/dev/zero")
    (d / "deep.yaml").write_text("name: deep\ndataset: tiny\njudges: " + "[" * 100_000 + "]" * 100_000 + "\n")
    (d / "deep-block.yaml").write_text(
        "name: deep\n" + "".join(f"{' ' * i}k{i}:\n" for i in range(200)) + " " * 200 + "v: 1\n"
    )
    (d / "deep-rubric.yaml").write_text("name: r\ndimensions: " + "{a: " * 5_000 + "1" + "}" * 5_000 + "\n")
    (d / "big.yaml").write_text("name: big\n" + "# padding\n" * 150_000)  # 1.5 MB
    (d / "repeats.yaml").write_text(
        'name: many\ndataset: tiny\nprotocol: pointwise\nrepeats: 1000000000\njudges: ["sim:a"]\n'
    )
    (d / "longid.csv").write_text(LABELS + "x" * 100_000 + ",h1,g,d,3\n")
    (d / "longdim.csv").write_text(LABELS + "i1,h1,g," + "d" * 101 + ",3\n")
    (d / "deep-prices.yaml").write_text("m: " + "[" * 100_000 + "]" * 100_000 + "\n")
    yield d


@pytest.fixture(scope="module")
def db(module_db_url: str) -> str:
    eng = make_engine(module_db_url)
    upgrade(eng)
    load_tiny(eng, n_groups=1, per_group=2)
    eng.dispose()
    return module_db_url


CREATE = "campaign create c --dataset tiny --protocol pointwise --judge sim:a"
CASES = [
    ("campaign create --from {files}/fifo.yaml", "is a named pipe (FIFO): give a regular file"),
    ("campaign create --from /dev/zero", "is a device: give a regular file"),
    ("campaign create --from /dev/urandom", "is a device: give a regular file"),
    (f"{CREATE} --template pointwise={{files}}/fifo.yaml", "is a named pipe (FIFO)"),
    (f"{CREATE} --template pointwise=/dev/zero", "is a device"),
    ("rubric add /dev/urandom", "is a device"),
    ("rubric add {files}/fifo.yaml", "is a named pipe (FIFO)"),
    ("data import-labels {files}/fifo.csv --dataset x", "is a named pipe (FIFO)"),
    ("data import-labels {files}/zero.csv --dataset x", "is a device"),
    ("campaign create --from {files}/big.yaml", "more than the 1.0 MB such a file may be"),
    ("campaign create --from {files}/deep.yaml", "YAML nested more than 64 levels deep"),
    ("campaign create --from {files}/deep-block.yaml", "YAML nested more than 64 levels deep"),
    ("rubric add {files}/deep-rubric.yaml", "YAML nested more than 64 levels deep"),
    ("campaign create --from {files}/repeats.yaml", "would plan more than the 1,000,000 jobs"),
    (f"{CREATE} --repeats 600000", "would have 1,200,000 jobs, more than the 1,000,000"),
    ("data import-labels {files}/longid.csv --dataset x", "is 100,000 characters, more than the 300"),
    ("data import-labels {files}/longdim.csv --dataset x", "dimension 'ddd"),
    (f"campaign create {'c' * 201} --dataset tiny --protocol pointwise --judge sim:a", "more than the 200"),
    ("annotate create q --dataset tiny --items 1 --instructions /dev/zero", "is a device"),
    ("annotate create q --dataset tiny --items 1 --instructions {files}/fifo.yaml", "is a named pipe (FIFO)"),
]


@pytest.mark.parametrize(("line", "message"), CASES, ids=[c[0][:60] for c in CASES])
def test_a_hostile_file_is_one_line_exit_2_and_changes_nothing(
    db: str, files: Path, line: str, message: str
) -> None:
    before = _fingerprint(db)
    err = _one_line_error(cli(*line.format(files=files).split(), db=db))
    assert message in err, err
    assert _fingerprint(db) == before


@pytest.mark.parametrize("path", ["/dev/zero", "{files}/fifo.yaml", "{files}/deep-prices.yaml"])
def test_a_hostile_price_file_is_one_line(
    db: str, files: Path, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGEPANEL_PRICES", path.format(files=files))
    # `campaign create` reads the price file now (it stores the plan's cost figures and checks a
    # cap against the prices, issue 28 §5), so the hostile file is refused there, storing nothing
    before = _fingerprint(db)
    err = _one_line_error(cli(*CREATE.split(), db=db))
    assert "price file" in err, err
    assert _fingerprint(db) == before
