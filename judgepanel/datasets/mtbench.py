"""MT-Bench (Zheng et al., 2023): questions, the six models' answers, reference answers, human votes.

A folder as FastChat's `llm_judge` lays it out (see `shared/data/mtbench/PROVENANCE.md`):

- `question.jsonl`: `question_id`, `category`, `turns` (two user turns);
- `model_answer/<model>.jsonl`: `question_id`, `model_id`, `choices[0].turns` (two answers);
- `reference_answer/<model>.jsonl` (optional): reference answers for math, reasoning and coding;
- a human-vote file (`human_judgments*.json`): `{annotator: {"<qid>__<model_a>__<model_b>__<turn>":
  "model_a" | "model_b" | "tie"}}`.

Each (question, model, turn) is one item: its `input` is the user's questions up to that turn (the
same for every model, so two answers of one unit share their source), its `output` the model's
answer to that turn — for turn 2 preceded by its own turn-1 answer, marked as context, since the
later answer is judged in the conversation it continues — its group `<qid>__<turn>` (the unit two
answers are compared on), its `system` the model; `meta` keeps the category, the conversation as
role/content turns (with the model's own earlier answers) and the reference answer of that turn
where there is one (and, as `references`, those of every turn). Each human vote is a
pair label of its annotator on the pair (model_a's item, model_b's item) of that question and
turn: model_a → A, model_b → B, tie → T. Turn 1 and turn 2 are separate units, as in the paper.
Annotators are grouped by the prefix of their id (`author_0` → `author`, `expert_24` → `expert`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgepanel.datasets.records import (
    AnnotatorRecord,
    ItemRecord,
    ParsedDataset,
    iter_lines,
    open_text,
    sha256_files,
    unique_keys,
)
from judgepanel.errors import BadInput

WINNERS = {"model_a": "A", "model_b": "B", "tie": "T"}
JUDGED_MARK = "[Assistant, turn {turn}: the answer to judge]"  # where a later turn's own answer begins


@dataclass(frozen=True)
class Vote:
    annotator: str
    item_a: str  # external ids
    item_b: str
    value: str  # A | B | T


@dataclass(frozen=True)
class ParsedMTBench:
    dataset: ParsedDataset
    votes: list[Vote]


def item_id(qid: int | str, model: str, turn: int | str) -> str:
    return f"{qid}__{model}__{turn}"


def _jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    for n, line in iter_lines(path):
        try:
            obj = json.loads(line, object_pairs_hook=unique_keys)
        except (json.JSONDecodeError, RecursionError, ValueError) as exc:
            raise BadInput(f"{path}:{n}: not JSON: {exc}") from exc
        if not isinstance(obj, dict):
            raise BadInput(f"{path}:{n}: expected a JSON object")
        rows.append((n, obj))
    return rows


def _turns(path: Path, n: int, obj: dict[str, Any], key: str) -> list[str]:
    try:
        turns = obj["choices"][0]["turns"] if key == "choices" else obj["turns"]
    except (KeyError, IndexError, TypeError):
        raise BadInput(f"{path}:{n}: no {key} turns") from None
    if not isinstance(turns, list) or not turns or not all(isinstance(t, str) for t in turns):
        raise BadInput(f"{path}:{n}: turns must be a non-empty list of strings")
    return turns


def _conversation(questions: list[str], answers: list[str], turn: int) -> list[dict[str, str]]:
    conv: list[dict[str, str]] = []
    for t in range(turn):
        conv.append({"role": "user", "content": questions[t]})
        if t < turn - 1:
            conv.append({"role": "assistant", "content": answers[t]})
    return conv


def _questions(questions: list[str], turn: int) -> str:
    """The user's side up to `turn`: the same for every model, so two answers share one source."""
    if turn == 1:
        return questions[0]
    return "\n\n".join(f"User (turn {t + 1}): {questions[t]}" for t in range(turn))


def _answer(answers: list[str], turn: int) -> str:
    """The model's answer to `turn`; for a later turn its own earlier answers come first, marked,
    because the later answer is judged in the conversation it continues (as MT-Bench's multi-turn
    judge sees it)."""
    if turn == 1:
        return answers[0]
    earlier = "\n\n".join(f"[Assistant, turn {t + 1}, context only]\n{answers[t]}" for t in range(turn - 1))
    return f"{earlier}\n\n{JUDGED_MARK.format(turn=turn)}\n{answers[turn - 1]}"


def answer_to_judge(output: str, turn: int) -> str:
    """A turn-`turn` item's own answer without the earlier answers `_answer` put before it (for a
    template that shows those answers as the conversation itself)."""
    mark = JUDGED_MARK.format(turn=turn) + "\n"
    return output.split(mark, 1)[1] if mark in output else output


def _read_votes(path: Path, known: set[str], *, kind: str) -> tuple[list[AnnotatorRecord], list[Vote]]:
    try:
        with open_text(path) as f:
            raw = json.load(f)
    except (json.JSONDecodeError, RecursionError, ValueError, UnicodeDecodeError, OSError) as exc:
        raise BadInput(f"{path}: not a JSON vote file: {exc}") from exc
    if not isinstance(raw, dict) or not raw:
        raise BadInput(f"{path}: expected {{voter: {{'qid__model_a__model_b__turn': winner}}}}")
    votes: list[Vote] = []
    annotators: list[AnnotatorRecord] = []
    for ann, by_key in raw.items():
        if not isinstance(by_key, dict):
            raise BadInput(f"{path}: voter {ann!r}: expected an object of votes")
        group = str(ann).split("_")[0] if kind == "human" else "llm"
        annotators.append(AnnotatorRecord(name=str(ann), kind=kind, group=group))
        for key, winner in by_key.items():
            parts = str(key).split("__")
            if len(parts) != 4:
                raise BadInput(f"{path}: {ann!r}: vote key {key!r} is not qid__model_a__model_b__turn")
            qid, model_a, model_b, turn = parts
            if winner not in WINNERS:
                raise BadInput(
                    f"{path}: {ann!r}: {key!r}: winner must be model_a, model_b or tie, got {winner!r}"
                )
            ia, ib = item_id(qid, model_a, turn), item_id(qid, model_b, turn)
            for it in (ia, ib):
                if it not in known:
                    raise BadInput(f"{path}: {ann!r}: {key!r}: no answer {it!r} in model_answer/")
            votes.append(Vote(str(ann), ia, ib, WINNERS[winner]))
    return annotators, votes


def parse_mtbench(
    folder: Path, votes_file: Path | None = None, llm_votes_file: Path | None = None
) -> ParsedMTBench:
    if not folder.is_dir():
        raise BadInput(f"{folder}: no such folder")
    qfile = folder / "question.jsonl"
    answer_files = (
        sorted((folder / "model_answer").glob("*.jsonl")) if (folder / "model_answer").is_dir() else []
    )
    if not qfile.is_file():
        raise BadInput(f"{folder}: no question.jsonl")
    if not answer_files:
        raise BadInput(f"{folder}: no model_answer/*.jsonl")
    if votes_file is None:
        found = sorted(folder.glob("human_judgments*.json")) + sorted(folder.glob("human_judgments*.json.gz"))
        if not found:
            raise BadInput(f"{folder}: no human_judgments*.json (name the vote file with --votes)")
        votes_file = found[0]
    ref_files = (
        sorted((folder / "reference_answer").glob("*.jsonl"))
        if (folder / "reference_answer").is_dir()
        else []
    )

    questions: dict[int, tuple[str, list[str]]] = {}
    for n, q in _jsonl(qfile):
        qid = q.get("question_id")
        if not isinstance(qid, int) or isinstance(qid, bool):
            raise BadInput(f"{qfile}:{n}: question_id must be an integer")
        category = q.get("category")
        if not isinstance(category, str):
            raise BadInput(f"{qfile}:{n}: category must be a string")
        questions[qid] = (category, _turns(qfile, n, q, "turns"))
    references: dict[int, list[str]] = {}
    for path in ref_files[:1]:
        for n, r in _jsonl(path):
            if r.get("question_id") in questions:
                references[int(r["question_id"])] = _turns(path, n, r, "choices")

    items: list[ItemRecord] = []
    for path in answer_files:
        for n, a in _jsonl(path):
            qid, model = a.get("question_id"), a.get("model_id")
            if qid not in questions:
                raise BadInput(f"{path}:{n}: question_id {qid!r} is not in question.jsonl")
            if not isinstance(model, str) or not model:
                raise BadInput(f"{path}:{n}: model_id must be a non-empty string")
            category, qturns = questions[qid]
            answers = _turns(path, n, a, "choices")
            if len(answers) != len(qturns):
                raise BadInput(f"{path}:{n}: {len(answers)} answers for {len(qturns)} turns")
            for t in range(1, len(qturns) + 1):
                conv = _conversation(qturns, answers, t)
                ref = references.get(qid)
                items.append(
                    ItemRecord(
                        external_id=item_id(qid, model, t),
                        position=len(items),
                        group_key=f"{qid}__{t}",
                        input=_questions(qturns, t),
                        output=_answer(answers, t),
                        system=model,
                        meta={
                            "question_id": qid,
                            "category": category,
                            "turn": t,
                            "conversation": conv,
                            **({"reference": ref[t - 1]} if ref and len(ref) >= t else {}),
                            # every turn's, for judging an earlier turn of this item (`--turn`)
                            **({"references": list(ref)} if ref else {}),
                        },
                    )
                )
    known = {it.external_id for it in items}
    if len(known) != len(items):
        raise BadInput(f"{folder}: a model answers the same question twice")

    annotators, votes = _read_votes(votes_file, known, kind="human")
    files = [qfile, *answer_files, *ref_files[:1], votes_file]
    if llm_votes_file is not None:
        llms, llm_votes = _read_votes(llm_votes_file, known, kind="llm")
        clash = {a.name for a in llms} & {a.name for a in annotators}
        if clash:
            raise BadInput(f"{llm_votes_file}: {sorted(clash)[0]!r} names a human voter too")
        annotators += llms
        votes += llm_votes
        files.append(llm_votes_file)
    dataset = ParsedDataset(
        kind="mtbench",
        source_hash=sha256_files(*files),
        items=items,
        annotators=annotators,
        labels=[],
        meta={"files": [p.name for p in files]},
    )
    return ParsedMTBench(dataset, votes)
