"""`judgepanel annotate create / invite / revoke / list / status / close / delete` through the real
CLI: every bad input one line and exit 2 with nothing written, the three item sources and the
three orders, assigned access from a `plan allocate`, and tokens shown once and redacted after."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from judgepanel.store import annotation as store
from judgepanel.store import annotation_tables as at
from tests.annotate.conftest import member
from tests.helpers import cli

BASE = ["annotate", "create"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["q", "--dataset", "se", "--dimension", "coherence"], "say which items"),
        (["q", "--dataset", "se", "--items", "3", "--allocation", "x"], "one way"),
        (["q", "--dataset", "se", "--items", "3", "--kind", "pairwise"], "pairwise queue labels the pairs"),
        (["q", "--dataset", "se", "--items", "0"], "--items must be at least 1"),
        (["q", "--dataset", "se", "--items", "3", "--per-item", "0"], "--per-item"),
        (["q", "--dataset", "se", "--items", "3", "--access", "assigned"], "needs --allocation"),
        (["q", "--dataset", "se", "--items", "3", "--order", "sorted"], "--order must be one of"),
        (["q", "--dataset", "nope", "--items", "3"], "no dataset named 'nope'"),
        (["q", "--dataset", "se", "--items", "3", "--scale", "5-1"], "--scale"),
        (["q", "--dataset", "se", "--items", "3", "--epsilon", "1.5"], "--epsilon"),
        (
            ["q", "--dataset", "se", "--items", "3", "--instructions", "/no/such/file"],
            "cannot read --instructions",
        ),
        (["q", "--dataset", "se", "--items", "3", "--order", "disagreement"], "two stored judges"),
        (["q", "--dataset", "se", "--items", "3", "--rubric", "summeval"], "no rubric named"),
        (["a/b", "--dataset", "se", "--items", "3"], "without '/'"),
        ([".", "--dataset", "se", "--items", "3"], "its link would lead elsewhere"),
        (["..", "--dataset", "se", "--items", "3"], "its link would lead elsewhere"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    sqlite_url: str, args: list[str], words: str
) -> None:
    from judgepanel.store.engine import make_engine
    from tests.helpers import load_summeval_sample

    load_summeval_sample(sqlite_url)
    r = cli(*BASE, *args, db=sqlite_url)
    assert r.code == 2 and r.stderr.count("\n") == 1 and words in r.stderr, r.stderr
    eng = make_engine(sqlite_url)
    with eng.connect() as c:
        assert all(c.scalar(select(func.count()).select_from(t)) == 0 for t in at.metadata.sorted_tables)
    eng.dispose()


def test_create_invite_list_status_delete(sample: tuple[str, Engine], tmp_path: Path) -> None:
    url, eng = sample
    instructions = tmp_path / "how.txt"
    instructions.write_text("Read the article first.\n")
    out = cli(*BASE, "q", "--dataset", "se", "--dimension", "coherence", "--items", "5", "--order", "stratified",
              "--instructions", str(instructions), "--json", db=url).json()  # fmt: skip
    assert out["units"] == 5 and out["labels_needed"] == 10 and out["scorer"] == "neg-rmse"
    assert cli(*BASE, "q", "--dataset", "se", "--items", "2", db=url).code == 2  # the name is taken
    link = cli("annotate", "invite", "q", "alice", "--json", db=url).json()
    assert (
        set(link) == {"url", "token"}
        and link["token"].startswith("jpa-")
        and link["url"].endswith(link["token"])
    )
    plain = cli("annotate", "invite", "q", "bob", db=url)
    assert plain.code == 0 and "/a/q?token=jpa-" in plain.stdout
    listed = cli("annotate", "list", "--json", db=url).json()["queues"]
    assert listed == [{"name": "q", "dataset": "se", "kind": "pointwise", "dimension": "coherence", "status": "open",
                       "labels_done": 0, "labels_total": 10, "annotators": 2}]  # fmt: skip
    m = store.member_by_token(eng, "q", store.token_hash(link["token"]))
    store.next_slot(eng, m)
    status = cli("annotate", "status", "q", "--json", "--bootstrap", "0", db=url).json()
    assert status["progress"]["reserved"] == 1 and status["annotators"]["alice"]["reserved"] == 1
    r = cli("annotate", "delete", "q", db=url)
    assert r.code == 2 and "live reservation" in r.stderr
    assert cli("annotate", "delete", "q", "--force", "--json", db=url).json()["units"] == 5
    assert cli("annotate", "list", "--json", db=url).json()["queues"] == []


def test_a_token_is_shown_once_and_redacted_everywhere_else() -> None:
    from judgepanel.providers.errors import redact

    token = "jpa-" + "x" * 43
    assert token not in redact(f"comment with {token} in it")
    assert "jpa-xxxx…[redacted]" in redact(token)


def test_orders_are_seeded_and_disagreement_puts_the_judges_apart_first(
    sample: tuple[str, Engine], tmp_path: Path
) -> None:
    from sqlalchemy import text

    url, eng = sample
    # two imported judges on twelve items: one point apart on the even items, four on item 7
    path = tmp_path / "judges.csv"
    rows = ["item_id,annotator,group,dimension,value,kind"]
    for k in range(12):
        rows += [f"i{k},j1,judges,q,3,llm", f"i{k},j2,judges,q,{1 if k == 7 else 3 if k % 2 else 4},llm"]
    path.write_text("\n".join(rows) + "\n")
    assert cli("data", "import-labels", str(path), "--dataset", "syn", db=url).code == 0
    out = cli(
        *BASE, "d", "--dataset", "syn", "--dimension", "q", "--items", "4", "--order", "disagreement", db=url
    )
    assert out.code == 0, out.stderr
    with eng.connect() as c:
        first = (
            c.execute(
                text(
                    "SELECT i.external_id FROM annotation_unit u JOIN item i ON i.id = u.item_id ORDER BY u.position"
                )
            )
            .scalars()
            .all()
        )
    assert first[0] == "i7"  # |3 - 1| is the largest disagreement
    assert set(first[1:]) <= {f"i{k}" for k in range(0, 12, 2)}  # then items where they differ by one
    for order in ("random", "stratified"):
        a = cli(
            *BASE, f"{order}1", "--dataset", "se", "--items", "6", "--order", order, "--seed", "3", db=url
        )
        b = cli(
            *BASE, f"{order}2", "--dataset", "se", "--items", "6", "--order", order, "--seed", "3", db=url
        )
        assert a.code == b.code == 0
        with eng.connect() as c:
            got = [
                c.execute(
                    text("SELECT u.item_id FROM annotation_unit u JOIN annotation_queue q ON q.id = u.queue_id "
                         "WHERE q.name = :n ORDER BY u.position"), {"n": f"{order}{k}"}
                ).scalars().all()
                for k in (1, 2)
            ]  # fmt: skip
        assert got[0] == got[1] and len(got[0]) == 6


def test_an_allocation_with_assigned_access_gives_each_annotator_their_items(
    sample: tuple[str, Engine], tmp_path: Path
) -> None:
    url, eng = sample
    r = cli("plan", "allocate", "--dataset", "se", "--dimension", "coherence", "--primary", "expert_1",
            "--annotators", "s1,s2", "--coverage", "0.1", "--design", "random", "--seed", "1",
            "--out", str(tmp_path / "al"), "--name", "al", "--json", db=url)  # fmt: skip
    assert r.code == 0, r.stderr
    assigned = r.json()["assigned"]
    out = cli(
        *BASE,
        "qa",
        "--allocation",
        "al",
        "--access",
        "assigned",
        "--dimension",
        "coherence",
        "--json",
        db=url,
    )
    assert out.code == 0, out.stderr
    assert out.json()["labels_needed"] == sum(assigned.values())
    r = cli("annotate", "invite", "qa", "zed", db=url)
    assert r.code == 2 and "assigns no item to 'zed'" in r.stderr
    s1, _ = member(eng, "qa", "s1")
    got = 0
    while (s := store.next_slot(eng, s1)) is not None:
        store.submit(eng, s1, s, value=3)
        got += 1
    assert got == assigned["s1"]
