"""Clause → deterministic checker transfer (issue 18 §2; seed 002's last step): `repair checkers NAME`.

After an iteration's `dev` step (the judge panel's clause verdicts on the development items):

1. the editor is asked, once per clause of the iteration's rubric, for one checker from the
   catalogue (`protocol.checkers`) with its parameters, or "none". The request holds the clause id,
   its text and the catalogue, nothing else (`protocol.editor.CheckerTask`); the calls are an
   editor campaign `NAME-checkers`, stored and resumable like the rewrite step's;
2. each proposed checker is run on the development items' candidate texts and compared with the
   judge majority for that clause (met when more than half of the judges who answered said met;
   items where the judges tie have no majority and are left out of the agreement);
3. a proposal is kept when its agreement is at least `threshold` (default 0.9, recorded with each
   proposal). A proposal whose parameters are unusable (e.g. a regex with nested quantifiers) is
   refused with the reason. Every proposal is stored (`clause_checker`), kept or refused.

A kept checker answers its clause in later clause campaigns on the iteration's original rubric
version without a model call (`runner.checkers`). Running the command again with another threshold
re-decides from the same proposals (the editor campaign is done: no new call).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import Engine

from judgepanel.errors import BadInput
from judgepanel.protocol.checkers import CheckerError, validate
from judgepanel.protocol.editor import CheckerTask
from judgepanel.repair.iteration import (
    RepairIncomplete,
    _clause_order,
    _Ctx,
    _editor_record,
    _inputs,
    _need,
    _run,
    _say_nothing,
    check_budget,
)
from judgepanel.runner import RunOptions
from judgepanel.runner.executor import ProviderFactory
from judgepanel.store import repair as store
from judgepanel.store.checkers import CheckerRow, iteration_checkers, store_checkers
from judgepanel.store.editor import create_editor_campaign, editor_proposals

DEFAULT_THRESHOLD = 0.9


def checker_campaign(name: str) -> str:
    return f"{name}-checkers"


def majority(votes: Sequence[bool]) -> bool | None:
    """Met when more than half said met, not met when more than half said not met, else None."""
    yes = sum(votes)
    if 2 * yes > len(votes):
        return True
    if 2 * yes < len(votes):
        return False
    return None


def agreement(
    checker_met: Mapping[int, bool], judge_votes: Mapping[int, Sequence[bool]]
) -> tuple[float | None, int]:
    """(share of items with a judge majority where the checker says the same, number of such items)."""
    pairs = [
        (checker_met[i], m)
        for i, v in judge_votes.items()
        if i in checker_met and (m := majority(v)) is not None
    ]
    if not pairs:
        return None, 0
    return sum(a == b for a, b in pairs) / len(pairs), len(pairs)


def propose_checkers(
    engine: Engine,
    name: str,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    options: RunOptions | None = None,
    provider_factory: ProviderFactory | None = None,
    retry_failed: bool = False,
) -> dict[str, Any]:
    if not 0.0 < threshold <= 1.0:
        raise BadInput(f"--threshold must be in (0, 1], got {threshold}")
    rec = store.get_iteration(engine, name)
    _need(rec, "dev")
    inp = _inputs(rec)
    check_budget(options, [inp.editor])
    opts = options or RunOptions()
    if retry_failed:
        opts = replace(opts, retry_failed=True)
    ctx = _Ctx(engine, opts, provider_factory, _say_nothing, retry_failed)
    doc, ids, _dims = _clause_order(engine, rec)
    text_of = {c.id: c.text for c in doc.clauses}
    tasks = {f"checker:{c}": CheckerTask(c, text_of[c]).as_dict() for c in ids}
    camp = checker_campaign(name)
    create_editor_campaign(engine, camp, _editor_record(inp.editor), tasks, dataset=inp.dataset)
    _run(ctx, camp)
    proposals = editor_proposals(engine, camp)
    unanswered = [k.split(":", 1)[1] for k in sorted(tasks) if k not in proposals]
    if unanswered:
        raise RepairIncomplete(
            f"the editor gave no usable checker proposal for {len(unanswered)} of {len(tasks)} clauses "
            f"({', '.join(unanswered[:5])}{', …' if len(unanswered) > 5 else ''}); run "
            f"`judgepanel repair checkers {name} --retry-failed` to ask again"
        )
    assert rec.campaigns["dev"] is not None
    votes: dict[str, dict[int, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for r in store.clause_verdict_rows(engine, rec.campaigns["dev"]):
        votes[r.clause_key][r.item_id].append(r.met)
    items = sorted({i for v in votes.values() for i in v})
    texts = {i: (t.output or "") for i, t in store.item_texts(engine, items).items()}
    rows: list[CheckerRow] = []
    for c in ids:
        p = proposals[f"checker:{c}"]
        kind = None if p["checker"] == "none" else str(p["checker"])
        params = dict(p.get("params") or {})
        error: str | None = None
        agree: float | None = None
        n = 0
        if kind is not None:
            try:
                checker = validate(kind, params)
                params = checker.params
                met = {i: checker.check(t) for i, t in texts.items()}
                agree, n = agreement(met, votes.get(c, {}))
                if agree is None:
                    error = "no development item with a judge majority on this clause"
            except CheckerError as exc:
                error = str(exc)
        kept = kind is not None and error is None and agree is not None and agree >= threshold
        rows.append(
            CheckerRow(
                c,
                kind,
                params,
                p.get("reason"),
                error,
                None if agree is None else round(agree, 6),
                n,
                threshold,
                kept,
            )
        )
    rv = rec.rubric_ids["original"]
    assert rv is not None
    store_checkers(engine, name, rv, rows)
    return checker_report(engine, name)


def checker_report(engine: Engine, name: str) -> dict[str, Any]:
    rec = store.get_iteration(engine, name)
    rows = iteration_checkers(engine, name)
    return {
        "iteration": name,
        "rubric": rec.rubrics["original"],
        "editor_campaign": checker_campaign(name) if rows else None,
        "threshold": rows[0].threshold if rows else None,
        "proposed": sum(1 for r in rows if r.kind is not None),
        "kept": sum(1 for r in rows if r.kept),
        "checkers": [r.as_dict() for r in rows],
    }
