"""Bad input through the real entry point: every mistake a user can make is one clear line on
stderr, exit 2, nothing on stdout, no traceback, and the database is left as it was.

The table runs on one SQLite database (the messages do not depend on the backend); the database
states (missing file, no tables, an unknown revision, an unreachable server) and Ctrl-C have their
own tests, on PostgreSQL too where the backend matters.
"""

from __future__ import annotations

import json
import shlex
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import create_engine, inspect, text

import judgepanel.store.imports
import judgepanel.store.queries
from judgepanel.resources import sample_path
from tests.helpers import CliResult, cli, load_summeval_sample, migrate_db


def _panel(folder: Path, n: int = 40) -> Path:
    """An alt-test panel: humans h1..h3, judge m1, labels 'a'/'b' (no named dimension)."""
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 2, n)
    cats = np.array(["a", "b"])

    def rater(acc: float) -> dict[str, str]:
        lab = np.where(rng.random(n) < acc, truth, 1 - truth)
        return {f"t{i}": str(cats[lab[i]]) for i in range(n)}

    folder.mkdir()
    (folder / "human_annotations.json").write_text(json.dumps({h: rater(0.8) for h in ("h1", "h2", "h3")}))
    (folder / "llm_annotations.json").write_text(json.dumps({"m1": rater(0.7)}))
    return folder


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("bad")
    (d / "empty.csv").write_text("")
    (d / "empty.jsonl").write_text("")
    (d / "wrongcols.csv").write_text("a,b\n1,2\n")
    (d / "short.csv").write_text("item_id,annotator,group,dimension,value\nx1,h1,g,d,3\nx2,h1,g,d\n")
    (d / "broken.jsonl").write_text('{"item_id": "x", "annotator": "a"\n')
    (d / "binary.csv").write_bytes(bytes(range(256)))
    (d / "notes.txt").write_text("hello\n")
    (d / "bad.yaml").write_text("name: [unclosed\n")
    (d / "folder").mkdir()
    _panel(d / "panel")
    return d


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory, files: Path) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('baddb') / 'judgepanel.db'}"
    load_summeval_sample(url, "se")  # db upgrade + import-summeval with its articles, copied
    steps = [
        ["data", "pairs", "se", "--name", "p", "--sample", "20"],
        ["data", "import-alttest", str(files / "panel"), "--name", "toy"],
        ["rubric", "add", "summeval"],
        [
            "campaign", "create", "pw", "--dataset", "se", "--pairs", "p", "--protocol", "pairwise",
            "--judge", "sim:a", "--limit", "3",
        ],
        ["campaign", "run", "pw"],
    ]  # fmt: skip
    for argv in steps:
        r = cli(*argv, db=url)
        assert r.code == 0, (argv, r.stderr)
    return url


def _fingerprint(url: str) -> dict[str, int]:
    """Row counts of every table: a bad input must change none of them."""
    eng = create_engine(url)
    try:
        with eng.connect() as c:
            tables = inspect(c).get_table_names()
            return {t: int(c.execute(text(f'select count(*) from "{t}"')).scalar_one()) for t in tables}
    finally:
        eng.dispose()


def _one_line_error(r: CliResult, code: int = 2) -> str:
    assert r.code == code, (r.code, r.stdout, r.stderr)
    assert r.stdout == ""
    assert "Traceback" not in r.stderr
    assert r.stderr.endswith("\n") and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("judgepanel: ")
    return r.stderr


SE = "--dataset se"
PW = "campaign create c --dataset se --protocol pointwise --judge sim:a"
ALT = "validate alt-test --dataset toy --judge m1 --epsilon 0.1"
PLAN = "plan overlap --sigma0 0.5 --mu-d 0.1"
ALLOC = "plan allocate --dataset toy --primary h1 --annotators h2,h3 --out {files}/out --name al"

# (command line with {files} for the bad-file folder, what the one stderr line must say)
CASES = [
    # usage errors: one line too, naming the command's --help
    (
        "metrics agreement --dataset se",
        "Missing option '--metric'; see `judgepanel metrics agreement --help`",
    ),
    ("data pairs se --name x --sample many", "Invalid value for '--sample'"),
    ("data nosuch", "No such command 'nosuch'"),
    ("data list --bogus", "No such option: --bogus"),
    # files
    ("data import-summeval {files}/nosuch.jsonl", "nosuch.jsonl: no such file"),
    ("data import-summeval {files}/empty.jsonl --name e", "no rows"),
    ("data import-summeval {files}/folder --name e", "is a folder"),
    ("data import-summeval {files}/binary.csv --name e", "binary.csv:1: not JSON"),
    ("data import-summeval {files}/notes.txt --name e", "notes.txt:1: not JSON"),
    ("data import-alttest {files}/notes.txt --name e", "not a folder"),
    ("data import-alttest {files}/folder --name e", "no human_annotations.json"),
    ("data import-alttest {files}/panel --name se", "pass --replace"),
    ("data import-labels {files}/folder --dataset e", "is a folder, expected a file"),
    ("data import-labels {files}/wrongcols.csv --dataset e", "missing column(s) item_id"),
    ("data import-labels {files}/short.csv --dataset e", "short.csv:3: field 'value': missing"),
    ("data import-labels {files}/broken.jsonl --dataset e", "broken.jsonl:1: not JSON"),
    ("data import-labels {files}/notes.txt --dataset e", "unknown format"),
    ("data import-items {files}/wrongcols.csv --dataset e", "wrongcols.csv:2: field 'id': missing"),
    ("data import-items {files}/empty.csv --dataset e", "no item rows"),
    ("rubric add {files}/bad.yaml", "not valid YAML"),
    ("rubric add {files}/nosuch.yaml", "no such rubric file"),
    # unknown names
    ("data pairs nosuch --name x", "no dataset named 'nosuch'"),
    ("data duplicates nosuch --json", "no dataset named 'nosuch'"),
    ("metrics agreement --pairs nosuch --metric alpha", "no pair set named 'nosuch'"),
    ("metrics matrix --pairs nosuch", "no pair set named 'nosuch'"),
    ("metrics bias --campaign nosuch", "no campaign named 'nosuch'"),
    ("campaign plan nosuch", "no campaign named 'nosuch'"),
    ("campaign status nosuch --json", "no campaign named 'nosuch'"),
    ("campaign run nosuch", "no campaign named 'nosuch'"),
    ("validate loo --dataset toy --judge nosuch", "no judge 'nosuch'"),
    ("validate loo --dataset toy --judge h1", "'h1' is a human annotator"),
    ("rubric show nosuch", "no rubric named 'nosuch'"),
    (f"{PW} --rubric nosuch --condition rubric", "no rubric named 'nosuch'"),
    (f"{PW} --rubric summeval@99 --condition rubric --dimension coherence", "has no version 99"),
    (f"{PW} --rubric summeval@x", "must be a positive integer"),
    # option values
    ("data pairs se --name x --sample 0", "--sample must be at least 1"),
    ("data pairs se --name x --tie-eps -1", "--tie-eps must not be negative"),
    ("data pairs se --name x --tie-eps nan", "--tie-eps must be a finite number"),
    ("data pairs se --name ''", "pair set name must not be empty"),
    (f"metrics agreement {SE} --dimension coherence --metric nosuch", "unknown metric 'nosuch'"),
    (f"metrics agreement {SE} --dimension coherence --metric alpha --level nosuch", "unknown level 'nosuch'"),
    (f"metrics agreement {SE} --dimension coherence --metric cohen", "exactly two raters"),
    (f"metrics agreement {SE} --dimension nosuch --metric alpha", "no dimension 'nosuch'"),
    (
        f"metrics agreement {SE} --dimension coherence --metric alpha --bootstrap -1",
        "--bootstrap must not be",
    ),
    ("metrics agreement --dataset toy --dimension x --metric alpha", "no named dimensions"),
    ("metrics matrix --pairs p --clusters 0", "at least 1"),
    ("metrics heldout --pairs p --train -1", "--train must leave units on both sides"),
    (f"{PW} --protocol nosuch", "--protocol must be one of"),
    ("campaign create c --dataset se --protocol pointwise --judge gpt4", "PROVIDER:MODEL"),
    ("campaign create c --dataset se --protocol pointwise --judge nosuch:m", "unknown provider 'nosuch'"),
    (
        "campaign create c --dataset se --protocol pointwise --judge 'openai:m?temperature=hot'",
        "'temperature'",
    ),
    ("campaign create c --dataset se --protocol pointwise --judge 'openai:m?api_key=sk-x'", "refused"),
    (
        "campaign create c --dataset se --protocol pointwise --judge 'openai:m?base_url=http://u:pw@127.0.0.1/v1'",
        "must not carry credentials",
    ),
    (f"{PW} --condition nosuch", "--condition must be one of"),
    (f"{PW} --condition rubric", "needs --rubric"),
    (f"{PW} --rubric summeval --condition rubric", "needs --dimension"),
    (f"{PW} --rubric summeval --condition rubric --dimension nosuch", "has no dimension 'nosuch'"),
    (f"{PW} --repeats 0", "--repeats must be at least 1"),
    (f"{PW} --limit -1", "--limit must be at least 1"),
    (f"{PW} --split nosuch", "nothing to judge in split 'nosuch'"),
    (f"{PW} --judge sim:a", "given twice"),
    ("campaign create pw --dataset se --protocol pointwise --judge sim:b", "exists with another spec"),
    ("campaign run pw --concurrency 0", "--concurrency must be at least 1"),
    ("campaign run pw --max-cost -1", "--max-cost must be"),
    (f"{ALT.replace('0.1', '-0.1')}", "epsilon must be in [0, 1]"),
    (f"{ALT} --q 0", "q must be in (0, 1)"),
    (f"{ALT} --min-instances 0", "min-instances must be at least 2"),
    (f"{ALT} --min-humans 1", "min-humans must be at least 2"),
    (f"{ALT} --scorer nosuch", "unknown scorer 'nosuch'"),
    (f"{ALT} --dimension nosuch", "no named dimensions; leave out --dimension"),
    ("validate alt-test --dataset toy --judge m1", "Missing option '--epsilon'"),
    ("validate loo --dataset toy --judge m1 --epsilon -1", "epsilon must be in [0, 1]"),
    ("validate loo --dataset toy --judge m1 --agreement nosuch", "unknown agreement 'nosuch'"),
    ("validate loo --dataset toy --judge m1 --agreement cohen --level interval", "--level applies to"),
    (f"{PLAN.replace('0.5', 'nan')}", "--sigma0 must be a finite number"),
    (f"{PLAN} --epsilon -1", "--epsilon must be in [0, 1]"),
    (f"{PLAN} --delta-min -1", "--delta-min"),
    (f"{PLAN} --delta-min 0.1 --judges 1", "--judges must be at least 2"),
    (f"{PLAN} --coverage 0", "coverage must be in (0, 1]"),
    (f"{PLAN} --coverage 1.5", "coverage must be in (0, 1]"),
    (f"{ALLOC} --coverage 0", "coverage must be in (0, 1]"),
    (f"{ALLOC} --coverage 0.5 --design nosuch", "unknown design 'nosuch'"),
    ("simulate designs --replications 2 --epsilon -1", "epsilon must be in [0, 1]"),
    ("simulate designs --replications 2 --epsilon nan", "epsilon must be in [0, 1]"),
    ("simulate designs --replications 2 --coverage 0", "coverage must be in (0, 1]"),
    ("simulate designs --replications 0", "replications must be at least 1"),
    # query and db
    ("query ''", "empty query"),
    ("query 'delete from dataset'", "read-only"),
    ("query 'select 1' --format xml", "--format must be one of"),
    ("query \"attach database '{files}/attached.db' as x\"", "no ATTACH"),
    ("db upgrade nosuch", "cannot upgrade to 'nosuch'"),
]


@pytest.mark.parametrize(("line", "message"), CASES, ids=[c[0][:60] for c in CASES])
def test_bad_input_is_one_line_exit_2_and_changes_nothing(
    db: str, files: Path, line: str, message: str
) -> None:
    before = _fingerprint(db)
    err = _one_line_error(cli(*shlex.split(line.format(files=files)), db=db))
    assert message in err, err
    assert _fingerprint(db) == before
    assert not (files / "attached.db").exists()  # ATTACH created no file either


# ---------------------------------------------------------------- database states

COMMANDS = [
    ["data", "list"],
    ["data", "pairs", "se", "--name", "x"],
    ["metrics", "agreement", "--dataset", "se", "--metric", "alpha"],
    ["campaign", "status", "c", "--json"],
    ["validate", "loo", "--dataset", "d", "--judge", "j"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_missing_database_file_is_not_created(tmp_path: Path, argv: list[str]) -> None:
    path = tmp_path / "typo" / "judgepanel.db"
    err = _one_line_error(cli(*argv, db=f"sqlite:///{path}"))
    assert f"no database at {path}: run `judgepanel db upgrade` first" in err
    assert not path.exists() and not path.parent.exists()


def test_default_database_in_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JUDGEPANEL_DB", raising=False)
    assert "no database at judgepanel.db" in _one_line_error(cli("data", "list"))
    assert cli("db", "upgrade").code == 0 and (tmp_path / "judgepanel.db").exists()
    assert cli("data", "list", "--json").json() == {"datasets": [], "pair_sets": []}


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_database_without_tables_asks_for_db_upgrade(db_url: str, argv: list[str]) -> None:
    """A user who forgot `db upgrade` (an empty SQLite file, or a fresh PostgreSQL database)."""
    if db_url.startswith("sqlite"):
        sqlite3.connect(db_url.removeprefix("sqlite:///")).close()
    err = _one_line_error(cli(*argv, db=db_url))
    assert "has no judgepanel tables: run `judgepanel db upgrade` first" in err
    assert _fingerprint(db_url) == {}


def test_database_downgraded_to_base_asks_for_db_upgrade(db_url: str) -> None:
    assert cli("db", "upgrade", db=db_url).code == 0
    assert cli("db", "downgrade", "base", db=db_url).code == 0
    err = _one_line_error(cli("data", "list", db=db_url))
    assert "run `judgepanel db upgrade`" in err


def test_database_from_a_newer_judgepanel(sqlite_url: str) -> None:
    migrate_db(sqlite_url)
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as conn:
        conn.execute("update alembic_version set version_num = 'ffff'")
    err = _one_line_error(cli("data", "list", db=sqlite_url))
    assert "revision ffff, which this judgepanel does not know" in err


def test_database_url_mistakes(tmp_path: Path) -> None:
    assert "not a database URL" in _one_line_error(cli("data", "list", db="nonsense"))
    assert "unsupported database 'mysql'" in _one_line_error(cli("data", "list", db="mysql://u@h/d"))
    assert "is a folder, not a database file" in _one_line_error(
        cli("db", "upgrade", db=f"sqlite:///{tmp_path}")
    )


def test_unreachable_server_is_one_line_exit_1() -> None:
    # nothing listens on port 9 of the loopback: connection refused at once
    err = _one_line_error(cli("data", "list", db="postgresql://u@127.0.0.1:9/x"), code=1)
    assert "database: connection failed" in err


# ---------------------------------------------------------------- Ctrl-C


def test_ctrl_c_is_one_line_exit_130(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*_a: object, **_k: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(judgepanel.store.queries, "list_datasets", interrupted)
    r = cli("data", "list", "--json", db=db)
    assert (r.code, r.stdout, r.stderr) == (130, "", "judgepanel: interrupted\n")


def test_ctrl_c_during_an_import_stores_nothing(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Interrupted after the items are written and before the labels: the import rolls back."""
    real = judgepanel.store.imports._chunks
    calls = []

    def chunks(rows: list[dict[str, object]]) -> object:
        calls.append(len(rows))
        if len(calls) == 2:  # items went in; now the labels
            raise KeyboardInterrupt
        return real(rows)

    monkeypatch.setattr(judgepanel.store.imports, "_chunks", chunks)
    before = _fingerprint(db)
    args = ["data", "import-summeval", str(sample_path("summeval_sample.jsonl.gz")), "--name", "interrupted"]
    r = cli(*args, db=db)
    assert (r.code, r.stderr) == (130, "judgepanel: interrupted\n") and len(calls) == 2
    assert _fingerprint(db) == before


# ---------------------------------------------------------------- query stays read-only

ESCAPES = [
    ("commit; delete from label; select 1", "exactly one statement"),
    ("select 1; delete from label", "exactly one statement"),
    ("rollback; set transaction read write; delete from label returning 1", "exactly one statement"),
    # PostgreSQL refuses the writing CTE as read-only; SQLite has no writing CTEs at all
    ("with d as (delete from label returning 1) select count(*) from d", "read-only|syntax error"),
    ("commit", "returned no rows|no transaction is active"),
]


@pytest.fixture
def labelled(db_url: str, tmp_path: Path) -> str:
    migrate_db(db_url)  # a copy of the run's one migrated database (`tests.helpers.migrate_db`)
    f = tmp_path / "l.csv"
    f.write_text("item_id,annotator,group,dimension,value\nq1,a,g,d,1\nq2,a,g,d,2\n")
    assert cli("data", "import-labels", str(f), "--dataset", "qa", db=db_url).code == 0
    return db_url


def test_query_runs_one_statement_and_cannot_write(labelled: str) -> None:
    """On PostgreSQL a plain execute ran `commit; delete …` after ending the read-only transaction."""
    before = _fingerprint(labelled)
    assert before["label"] == 2
    for sql, message in ESCAPES:
        err = _one_line_error(cli("query", sql, db=labelled))
        assert any(m in err for m in message.split("|")), (sql, err)
        assert _fingerprint(labelled) == before, sql
    # what a one-statement reader needs still works: %, :name-like text and casts pass through untouched
    out = cli(
        "query", "select '50%' as p, 'a :b' as c, count(*) as n from label", "--json", db=labelled
    ).json()
    assert out["rows"] == [{"p": "50%", "c": "a :b", "n": 2}]
