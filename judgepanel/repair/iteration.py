"""One rubric-repair iteration as resumable library steps (Issue 9).

    dev       clause campaign on the development split, the original rubric, the judge panel
    select    disagreement rates, the contested clauses, the seeded random control
    rewrite   editor calls (an editor campaign) for every selected or control clause; two new
              rubric versions, contested-edited and control-edited, children of the original
    evaluate  the same panel under the three versions on the evaluation split only — refused until
              the criterion is stored
    compare   inter-judge α and agreement with humans, paired bootstrap CIs, the verdict

Every step is idempotent: a step already done returns its stored result; a step interrupted
(even by SIGKILL) is resumed by calling it again — campaigns are re-planned to the same jobs and
run only what is not done, so nothing already answered is bought again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from sqlalchemy import Engine

from judgepanel.errors import BadInput, JudgepanelError, NotFound
from judgepanel.metrics.group_ci import TOO_FEW_GROUPS
from judgepanel.providers.spec import editor_spec, given_judge_names, parse_spec, split_judge_name
from judgepanel.repair.compare import DEFAULT_CRITERION, compare_versions, parse_criterion, verdicts
from judgepanel.repair.isolation import editor_shares_family_with, isolation_warning
from judgepanel.repair.sample import spread_sample
from judgepanel.repair.select import ClauseVerdicts, select_clauses
from judgepanel.repair.tasks import rewrite_task, split_task
from judgepanel.rubrics import RubricDoc
from judgepanel.runner import RunOptions, create
from judgepanel.runner.executor import ProviderFactory
from judgepanel.runner.failures import describe_failures
from judgepanel.runner.failures import unanswered as unanswered_calls
from judgepanel.runner.study import (
    Step,
    Study,
    StudyContext,
    StudyIncomplete,
    StudyKind,
    check_budget,
    check_resample,
    check_sampling,
    run_campaign,
    say_nothing,
)
from judgepanel.store import repair as store
from judgepanel.store.editor import (
    EditorJudge,
    FailedCall,
    create_editor_campaign,
    editor_failed_calls,
    editor_failures,
    editor_proposals,
)
from judgepanel.store.repair import STEPS, IterationRecord
from judgepanel.store.rubrics import add_rubric, get_rubric

__all__ = [
    "DEFAULT_CRITERION",
    "STEPS",
    "RepairIncomplete",
    "RepairInputs",
    "compare",
    "evaluate",
    "rewrite",
    "run_iteration",
    "select",
    "split_rubric",
]


class RepairIncomplete(StudyIncomplete):
    """A step's campaign did not finish (budget, interruption): run the step again to resume."""


@dataclass(frozen=True)
class RepairInputs:
    dataset: str
    rubric: str  # resolved to NAME@V when the iteration starts
    judges: tuple[str, ...]
    editor: str
    dev_split: str
    eval_split: str
    dimensions: tuple[str, ...] = ()  # empty: every dimension of the rubric
    limit: int | None = None
    control_seed: int = 0
    human_group: str | None = None
    n_boot: int = 1000
    resample: str | None = None  # groups | items; None: groups where the items share groups
    parent: str | None = None  # `--from`: the iteration this one continues (its contested-edited rubric)

    def validate(self) -> None:
        if len(self.judges) < 2:
            raise BadInput(
                "a repair iteration needs at least two --judge: selection reads their disagreement"
            )
        if self.dev_split == self.eval_split:
            raise BadInput(
                "--dev-split and --eval-split must differ: evaluation never sees a development item"
            )
        check_sampling(self.limit, self.n_boot, self.resample)
        for j in self.judges:
            parse_spec(split_judge_name(j)[1])  # a judge may be given as NAME=SPEC
        editor_spec(self.editor)
        given_judge_names(self.judges)  # names unique within the panel

    def as_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "rubric": self.rubric,
            "judges": list(self.judges),
            "editor": self.editor,
            "dev_split": self.dev_split,
            "eval_split": self.eval_split,
            "dimensions": list(self.dimensions),
            "limit": self.limit,
            "control_seed": self.control_seed,
            "human_group": self.human_group,
            "n_boot": self.n_boot,
            "resample": self.resample,
            "parent": self.parent,
        }


# keys an iteration records beside its inputs (not compared when the same command resumes it)
_RECORDED = ("rubric_given", "sample")
_DEFAULTS = {"resample": None, "parent": None}  # inputs added later: absent in older iterations


def campaign_names(name: str) -> dict[str, str]:
    return {k: f"{name}-{k}" for k in ("dev", "editor", "original", "contested", "control")}


# `retry_failed` re-asks failed calls (parse failures, truncated replies, exhausted retries,
# refusals); `rubric split` and `repair checkers` run their editor campaigns in the same context
REPAIRS = StudyKind("iteration", "repair", RepairIncomplete)
repair_context = REPAIRS.context


def _compared(inputs: dict[str, Any]) -> dict[str, Any]:
    return {**_DEFAULTS, **{k: v for k, v in inputs.items() if k not in _RECORDED}}


def ancestors(engine: Engine, rec: IterationRecord) -> list[IterationRecord]:
    """The iterations `rec` continues (`--from`), nearest first."""
    out: list[IterationRecord] = []
    seen = {rec.name}
    parent = rec.inputs.get("parent")
    while parent:
        if parent in seen:
            raise BadInput(f"repair iteration {parent!r} continues itself")
        seen.add(parent)
        p = store.get_iteration(engine, parent)
        out.append(p)
        parent = p.inputs.get("parent")
    return out


def chained_inputs(engine: Engine, parent: str) -> RepairInputs:
    """`repair run NAME2 --from NAME1`: NAME1's inputs, its contested-edited rubric as the rubric to
    repair. Refused while NAME1 is unfinished, and when the chain's stopping rule says stop:
    NAME1 failed the inter-judge criterion (or its verdict was withheld: too few groups), or was
    itself stopped."""
    p = store.get_iteration(engine, parent)
    stopped = (p.selection or {}).get("stopped")
    if stopped:
        raise BadInput(f"the chain stops at {parent!r}: {stopped}")
    if p.steps["compare"] != "done" or p.comparison is None:
        raise BadInput(f"iteration {parent!r} is not finished; run `judgepanel repair run {parent}` first")
    inter = p.comparison.get("verdict", {}).get("inter_judge")
    if inter == TOO_FEW_GROUPS:
        raise BadInput(
            f"the chain stops at {parent!r}: its inter-judge verdict is withheld ({TOO_FEW_GROUPS}: "
            f"{p.comparison.get('groups_in_data')} evaluation groups, fewer than 5), so nothing shows its "
            "edits helped (stopping rule)"
        )
    if inter != "pass":
        raise BadInput(
            f"the chain stops at {parent!r}: its contested-edited rubric failed the inter-judge "
            f"criterion {p.criterion!r} (stopping rule)"
        )
    d = _compared(p.inputs)
    d["judges"], d["dimensions"] = tuple(d["judges"]), tuple(d["dimensions"])
    d["rubric"], d["parent"] = p.rubrics["contested"], parent
    return RepairInputs(**d)


def _samples(engine: Engine, inputs: RepairInputs, exclude: set[str]) -> dict[str, Any] | None:
    """The items each split's campaigns judge: with `--limit`, a seeded sample spread over groups;
    in a chain, the development items the earlier iterations did not use (fresh ones)."""
    if inputs.limit is None and not exclude:
        return None
    out: dict[str, Any] = {"seed": inputs.control_seed, "limit": inputs.limit}
    for label, split in (("dev", inputs.dev_split), ("eval", inputs.eval_split)):
        members = store.split_members(engine, inputs.dataset, split)
        if label == "dev":
            members = [m for m in members if m[0] not in exclude]
            if not members:
                raise BadInput(
                    f"no fresh development items left in split {split!r}: the earlier iterations of "
                    "the chain used them all"
                )
        n = inputs.limit if inputs.limit is not None else len(members)
        out[label] = spread_sample(members, n, seed=inputs.control_seed, label=split).as_dict()
    return out


def start(engine: Engine, name: str, inputs: RepairInputs, *, criterion: str | None) -> IterationRecord:
    """Create the iteration (inputs, criterion, seed, item samples; no model call), or find the same one."""
    inputs.validate()
    crit = parse_criterion(criterion).text if criterion is not None else None
    try:
        have = store.get_iteration(engine, name)
    except NotFound:
        have = None
    if have is not None:
        # the same command again resumes: `--rubric summeval` meant the version it resolved to then
        # (the edited versions made since are newer), and a default dimension list meant all
        given = {**inputs.as_dict(), "rubric": have.inputs["rubric"]}
        if not inputs.dimensions:
            given["dimensions"] = have.inputs["dimensions"]
        same_rubric = inputs.rubric in (have.inputs["rubric"], have.inputs.get("rubric_given"))
        if given != _compared(have.inputs) or not same_rubric:
            raise BadInput(
                f"repair iteration {name!r} exists with other inputs; resume it with "
                f"`judgepanel repair run {name}` alone, or choose another name"
            )
        return store.start_iteration(
            engine,
            name,
            dataset=have.dataset,
            rubric=have.inputs["rubric"],
            inputs=have.inputs,
            control_seed=have.control_seed,
            criterion=crit,
            campaigns=have.campaigns,
        )
    doc = get_rubric(engine, inputs.rubric)
    for d in inputs.dimensions:
        doc.doc.dimension(d)
    dims = inputs.dimensions or tuple(d.name for d in doc.doc.dimensions if d.clauses)
    fixed = RepairInputs(**{**inputs.__dict__, "rubric": doc.ref, "dimensions": dims})
    for split in (fixed.dev_split, fixed.eval_split):
        if store.split_items(engine, fixed.dataset, split) == 0:
            raise BadInput(
                f"dataset {fixed.dataset!r} has no items in split {split!r}; assign splits with "
                f"`judgepanel data split {fixed.dataset} --fractions {fixed.dev_split}=0.5,{fixed.eval_split}=0.5 --by group`"
            )
    used: set[str] = set()
    if fixed.parent is not None:
        first = store.get_iteration(engine, fixed.parent)
        for it in [first, *ancestors(engine, first)]:
            if it.campaigns.get("dev"):
                used |= store.campaign_items(engine, it.campaigns["dev"] or "")
    recorded: dict[str, Any] = {"rubric_given": inputs.rubric}
    sample = _samples(engine, fixed, used)
    if sample is not None:
        recorded["sample"] = sample
    return store.start_iteration(
        engine,
        name,
        dataset=fixed.dataset,
        rubric=fixed.rubric,
        inputs={**fixed.as_dict(), **recorded},
        control_seed=fixed.control_seed,
        criterion=crit,
        campaigns=campaign_names(name),
    )


def _inputs(rec: IterationRecord) -> RepairInputs:
    d = _compared(rec.inputs)
    d["judges"] = tuple(d["judges"])
    d["dimensions"] = tuple(d["dimensions"])
    return RepairInputs(**d)


def _items(rec: IterationRecord, label: str) -> tuple[tuple[str, ...], int | None]:
    """(explicit items, limit) for the campaigns of `label` (dev | eval): the recorded sample, or
    for iterations recorded before samples existed the first `--limit` items."""
    sample = rec.inputs.get("sample")
    if sample is not None:
        return tuple(sample[label]["items"]), None
    return (), rec.inputs.get("limit")


_need = REPAIRS.need


def dev(ctx: StudyContext, rec: IterationRecord) -> IterationRecord:
    if rec.steps["dev"] == "done":
        return rec
    inp = _inputs(rec)
    camp = rec.campaigns["dev"]
    assert camp is not None
    items, limit = _items(rec, "dev")
    create(
        ctx.engine,
        camp,
        dataset=inp.dataset,
        protocol="clauses",
        judges=inp.judges,
        rubric=inp.rubric,
        dimensions=inp.dimensions,
        split=inp.dev_split,
        limit=limit,
        items=items,
    )
    run_campaign(ctx, camp)
    return store.finish_step(ctx.engine, rec.name, "dev")


def _clause_order(engine: Engine, rec: IterationRecord) -> tuple[RubricDoc, list[str], list[str]]:
    inp = _inputs(rec)
    doc = get_rubric(engine, inp.rubric).doc
    ids, dims = [], []
    for d in inp.dimensions:
        for c in doc.dimension(d).clauses:
            ids.append(c.id)
            dims.append(d)
    return doc, ids, dims


def _verdict_arrays(
    rows: Sequence[store.ClauseVerdictRow], clause_ids: Sequence[str], dims: Sequence[str]
) -> tuple[ClauseVerdicts, list[int], list[str]]:
    items = sorted({r.item_id for r in rows})
    judges = sorted({r.judge for r in rows})
    ii = {x: k for k, x in enumerate(items)}
    jj = {x: k for k, x in enumerate(judges)}
    cc = {x: k for k, x in enumerate(clause_ids)}
    keep = [r for r in rows if r.clause_key in cc]
    v = ClauseVerdicts(
        np.array([ii[r.item_id] for r in keep], dtype=np.int64),
        np.array([jj[r.judge] for r in keep], dtype=np.int64),
        np.array([cc[r.clause_key] for r in keep], dtype=np.int64),
        np.array([r.met for r in keep], dtype=bool),
        tuple(clause_ids),
        tuple(dims),
        len(items),
        len(judges),
    )
    return v, items, judges


def select(engine: Engine, name: str) -> dict[str, Any]:
    rec = store.get_iteration(engine, name)
    if rec.steps["select"] != "done":
        _need(rec, "dev")
        _doc, ids, dims = _clause_order(engine, rec)
        assert rec.campaigns["dev"] is not None
        v, _ids, _judges = _verdict_arrays(store.clause_verdict_rows(engine, rec.campaigns["dev"]), ids, dims)
        selection = select_clauses(v, control_seed=rec.control_seed).as_dict()
        rec = store.finish_step(engine, name, "select", selection=selection)
        if rec.inputs.get("parent") and not any(r for r in selection["rates"].values()):
            # the chain's stopping rule: nothing left that the judges disagree on
            rec = store.stop_iteration(
                engine, name, "no clause has a positive disagreement rate on the fresh development items"
            )
    assert rec.selection is not None
    return rec.selection


def _with_texts(doc: RubricDoc, texts: dict[str, str]) -> RubricDoc:
    body = doc.to_dict()
    for d in body["dimensions"]:
        for c in d["clauses"]:
            if c["id"] in texts:
                c["text"] = texts[c["id"]]
    return RubricDoc.from_dict(body, origin="edited rubric")


def rewrite_step(ctx: StudyContext, name: str) -> dict[str, Any]:
    engine = ctx.engine
    rec = store.get_iteration(engine, name)
    if rec.steps["rewrite"] != "done":
        _need(rec, "select")
        inp = _inputs(rec)
        sel = rec.selection or {}
        doc, ids, dims = _clause_order(engine, rec)
        dim_of = dict(zip(ids, dims, strict=True))
        text_of = {c.id: c.text for c in doc.clauses}
        sets: dict[str, list[str]] = {}
        for label in ("selected", "control"):
            for cids in sel.get(label, {}).values():
                for c in cids:
                    sets.setdefault(c, []).append("contested" if label == "selected" else "control")
        assert rec.campaigns["dev"] is not None and rec.campaigns["editor"] is not None
        rows = store.clause_verdict_rows(engine, rec.campaigns["dev"])
        by_clause: dict[str, list[store.ClauseVerdictRow]] = {}
        for r in rows:
            by_clause.setdefault(r.clause_key, []).append(r)
        texts = store.item_texts(engine, sorted({r.item_id for r in rows}))
        judges = sorted({parse_spec(split_judge_name(j)[1]).name for j in inp.judges})
        tasks = {
            c: rewrite_task(c, text_of[c], dim_of[c], by_clause.get(c, []), texts, judges).as_dict()
            for c in sorted(sets)
        }
        proposals: dict[str, dict[str, Any]] = {}
        failures: dict[str, FailedCall] = {}
        if tasks:
            create_editor_campaign(
                engine, rec.campaigns["editor"], EditorJudge.from_spec(inp.editor), tasks, dataset=inp.dataset
            )
            run_campaign(ctx, rec.campaigns["editor"])
            proposals = editor_proposals(engine, rec.campaigns["editor"])
            failures = editor_failed_calls(engine, rec.campaigns["editor"])
        unanswered = [c for c in sorted(tasks) if c not in proposals]
        if unanswered:
            # a failed editor call is not "no edit": the step stays undone, the calls are re-asked;
            # each cause says what can help it (a context refusal needs a larger window first)
            causes = describe_failures(
                unanswered_calls(unanswered, failures), f"judgepanel repair run {name} --retry-failed"
            )
            raise RepairIncomplete(
                f"the editor gave no usable rewrite for {len(unanswered)} of {len(tasks)} clauses: "
                f"{causes}. The rewrite step is not done"
            )
        rewrites: dict[str, Any] = {}
        for c in sorted(sets):
            p = proposals[c]
            unchanged = " ".join(p["clause"].split()) == " ".join(text_of[c].split())
            rewrites[c] = {
                "old": text_of[c],
                "new": text_of[c] if unchanged else p["clause"],
                "reason": p.get("reason", ""),
                "sets": sets[c],
                "unchanged": unchanged,
            }
        contested = _with_texts(doc, {c: r["new"] for c, r in rewrites.items() if "contested" in r["sets"]})
        control = _with_texts(doc, {c: r["new"] for c, r in rewrites.items() if "control" in r["sets"]})
        rec = store.store_rewrites(
            engine,
            name,
            contested=contested,
            control=control,
            editor=EditorJudge.from_spec(inp.editor).name,
            rewrites=rewrites,
        )
    return {
        **{k: rec.rubrics[k] for k in ("original", "contested", "control")},
        "rewrites": {
            c: {
                "old": r["old"],
                "new": r["new"],
                "reason": r["reason"],
                "sets": r["sets"],
                "unchanged": r.get("unchanged", r["new"] == r["old"]),
            }
            for c, r in (rec.rewrites or {}).items()
        },
    }


def rewrite(
    engine: Engine,
    name: str,
    options: RunOptions | None = None,
    *,
    provider_factory: ProviderFactory | None = None,
    retry_failed: bool = False,
) -> dict[str, Any]:
    check_budget(options, [store.get_iteration(engine, name).inputs["editor"]])
    opts = options or RunOptions()
    if retry_failed:
        opts = replace(opts, retry_failed=True)
    return rewrite_step(repair_context(engine, opts, provider_factory, say_nothing, retry_failed), name)


def evaluate_step(ctx: StudyContext, name: str, criterion: str | None = None) -> IterationRecord:
    engine = ctx.engine
    rec = store.get_iteration(engine, name)
    if criterion is not None:
        rec = store.declare_criterion(engine, name, parse_criterion(criterion).text)
    if rec.steps["evaluate"] == "done":
        return rec
    if rec.criterion is None:
        raise BadInput(
            f"iteration {name!r} has no declared criterion: declare it before any evaluation call, "
            f'e.g. `judgepanel repair evaluate {name} --criterion "{DEFAULT_CRITERION}"`'
        )
    _need(rec, "rewrite")
    inp = _inputs(rec)
    items, limit = _items(rec, "eval")
    campaigns = dict(rec.campaigns)
    for version in ("original", "contested", "control"):
        camp, ref = rec.campaigns[version], rec.rubrics[version]
        assert camp is not None and ref is not None
        if version != "original" and rec.rubric_ids[version] == rec.rubric_ids["original"]:
            # no clause of this version changed: it is the original, whose verdicts it shares
            # (asking again would only measure the judges' sampling noise, not the edit)
            campaigns[version] = campaigns["original"]
            ctx.say(f"{version}-edited equals the original rubric: its evaluation is the original's")
            continue
        create(
            engine,
            camp,
            dataset=inp.dataset,
            protocol="clauses",
            judges=inp.judges,
            rubric=ref,
            dimensions=inp.dimensions,
            split=inp.eval_split,
            limit=limit,
            items=items,
        )
        run_campaign(ctx, camp)
    return store.finish_step(engine, name, "evaluate", campaigns=campaigns)


def evaluate(
    engine: Engine,
    name: str,
    options: RunOptions | None = None,
    *,
    criterion: str | None = None,
    provider_factory: ProviderFactory | None = None,
) -> IterationRecord:
    check_budget(options, store.get_iteration(engine, name).inputs["judges"])
    return evaluate_step(
        repair_context(engine, options or RunOptions(), provider_factory, say_nothing), name, criterion
    )


def compare(engine: Engine, name: str, *, resample: str | None = None) -> dict[str, Any]:
    """The stored comparison, or computed (and stored) once evaluation is done. `resample` other
    than the iteration's own (`groups` | `items`) recomputes the intervals that way without
    storing them: the declared analysis stays the one on record."""
    rec = store.get_iteration(engine, name)
    check_resample(resample)
    stored = rec.comparison if rec.steps["compare"] == "done" else None
    if stored is not None and (resample is None or stored.get("resample", "items") == resample):
        return {**stored, "checkers": checker_rows(engine, name)}
    _need(rec, "evaluate")
    inp = _inputs(rec)
    _doc, ids, dims = _clause_order(engine, rec)
    rows = {
        v: store.clause_verdict_rows(engine, rec.campaigns[v] or "")
        for v in ("original", "contested", "control")
    }
    items = sorted({r.item_id for rs in rows.values() for r in rs})
    judges = sorted({r.judge for rs in rows.values() for r in rs})
    ii = {x: k for k, x in enumerate(items)}
    jj = {x: k for k, x in enumerate(judges)}
    cc = {x: k for k, x in enumerate(ids)}
    met: dict[str, np.ndarray[Any, np.dtype[np.float64]]] = {}
    for v, rs in rows.items():
        m = np.full((len(items), len(judges), len(ids)), np.nan)
        for r in rs:
            if r.clause_key in cc:
                m[ii[r.item_id], jj[r.judge], cc[r.clause_key]] = 1.0 if r.met else 0.0
        met[v] = m
    dim_names = list(inp.dimensions)
    hm = store.human_means(engine, inp.dataset, dim_names, group=inp.human_group)
    human = np.array(
        [[hm.get(d, {}).get(i, np.nan) for d in dim_names] for i in items], dtype=np.float64
    ).reshape(len(items), len(dim_names))
    clause_dims = [dim_names.index(d) for d in dims]
    groups = store.item_groups(engine, items)
    crit = parse_criterion(rec.criterion or DEFAULT_CRITERION)
    c = compare_versions(
        met,
        clause_dims,
        human,
        n_boot=inp.n_boot,
        seed=rec.control_seed,
        groups=[groups.get(i) for i in items],
        resample=resample or inp.resample,
        dimensions=dim_names,
        human_margin=crit.human_margin,
    )
    verdict, summary = verdicts(c, crit)
    rewrites = rec.rewrites or {}
    dev_items = len({r.item_id for r in store.clause_verdict_rows(engine, rec.campaigns["dev"] or "")})
    shared = editor_shares_family_with(inp.editor, inp.judges)
    names = given_judge_names(inp.judges)
    result = {
        **c.as_dict(),
        "criterion": rec.criterion,
        "verdict": verdict,
        "summary": summary,
        "clauses_edited": {
            k: sum(1 for r in rewrites.values() if k in r["sets"] and r["new"] != r["old"])
            for k in ("contested", "control")
        },
        "clauses_unchanged": {
            k: sorted(c for c, r in rewrites.items() if k in r["sets"] and r["new"] == r["old"])
            for k in ("contested", "control")
        },
        "same_as_original": [
            v for v in ("contested", "control") if rec.rubric_ids[v] == rec.rubric_ids["original"]
        ],
        "units": {"dev": dev_items, "eval": len(items)},
        "judges": judges,
        # issue 19 §3: the short name of each judge above (`NAME=SPEC` or derived), as campaigns show it
        "judge_names": [names.get(j, j) for j in judges],
        "human_group": inp.human_group,
        "editor": parse_spec(inp.editor).name,
        "editor_shares_family_with": shared,
        "sample": _sample_summary(rec),
        "parent": inp.parent,
    }
    result = dict(json.loads(json.dumps(result)))
    if stored is None and (resample is None or resample == c.resample):
        store.finish_step(engine, name, "compare", comparison=result)
    return {**result, "checkers": checker_rows(engine, name)}


def checker_rows(engine: Engine, name: str) -> list[dict[str, Any]]:
    """Every checker proposal of the iteration (`repair checkers`), kept or refused; read when
    asked, not stored with the comparison, so proposals made after `compare` show too."""
    from judgepanel.store.checkers import iteration_checkers

    return [r.as_dict() for r in iteration_checkers(engine, name)]


def _sample_summary(rec: IterationRecord) -> dict[str, Any] | None:
    sample = rec.inputs.get("sample")
    if sample is None:
        return None
    return {
        "seed": sample["seed"],
        "limit": sample["limit"],
        **{
            k: {x: sample[k][x] for x in ("groups", "of_items", "of_groups")}
            | {"items": len(sample[k]["items"])}
            for k in ("dev", "eval")
        },
    }


def judges_named(rec: IterationRecord) -> dict[str, list[str]]:
    """`judges` (canonical specs) and `judge_names` beside them (issue 19 §3: the names the
    iteration's campaigns show, `NAME=SPEC` or derived) for `repair status --json` and the viewer;
    `inputs.judges` keeps the judges as given."""
    names = given_judge_names([str(j) for j in rec.inputs.get("judges") or []])
    return {"judges": list(names), "judge_names": list(names.values())}


def chain(engine: Engine, name: str) -> list[dict[str, Any]]:
    """The chain `name` belongs to, first iteration first: its ancestors, itself and the
    iterations continuing it (`--from`), each with its rubric, verdict and state."""
    rec = store.get_iteration(engine, name)
    line = [*reversed(ancestors(engine, rec)), rec]
    children: dict[str, list[str]] = {}
    for row in store.list_iterations(engine):
        it = store.get_iteration(engine, row["name"])
        parent = it.inputs.get("parent")
        if parent:
            children.setdefault(parent, []).append(it.name)
    tail = rec.name
    while children.get(tail):
        tail = sorted(children[tail])[0]
        line.append(store.get_iteration(engine, tail))
    return [
        {
            "iteration": it.name,
            "from": it.inputs.get("parent"),
            "rubric": it.rubrics["original"],
            "contested": it.rubrics["contested"],
            "verdict": (it.comparison or {}).get("verdict"),
            "stopped": (it.selection or {}).get("stopped"),
            "next": next((k for k in STEPS if it.steps[k] == "pending"), None),
        }
        for it in line
    ]


def run_iteration(
    engine: Engine,
    name: str,
    inputs: RepairInputs | None = None,
    options: RunOptions | None = None,
    *,
    criterion: str | None = None,
    stop_after: str | None = None,
    provider_factory: ProviderFactory | None = None,
    say: Callable[[str], None] = say_nothing,
    retry_failed: bool = False,
    warn: Callable[[str], None] = say_nothing,
) -> IterationRecord:
    """Start (or resume) an iteration and run its steps up to `stop_after` (all by default).
    `retry_failed` re-asks the failed calls of the step's campaign (an editor whose reply was
    truncated or unreadable, judges whose retries ran out). A chained iteration that its stopping
    rule stopped runs no further step."""
    REPAIR.check_stop_after(stop_after)
    if inputs is not None:
        inputs.validate()
        check_budget(options, [*inputs.judges, inputs.editor])
        start(engine, name, inputs, criterion=criterion)
        warning = isolation_warning(
            editor_shares_family_with(inputs.editor, inputs.judges), given_judge_names(inputs.judges)
        )
        if warning:
            warn(warning)
    else:
        rec = store.get_iteration(engine, name)
        check_budget(options, [*rec.inputs["judges"], rec.inputs["editor"]])
    if inputs is None and criterion is not None:
        store.declare_criterion(engine, name, parse_criterion(criterion).text)
    opts = options or RunOptions()
    if retry_failed:
        opts = replace(opts, retry_failed=True)
    return REPAIR.run(
        repair_context(engine, opts, provider_factory, say, retry_failed), name, stop_after=stop_after
    )


def _dev(ctx: StudyContext, name: str) -> object:
    return dev(ctx, store.get_iteration(ctx.engine, name))


def _select(ctx: StudyContext, name: str) -> object:
    return select(ctx.engine, name)


def _compare(ctx: StudyContext, name: str) -> object:
    return compare(ctx.engine, name)


def _stopped(rec: IterationRecord) -> str | None:
    """Why the chain's stopping rule stopped the iteration (kept with its selection)."""
    reason = (rec.selection or {}).get("stopped")
    return None if reason is None else str(reason)


# A study step runs its campaign and records its result; a chained iteration whose stopping rule
# fired (in `select`) has its remaining steps `stopped` and runs no further step.
REPAIR: Study[IterationRecord] = Study(
    steps=(
        Step("dev", _dev),
        Step("select", _select),
        Step("rewrite", rewrite_step),
        Step("evaluate", evaluate_step),
        Step("compare", _compare),
    ),
    load=store.get_iteration,
    stopped_reason=_stopped,
)
assert REPAIR.names == STEPS


# ---------------------------------------------------------------- rubric split


def split_rubric(
    engine: Engine,
    ref: str,
    editor: str,
    *,
    dimensions: Sequence[str] = (),
    options: RunOptions | None = None,
    provider_factory: ProviderFactory | None = None,
) -> dict[str, Any]:
    """An editor proposes atomic clauses per dimension; stored as a new version (parent `ref`,
    author editor). A proposed clause identical to a current one keeps its id; new clauses get the
    next free `<dimension>.<n>` ids."""
    stored = get_rubric(engine, ref)
    doc = stored.doc
    dims = [doc.dimension(d) for d in dimensions] if dimensions else list(doc.dimensions)
    record = EditorJudge.from_spec(editor)
    tasks = {f"split:{d.name}": split_task(d).as_dict() for d in dims}
    digest = hashlib.sha256(json.dumps([record.name, sorted(tasks)], sort_keys=True).encode()).hexdigest()[
        :10
    ]
    camp = f"rubric-split-{stored.ref}-{digest}"
    create_editor_campaign(engine, camp, record, tasks)
    run_campaign(repair_context(engine, options or RunOptions(), provider_factory, say_nothing), camp)
    proposals = editor_proposals(engine, camp)
    if not proposals:  # nothing to store: say why instead of "created": false
        failures = editor_failures(engine, camp)
        first = next(iter(failures.values()), "no reply")
        raise JudgepanelError(
            f"the editor gave no usable split for {', '.join(d.name for d in dims)}: {first}; no rubric version was made"
        )
    body = doc.to_dict()
    out: dict[str, list[str]] = {}
    for d in body["dimensions"]:
        p = proposals.get(f"split:{d['name']}")
        if p is None:
            continue
        existing = {c["text"]: c["id"] for c in d["clauses"]}
        used = {c["id"] for c in d["clauses"]}
        nums = [int(i.rsplit(".", 1)[1]) for i in used if i.rsplit(".", 1)[-1].isdigit()]
        nxt = max(nums, default=0) + 1
        clauses = []
        for text in dict.fromkeys(p["clauses"]):
            cid = existing.get(text)
            if cid is None:
                cid = f"{d['name']}.{nxt}"
                nxt += 1
            clauses.append({"id": cid, "text": text})
        d["clauses"] = clauses
        out[d["name"]] = [c["id"] for c in clauses]
    new_doc = RubricDoc.from_dict(body, origin="split rubric")
    added = add_rubric(
        engine,
        new_doc,
        author="editor",
        change_note=f"split by {record.name} from {stored.ref}",
        parent=stored.ref,
        editor=record.name,
    )
    failures = editor_failures(engine, camp)
    return {
        "rubric": added.rubric.name,
        "version": added.rubric.version,
        "clauses": out,
        "created": added.created,
        # dimensions whose reply was unusable keep their clauses: task key -> why
        "failed": {k.removeprefix("split:"): v for k, v in failures.items()},
    }
