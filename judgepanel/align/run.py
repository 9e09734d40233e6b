"""One human-supervised judge alignment as resumable library steps (Issue 22).

    dev       the original judge (its template: the dimension's instructions, no example) on the
              development items: a pointwise campaign
    align     the method's choices, on development items only:
              fewshot       K disagreeing development items, stratified by human score, inserted as
                            worked examples (a new template version); the aligned judge is then
                            scored on the development items too
              instructions  at most N rounds: an editor campaign sees the current instructions and
                            development items where judge and humans disagree, with the human
                            score and rationales; its revision is scored on the development items;
                            the best round by development QWK is kept (round 0, the original, wins
                            ties)
              grid          every configuration (judges × instruction texts) scored on the
                            development items; the best by development QWK is kept (the original
                            wins ties)
    evaluate  the original and the aligned judge on the evaluation items (two campaigns; one when
              the alignment kept the original)
    compare   `align.compare`: agreement with the humans on the evaluation items, CIs, deltas,
              the overfitting gap, TOST and cost

Every model call is a job of an ordinary campaign, so retries, the cache, the campaign cap
(`--max-cost`), key redaction and exactly-once hold. Every step is idempotent: a step already done
returns, an interrupted one (even by SIGKILL) is resumed by calling it again — its campaigns are
re-planned to the same jobs and only what is not done is asked; every choice is a deterministic
function of the stored answers and the seed, so it comes out the same.

Evaluation items never reach a choice: the development campaigns and the editor's tasks are built
from the development sample only, and the examples and instructions of the aligned template come
from them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import Engine

from judgepanel.align.choose import (
    CHOICE_STATISTIC,
    best,
    editor_examples,
    fewshot_examples,
)
from judgepanel.align.common import (
    METHODS,
    RECORDED,
    AlignIncomplete,
    AlignInputs,
    agreement_of,
    dev_items,
    inputs_of,
    judge_failures,
    judge_names,
    need_steps,
    on_common_items,
    sample_items,
    spec_name,
    split_data,
    step_context,
)
from judgepanel.analysis.conditions import ConditionData
from judgepanel.errors import BadInput, NotFound
from judgepanel.protocol.align import (
    MAX_ALIGN_EXAMPLES,
    AlignTask,
    Disagreement,
    JudgeTemplate,
    WorkedExample,
    default_instructions,
)
from judgepanel.repair.sample import spread_sample
from judgepanel.rubrics import Dimension
from judgepanel.runner import RunOptions, create
from judgepanel.runner.executor import ProviderFactory
from judgepanel.runner.failures import describe_failures
from judgepanel.runner.failures import unanswered as unanswered_calls
from judgepanel.runner.study import Step, Study, StudyContext, check_budget, run_campaign, say_nothing
from judgepanel.store import align as store
from judgepanel.store.align import STEPS, AlignmentRecord
from judgepanel.store.editor import EditorJudge, create_editor_campaign, editor_failed_calls, editor_proposals
from judgepanel.store.repair import split_members
from judgepanel.store.rubrics import get_rubric

__all__ = ["METHODS", "STEPS", "AlignIncomplete", "AlignInputs", "run_alignment"]


# ---------------------------------------------------------------- start


def _dimension(engine: Engine, inp: AlignInputs) -> tuple[str, Dimension | None]:
    dims = store.human_dimensions(engine, inp.dataset, inp.human_group)
    if not dims:
        raise BadInput(f"dataset {inp.dataset!r} has no label of a human group {inp.human_group!r}")
    name = inp.dimension
    if name is None:
        if len(dims) != 1:
            raise BadInput(
                f"the human group rated several dimensions; choose one with --dimension ({', '.join(dims)})"
            )
        name = dims[0]
    elif name not in dims:
        raise BadInput(
            f"the human group {inp.human_group!r} has no rating of {name!r} (it rated: {', '.join(dims)})"
        )
    doc_dim = None
    if inp.rubric is not None:
        doc_dim = get_rubric(engine, inp.rubric).doc.dimension(name)
    return name, doc_dim


def _check_splits(engine: Engine, inp: AlignInputs) -> dict[str, list[tuple[str, str | None]]]:
    members = {}
    for label, split in (("dev", inp.dev_split), ("eval", inp.eval_split)):
        m = split_members(engine, inp.dataset, split)
        if not m:
            raise BadInput(
                f"dataset {inp.dataset!r} has no items in split {split!r}; assign splits with "
                f"`judgepanel data split {inp.dataset} --fractions {inp.dev_split}=0.5,{inp.eval_split}=0.5 --by group`"
            )
        members[label] = m
    shared = sorted(
        {g for _e, g in members["dev"] if g is not None} & {g for _e, g in members["eval"] if g is not None}
    )
    if shared:
        raise BadInput(
            f"splits {inp.dev_split!r} and {inp.eval_split!r} overlap: group {shared[0]!r} "
            f"(and {len(shared) - 1} more) has items in both; split with `--by group`"
            if len(shared) > 1
            else f"splits {inp.dev_split!r} and {inp.eval_split!r} overlap: group {shared[0]!r} has items in both; "
            "split with `--by group`"
        )
    return members


def _campaigns(name: str) -> dict[str, str]:
    return {k: f"{name}-{k}" for k in ("dev-original", "eval-original", "eval-aligned")}


def start(engine: Engine, name: str, inputs: AlignInputs) -> AlignmentRecord:
    """Create the alignment (inputs, item samples, the starting instructions; no model call), or
    find the same one. Bad input is refused before anything is written."""
    inputs.validate()
    try:
        have = store.get_alignment(engine, name)
    except NotFound:
        have = None
    if have is not None:
        stored = {k: v for k, v in have.inputs.items() if k not in RECORDED}
        given = inputs.as_dict()
        if inputs.dimension is None:
            given["dimension"] = stored.get("dimension")
        if given != stored:
            raise BadInput(
                f"alignment {name!r} exists with other inputs; resume it with "
                f"`judgepanel align run {name}` alone, or choose another name"
            )
        return have
    dim, doc_dim = _dimension(engine, inputs)
    fixed = replace(inputs, dimension=dim)
    members = _check_splits(engine, fixed)
    if fixed.k > len(members["dev"]) and fixed.method == "fewshot":
        raise BadInput(
            f"--k {fixed.k} is larger than the {len(members['dev'])} development items; choose a smaller --k"
        )
    sample: dict[str, Any] = {"seed": fixed.seed, "limit": fixed.limit}
    for label, split in (("dev", fixed.dev_split), ("eval", fixed.eval_split)):
        n = fixed.limit if fixed.limit is not None else len(members[label])
        sample[label] = spread_sample(members[label], n, seed=fixed.seed, label=split).as_dict()
    recorded = {"sample": sample, "instructions0": default_instructions(doc_dim, dim)}
    return store.start_alignment(
        engine,
        name,
        dataset=fixed.dataset,
        method=fixed.method,
        inputs={**fixed.as_dict(), **recorded},
        campaigns=_campaigns(name),
    )


# ---------------------------------------------------------------- scoring on a split


def _judge_campaign(
    ctx: StudyContext, rec: AlignmentRecord, camp: str, judge: str, template: JudgeTemplate, label: str
) -> None:
    inp = inputs_of(rec)
    create(
        ctx.engine,
        camp,
        dataset=inp.dataset,
        protocol="pointwise",
        judges=[judge],
        conditions=("none",),
        dimensions=(inp.dimension or "",),
        split=inp.dev_split if label == "dev" else inp.eval_split,
        items=sample_items(rec, label),
        templates={"pointwise": template.custom()},
    )
    run_campaign(ctx, camp)


# ---------------------------------------------------------------- steps


def dev_step(ctx: StudyContext, rec: AlignmentRecord) -> AlignmentRecord:
    if rec.steps["dev"] == "done":
        return rec
    _judge_campaign(ctx, rec, rec.campaigns["dev-original"], inputs_of(rec).judge, _original(rec), "dev")
    return store.finish_step(ctx.engine, rec.name, "dev")


def _original(rec: AlignmentRecord) -> JudgeTemplate:
    return JudgeTemplate(rec.inputs["instructions0"])


def _fewshot(ctx: StudyContext, rec: AlignmentRecord) -> dict[str, Any]:
    inp = inputs_of(rec)
    data = split_data(ctx.engine, rec, rec.campaigns["dev-original"])
    dev = dev_items(data)
    choice = fewshot_examples(dev, inp.k, seed=inp.seed)
    texts = store.item_texts(ctx.engine, inp.dataset, choice.items)
    reference = {d.item: d.human for d in dev}
    examples = tuple(WorkedExample(i, texts[i][1], texts[i][0], reference[i]) for i in choice.items)
    aligned = JudgeTemplate(_original(rec).instructions, examples)
    camp = f"{rec.name}-dev-aligned"
    _judge_campaign(ctx, rec, camp, inp.judge, aligned, "dev")
    same, left_out = on_common_items({"original": data, "aligned": split_data(ctx.engine, rec, camp)})
    scores = [agreement_of(same["original"]), agreement_of(same["aligned"])]
    return {
        "choices": {
            "method": "fewshot",
            "statistic": CHOICE_STATISTIC,
            "seed": inp.seed,
            "k": inp.k,
            "examples": choice.as_dict(),
            "dev_agreement": {"original": scores[0], "aligned": scores[1]},
            "dev_left_out": left_out,
        },
        "aligned": {"judge": inp.judge, "template": aligned, "dev_campaign": camp},
        "campaigns": {"dev-aligned": camp},
    }


def _disagreements(
    engine: Engine, rec: AlignmentRecord, data: ConditionData, ids: Sequence[str]
) -> tuple[Disagreement, ...]:
    inp = inputs_of(rec)
    texts = store.item_texts(engine, inp.dataset, ids)
    (scores,) = data.rows.scores.values()
    index = {e: k for k, e in enumerate(data.rows.items)}
    out = []
    for e in ids:
        k = index[e]
        js = scores[k]
        out.append(
            Disagreement(
                texts[e][1],
                texts[e][0],
                js.score,
                js.rationale,
                data.reference[k],
                tuple(h.rationale for h in data.rows.humans[k] if h.rationale),
            )
        )
    return tuple(out)


def _instructions(ctx: StudyContext, rec: AlignmentRecord) -> dict[str, Any]:
    inp = inputs_of(rec)
    assert inp.editor is not None
    editor = EditorJudge.from_spec(inp.editor)
    current = _original(rec)
    camp = rec.campaigns["dev-original"]
    data = split_data(ctx.engine, rec, camp)
    rounds: list[dict[str, Any]] = [
        {
            "round": 0,
            "instructions": current.instructions,
            "dev_campaign": camp,
            "dev_agreement": agreement_of(data),
        }
    ]
    templates = [current]
    campaigns: dict[str, str] = {}
    stopped = None
    for r in range(1, inp.rounds + 1):
        ids = editor_examples(dev_items(data), MAX_ALIGN_EXAMPLES, seed=inp.seed, label=f"round{r}")
        if not ids:
            stopped = f"round {r}: the judge agrees with the humans on every development item"
            break
        task = AlignTask(
            current.instructions,
            inp.dimension or "",
            current.scale,
            _disagreements(ctx.engine, rec, data, ids),
        )
        ecamp = f"{rec.name}-editor-r{r}"
        key = f"align:r{r}"
        create_editor_campaign(ctx.engine, ecamp, editor, {key: task.as_dict()}, dataset=inp.dataset)
        campaigns[f"editor-r{r}"] = ecamp
        run_campaign(ctx, ecamp)
        proposal = editor_proposals(ctx.engine, ecamp).get(key)
        if proposal is None:
            # a failed editor call is not "no revision": the step stays undone, the call is
            # re-asked by --retry-failed (only unchanged instructions end the rounds)
            causes = describe_failures(
                unanswered_calls([key], editor_failed_calls(ctx.engine, ecamp)),
                f"judgepanel align run {rec.name} --retry-failed",
            )
            raise AlignIncomplete(
                f"round {r}: the editor gave no usable revision: {causes}. The align step is not done"
            )
        revised = JudgeTemplate(proposal["instructions"])
        if " ".join(revised.instructions.split()) == " ".join(current.instructions.split()):
            stopped = f"round {r}: the editor returned the instructions unchanged"
            rounds.append(
                {"round": r, "examples": list(ids), "reason": proposal.get("reason", ""), "unchanged": True}
            )
            break
        dcamp = f"{rec.name}-dev-r{r}"
        _judge_campaign(ctx, rec, dcamp, inp.judge, revised, "dev")
        campaigns[f"dev-r{r}"] = dcamp
        data = split_data(ctx.engine, rec, dcamp)
        rounds.append(
            {
                "round": r,
                "examples": list(ids),
                "reason": proposal.get("reason", ""),
                "instructions": revised.instructions,
                "dev_campaign": dcamp,
                "dev_agreement": agreement_of(data),
            }
        )
        templates.append(revised)
        current = revised
    scored = [x for x in rounds if "dev_agreement" in x]
    top, left_out = _score_on_common_items(ctx, rec, scored)
    chosen = scored[top]
    return {
        "choices": {
            "method": "instructions",
            "statistic": CHOICE_STATISTIC,
            "seed": inp.seed,
            "rounds": rounds,
            "best_round": chosen["round"],
            "stopped": stopped,
            "dev_agreement": {"original": rounds[0]["dev_agreement"], "aligned": chosen["dev_agreement"]},
            "dev_left_out": left_out,
        },
        "aligned": {"judge": inp.judge, "template": templates[top], "dev_campaign": chosen["dev_campaign"]},
        "campaigns": campaigns,
    }


def _score_on_common_items(
    ctx: StudyContext, rec: AlignmentRecord, candidates: list[dict[str, Any]]
) -> tuple[int, int]:
    """Each candidate's `dev_agreement` (set in place) on the development items every candidate
    answered (a failed job leaves its item out of all of them), the best one's index, and how many
    items were left out."""
    same, left_out = on_common_items(
        {c["dev_campaign"]: split_data(ctx.engine, rec, c["dev_campaign"]) for c in candidates}
    )
    for c in candidates:
        c["dev_agreement"] = agreement_of(same[c["dev_campaign"]])
    return best([c["dev_agreement"] for c in candidates]), left_out


def _grid(ctx: StudyContext, rec: AlignmentRecord) -> dict[str, Any]:
    inp = inputs_of(rec)
    texts = list(dict.fromkeys([rec.inputs["instructions0"], *inp.grid_instructions]))
    names = judge_names(list(dict.fromkeys([inp.judge, *inp.grid_judges])))
    judges = list(names)
    spec_of = {spec_name(j): j for j in (inp.judge, *inp.grid_judges)}
    configs = []
    campaigns: dict[str, str] = {}
    for k, (j, text) in enumerate(itertools.product(judges, texts)):
        camp = rec.campaigns["dev-original"] if k == 0 else f"{rec.name}-dev-g{k}"
        if k:
            _judge_campaign(ctx, rec, camp, spec_of[j], JudgeTemplate(text), "dev")
            campaigns[f"dev-g{k}"] = camp
        configs.append(
            {
                "config": k,
                "judge": names[j],
                "spec": j,
                "instructions": text,
                "instructions_index": texts.index(text),
                "dev_campaign": camp,
            }
        )
    top, left_out = _score_on_common_items(ctx, rec, configs)
    chosen = configs[top]
    return {
        "choices": {
            "method": "grid",
            "statistic": CHOICE_STATISTIC,
            "seed": inp.seed,
            "configs": configs,
            "best_config": top,
            "dev_agreement": {"original": configs[0]["dev_agreement"], "aligned": chosen["dev_agreement"]},
            "dev_left_out": left_out,
        },
        "aligned": {
            "judge": spec_of[chosen["spec"]],
            "template": JudgeTemplate(chosen["instructions"]),
            "dev_campaign": chosen["dev_campaign"],
        },
        "campaigns": campaigns,
    }


def align_step(ctx: StudyContext, name: str) -> AlignmentRecord:
    rec = store.get_alignment(ctx.engine, name)
    if rec.steps["align"] == "done":
        return rec
    need_steps(rec, "dev")
    got = {"fewshot": _fewshot, "instructions": _instructions, "grid": _grid}[rec.method](ctx, rec)
    aligned = got["aligned"]
    original = _original(rec)
    inp = inputs_of(rec)
    names = judge_names(list(dict.fromkeys([inp.judge, *inp.grid_judges])))
    templates = {
        "original": {
            "judge": names[spec_name(inp.judge)],
            "spec": spec_name(inp.judge),
            **original.as_dict(),
        },
        "aligned": {
            "judge": names[spec_name(aligned["judge"])],
            "spec": spec_name(aligned["judge"]),
            "judge_spec": aligned["judge"],
            "dev_campaign": aligned["dev_campaign"],
            **aligned["template"].as_dict(),
        },
    }
    templates["aligned"]["same_as_original"] = (
        templates["aligned"]["spec"] == templates["original"]["spec"]
        and templates["aligned"]["sha256"] == templates["original"]["sha256"]
    )
    return store.finish_step(
        ctx.engine, name, "align", choices=got["choices"], templates=templates, campaigns=got["campaigns"]
    )


def evaluate_step(ctx: StudyContext, name: str) -> AlignmentRecord:
    rec = store.get_alignment(ctx.engine, name)
    if rec.steps["evaluate"] == "done":
        return rec
    need_steps(rec, "align")
    inp = inputs_of(rec)
    t = rec.templates or {}
    _judge_campaign(ctx, rec, rec.campaigns["eval-original"], inp.judge, _original(rec), "eval")
    campaigns = {}
    if t["aligned"]["same_as_original"]:
        # the alignment kept the original judge: its evaluation is the original's
        campaigns["eval-aligned"] = rec.campaigns["eval-original"]
        ctx.say("the aligned judge is the original: its evaluation is the original's")
    else:
        _judge_campaign(
            ctx,
            rec,
            rec.campaigns["eval-aligned"],
            t["aligned"]["judge_spec"],
            JudgeTemplate.from_dict(t["aligned"]),
            "eval",
        )
    return store.finish_step(ctx.engine, name, "evaluate", campaigns=campaigns)


# ---------------------------------------------------------------- the study


def _failed(ctx: StudyContext, rec: AlignmentRecord) -> set[str]:
    return set(judge_failures(ctx.engine, rec))


def _reopen_dev(ctx: StudyContext, rec: AlignmentRecord) -> bool:
    """The development campaign's failed judge jobs are asked again only while the choice is not
    made: a choice made on the items every candidate answered stands."""
    return rec.steps["align"] != "done" and rec.campaigns["dev-original"] in _failed(ctx, rec)


def _reopen_evaluation(ctx: StudyContext, rec: AlignmentRecord) -> bool:
    """Failed judge jobs of the evaluation campaigns are asked again, and the comparison computed
    again from them."""
    evals = {rec.campaigns["eval-original"], rec.campaigns["eval-aligned"]}
    return rec.steps["evaluate"] == "done" and bool(evals & _failed(ctx, rec))


def _dev(ctx: StudyContext, name: str) -> object:
    return dev_step(ctx, store.get_alignment(ctx.engine, name))


def _compare(ctx: StudyContext, name: str) -> object:
    from judgepanel.align.compare import compare

    return compare(ctx.engine, name)


ALIGNMENT: Study[AlignmentRecord] = Study(
    steps=(
        Step("dev", _dev, _reopen_dev),
        Step("align", align_step),
        Step("evaluate", evaluate_step, _reopen_evaluation),
        Step("compare", _compare, _reopen_evaluation),
    ),
    load=store.get_alignment,
    reopen=store.reopen_steps,
)
assert ALIGNMENT.names == STEPS


def run_alignment(
    engine: Engine,
    name: str,
    inputs: AlignInputs | None = None,
    options: RunOptions | None = None,
    *,
    stop_after: str | None = None,
    provider_factory: ProviderFactory | None = None,
    say: Callable[[str], None] = say_nothing,
    retry_failed: bool = False,
) -> AlignmentRecord:
    """Start (or resume) an alignment and run its steps up to `stop_after` (all by default).
    `retry_failed` re-asks the failed calls of the campaigns the steps run: an editor round that
    failed (its step is still pending), and failed judge jobs of the development campaign while
    the choice is not made yet and of the evaluation campaigns (whose comparison is then computed
    again). Judge jobs that failed inside a choice already made stay as they are: the choice was
    made on the items every candidate answered and stands."""
    ALIGNMENT.check_stop_after(stop_after)
    if inputs is not None:
        inputs.validate()
        check_budget(
            options, [inputs.judge, *inputs.grid_judges, *([inputs.editor] if inputs.editor else [])]
        )
        start(engine, name, inputs)
    else:
        have = inputs_of(store.get_alignment(engine, name))
        check_budget(options, [have.judge, *have.grid_judges, *([have.editor] if have.editor else [])])
    opts = options or RunOptions()
    if retry_failed:
        opts = replace(opts, retry_failed=True)
    return ALIGNMENT.run(
        step_context(engine, opts, provider_factory, say, retry_failed), name, stop_after=stop_after
    )
