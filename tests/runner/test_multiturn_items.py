"""Multi-turn and reference-guided items from `data import-items` to the stored request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import Engine, select

from judgepanel.store.engine import make_engine
from judgepanel.store.models import Item, Request
from tests.helpers import cli, migrate_db

TURNS = [
    {"role": "user", "content": "Name a prime number."},
    {"role": "assistant", "content": "7 is prime."},
    {"role": "user", "content": "Now name an even prime."},
]
ROWS = [
    {
        "id": "q1-x",
        "conversation": [*TURNS, {"role": "assistant", "content": "2 is the only even prime."}],
        "reference": "2",
    },
    {"id": "q1-y", "conversation": TURNS, "output": "4 is an even prime.", "reference": "2"},
]


@pytest.fixture
def db(sqlite_url: str, tmp_path: Path) -> tuple[str, Engine, Path]:
    migrate_db(sqlite_url)
    eng = make_engine(sqlite_url)
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return sqlite_url, eng, path


def test_conversations_and_references_are_imported_and_shown_to_the_judge(
    db: tuple[str, Engine, Path],
) -> None:
    url, eng, path = db
    assert cli("data", "import-items", str(path), "--dataset", "mt", db=url).code == 0
    with eng.connect() as c:
        items = {r.external_id: r for r in c.execute(select(Item.external_id, Item.output, Item.meta))}
    # without an output, the conversation's final assistant turn is the reply judged
    assert items["q1-x"].output == "2 is the only even prime."
    assert items["q1-y"].meta["conversation"] == TURNS and items["q1-y"].meta["reference"] == "2"
    made = cli(
        "campaign",
        "create",
        "c",
        "--dataset",
        "mt",
        "--protocol",
        "pointwise",
        "--judge",
        "sim:a",
        "--template",
        "pointwise=@classic-single-ref",
        db=url,
    )
    assert made.code == 0, made.stderr
    assert cli("campaign", "run", "c", "--json", db=url).json()["done"] == 2
    with eng.connect() as c:
        prompts = [m[-1]["content"] for m in c.scalars(select(Request.messages))]
    for text in prompts:
        assert '<turn role="user">\nNow name an even prime.\n</turn>' in text
        assert "<reference>\n2\n</reference>" in text
        # the judged reply is shown once, as the candidate, not again as a turn
        assert text.count("2 is the only even prime.") <= 1


@pytest.mark.parametrize(
    ("conversation", "expected"),
    [
        ([], "expected a non-empty list"),
        ([{"role": "robot", "content": "hi"}], "turn 1: role must be one of"),
        ([{"role": "user", "text": "hi"}], "turn 1: expected an object with exactly role and content"),
        ("hello", "expected a non-empty list"),
    ],
)
def test_a_malformed_conversation_is_one_line_and_imports_nothing(
    db: tuple[str, Engine, Path], conversation: object, expected: str
) -> None:
    url, eng, path = db
    path.write_text(
        json.dumps({"id": "q", "output": "x", "conversation": conversation}) + "\n", encoding="utf-8"
    )
    got = cli("data", "import-items", str(path), "--dataset", "mt", db=url)
    assert got.code == 2 and f"{path}:1: field 'conversation': {expected}" in got.stderr
    with eng.connect() as c:
        assert c.scalar(select(Item.id)) is None


def test_real_mtbench_turn_two_pairs_run_with_the_classic_pairwise_template(
    sqlite_url: str, shared_data: Path
) -> None:
    """MT-Bench turn-2 answers follow each model's own first answer, so the two items of a pair
    have different conversations: the classic template shows each beside its candidate."""
    migrate_db(sqlite_url)
    eng = make_engine(sqlite_url)
    assert cli("data", "import-mtbench", str(shared_data / "mtbench"), "--json", db=sqlite_url).code == 0
    made = cli(
        "campaign",
        "create",
        "mt",
        "--dataset",
        "mtbench",
        "--pairs",
        "mtbench-human",
        "--protocol",
        "pairwise",
        "--judge",
        "sim:mt",
        "--template",
        "pairwise=@classic-pairwise",
        "--limit",
        "30",
        db=sqlite_url,
    )
    assert made.code == 0, made.stderr
    run = cli("campaign", "run", "mt", "--json", db=sqlite_url)
    assert run.code == 0, run.stderr
    assert run.json()["done"] == 60
    with eng.connect() as c:
        prompts = [m[-1]["content"] for m in c.scalars(select(Request.messages))]
    two_turns = [p for p in prompts if p.count('<turn role="user">') == 4]  # 2 user turns per side
    assert two_turns, "no turn-2 pair among the first 30"
    for p in two_turns:
        a_first = p[p.index("<conversation_a>") : p.index("</conversation_a>")]
        b_first = p[p.index("<conversation_b>") : p.index("</conversation_b>")]
        assert a_first != b_first  # each model's own earlier answer
    eng.dispose()
