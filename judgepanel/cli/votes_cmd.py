"""`judgepanel data import-mtbench` and `judgepanel metrics votes` (MT-Bench's agreement settings)."""

from __future__ import annotations

from pathlib import Path

import typer

from judgepanel.cli.context import state
from judgepanel.cli.options import JSON
from judgepanel.cli.render import emit_json, sim_title, simulated, table


def import_mtbench(
    ctx: typer.Context,
    folder: Path = typer.Argument(
        ..., help="MT-Bench folder: question.jsonl, model_answer/, reference_answer/."
    ),
    name: str = typer.Option("mtbench", "--name", help="Dataset name."),
    pairs: str | None = typer.Option(
        None, "--pairs", help="Pair set of the human votes (default NAME-human)."
    ),
    votes: Path | None = typer.Option(None, "--votes", help="Vote file (default: human_judgments*.json)."),
    llm: Path | None = typer.Option(
        None, "--llm", help="LLM votes in the same format (e.g. alttest/mtbench/llm_annotations.json)."
    ),
    replace: bool = typer.Option(
        False,
        "--replace",
        help="Replace a dataset NAME that holds a different import (e.g. the same folder without --llm), "
        "with its vote pair set; refused while a campaign uses it.",
    ),
    json_: bool = JSON,
) -> None:
    """Import MT-Bench: one item per question, model and turn; each human vote a pair label."""
    from judgepanel.datasets.mtbench import parse_mtbench
    from judgepanel.store.votes import import_votes

    parsed = parse_mtbench(folder, votes, llm)
    result = import_votes(state(ctx).engine(), name, pairs or f"{name}-human", parsed, replace=replace)
    if json_:
        emit_json(result.as_dict())
    else:
        what = "unchanged" if result.unchanged else f"{result.items} items, {result.annotators} voters"
        print(
            f"{result.dataset}: {what}; pair set {result.pairs}: {result.pair_count} pairs, {result.votes} votes"
        )


def votes(
    ctx: typer.Context,
    pairs: str = typer.Option(..., "--pairs", help="A pair set whose pair labels are votes."),
    campaign: list[str] = typer.Option(
        [], "--campaign", help="Pairwise campaign(s) whose judges to compare."
    ),
    protocol: str = typer.Option(
        "pooled",
        "--protocol",
        help="pooled: every human voter alike; paper: as MT-Bench's released script "
        "(expert_* voters are the humans, author_* voters a class apart, turns separate).",
    ),
    json_: bool = JSON,
) -> None:
    """Agreement of votes with ties counted and on non-tie votes only: humans among themselves and
    each campaign judge (its AB/BA verdicts combined, inconsistent as a tie) against the humans,
    over all units and per turn."""
    from judgepanel.errors import BadInput
    from judgepanel.metrics.votes import PROTOCOLS, vote_report
    from judgepanel.store.votes import vote_tables

    if protocol not in PROTOCOLS:
        raise BadInput(f"--protocol must be one of {', '.join(PROTOCOLS)}, not {protocol!r}")
    engine = state(ctx).engine()
    t = vote_tables(engine, pairs, campaign)
    out = {
        **vote_report(t.pairs, t.humans, t.judges, t.turns, protocol=protocol),
        "simulated": simulated(engine, campaign),
    }
    # issue 19 §3: a campaign judge is `NAME@CAMPAIGN` (its short name), its full `spec` inside
    for part in [out, *out.get("by_turn", {}).values()]:
        for setting in ("with_ties", "without_ties"):
            jh = part.get(setting, {}).get("judge_human", {})
            for voter, a in jh.items():
                if t.specs.get(voter) is not None:  # imported votes have no spec
                    jh[voter] = {**a, "spec": t.specs[voter]}
    if json_:
        emit_json(out)
        return
    rows = []
    scopes = [("all", out)] + [(f"turn {k}", v) for k, v in out["by_turn"].items()]
    for scope, part in scopes:
        for setting in ("with_ties", "without_ties"):
            s = part[setting]
            hh = s["human_human"]
            rows.append([scope, setting.replace("_", " "), "human – human", _count(hh), _rate(hh["rate"])])
            if protocol == "paper":
                for key, label in (("author_author", "author – author"), ("author_human", "author – human")):
                    a = s[key]
                    rows.append([scope, setting.replace("_", " "), label, _count(a), _rate(a["rate"])])
            for judge, a in s["judge_human"].items():
                rows.append(
                    [scope, setting.replace("_", " "), f"{judge} – human", _count(a), _rate(a["rate"])]
                )
    who = "experts are the humans; authors apart" if protocol == "paper" else "all human voters pooled"
    table(
        sim_title(f"agreement of votes on {pairs} ({protocol}: {who})", out["simulated"]),
        ["units", "setting", "voters", "agree / shared", "agreement"],
        rows,
    )


def _count(a: dict[str, object]) -> str:
    return f"{a['agree']}/{a['n']}"


def _rate(r: float | None) -> str:
    return "—" if r is None else f"{r:.3f}"
