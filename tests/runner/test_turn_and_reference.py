"""Judging a chosen turn of a conversation (`--turn N`) and reference-guided templates chosen per
item category (`--reference-categories`), end to end against the fake OpenAI-compatible server on
both database backends; the messages sent are compared with golden files."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from judgepanel.datasets.records import ItemRecord, ParsedDataset
from judgepanel.fake.server import FakeServerProcess
from judgepanel.store.engine import make_engine
from judgepanel.store.imports import import_parsed
from judgepanel.store.models import Campaign, Item, Job, Pair, Request
from judgepanel.store.queries import create_pair_set
from tests.helpers import cli, migrate_db

GOLDEN = Path(__file__).parent / "golden"
QUESTIONS = {
    "q1": ("math", ["What is 17 * 3?", "Now divide that by 3."], "17 * 3 = 51; 51 / 3 = 17."),
    "q2": ("writing", ["Write one line about the sea.", "Now make it rhyme."], None),
}
ANSWERS = {
    "m1": {
        "q1": ["17 * 3 is 51.", "51 / 3 is 17."],
        "q2": ["The sea is wide.", "The sea is wide, the tide is high."],
    },
    "m2": {"q1": ["It is 41.", "41 / 3 is about 13.7."], "q2": ["Waves.", "Waves behave."]},
}


def items() -> list[ItemRecord]:
    """One item per question and model: the whole two-turn conversation, the last reply as output."""
    out = []
    for model, by_q in ANSWERS.items():
        for qid, (category, turns, ref) in QUESTIONS.items():
            a1, a2 = by_q[qid]
            conv = [
                {"role": "user", "content": turns[0]},
                {"role": "assistant", "content": a1},
                {"role": "user", "content": turns[1]},
                {"role": "assistant", "content": a2},
            ]
            meta = {"category": category, "conversation": conv, **({"reference": ref} if ref else {})}
            out.append(
                ItemRecord(f"{qid}-{model}", len(out), group_key=qid, output=a2, system=model, meta=meta)
            )
    return out


@pytest.fixture
def db(db_url: str) -> Iterator[tuple[str, Engine]]:
    migrate_db(db_url)
    eng = make_engine(db_url)
    parsed = ParsedDataset(kind="items", source_hash="conv-1", items=items(), annotators=[], labels=[])
    import_parsed(eng, "conv", parsed)
    create_pair_set(eng, "conv", "conv-pairs", seed=1)
    yield db_url, eng
    eng.dispose()


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServerProcess]:
    with FakeServerProcess("--seed", "3") as server:
        yield server


def judge(fake: FakeServerProcess) -> str:
    return f"openai:local?base_url={fake.url}/v1&temperature=0"


def create(url: str, name: str, fake: FakeServerProcess, *extra: str, protocol: str = "pairwise") -> int:
    pairs = ("--pairs", "conv-pairs") if protocol == "pairwise" else ()
    got = cli(
        "campaign", "create", name, "--dataset", "conv", "--protocol", protocol,
        "--judge", judge(fake), *pairs, *extra, db=url,
    )  # fmt: skip
    assert got.code == 0, got.stderr
    return got.code


def sent(eng: Engine, campaign: str) -> list[tuple[str, str | None, str, str, str]]:
    """(request hash, order, template name, user message, first item's id) of every request."""
    with eng.connect() as c:
        rows = c.execute(
            select(
                Request.request_hash,
                Job.order,
                Request.template_name,
                Request.messages,
                Job.pair_id,
                Job.item_id,
            )
            .join(Job, Job.id == Request.job_id)
            .join(Campaign, Campaign.id == Job.campaign_id)
            .where(Campaign.name == campaign)
        ).all()
        pair_item = dict(c.execute(select(Pair.id, Pair.item_a_id)).all())
        ext = dict(c.execute(select(Item.id, Item.external_id)).all())
    return [
        (h, o, t, m[-1]["content"], ext[pair_item[p] if p is not None else i]) for h, o, t, m, p, i in rows
    ]


def golden(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("JUDGEPANEL_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no golden file {path}; run with JUDGEPANEL_UPDATE_GOLDEN=1 and review it"
    assert text == path.read_text(encoding="utf-8")


def _between(text: str, tag: str) -> str:
    return text.split(f"<{tag}>\n", 1)[1].split(f"\n</{tag}>", 1)[0]


def test_a_chosen_turn_is_judged_with_the_turns_before_it_as_context(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    url, eng = db
    for turn in ("1", "2"):
        create(url, f"t{turn}", fake, "--template", "pairwise=@classic-pairwise", "--turn", turn)
        run = cli("campaign", "run", f"t{turn}", "--json", db=url)
        assert run.code == 0, run.stderr
        assert run.json()["done"] == 2 * 2  # 2 pairs (one per question) x AB/BA
    t1, t2 = sent(eng, "t1"), sent(eng, "t2")
    # turn 1: the first replies, after the first question only; turn 2: the second replies, after
    # the whole first exchange of each candidate
    for _, _, name, user, _ in t1:
        assert name == "@classic-pairwise"
        a, b = _between(user, "candidate_a"), _between(user, "candidate_b")
        firsts = {by_q[q][0] for by_q in ANSWERS.values() for q in QUESTIONS}
        assert {a, b} <= firsts
        conv = _between(user, "conversation_a")
        assert "Now divide" not in conv and "Now make it rhyme" not in conv and "assistant" not in conv
    for _, _, _, user, _ in t2:
        seconds = {by_q[q][1] for by_q in ANSWERS.values() for q in QUESTIONS}
        assert {_between(user, "candidate_a"), _between(user, "candidate_b")} <= seconds
        assert _between(user, "conversation_a").count('<turn role="assistant">') == 1
    # the request hash changes with the turn
    assert not {r[0] for r in t1} & {r[0] for r in t2}
    # AB and BA show the same two replies, each with its own conversation, in swapped slots
    for rows in (t1, t2):
        by_pair: dict[str, dict[str | None, str]] = {}
        for _, order, _, user, first in rows:
            by_pair.setdefault(first, {})[order] = user
        for both in by_pair.values():
            ab, ba = both["AB"], both["BA"]
            assert _between(ab, "candidate_a") == _between(ba, "candidate_b")
            assert _between(ab, "candidate_b") == _between(ba, "candidate_a")
            assert _between(ab, "conversation_a") == _between(ba, "conversation_b")
            assert _between(ab, "conversation_b") == _between(ba, "conversation_a")
            assert _between(ab, "candidate_a") != _between(ab, "candidate_b")
    q1_ab = next(u for _, o, _, u, first in t1 if o == "AB" and first.startswith("q1"))
    golden("turn1_pairwise_q1_ab", q1_ab)
    q1_ab2 = next(u for _, o, _, u, first in t2 if o == "AB" and first.startswith("q1"))
    golden("turn2_pairwise_q1_ab", q1_ab2)


def test_a_pointwise_turn_and_a_turn_an_item_does_not_have(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    url, eng = db
    create(url, "p1", fake, "--template", "pointwise=@classic-single", "--turn", "1", protocol="pointwise")
    assert cli("campaign", "run", "p1", "--json", db=url).json()["done"] == 4
    rows = sorted(sent(eng, "p1"), key=lambda r: r[4])
    golden("turn1_single_q1_m1", rows[0][3])
    assert _between(rows[0][3], "candidate") == "17 * 3 is 51."
    # a third turn does not exist: refused in one line, nothing stored
    with eng.connect() as c:
        before = c.scalar(select(func.count()).select_from(Campaign))
    got = cli(
        "campaign", "create", "p3", "--dataset", "conv", "--protocol", "pointwise", "--judge", judge(fake),
        "--template", "pointwise=@classic-single", "--turn", "3", db=url,
    )  # fmt: skip
    assert got.code == 2 and len(got.stderr.strip().splitlines()) == 1
    assert "no item has an assistant reply at turn 3 (--turn)" in got.stderr
    with eng.connect() as c:
        assert c.scalar(select(func.count()).select_from(Campaign)) == before


def test_units_without_the_turn_are_left_out_and_counted(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    """As with MT-Bench's items (one per question, model and turn), an item whose conversation
    stops earlier has no reply at that turn: its units are not planned, and the count says so;
    a job whose item lost the turn after planning fails with one line naming it."""
    url, eng = db
    one_turn = ItemRecord(
        "q3-m1", 99, group_key="q3", output="Paris.", system="m1",
        meta={"conversation": [{"role": "user", "content": "Capital of France?"}]},
    )  # fmt: skip
    parsed = ParsedDataset(
        kind="items", source_hash="conv-2", items=[*items(), one_turn], annotators=[], labels=[]
    )
    import_parsed(eng, "conv2", parsed)
    argv = (
        "campaign", "create", "p2", "--dataset", "conv2", "--protocol", "pointwise", "--judge", judge(fake),
        "--template", "pointwise=@classic-single", "--turn", "2", "--json",
    )  # fmt: skip
    made = cli(*argv, db=url).json()
    assert made["jobs"] == 4 and made["skipped_no_turn"] == 1
    assert cli(*argv[:-1], "--turn", "1", "--json", db=url).code == 2  # another spec: refused
    with eng.begin() as c:  # the item loses its second reply after planning
        c.execute(
            Item.__table__.update()
            .where(Item.external_id == "q1-m1")
            .values(meta={"conversation": [{"role": "user", "content": "What is 17 * 3?"}]}, output="51")
        )
    run = cli("campaign", "run", "p2", "--json", db=url)
    warnings = run.json(code=3)["warnings"]
    assert any("item 'q1-m1' has 1 assistant reply; turn 2 was asked for (--turn)" in w for w in warnings)


def test_a_turn_without_a_conversation_template_is_refused(
    db: tuple[str, Engine], fake: FakeServerProcess
) -> None:
    url, eng = db
    got = cli(
        "campaign", "create", "x", "--dataset", "conv", "--protocol", "pairwise", "--pairs", "conv-pairs",
        "--judge", judge(fake), "--turn", "2", db=url,
    )  # fmt: skip
    assert got.code == 2 and len(got.stderr.strip().splitlines()) == 1
    assert "--turn needs a pairwise template that shows the conversation" in got.stderr
    with eng.connect() as c:
        assert c.scalar(select(func.count()).select_from(Campaign)) == 0


def test_reference_guided_template_chosen_per_item_category(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str], tmp_path: Path
) -> None:
    url, eng = db
    create(
        url, "r", fake, "--template", "pairwise=@classic-pairwise", "--reference-categories", "math,reasoning"
    )
    assert cli("campaign", "run", "r", "--json", db=url).json()["done"] == 4
    rows = sent(eng, "r")
    names = {first.split("-")[0]: name for _, _, name, _, first in rows}
    assert names == {"q1": "@classic-pairwise-ref", "q2": "@classic-pairwise"}
    q1 = next(u for _, o, _, u, first in rows if o == "AB" and first.startswith("q1"))
    q2 = next(u for _, o, _, u, first in rows if o == "AB" and first.startswith("q2"))
    assert _between(q1, "reference") == "17 * 3 = 51; 51 / 3 = 17." and "<reference>" not in q2
    golden("category_math_reference", q1)
    golden("category_writing_plain", q2)
    # the same from a campaign file, and written back by `campaign show --yaml`
    shown = cli("campaign", "show", "r", "--yaml", db=url).stdout
    assert "reference_categories:\n- math\n- reasoning" in shown
    f = tmp_path / "r.yaml"
    f.write_text(shown.replace("name: r", "name: r2"), encoding="utf-8")
    again = cli("campaign", "create", "--from", str(f), "--json", db=url)
    assert again.code == 0, again.stderr
    # a custom template without a reference-guided one is refused in one line
    plain = tmp_path / "plain.j2"
    plain.write_text("{{ candidate_a }} {{ candidate_b }} Verdict: A or B", encoding="utf-8")
    got = cli(
        "campaign", "create", "y", "--dataset", "conv", "--protocol", "pairwise", "--pairs", "conv-pairs",
        "--judge", judge(fake), "--template", f"pairwise={plain}", "--reference-categories", "math", db=url,
    )  # fmt: skip
    assert got.code == 2 and "needs a reference-guided template" in got.stderr


def _mtbench_folder(root: Path) -> Path:
    """A FastChat-layout folder: one math question with two turns, two models, a reference, votes."""
    folder = root / "mtbench"
    (folder / "model_answer").mkdir(parents=True)
    (folder / "reference_answer").mkdir()
    q = {"question_id": 111, "category": "math", "turns": ["What is 17 * 3?", "Now divide that by 3."]}
    (folder / "question.jsonl").write_text(json.dumps(q) + "\n", encoding="utf-8")
    for model, by_q in ANSWERS.items():
        row = {"question_id": 111, "model_id": model, "choices": [{"index": 0, "turns": by_q["q1"]}]}
        (folder / "model_answer" / f"{model}.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    ref = {"question_id": 111, "model_id": "gpt-4", "choices": [{"index": 0, "turns": ["51.", "17."]}]}
    (folder / "reference_answer" / "gpt-4.jsonl").write_text(json.dumps(ref) + "\n", encoding="utf-8")
    votes = {"expert_1": {"111__m1__m2__1": "model_a", "111__m1__m2__2": "model_a"}}
    (folder / "human_judgments.json").write_text(json.dumps(votes), encoding="utf-8")
    return folder


def test_mtbench_items_judged_at_a_turn_show_each_answer_once_and_the_reference_of_that_turn(
    db_url: str, fake: FakeServerProcess, keys_env: dict[str, str], tmp_path: Path
) -> None:
    migrate_db(db_url)
    eng = make_engine(db_url)
    try:
        assert cli("data", "import-mtbench", str(_mtbench_folder(tmp_path)), db=db_url).code == 0
        for turn in ("1", "2"):
            made = cli(
                "campaign", "create", f"mt{turn}", "--dataset", "mtbench", "--pairs", "mtbench-human",
                "--protocol", "pairwise", "--judge", judge(fake), "--template", "pairwise=@classic-pairwise",
                "--reference-categories", "math", "--turn", turn, "--json", db=db_url,
            ).json()  # fmt: skip
            # turn 2: only the turn-2 unit has a second answer; turn 1: both units have a first one
            assert (made["jobs"], made["skipped_no_turn"]) == ((4, 0) if turn == "1" else (2, 1))
            assert cli("campaign", "run", f"mt{turn}", "--json", db=db_url).json()["done"] == made["jobs"]
        t2 = sent(eng, "mt2")
        ab = next(u for _, o, _, u, _ in t2 if o == "AB")
        assert {r[2] for r in t2} == {"@classic-pairwise-ref"}
        assert _between(ab, "candidate_a") == "51 / 3 is 17." and _between(ab, "reference") == "17."
        assert "context only" not in ab and ab.count("17 * 3 is 51.") == 1
        golden("mtbench_turn2_reference_ab", ab)
        # turn 1 of the turn-2 unit: the first answers, with turn 1's reference
        t1 = sent(eng, "mt1")
        of_turn2 = [u for _, _, _, u, first in t1 if first.endswith("__2")]
        assert len(of_turn2) == 2
        assert all(_between(u, "candidate_a") in ("17 * 3 is 51.", "It is 41.") for u in of_turn2)
        assert {_between(u, "reference") for u in of_turn2} == {"51."}
    finally:
        eng.dispose()


def test_a_pair_whose_items_differ_in_category_fails_in_one_line(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    url, eng = db
    odd = [
        ItemRecord(f"x-{k}", k, group_key="x", output=f"answer {k}", meta={"category": cat})
        for k, cat in enumerate(("math", "writing"))
    ]
    import_parsed(
        eng, "mixed", ParsedDataset(kind="items", source_hash="mixed-1", items=odd, annotators=[], labels=[])
    )
    create_pair_set(eng, "mixed", "mixed-pairs", seed=1)
    got = cli(
        "campaign", "create", "m", "--dataset", "mixed", "--pairs", "mixed-pairs", "--protocol", "pairwise",
        "--judge", judge(fake), "--template", "pairwise=@classic-pairwise", "--reference-categories", "math",
        db=url,
    )  # fmt: skip
    # every job's prompt is rendered at create (issue 17 §4): refused there, nothing stored
    assert got.code == 2, got.stderr
    assert got.stderr.strip().splitlines() == [
        "judgepanel: error: items 'x-0' and 'x-1' have different categories (math, writing)"
    ]
    assert cli("query", "select count(*) as n from campaign", "--json", db=url).json()["rows"] == [{"n": 0}]
