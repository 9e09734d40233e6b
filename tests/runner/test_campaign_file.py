"""Campaign files: create --from FILE, line-numbered errors, flags override, show --yaml round trip."""

from __future__ import annotations

import hashlib
import textwrap
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from judgepanel.store.models import Campaign, Job
from tests.helpers import cli
from tests.runner.conftest import DATASET, PAIRS, tiny_db

TEMPLATE = """Which summary is better?
<source>{{ source }}</source>
<candidate_a>{{ candidate_a }}</candidate_a>
<candidate_b>{{ candidate_b }}</candidate_b>
End with `Verdict: A`, `Verdict: B` or `Verdict: tie`.
"""


@pytest.fixture
def db(sqlite_url: str) -> tuple[str, Engine]:
    eng = tiny_db(sqlite_url, pairs=3)
    return sqlite_url, eng


def _write(folder: Path, body: str) -> Path:
    (folder / "prompts").mkdir(exist_ok=True)
    (folder / "prompts" / "mine.j2").write_text(TEMPLATE, encoding="utf-8")
    path = folder / "campaign.yaml"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


FILE = f"""\
name: c1
dataset: {DATASET}
pairs: {PAIRS}
protocol: pairwise
repeats: 2
templates:
  pairwise: prompts/mine.j2
judges:
  - "sim:a?noise=0.1"
  - sim:b
max_cost: 5.0
"""


def _count(eng: Engine, model: type) -> int:
    with eng.connect() as c:
        return int(c.scalar(select(func.count()).select_from(model)) or 0)


def test_a_campaign_file_creates_the_campaign_and_its_hash_is_stored(
    db: tuple[str, Engine], tmp_path: Path
) -> None:
    url, eng = db
    path = _write(tmp_path, FILE)
    made = cli("campaign", "create", "--from", str(path), "--json", db=url).json()
    assert made["campaign"] == "c1" and made["jobs"] == 3 * 2 * 2 * 2
    assert made["judges"] == ["sim:a?noise=0.1", "sim:b"]
    with eng.connect() as c:
        spec = c.scalar(select(Campaign.spec))
    assert spec["origin"] == {
        "file": str(path.resolve()),
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
    }
    assert spec["templates"]["pairwise"]["path"] == str((tmp_path / "prompts" / "mine.j2").resolve())
    assert spec["max_cost"] == 5.0 and spec["repeats"] == 2


def test_flags_override_the_file(db: tuple[str, Engine], tmp_path: Path) -> None:
    url, _ = db
    path = _write(tmp_path, FILE)
    made = cli(
        "campaign",
        "create",
        "other",
        "--from",
        str(path),
        "--repeats",
        "1",
        "--judge",
        "sim:c",
        "--json",
        db=url,
    ).json()
    assert (made["campaign"], made["judges"], made["jobs"]) == ("other", ["sim:c"], 3 * 2)


def test_show_yaml_writes_a_file_that_recreates_the_same_campaign(
    db: tuple[str, Engine], tmp_path: Path
) -> None:
    url, eng = db
    path = _write(tmp_path, FILE)
    assert cli("campaign", "create", "--from", str(path), db=url).code == 0
    shown = cli("campaign", "show", "c1", "--yaml", db=url)
    assert shown.code == 0 and "max_cost: 5.0" in shown.stdout
    back = tmp_path / "back.yaml"
    back.write_text(shown.stdout, encoding="utf-8")
    again = cli("campaign", "create", "--from", str(back), "--json", db=url).json()
    assert again["added"] == 0 and again["jobs"] == 24  # the same campaign: nothing new planned
    assert _count(eng, Campaign) == 1 and _count(eng, Job) == 24


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (FILE + "temperature: 0\n", "campaign.yaml:12: unknown key 'temperature'"),
        (FILE.replace("repeats: 2", "repeats: two"), "campaign.yaml:5: repeats: expected a whole number"),
        (
            FILE.replace('  - "sim:a?noise=0.1"\n  - sim:b\n', ""),
            "campaign.yaml:8: judges: expected a non-empty list",
        ),
        (
            FILE.replace("protocol: pairwise", "protocol: [pairwise]"),
            "campaign.yaml:4: protocol: expected text",
        ),
        (FILE + "dataset: again\n", "campaign.yaml:12: dataset is given twice"),
        ("dataset: [unclosed\n", "campaign.yaml:2: not valid YAML"),
        ("- a\n- b\n", "campaign.yaml:1: a campaign file is a mapping"),
        (FILE.replace("name: c1\n", ""), "missing NAME (or `name:` in"),
        (FILE.replace("prompts/mine.j2", "prompts/none.j2"), "template file"),
        # a value of the right type that a check refuses names the file line and key, not a flag
        # the user never typed (issue 17 §5)
        (
            FILE.replace("protocol: pairwise", "protocol: pairwize"),
            "campaign.yaml:4: protocol: must be one of",
        ),
        (FILE.replace("repeats: 2", "repeats: 0"), "campaign.yaml:5: repeats: must be at least 1"),
        (FILE.replace("max_cost: 5.0", "max_cost: -1"), "campaign.yaml:11: max_cost: must be a positive"),
        (
            FILE.replace("  - sim:b\n", "  - sim:b?bogus=1\n"),
            "campaign.yaml:10: judges: unknown parameter 'bogus'",
        ),
        (FILE.replace("  - sim:b\n", "  - nope\n"), "campaign.yaml:10: judges: judge spec must look like"),
        (
            FILE.replace('"sim:a?noise=0.1"', '"sim:a?noise=99"'),
            "campaign.yaml:9: judges: judge spec parameter 'noise'",
        ),
        (
            FILE.replace(f"dataset: {DATASET}", "dataset: nosuch"),
            "campaign.yaml:2: dataset: no dataset named 'nosuch'",
        ),
        (
            FILE.replace(f"pairs: {PAIRS}", "pairs: nosuch"),
            "campaign.yaml:3: pairs: no pair set named 'nosuch'",
        ),
        (FILE + "rubric: nosuch\n", "campaign.yaml:12: rubric: no rubric named 'nosuch'"),
        (FILE + "conditions: [none, nonsense]\n", "campaign.yaml:12: conditions: must be one of"),
        (FILE + "limit: -3\n", "campaign.yaml:12: limit: must be at least 1"),
    ],
)
def test_mistakes_are_one_line_with_the_line_number_and_store_nothing(
    db: tuple[str, Engine], tmp_path: Path, body: str, expected: str
) -> None:
    url, eng = db
    path = _write(tmp_path, body)
    got = cli("campaign", "create", "--from", str(path), db=url)
    assert got.code == 2, got.stderr
    assert expected in got.stderr and len(got.stderr.strip().splitlines()) == 1
    assert _count(eng, Campaign) == 0


def test_a_bad_value_given_as_a_flag_names_the_flag(db: tuple[str, Engine], tmp_path: Path) -> None:
    url, eng = db
    path = _write(tmp_path, FILE.replace("repeats: 2", "repeats: 0"))
    got = cli("campaign", "create", "--from", str(path), "--repeats", "-1", db=url)
    assert (
        got.code == 2
        and "--repeats must be at least 1, got -1" in got.stderr
        and "campaign.yaml" not in got.stderr
    )
    assert _count(eng, Campaign) == 0


def test_a_missing_file_is_one_line(db: tuple[str, Engine], tmp_path: Path) -> None:
    url, _ = db
    got = cli("campaign", "create", "--from", str(tmp_path / "nope.yaml"), db=url)
    assert got.code == 2 and "does not exist" in got.stderr


def test_the_files_budget_is_the_default_of_run(db: tuple[str, Engine], tmp_path: Path) -> None:
    url, _ = db
    body = FILE.replace('  - "sim:a?noise=0.1"\n  - sim:b\n', '  - "sim:a?price_in=1000&price_out=1000"\n')
    path = _write(tmp_path, body.replace("max_cost: 5.0", "max_cost: 0.5"))
    assert cli("campaign", "create", "--from", str(path), db=url).code == 0
    run = cli("campaign", "run", "c1", "--concurrency", "1", "--json", db=url)
    assert run.code == 3
    assert '"status": "budget"' in run.stdout and "stopped by the campaign's cap of 0.5 USD" in run.stderr
    unlimited = cli("campaign", "run", "c1", "--max-cost", "1000", "--json", db=url)
    assert unlimited.code == 0  # a flag overrides the file's budget
