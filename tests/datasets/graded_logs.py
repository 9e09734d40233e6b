"""Real Inspect AI logs for the import tests, written by Inspect itself (no imitation of its format).

`write_inspect_logs` runs one `inspect_ai.eval` of two tasks:

* `summeval_graders`: the bundled SummEval sample's first `n` summaries, each sample's output the
  summary itself (a solver that sets it, no model call), scored by two `model_graded_qa` graders
  served by the fake provider server through Inspect's `openai-api` provider with a base URL:
  `coherence` grades 1–5 (`GRADE: $NUMBER`, a 1..5 scale named in the instructions) and `verdict`
  grades C/P/I (partial credit); two epochs;
* `mocked`: four samples graded by `mockllm` with scripted grader replies (`ModelOutput` with a
  `ModelUsage`, so tiktoken is never fetched): C, P, I and one reply without a grade, plus one
  sample whose solver fails (a sample error).

Both logs are `.eval`; `as_json` rewrites one with Inspect's own writer as a `.json` log, and
`cancelled` writes a copy holding only some samples with status `cancelled`, as an interrupted
run leaves it.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

from judgepanel.resources import sample_path

GRADER_KEY = "sk-fake-inspect-not-a-key-0123456789"
NUMBER_INSTRUCTIONS = (
    "Rate the coherence of the submission on a scale from 1 (worst) to 5 (best). "
    "End your answer with 'GRADE: $NUMBER' (without quotes) where NUMBER is the score."
)


def summeval_rows(n: int) -> list[dict[str, Any]]:
    """The first `n` rows of the bundled SummEval sample with their article text."""
    with gzip.open(sample_path("summeval_articles_sample.jsonl.gz"), "rt") as f:
        articles = {a["id"]: a["text"] for a in map(json.loads, f)}
    with gzip.open(sample_path("summeval_sample.jsonl.gz"), "rt") as f:
        rows = [json.loads(x) for x in f][:n]
    return [
        {"id": f"{r['id']}/{r['model_id']}", "article": articles.get(r["id"], ""), "summary": r["decoded"]}
        for r in rows
    ]


def write_inspect_logs(folder: Path, fake_url: str, n: int = 12) -> dict[str, Path]:
    """Run the two tasks (module docstring); their logs by task name."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import model_graded_qa
    from inspect_ai.solver import Generate, Solver, TaskState, solver

    os.environ["FAKE_BASE_URL"] = fake_url + "/v1"
    os.environ["FAKE_API_KEY"] = GRADER_KEY

    @solver
    def given_output() -> Solver:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            if state.metadata.get("fail"):
                raise RuntimeError("the solver failed on purpose")
            state.output = ModelOutput.from_content(model="summeval", content=state.metadata["summary"])
            return state

        return solve

    def usage(text: str) -> ModelOutput:
        out = ModelOutput.from_content(model="mockllm/model", content=text)
        out.usage = ModelUsage(input_tokens=20, output_tokens=5, total_tokens=25)
        return out

    rows = summeval_rows(n)
    graded = Task(
        name="summeval_graders",
        dataset=[
            Sample(
                id=r["id"],
                input=f"Summarise this article.\n\n{r['article']}",
                target="A coherent, faithful summary.",
                metadata={"summary": r["summary"]},
            )
            for r in rows
        ],
        solver=given_output(),
        scorer=[
            model_graded_qa(
                model="openai-api/fake/grader-mini",
                instructions=NUMBER_INSTRUCTIONS,
                grade_pattern=r"GRADE\s*:\s*([1-5])",
            ),
            model_graded_qa(model="openai-api/fake/grader-big", partial_credit=True),
        ],
        epochs=2,
    )
    replies = ["Right.\nGRADE: C", "Half.\nGRADE: P", "Wrong.\nGRADE: I", "I cannot decide."]
    mocked = Task(
        name="mocked",
        dataset=[
            *(
                Sample(
                    id=f"m{i}",
                    input=f"question {i}",
                    target=f"answer {i}",
                    metadata={"summary": f"answer {i}"},
                )
                for i in range(4)
            ),
            Sample(id="m4", input="question 4", target="answer 4", metadata={"summary": "x", "fail": True}),
        ],
        solver=given_output(),
        scorer=model_graded_qa(
            model=get_model("mockllm/model", custom_outputs=[usage(t) for t in replies]), partial_credit=True
        ),
    )
    logs = inspect_eval(
        [graded, mocked],
        model=get_model("mockllm/model", custom_outputs=[usage("unused")]),
        log_dir=str(folder),
        log_format="eval",
        display="none",
        fail_on_error=False,
        max_tasks=1,
    )
    return {log.eval.task: Path(log.location) for log in logs}


def as_json(log: Path, out: Path) -> Path:
    """The same log written by Inspect's writer in its `.json` format."""
    from inspect_ai.log import read_eval_log, write_eval_log

    write_eval_log(read_eval_log(str(log)), str(out), format="json")
    return out


def cancelled(log: Path, out: Path, keep: int) -> Path:
    """A copy of `log` holding only its first `keep` samples, status `cancelled` (as an interrupted
    run leaves its log: the dataset's sample ids all listed, the rest of the samples absent)."""
    from inspect_ai.log import read_eval_log, write_eval_log

    full = read_eval_log(str(log))
    full.samples = (full.samples or [])[:keep]
    full.status = "cancelled"
    full.eval.eval_id += "-interrupted"  # another run of the task, not the log it was copied from
    full.eval.run_id += "-interrupted"
    write_eval_log(full, str(out))
    return out


N_SUMMARIES = 36  # enough items for `validate alt-test`'s default of 30 instances


def build(folder: Path) -> dict[str, str]:
    """Every log the tests read, written into `folder` with the fake server running in this
    process; a manifest `logs.json` names them (what `inspect_logs` in tests/datasets/conftest.py
    reads)."""
    from judgepanel.fake.server import FakeServer

    with FakeServer(seed=5) as fake:
        logs = write_inspect_logs(folder, fake.url, N_SUMMARIES)
    graded, mocked = logs["summeval_graders"], logs["mocked"]
    out = {
        "graded": str(graded),
        "graded_json": str(as_json(graded, folder / "graded.json")),
        "mocked": str(mocked),
        "mocked_json": str(as_json(mocked, folder / "mocked.json")),
        "cancelled": str(cancelled(graded, folder / "cancelled.eval", keep=10)),
    }
    (folder / "logs.json").write_text(json.dumps(out))
    return out


if __name__ == "__main__":  # run by the tests in a subprocess: Inspect's eval sets up its own logging
    import sys

    build(Path(sys.argv[1]))
