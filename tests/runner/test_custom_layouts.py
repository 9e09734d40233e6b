"""Custom templates without judgepanel's tags (issue 19 §5): the fake server and the `sim` provider
read the layouts people write — labelled sections, their own tags, MT-Bench's `[The Start of …]`
blocks — so a campaign with such a template gets real verdicts, not 200 parse failures or 200
"I could not find the candidate" ties. Run end to end: campaign CLI → runner → real OpenAI and
Anthropic SDKs → the fake server (its own process) and the in-process `sim` provider."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import aliased

from judgepanel.fake.server import FakeServerProcess
from judgepanel.store.models import Item, Job, Judge, Pair, Verdict
from tests.helpers import cli
from tests.runner.conftest import PAIRS, create_argv, tiny_db

HEADER = "{# judgepanel:\nstructured: off\n#}\n"
PAIRWISE = {
    "labelled": """Which summary of the article below is better?

Article:
{{ source }}

Summary A:
{{ candidate_a }}

Summary B:
{{ candidate_b }}

Explain briefly, then end with a last line "Verdict: A" or "Verdict: B" (or "Verdict: tie").
""",
    "own_tags": """Compare the two summaries of this article.
<article>{{ source }}</article>
<summary_a>{{ candidate_a }}</summary_a>
<summary_b>{{ candidate_b }}</summary_b>
Answer with "Verdict: A", "Verdict: B" or "Verdict: tie" on the last line.
""",
    "mt_bench": """[Article]
{{ source }}

[The Start of Assistant A's Answer]
{{ candidate_a }}
[The End of Assistant A's Answer]

[The Start of Assistant B's Answer]
{{ candidate_b }}
[The End of Assistant B's Answer]

Output your final verdict: [[A]] if A is better, [[B]] if B is better, [[C]] for a tie.
""",
}
POINTWISE = """Rate the summary of the article from 1 to 5.

Article:
{{ source }}

Summary:
{{ candidate }}

End with a line "Score: N".
"""


@pytest.fixture
def db(sqlite_url: str) -> tuple[str, Engine]:
    eng = tiny_db(sqlite_url)
    return sqlite_url, eng


def _judges(fake: FakeServerProcess) -> list[str]:
    return [f"openai:judge-o?base_url={fake.url}/v1", f"anthropic:judge-a?base_url={fake.url}", "sim:s"]


def _faithfulness(external_id: str) -> int:
    return int(external_id.rsplit("-s", 1)[1])  # tiny items: g<group>-s<k>, k = how faithful


@pytest.mark.parametrize("layout", sorted(PAIRWISE))
def test_an_untagged_pairwise_template_gets_real_verdicts(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str], tmp_path: Path, layout: str
) -> None:
    url, eng = db
    path = tmp_path / f"{layout}.j2"
    path.write_text(HEADER + PAIRWISE[layout], encoding="utf-8")
    argv = create_argv(
        "c", *_judges(fake), protocol="pairwise", extra=("--pairs", PAIRS, "--template", f"pairwise={path}")
    )
    assert cli(*argv, db=url).code == 0
    run = cli("campaign", "run", "c", "--no-cache", "--json", db=url).json()
    assert run["status"] == "done", run
    assert run["parse_failures"] == {} and run["failed"] == 0
    a, b = aliased(Item), aliased(Item)
    with eng.connect() as c:
        rows = c.execute(
            select(Judge.name, a.external_id, b.external_id, Verdict.value_canonical, Verdict.rationale)
            .join(Job, Job.id == Verdict.job_id)
            .join(Judge, Judge.id == Job.judge_id)
            .join(Pair, Pair.id == Job.pair_id)
            .join(a, a.id == Pair.item_a_id)
            .join(b, b.id == Pair.item_b_id)
        ).all()
    assert {r[0] for r in rows} == {
        "openai:judge-o?base_url=" + fake.url + "/v1",
        "anthropic:judge-a?base_url=" + fake.url,
        "sim:s",
    }
    assert not [r for r in rows if "could not find" in (r[4] or "")]
    # the candidates and the article were read: the more faithful summary wins most decisive pairs
    decided = [
        (r[3], _faithfulness(r[1]) - _faithfulness(r[2])) for r in rows if r[3] in ("A", "B") and r[1] != r[2]
    ]
    right = sum((v == "A") == (gap > 0) for v, gap in decided if gap != 0)
    assert len(decided) >= len(rows) // 2
    assert right >= 0.8 * len([d for d in decided if d[1] != 0])


def test_an_untagged_pointwise_template_gets_real_scores(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str], tmp_path: Path
) -> None:
    url, eng = db
    path = tmp_path / "single.j2"
    path.write_text(HEADER + POINTWISE, encoding="utf-8")
    argv = create_argv("p", *_judges(fake), extra=("--template", f"pointwise={path}", "--limit", "8"))
    assert cli(*argv, db=url).code == 0
    run = cli("campaign", "run", "p", "--no-cache", "--json", db=url).json()
    assert run["status"] == "done" and run["parse_failures"] == {}, run
    with eng.connect() as c:
        rows = c.execute(select(Verdict.score, Verdict.rationale)).all()
    assert rows and not [r for r in rows if "could not find" in (r[1] or "")]
    assert len({r[0] for r in rows}) > 1  # read, not a constant fallback
