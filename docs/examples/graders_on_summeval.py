"""Make the two grader runs docs/imports.md imports: an Inspect AI task and a promptfoo eval that
grade SummEval summaries for coherence (1-5) with graders served by judgepanel's fake server.

    judgepanel fake-server --port 8765 --seed 5 &
    python docs/examples/graders_on_summeval.py ../shared/data/summeval http://127.0.0.1:8765 docs/examples

SIMULATED: the graders are the fake server's simulated judge (every rationale starts with
`[simulated]`); the summaries, articles and the human labels they are later compared with are the
real SummEval data. Writes `summeval-inspect.eval` (Inspect AI) and `summeval-promptfoo.json`
(promptfoo; needs `promptfoo` on the PATH) into the output folder.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

N_ARTICLES = 3  # × 16 systems = 48 summaries
INSTRUCTIONS = (
    "Rate the coherence of the submission, a summary of the article in the task, on a scale from "
    "1 (worst) to 5 (best). End your answer with 'GRADE: $NUMBER' (without quotes)."
)


def summaries(folder: Path) -> list[dict[str, str]]:
    with gzip.open(folder / "articles.jsonl.gz", "rt") as f:
        articles = {a["id"]: a["text"] for a in map(json.loads, f)}
    rows = []
    with gzip.open(folder / "model_annotations.reconstructed.jsonl.gz", "rt") as f:
        for r in map(json.loads, f):
            rows.append({"id": f"{r['id']}/{r['model_id']}", "article": articles[r["id"]], "summary": r["decoded"]})
    chosen = list(dict.fromkeys(r["id"].split("/")[0] for r in rows))[:N_ARTICLES]
    return [r for r in rows if r["id"].split("/")[0] in chosen]


def inspect_log(rows: list[dict[str, str]], fake: str, out: Path) -> Path:
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import model_graded_qa
    from inspect_ai.solver import Generate, Solver, TaskState, solver

    os.environ["FAKE_BASE_URL"], os.environ["FAKE_API_KEY"] = fake + "/v1", "sk-fake-not-a-key-0123456789"

    @solver
    def the_summary() -> Solver:  # the output under test is the SummEval summary itself
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            state.output = ModelOutput.from_content(model="summeval", content=state.metadata["summary"])
            return state

        return solve

    task = Task(
        name="summeval_coherence",
        dataset=[
            Sample(id=r["id"], input=f"Summarise this article.\n\n{r['article']}", target="A coherent summary.",
                   metadata={"summary": r["summary"]})
            for r in rows
        ],
        solver=the_summary(),
        scorer=model_graded_qa(model="openai-api/fake/sim-grader-1", instructions=INSTRUCTIONS,
                               grade_pattern=r"GRADE\s*:\s*([1-5])"),
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        (log,) = inspect_eval(task, model="mockllm/model", log_dir=tmp, display="none")
        return Path(shutil.copy(log.location, out / "summeval-inspect.eval"))


def promptfoo_results(rows: list[dict[str, str]], fake: str, out: Path) -> Path:
    import yaml

    grader = {"id": "openai:chat:sim-grader-2", "config": {"apiBaseUrl": fake + "/v1", "apiKey": "sk-fake-not-a-key-0123456789"}}
    config = {
        "description": "SummEval coherence, graded by llm-rubric on the fake server",
        "prompts": ["{{summary}}"],
        "providers": ["echo"],  # the output under test is the summary itself
        "defaultTest": {"options": {"provider": grader}},
        "tests": [
            {"vars": r, "assert": [{"type": "llm-rubric", "metric": "coherence",
                                    "value": "Rate the coherence of this summary on a scale from 1 (worst) to 5 (best). "
                                             "The article: {{article}}"}]}
            for r in rows
        ],
    }  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "promptfooconfig.yaml"
        cfg.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
        env = {**os.environ, "PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1",
               "PROMPTFOO_CONFIG_DIR": str(Path(tmp) / "home")}  # fmt: skip
        target = out / "summeval-promptfoo.json"
        # promptfoo exits 100 when an assertion fails, as some do here
        subprocess.run(["promptfoo", "eval", "-c", str(cfg), "-o", str(target), "--no-cache", "--no-progress-bar"],
                       env=env)  # fmt: skip
        packed = out / "summeval-promptfoo.json.gz"
        packed.write_bytes(gzip.compress(target.read_bytes(), mtime=0))
        target.unlink()
        return packed


if __name__ == "__main__":
    shared, fake, out = Path(sys.argv[1]), sys.argv[2].rstrip("/"), Path(sys.argv[3])
    rows = summaries(shared)
    print(inspect_log(rows, fake, out))
    print(promptfoo_results(rows, fake, out))
