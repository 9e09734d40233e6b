"""Clause → deterministic checker transfer (issue 18 §2; seed 002's last step): `repair checkers NAME`.

After an iteration's `dev` step (the judge panel's clause verdicts on the development items):

1. the editor is asked, once per clause of the iteration's rubric, for one checker from the
   catalogue (`protocol.checkers`) with its parameters, or "none". The request holds the clause id,
   its text and the catalogue, nothing else (`protocol.editor.CheckerTask`); the calls are an
   editor campaign `NAME-checkers`, stored and resumable like the rewrite step's;
2. each proposed checker is run on the development items' candidate texts and compared with the
   judge majority for that clause (met when more than half of the judges who answered said met;
   items where the judges tie have no majority and are left out of the agreement);
3. a proposal is kept by the rule of `metrics.checker_validation` (issue 30 §3): both classes in
   the judges' majority (at least `min_per_class` of each), a checker whose answer varies, Cohen's
   κ ≥ `min_kappa`, and the one-sided 95 % Clopper–Pearson lower bound of the agreement ≥
   `threshold` (default 0.9; all recorded with each proposal) — "kept", "refused", or "cannot be
   validated on these items" when the items cannot test it. A proposal whose parameters are
   unusable (e.g. a regex with nested quantifiers) is "unusable" with the reason. A checker whose
   kind does not fit the clause's wording (a word range answered by `language`; issue 34 §1) is
   flagged with a warning (:func:`kind_fit_warning`). Every proposal is stored (`clause_checker`).

A kept checker answers its clause in later clause campaigns on the iteration's original rubric
version without a model call (`runner.checkers`). Running the command again with another threshold
re-decides from the same proposals (the editor campaign is done: no new call); `--recheck`
re-decides the stored proposals of one iteration, or of every iteration, by the current rule
without asking the editor at all (:func:`recheck_checkers`), and says which kept checkers it drops.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Engine

from judgepanel.errors import BadInput
from judgepanel.metrics.checker_validation import (
    DEFAULT_CONFIDENCE,
    DEFAULT_MIN_KAPPA,
    DEFAULT_MIN_PER_CLASS,
    validate_checker,
)
from judgepanel.protocol.checkers import CheckerError, validate
from judgepanel.protocol.editor import CheckerTask
from judgepanel.repair.iteration import (
    RepairIncomplete,
    _clause_order,
    _inputs,
    _need,
    repair_context,
)
from judgepanel.runner import RunOptions
from judgepanel.runner.executor import ProviderFactory
from judgepanel.runner.study import check_budget, run_campaign
from judgepanel.store import repair as store
from judgepanel.store.checkers import CheckerRow, iteration_checkers, iterations_with_checkers, store_checkers
from judgepanel.store.editor import EditorJudge, create_editor_campaign, editor_proposals

DEFAULT_THRESHOLD = 0.9
UNUSABLE = "unusable"


@dataclass(frozen=True)
class CheckerRule:
    """The settings of the keep rule (`metrics.checker_validation.validate_checker`)."""

    threshold: float = DEFAULT_THRESHOLD
    min_kappa: float = DEFAULT_MIN_KAPPA
    min_per_class: int = DEFAULT_MIN_PER_CLASS
    confidence: float = DEFAULT_CONFIDENCE

    def check(self) -> None:
        if not 0.0 < self.threshold <= 1.0:
            raise BadInput(f"--threshold must be in (0, 1], got {self.threshold}")
        if not -1.0 <= self.min_kappa <= 1.0:
            raise BadInput(f"--min-kappa must be in [-1, 1], got {self.min_kappa}")
        if self.min_per_class < 1:
            raise BadInput(f"--min-per-class must be at least 1, got {self.min_per_class}")

    def settings(self) -> dict[str, Any]:
        return {
            "min_kappa": self.min_kappa,
            "min_per_class": self.min_per_class,
            "confidence": self.confidence,
        }


# what a clause says when a checker kind can answer it (issue 34 §1: a real editor mapped "the
# summary's length is between 20 and 120 words" to `language = en`)
_FITS = {
    "word_count": re.compile(r"\b(words?|length|long|short|brief|concise|characters?)\b", re.I),
    "language": re.compile(
        r"\b(language|english|german|french|spanish|italian|dutch|portuguese|written in)\b", re.I
    ),
    "phrase": re.compile(r"[\"'“”‘’]|\b(mentions?|contains?|includes?|phrases?|says?|uses?|words?)\b", re.I),
}
_LANGUAGES = {"en": "english", "de": "german", "fr": "french", "es": "spanish", "it": "italian",
              "nl": "dutch", "pt": "portuguese"}  # fmt: skip


def kind_fit_warning(kind: str | None, params: Mapping[str, Any], clause_text: str) -> str | None:
    """A warning when the checker's kind does not fit the clause's wording, or its parameters do
    not match numbers or names the clause states; None when nothing looks off (a heuristic: it
    reads words, it does not understand the clause)."""
    if kind is None:
        return None
    pattern = _FITS.get(kind)
    if pattern is not None and not pattern.search(clause_text):
        return f"a {kind} checker does not fit the clause's wording ({clause_text[:80]!r})"
    if kind == "word_count":
        stated = {int(x) for x in re.findall(r"\b\d+\b", clause_text)}
        given = {int(v) for k in ("min", "max") if isinstance(v := params.get(k), int | float)}
        if stated and given - stated:
            return f"the word range {sorted(given)} is not the clause's {sorted(stated)}"
    if kind == "language":
        named = {code for code, name in _LANGUAGES.items() if re.search(rf"\b{name}\b", clause_text, re.I)}
        if named and params.get("language") not in named:
            return f"language {params.get('language')!r} is not the one the clause names ({', '.join(sorted(named))})"
    if kind == "phrase":
        phrases = [str(p) for p in params.get("phrases") or []]
        if phrases and not any(p.lower() in clause_text.lower() for p in phrases):
            return "none of the phrases appears in the clause's wording"
    return None


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
    min_kappa: float = DEFAULT_MIN_KAPPA,
    min_per_class: int = DEFAULT_MIN_PER_CLASS,
) -> dict[str, Any]:
    rule = CheckerRule(threshold, min_kappa, min_per_class)
    rule.check()
    rec = store.get_iteration(engine, name)
    _need(rec, "dev")
    inp = _inputs(rec)
    check_budget(options, [inp.editor])
    opts = options or RunOptions()
    if retry_failed:
        opts = replace(opts, retry_failed=True)
    ctx = repair_context(engine, opts, provider_factory, retry_failed=retry_failed)
    doc, ids, _dims = _clause_order(engine, rec)
    text_of = {c.id: c.text for c in doc.clauses}
    tasks = {f"checker:{c}": CheckerTask(c, text_of[c]).as_dict() for c in ids}
    camp = checker_campaign(name)
    create_editor_campaign(engine, camp, EditorJudge.from_spec(inp.editor), tasks, dataset=inp.dataset)
    run_campaign(ctx, camp)
    proposals = editor_proposals(engine, camp)
    unanswered = [k.split(":", 1)[1] for k in sorted(tasks) if k not in proposals]
    if unanswered:
        raise RepairIncomplete(
            f"the editor gave no usable checker proposal for {len(unanswered)} of {len(tasks)} clauses "
            f"({', '.join(unanswered[:5])}{', …' if len(unanswered) > 5 else ''}); run "
            f"`judgepanel repair checkers {name} --retry-failed` to ask again"
        )
    votes, texts = _development(engine, rec)
    rows: list[CheckerRow] = []
    for c in ids:
        p = proposals[f"checker:{c}"]
        kind = None if p["checker"] == "none" else str(p["checker"])
        rows.append(
            decide(
                c,
                text_of[c],
                kind,
                dict(p.get("params") or {}),
                p.get("reason"),
                texts,
                votes.get(c, {}),
                rule,
            )
        )
    rv = rec.rubric_ids["original"]
    assert rv is not None
    store_checkers(engine, name, rv, rows)
    return checker_report(engine, name)


def _development(engine: Engine, rec: Any) -> tuple[dict[str, dict[int, list[bool]]], dict[int, str]]:
    """The judges' clause votes on the development items and the items' candidate texts."""
    assert rec.campaigns["dev"] is not None
    votes: dict[str, dict[int, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for r in store.clause_verdict_rows(engine, rec.campaigns["dev"]):
        votes[r.clause_key][r.item_id].append(r.met)
    items = sorted({i for v in votes.values() for i in v})
    texts = {i: (t.output or "") for i, t in store.item_texts(engine, items).items()}
    return votes, texts


def decide(
    clause: str,
    clause_text: str,
    kind: str | None,
    params: dict[str, Any],
    reason: str | None,
    texts: Mapping[int, str],
    votes: Mapping[int, Sequence[bool]],
    rule: CheckerRule,
) -> CheckerRow:
    """One proposal decided by the rule: run the checker on the development texts, compare it with
    the judge majority (`metrics.checker_validation.validate_checker`), flag a kind that does not
    fit the clause."""
    error: str | None = None
    agree: float | None = None
    n = 0
    v = None
    warning = None
    if kind is not None:
        try:
            checker = validate(kind, params)
            params = checker.params
            met = {i: checker.check(t) for i, t in texts.items()}
            pairs = [(met[i], m) for i, vs in votes.items() if i in met and (m := majority(vs)) is not None]
            agree, n = agreement(met, votes)
            v = validate_checker(
                [a for a, _ in pairs],
                [b for _, b in pairs],
                threshold=rule.threshold,
                min_kappa=rule.min_kappa,
                min_per_class=rule.min_per_class,
                confidence=rule.confidence,
            )
            warning = kind_fit_warning(kind, params, clause_text)
        except CheckerError as exc:
            error = str(exc)
    decision: str | None = None
    why: str | None = None
    if kind is not None:
        decision, why = (UNUSABLE, error) if v is None else (v.decision, v.reason)
    kept = v is not None and v.kept

    def r6(x: float | None) -> float | None:
        return None if x is None or x != x else round(x, 6)

    return CheckerRow(
        clause,
        kind,
        params,
        reason,
        error,
        None if agree is None else round(agree, 6),
        n,
        rule.threshold,
        kept,
        r6(v.kappa) if v else None,
        r6(v.lower_bound) if v else None,
        v.n_met if v else None,
        v.n_not_met if v else None,
        r6(v.sensitivity) if v else None,
        r6(v.specificity) if v else None,
        decision,
        why,
        warning,
        rule.settings(),
    )


def recheck_checkers(
    engine: Engine,
    name: str | None = None,
    *,
    threshold: float | None = None,
    min_kappa: float = DEFAULT_MIN_KAPPA,
    min_per_class: int = DEFAULT_MIN_PER_CLASS,
) -> dict[str, Any]:
    """Re-decide stored proposals by the current rule, without an editor call: of iteration
    `name`, or of every iteration that has proposals. Each keeps its threshold unless `threshold`
    is given. `dropped` lists the checkers that were kept and are not any more."""
    names = [name] if name is not None else iterations_with_checkers(engine)
    if name is not None and not iteration_checkers(engine, name):
        raise BadInput(
            f"repair iteration {name!r} has no checker proposals (run `judgepanel repair checkers {name}`)"
        )
    reports = []
    for it in names:
        rec = store.get_iteration(engine, it)
        old = iteration_checkers(engine, it)
        doc, _ids, _dims = _clause_order(engine, rec)
        text_of = {c.id: c.text for c in doc.clauses}
        votes, texts = _development(engine, rec)
        rows = []
        for r in old:
            rule = CheckerRule(r.threshold if threshold is None else threshold, min_kappa, min_per_class)
            rule.check()
            rows.append(
                decide(
                    r.clause_key, text_of.get(r.clause_key, ""), r.kind, dict(r.params), r.reason, texts,
                    votes.get(r.clause_key, {}), rule,
                )
            )  # fmt: skip
        rv = rec.rubric_ids["original"]
        assert rv is not None
        store_checkers(engine, it, rv, rows)
        now = {r.clause_key: r.kept for r in rows}
        report = checker_report(engine, it)
        report["dropped"] = [r.clause_key for r in old if r.kept and not now.get(r.clause_key)]
        reports.append(report)
    return {
        "rechecked": reports,
        "kept": sum(r["kept"] for r in reports),
        "dropped": sum(len(r["dropped"]) for r in reports),
    }


def checker_report(engine: Engine, name: str) -> dict[str, Any]:
    rec = store.get_iteration(engine, name)
    rows = iteration_checkers(engine, name)
    return {
        "iteration": name,
        "rubric": rec.rubrics["original"],
        "editor_campaign": checker_campaign(name) if rows else None,
        "threshold": rows[0].threshold if rows else None,
        "rule": rows[0].rule if rows else None,
        "proposed": sum(1 for r in rows if r.kind is not None),
        "kept": sum(1 for r in rows if r.kept),
        "checkers": [r.as_dict() for r in rows],
    }
