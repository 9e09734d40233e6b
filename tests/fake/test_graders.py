"""The fake server answers other tools' grader prompts in their formats (`judgepanel.fake.graders`),
over real HTTP through the OpenAI SDK: Inspect AI's model-graded prompts get `GRADE: X`, promptfoo's
llm-rubric prompt gets its `{reason, pass, score}` JSON; any other prompt gets the sim judge's reply
as before. (The whole round trip through Inspect and promptfoo themselves is in tests/datasets.)"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from judgepanel.fake.server import FakeServer

ARTICLE = "The council voted on Tuesday to build a new bridge over the river, officials said."
INSPECT = (
    "You are assessing a submitted answer on a given task based on a criterion. Here is the data:\n\n"
    "[BEGIN DATA]\n***\n[Task]: Summarise: {article}\n***\n[Submission]: {summary}\n***\n"
    "[Criterion]: A faithful summary.\n***\n[END DATA]\n\nDoes the submission meet the criterion?\n\n{instructions}"
)
CPI = "After assessing the submitted answer, reply with 'GRADE: $LETTER' (without quotes) where LETTER is one of CPI."
NUMBER = "Rate it on a scale from 1 (worst) to 5 (best). End with 'GRADE: $NUMBER'."
PROMPTFOO_SYSTEM = (
    "You are grading output according to a user-specified rubric. If the statement in the rubric is true, "
    "then the output passes the test. You respond with a JSON object with this structure: "
    "{reason: string, pass: boolean, score: number}"
)


@pytest.fixture(scope="module")
def client() -> Iterator[object]:
    from openai import OpenAI

    with FakeServer(seed=3) as fake:
        yield OpenAI(base_url=fake.url + "/v1", api_key="sk-fake-graders-not-a-key-0123456789")


def _ask(client: object, model: str, *messages: dict[str, str]) -> str:
    reply = client.chat.completions.create(model=model, messages=list(messages))  # type: ignore[attr-defined]
    return str(reply.choices[0].message.content)


@pytest.mark.parametrize(
    "summary", ["The council voted to build a new bridge over the river.", "Stocks fell."]
)
def test_inspect_letter_and_number_grades(client: object, summary: str) -> None:
    user = {"role": "user", "content": INSPECT.format(article=ARTICLE, summary=summary, instructions=CPI)}
    text = _ask(client, "grader-a", user)
    assert text.startswith("[simulated]") and re.search(r"\nGRADE: [CPI]$", text), text
    user["content"] = INSPECT.format(article=ARTICLE, summary=summary, instructions=NUMBER)
    assert re.search(r"\nGRADE: [1-5]$", _ask(client, "grader-a", user))


def test_a_faithful_summary_grades_higher_than_an_unrelated_one(client: object) -> None:
    def grade(summary: str) -> int:
        user = {
            "role": "user",
            "content": INSPECT.format(article=ARTICLE, summary=summary, instructions=NUMBER),
        }
        return int(_ask(client, "grader-a", user).rsplit("GRADE: ", 1)[1])

    assert grade("The council voted on Tuesday to build a new bridge over the river.") > grade(
        "Stocks fell sharply."
    )


def test_promptfoo_rubric_reply(client: object) -> None:
    user = {
        "role": "user",
        "content": f"<Output>\nThe council will build a bridge.\n</Output>\n<Rubric>\nFaithful to: {ARTICLE}\n</Rubric>",
    }
    answer = json.loads(_ask(client, "grader-b", {"role": "system", "content": PROMPTFOO_SYSTEM}, user))
    assert set(answer) == {"reason", "pass", "score"} and answer["reason"].startswith("[simulated]")
    assert answer["score"] == (1.0 if answer["pass"] else 0.0)  # no scale stated: pass/fail
    user["content"] = user["content"].replace(
        "Faithful to:", "Rate coherence on a scale from 1 (worst) to 5 (best):"
    )
    scored = json.loads(_ask(client, "grader-b", {"role": "system", "content": PROMPTFOO_SYSTEM}, user))
    assert scored["score"] in {1.0, 2.0, 3.0, 4.0, 5.0} and scored["pass"] == (scored["score"] >= 3)


def test_other_prompts_get_the_sim_judge_as_before(client: object) -> None:
    text = _ask(
        client,
        "judge",
        {"role": "user", "content": f"<source>{ARTICLE}</source><candidate>A bridge.</candidate>"},
    )
    assert "GRADE:" not in text and ("score" in text.lower())
