"""From a leased job to a request, and from a reply back to a verdict row.

This is the seam between the runner and `judgepanel.protocol`: rendering picks the template for
the campaign's protocol and condition; reading maps the parsed reply to what the store keeps
(the value as presented, and for pairwise jobs the value mapped back to the pair's order).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from judgepanel.errors import BadInput
from judgepanel.protocol.checkers import Checker, CheckerTimeout
from judgepanel.protocol.custom import (
    CustomTemplate,
    context_for,
    conversation_of,
    from_stored,
    reference_of,
    render_custom,
    reply_at_turn,
)
from judgepanel.protocol.editor import parse_editor, proposal_json, render_editor, task_from_dict
from judgepanel.protocol.pairs import to_canonical
from judgepanel.protocol.parse import parse_reply
from judgepanel.protocol.plan import REFERENCE, CampaignSpec
from judgepanel.protocol.templates import Prompt, UnitText, render_clauses, render_pairwise, render_pointwise
from judgepanel.providers.base import ChatRequest
from judgepanel.providers.spec import JudgeSpec, parse_spec
from judgepanel.rubrics import LEVELS, RubricDoc
from judgepanel.runner.cache import request_hash
from judgepanel.runner.checkers import clause_plan
from judgepanel.store.campaigns import (
    ClauseRow,
    LeasedJob,
    VerdictRow,
    campaign_judges,
    learnt_refusals,
    rubric_doc,
)
from judgepanel.store.editor import editor_tasks

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from judgepanel.protocol.logprobs import LogprobScore

# Output caps sent when the judge spec names no `max_tokens`: room for a rationale and the JSON
# verdict, and per clause for its id, verdict and a sentence; without a cap a local server
# generates until the timeout. `sim` generates nothing, so it gets none (its answers stay as they were).
DEFAULT_MAX_TOKENS = {"pairwise": 1024, "pointwise": 1024}
CLAUSES_BASE_TOKENS = 512
TOKENS_PER_CLAUSE = 192
MAX_DEFAULT_TOKENS = 8192
CAPPED_PROVIDERS = ("openai", "azure", "anthropic")


def default_max_tokens(protocol: str, n_clauses: int = 0) -> int:
    """The output cap a judge gets when its spec sets none."""
    if protocol == "clauses":
        return min(MAX_DEFAULT_TOKENS, CLAUSES_BASE_TOKENS + TOKENS_PER_CLAUSE * max(1, n_clauses))
    return DEFAULT_MAX_TOKENS.get(protocol, 1024)


REASK_NOTE = (
    "\n\nNote: your previous reply to this request could not be read ({error}). "
    "Reply again, ending with exactly the JSON object asked for above."
)


@dataclass(frozen=True)
class Prepared:
    job: LeasedJob
    prompt: Prompt
    request: ChatRequest
    request_hash: str
    prompt_chars: int
    max_output: int | None


@dataclass(frozen=True)
class CampaignContext:
    protocol: str
    rubric: RubricDoc | None
    clauses: Mapping[str, Sequence[ClauseRow]]  # dimension -> clause rows (ids for clause verdicts)
    judges: Mapping[str, JudgeSpec]  # by canonical name
    served_models: Mapping[str, str] = field(default_factory=dict)  # base_url judges: what the server runs
    # editor campaigns: task key (the job's `dimension`) -> the stored task (`protocol.editor`)
    tasks: Mapping[str, Any] = field(default_factory=dict)
    templates: Mapping[str, CustomTemplate] = field(default_factory=dict)  # protocol -> custom template
    turn: int | None = None  # judge this assistant turn of each item's conversation (`CampaignSpec.turn`)
    # items of these categories use `templates["reference"]` (`CampaignSpec.reference_categories`)
    reference_categories: frozenset[str] = frozenset()
    # judge -> parameters its server refused (learnt by the probe, remembered in the campaign
    # spec): left out of the requests built here, so params and hash say what was sent
    refused: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # clause protocol: dimension -> (clause, kept checker) answered without the model (`runner.checkers`);
    # those clauses are not in `clauses` and not in the prompt
    checkers: Mapping[str, tuple[tuple[ClauseRow, Checker], ...]] = field(default_factory=dict)


def stored_templates(
    stored: Mapping[str, Mapping[str, Any]], protocol: str | None = None
) -> dict[str, CustomTemplate]:
    """The templates a campaign was created with, exactly as stored (never re-read from the files).
    The `reference` one is a template of the campaign's `protocol`."""
    return {p: from_stored(protocol if p == REFERENCE and protocol else p, d) for p, d in stored.items()}


def context_options(spec: CampaignSpec) -> dict[str, Any]:
    """The `CampaignContext` fields that come from the stored spec: templates, turn, categories."""
    return {
        "templates": stored_templates(spec.templates, spec.protocol),
        "turn": spec.turn,
        "reference_categories": frozenset(spec.reference_categories),
    }


def campaign_judge_specs(
    engine: Engine, spec: CampaignSpec, campaign_id: int
) -> dict[int, tuple[str, JudgeSpec]]:
    """judge id -> (the judge's name in the campaign, the full spec it was created with, parsed)."""
    full = dict(zip(spec.judges, spec.judge_specs or spec.judges, strict=True))
    return {
        jid: (rec.name, parse_spec(full.get(rec.name, rec.name)))
        for jid, rec in campaign_judges(engine, campaign_id).items()
    }


def load_context(
    engine: Engine,
    campaign: str,
    spec: CampaignSpec,
    rubric_version_id: int | None,
    judges: Mapping[str, JudgeSpec],
    providers: Mapping[str, object],
    warnings: list[str],
) -> CampaignContext:
    """The context every job of `campaign` is rendered in, for realtime and batch runs alike: its
    rubric, clause plan (and the clauses kept checkers answer), editor tasks, stored templates, and
    the parameters each judge's server refused in earlier runs (handed to its provider in
    `providers`, so the requests and their hashes leave them out; one warning each)."""
    rubric = rubric_doc(engine, rubric_version_id) if rubric_version_id is not None else None
    tasks = editor_tasks(engine, campaign) if spec.protocol == "editor" else {}
    refused = assume_learnt_refusals(engine, providers, warnings)
    clauses, checkers = clause_plan(
        engine, campaign, rubric_version_id, spec.protocol, custom=bool(spec.templates)
    )
    return CampaignContext(
        spec.protocol,
        rubric,
        clauses,
        judges,
        tasks=tasks,
        refused=refused,
        checkers=checkers,
        **context_options(spec),
    )


def template_drift(campaign: str, stored: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Warnings for template files edited since the campaign was created: the run keeps using the
    stored version, and says so instead of silently ignoring (or silently taking) the edit."""
    out = []
    for proto, d in stored.items():
        path = d.get("path")
        if not path:
            continue
        try:
            now = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError:
            continue  # moved or deleted: the stored copy is all there is, and all that is used
        if now != d.get("sha256"):
            out.append(
                f"template file {path} changed since campaign {campaign} was created; this run uses the "
                f"stored {proto} template (sha256 {str(d.get('sha256'))[:12]}); create a new campaign to use the edit"
            )
    return out


def _unit(t: Any, turn: int | None = None) -> UnitText:
    meta = getattr(t, "meta", None) or {}
    if turn is not None:
        context, reply = reply_at_turn(t.external_id, meta, t.output, turn)
        # an item that says which turn its reference answers (MT-Bench's) shows it only for that
        # turn, or the judged turn's from its `references` (one per turn)
        refs = meta.get("references")
        if isinstance(refs, list) and len(refs) >= turn and isinstance(refs[turn - 1], str):
            reference: str | None = refs[turn - 1] if refs[turn - 1].strip() else None
        elif meta.get("turn") in (None, turn):
            reference = reference_of(meta)
        else:
            reference = None
        return UnitText(t.external_id, reply, t.input, context or None, reference)
    if t.output is None or not str(t.output).strip():
        raise BadInput(f"item {t.external_id!r} has no output text to judge")
    return UnitText(t.external_id, t.output, t.input, conversation_of(meta, t.output), reference_of(meta))


def _category(job: LeasedJob) -> str | None:
    """The category (`meta.category`) of the job's item(s); the two items of a pair must share it."""
    cats = {(getattr(u, "meta", None) or {}).get("category") for u in job.units}
    if len(cats) > 1:
        ids = " and ".join(repr(u.external_id) for u in job.units)
        raise BadInput(f"items {ids} have different categories ({', '.join(sorted(map(str, cats)))})")
    (cat,) = cats
    return None if cat is None else str(cat)


def _render_custom(job: LeasedJob, ctx: CampaignContext, t: CustomTemplate) -> Prompt:
    """A custom template sees the rubric's dimension whenever there is one (and the job's
    `condition`, to decide itself what of it to show)."""
    rubric = ctx.rubric
    dim = None
    if rubric is not None and job.dimension is not None:
        dim = rubric.dimension(job.dimension)
    elif rubric is not None and len(rubric.dimensions) == 1:
        dim = rubric.dimensions[0]
    units = [_unit(u, ctx.turn) for u in job.units]
    # an item with a conversation is shown as its turns; its `input` (often the same dialogue as
    # text, with each candidate's own earlier answers) would differ within a pair and say it twice
    units = [replace(u, input=None) if u.conversation is not None else u for u in units]
    variables = context_for(
        t,
        units,
        order=job.order,
        dimension=dim,
        dimension_name=job.dimension,
        condition=job.condition,
        rubric=rubric,
        clauses=[(c.clause_key, c.text) for c in ctx.clauses.get(job.dimension or "", ())],
    )
    return render_custom(t, variables)


def render(job: LeasedJob, ctx: CampaignContext) -> Prompt:
    if ctx.protocol == "editor":
        task = ctx.tasks.get(job.dimension or "")
        if task is None:
            raise BadInput(f"editor job {job.id} has no stored task {job.dimension!r}")
        return render_editor(task_from_dict(task))
    custom = ctx.templates.get(ctx.protocol)
    if ctx.reference_categories and _category(job) in ctx.reference_categories:
        custom = ctx.templates[REFERENCE]
    if custom is not None:
        return _render_custom(job, ctx, custom)
    if ctx.protocol == "pairwise":
        a, b = job.units
        return render_pairwise(
            _unit(a), _unit(b), order=cast(Any, job.order), dimension=job.dimension, rubric=ctx.rubric
        )
    if ctx.protocol == "pointwise":
        return render_pointwise(
            _unit(job.units[0]),
            condition=cast(Any, job.condition or "none"),
            dimension=job.dimension,
            rubric=ctx.rubric,
        )
    if ctx.rubric is None or job.dimension is None:
        raise BadInput("the clause protocol needs a rubric and a dimension")
    skip = frozenset(c.clause_key for c, _k in ctx.checkers.get(job.dimension, ()))
    return render_clauses(_unit(job.units[0]), dimension=job.dimension, rubric=ctx.rubric, skip=skip)


def render_key(job: LeasedJob) -> tuple[Any, ...]:
    """What a job's prompt depends on besides the campaign (`render` reads nothing else of the
    job): jobs that differ only in judge or repeat are shown the same prompt."""
    return (job.item_id, job.pair_id, job.order, job.condition, job.dimension)


def prepare(
    job: LeasedJob,
    ctx: CampaignContext,
    *,
    reask_error: str | None = None,
    prompts: dict[tuple[Any, ...], Prompt] | None = None,
) -> Prepared:
    """Render the job's prompt and build the exact request (and its hash) the judge is sent.
    `reask_error` re-asks after an unreadable reply: the same prompt with a short note appended,
    which is a new request (so the cache cannot answer it with the unreadable reply). `prompts`:
    a memo by `render_key` for preparing many jobs of one campaign (`campaign plan`)."""
    spec = ctx.judges[job.judge]
    if prompts is None:
        prompt = render(job, ctx)
    else:
        key = render_key(job)
        prompt = prompts.get(key) or prompts.setdefault(key, render(job, ctx))
    messages = prompt.messages
    if reask_error is not None:
        last = dict(messages[-1])
        last["content"] = last["content"] + REASK_NOTE.format(error=reask_error[:200])
        messages = [*messages[:-1], last]
    params = request_params(spec, ctx, job.dimension)
    request = ChatRequest(
        messages=messages,
        params=params,
        schema=prompt.schema if prompt.structured else None,
        schema_name=prompt.schema_name,
        cache_breaks=prompt.cache_breaks,
    )
    prep = Prepared(job, prompt, request, "", sum(len(m["content"]) for m in messages), max_output(params))
    return as_sent(prep, ctx, ctx.refused.get(job.judge, frozenset()), force=True)


def request_params(spec: JudgeSpec, ctx: CampaignContext, dimension: str | None) -> dict[str, Any]:
    """The parameters a job of `spec` on `dimension` is sent with (before refusals): the spec's,
    with the default output cap when it names none."""
    params = dict(spec.request_params())
    if "max_tokens" not in params and spec.provider in CAPPED_PROVIDERS:
        n_clauses = len(ctx.clauses.get(dimension or "", ())) if ctx.protocol == "clauses" else 0
        params["max_tokens"] = default_max_tokens(ctx.protocol, n_clauses)
    return params


def max_output(params: Mapping[str, Any]) -> int | None:
    """The output cap in `params`, if any (`Prepared.max_output`)."""
    max_out = params.get("max_tokens")
    return int(max_out) if isinstance(max_out, int | float) else None


def assume_learnt_refusals(
    engine: Engine, providers: Mapping[str, object], warnings: list[str]
) -> dict[str, frozenset[str]]:
    """judge -> the parameters its server refused in earlier runs (stored in campaign specs),
    handed to each provider that can leave them out (`assume_refused`), one warning per judge."""
    out: dict[str, frozenset[str]] = {}
    for judge, names in learnt_refusals(engine, list(providers)).items():
        assume = getattr(providers[judge], "assume_refused", None)
        if assume is None or not names:
            continue
        assume(names)
        out[judge] = names
        warnings.append(
            f"judge {judge}: leaving out {', '.join(repr(n) for n in sorted(names))}, "
            "refused by its server in an earlier run"
        )
    return out


def as_sent(p: Prepared, ctx: CampaignContext, refused: frozenset[str], *, force: bool = False) -> Prepared:
    """`p` without the parameters the judge's server refused (`response_format`: without the
    schema), its hash computed on what is left: the request stored, and the key the cache
    answers from, are the body the server received. Unchanged (same object) when nothing that
    `p` carries was refused, unless `force`."""
    request = p.request
    gone = refused & set(request.params)
    drop_schema = "response_format" in refused and request.schema is not None
    if not (gone or drop_schema or force):
        return p
    if gone or drop_schema:
        request = replace(
            request,
            params={k: v for k, v in request.params.items() if k not in gone},
            schema=None if drop_schema else request.schema,
        )
    spec = ctx.judges[p.job.judge]
    h = request_hash(
        provider=spec.provider,
        model=spec.model,
        base_url=spec.base_url,
        request=request,
        repeat=p.job.repeat,
        served_model=ctx.served_models.get(p.job.judge),
    )
    return replace(p, request=request, request_hash=h)


def score_levels(prompt: Prompt) -> tuple[int, ...]:
    """The levels the prompt's reply schema allows (its score enum), or 1..5 when it names none:
    the schema sent is the one statement of the scale, so parser and prompt cannot disagree."""
    score = prompt.schema.get("properties", {}).get("score", {})
    enum = score.get("enum") if isinstance(score, dict) else None
    if isinstance(enum, list) and enum and all(isinstance(v, int) for v in enum):
        return tuple(enum)
    return LEVELS


def read(
    prep: Prepared, ctx: CampaignContext, text: str | None, structured: dict[str, Any] | None
) -> tuple[VerdictRow, str | None]:
    """Parse a reply; return the verdict row and, for an unreadable reply, the parse error."""
    job = prep.job
    if ctx.protocol == "editor":
        got = parse_editor(prep.prompt.schema_name, text, structured)
        if not got.ok or got.proposal is None:
            return VerdictRow("failed", None, None, None, None, None), got.error or "unreadable"
        return VerdictRow("ok", got.method, None, None, None, proposal_json(got.proposal)), None
    clause_rows = ctx.clauses.get(job.dimension or "", ()) if ctx.protocol == "clauses" else ()
    parsed = parse_reply(
        prep.prompt.schema_name,
        text or "",
        structured,
        clause_ids=tuple(c.clause_key for c in clause_rows),
        levels=score_levels(prep.prompt),
        quoted=prep.prompt.quoted,
        pattern=prep.prompt.answer_pattern,
    )
    if not parsed.ok:
        kind = parsed.kind or "unreadable"  # `ambiguous`: the only answer was set apart as quoted
        return VerdictRow(
            "failed", parsed.method, None, None, None, parsed.rationale, failure_kind=kind
        ), parsed.error or "unreadable"
    clauses = [(k, met, why) for k, (met, why) in parsed.clauses.items()]
    verdict = verdict_from(job, ctx, parsed.method, parsed.value, parsed.score, parsed.rationale, clauses)
    if parsed.missing:
        # some clauses unanswered: keep what was answered, but as a partial parse failure that
        # `campaign retry-parse-failures` re-asks (the note tells the judge which ids it left out)
        error = f"missing clauses: no true/false answer for {', '.join(parsed.missing)}"
        answered = tuple(row for row in verdict.clauses if row[1] is not None)
        return replace(
            verdict, parse_status="partial", failure_kind="missing_clauses", clauses=answered
        ), error
    return verdict, None


def verdict_from(
    job: LeasedJob,
    ctx: CampaignContext,
    method: str | None,
    value: Any,
    score: float | None,
    rationale: str | None,
    clauses: Sequence[tuple[str, bool | None, str | None]] = (),
) -> VerdictRow:
    presented = None if value is None else str(value)
    canonical = presented
    if ctx.protocol == "pairwise" and presented is not None and job.order is not None:
        canonical = to_canonical(presented, cast(Any, job.order))
    rows: tuple[tuple[int, bool | None, str | None], ...] = ()
    checked: frozenset[int] = frozenset()
    if ctx.protocol == "clauses":
        ids = {c.clause_key: c.clause_id for c in ctx.clauses.get(job.dimension or "", ())}
        rows = tuple((ids[k], met, why) for k, met, why in clauses if k in ids)
        answered = ctx.checkers.get(job.dimension or "", ())
        if answered:
            text = _unit(job.units[0]).output
            rows += tuple((c.clause_id, *checker_answer(k, text)) for c, k in answered)
            checked = frozenset(c.clause_id for c, _k in answered)
    return VerdictRow("ok", method, presented, canonical, score, rationale, rows, checked=checked)


def checker_answer(checker: Checker, text: str) -> tuple[bool | None, str]:
    """A kept checker's answer for `text` and its note; no answer (None) when its search ran out
    of time (`protocol.checkers.SEARCH_SECONDS`): a checker can never hold up a run."""
    try:
        return checker.check(text), f"checker {checker.describe()}"
    except CheckerTimeout as exc:
        return None, f"checker {checker.describe()}: {exc}"


def with_logprob_score(
    prep: Prepared, ctx: CampaignContext, raw_body: str | None, verdict: VerdictRow
) -> VerdictRow:
    """A pointwise verdict of a `scoring=logprobs` judge with its score replaced by the expectation
    of the score distribution at the answer position (`protocol.logprobs`), so every metric that
    reads scores sees the continuous value; the argmax stays in `value_presented` /
    `value_canonical`, and the distribution can be read again from the stored raw body. Where no
    distribution can be read (no logprobs, no score token) the argmax score stands."""
    if ctx.protocol != "pointwise" or verdict.parse_status != "ok" or not raw_body:
        return verdict
    spec = ctx.judges.get(prep.job.judge)
    if spec is None or spec.params.get("scoring") != "logprobs":
        return verdict
    got = read_logprobs(prep.prompt, raw_body, verdict.value_presented)
    if got.expectation is None:
        return verdict
    return replace(verdict, score=float(got.expectation))


def read_logprobs(
    prompt: Prompt, raw_body: str, verdict: str | None, allowed: Mapping[str, float] | None = None
) -> LogprobScore:
    """The score distribution of a stored reply, read as the runner reads it: on the scale the
    prompt's reply schema allows, at the answer its verdict pattern finds, with the texts it
    quotes not read as the judge's. One code path for the run (`with_logprob_score`) and for
    reading stored replies again (`runner.logprob_scores`, issue 30 §4). ``allowed`` overrides the
    scale."""
    from judgepanel.protocol.logprobs import logprob_score

    scale = {str(v): float(v) for v in score_levels(prompt)} if allowed is None else allowed
    return logprob_score(
        raw_body, scale, verdict=verdict, quoted=prompt.quoted, pattern=prompt.answer_pattern
    )
