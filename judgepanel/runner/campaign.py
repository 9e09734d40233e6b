"""The campaign workflow as library calls: create, estimate, run, retry parse failures.

Everything `judgepanel campaign …` does is one of these functions, so it can be done from Python
just the same::

    from judgepanel.runner import create, estimate, run, RunOptions
    create(engine, "c1", dataset="summeval", protocol="pairwise", pairs="p200",
           judges=["openai:gpt-4o-mini?temperature=0"])
    estimate(engine, "c1").cost_usd
    run(engine, "c1", RunOptions(concurrency=32, rpm=3000, max_cost=5.0))
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from judgepanel.errors import BadInput, NotFound
from judgepanel.protocol.custom import CLASSIC_REF, CustomTemplate, load_template
from judgepanel.protocol.custom import validate as validate_template
from judgepanel.protocol.plan import REFERENCE, CampaignSpec
from judgepanel.protocol.templates import Prompt
from judgepanel.providers.caching import CacheForecast
from judgepanel.providers.keys import key_source
from judgepanel.providers.pricing import Price
from judgepanel.providers.spec import panel_names, parse_spec, split_judge_name, stored_judge_names
from judgepanel.rubrics import RubricDoc
from judgepanel.runner.budget import check_prices, estimate_tokens, price_for
from judgepanel.runner.campaign_file import CampaignFile, load_campaign_file, locate, merge, to_yaml
from judgepanel.runner.checkers import clause_plan
from judgepanel.runner.conditions_check import SamePrompts
from judgepanel.runner.executor import ProviderFactory, Runner, RunSummary
from judgepanel.runner.options import RunOptions
from judgepanel.runner.prepare import (
    CampaignContext,
    Prepared,
    context_options,
    max_output,
    prepare,
    render,
    render_key,
    request_params,
)
from judgepanel.runner.shape import PromptShape, decode_prefixes, shape_of, signature, stable_prefixes
from judgepanel.store import campaigns as store
from judgepanel.store.campaigns import CampaignInfo, JudgeRecord, LeasedJob
from judgepanel.store.editor import editor_tasks
from judgepanel.store.engine import session_scope
from judgepanel.store.rubrics import load_rubric_version, pinned_ref

# Expected reply length when nothing better is known: a short rationale and the verdict.
OUTPUT_ESTIMATE = {"pairwise": 150, "pointwise": 150, "clauses": 60, "editor": 200}
OUTPUT_PER_CLAUSE = 40


def create(
    engine: Engine,
    name: str,
    *,
    dataset: str,
    protocol: str,
    judges: Sequence[str],
    pairs: str | None = None,
    rubric: str | None = None,
    conditions: Sequence[str] = ("none",),
    dimensions: Sequence[str] = (),
    repeats: int = 1,
    split: str | None = None,
    limit: int | None = None,
    templates: Mapping[str, str | CustomTemplate] | None = None,
    template_base: Path | None = None,
    max_cost: float | None = None,
    origin: Mapping[str, Any] | None = None,
    turn: int | None = None,
    reference_categories: Sequence[str] = (),
    items: Sequence[str] = (),
    allow_identical_conditions: bool = False,
) -> CampaignInfo:
    """Plan a campaign: store it, its judges and every job (idempotent for the same spec).

    Two conditions whose prompts are byte-identical for every unit under a custom template (one
    that shows no rubric, say) are no condition study at all: refused unless
    `allow_identical_conditions`; otherwise (and with the bundled templates, whose pairwise prompt
    shows no condition) coinciding prompts are reported in `CampaignInfo.warnings`
    (`runner.conditions_check`), and the run asks each identical request once.

    `templates` maps a protocol to a Jinja file (relative to `template_base`) or a classic name
    (`@classic-pairwise`) or a template already loaded (`CustomTemplate`, e.g. one an alignment
    composed); each is validated before anything is stored and kept, source and
    sha256, in the spec. `max_cost` is the default budget of `run`; `origin` records where the
    spec came from (a campaign file and its sha256)."""
    named = [split_judge_name(j) for j in judges]
    judges = [j for _, j in named]
    specs = [parse_spec(j) for j in judges]
    # a cap that `run` could not enforce is refused now, before anything is stored (its value is
    # checked first, in the spec's own words, so a campaign file's bad value names its line)
    if max_cost is not None and not max_cost > 0:
        raise BadInput(f"max_cost must be a positive number of USD, got {max_cost}")
    check_prices(max_cost, {s.name: price_for(s) for s in specs})
    spec = CampaignSpec(
        name=name,
        dataset=dataset,
        protocol=protocol,
        judges=tuple(s.name for s in specs),
        pairs=pairs,
        rubric=rubric,
        conditions=tuple(conditions) or ("none",),
        dimensions=tuple(dimensions),
        repeats=repeats,
        split=split,
        limit=limit,
        judge_specs=tuple(j.strip() for j in judges),
        judge_names=tuple(panel_names([s.name for s in specs], [n for n, _ in named])),
        max_cost=max_cost,
        origin=origin,
        turn=turn,
        reference_categories=tuple(dict.fromkeys(c.strip() for c in reference_categories if c.strip())),
        items=tuple(items),
    )
    refs = dict(templates or {})
    plain = refs.get(protocol)
    if (
        spec.reference_categories
        and REFERENCE not in refs
        and isinstance(plain, str)
        and plain in CLASSIC_REF
    ):
        refs[REFERENCE] = CLASSIC_REF[plain]
    # the reference-guided template is one of the campaign's protocol
    loaded = {
        p: ref
        if isinstance(ref, CustomTemplate)
        else load_template(protocol if p == REFERENCE else p, ref, base=template_base)
        for p, ref in refs.items()
    }
    spec = replace(spec, templates={p: t.stored() for p, t in loaded.items()})
    spec.validate()
    rv_id = None
    doc = None
    if rubric:
        with session_scope(engine) as session:
            # a bare name is the current version (the newest a person added); the campaign records
            # the exact NAME@V, so `campaign show --yaml` re-creates this campaign, not a later one
            rv, rubric = pinned_ref(session, rubric)
            rv_id, doc = rv.id, RubricDoc.from_dict(rv.body, origin=f"rubric {rubric}")
        spec = replace(spec, rubric=rubric)
    for t in loaded.values():
        dim = None
        if doc is not None and (dimensions or len(doc.dimensions) == 1):
            dim = doc.dimension(dimensions[0]) if dimensions else doc.dimensions[0]
        validate_template(t, dimension=dim, dimension_name=dimensions[0] if dimensions else None)
    records = [JudgeRecord(s.name, s.provider, s.model, _identity_params(s.params)) for s in specs]
    check = None
    if loaded or spec.protocol != "editor":
        # every distinct prompt is rendered now: a user's template may fail on one real item, and
        # `campaign plan` reads the stored figures instead of rendering again (`runner.shape`)
        asked, answered = clause_plan(engine, None, rv_id, spec.protocol, custom=bool(loaded))
        ctx = CampaignContext(
            spec.protocol,
            doc,
            asked,
            {s.name: s for s in specs},
            checkers=answered,
            **context_options(spec),
        )
        # refused only for a user's template: the bundled pairwise one shows no condition by design
        same = SamePrompts(spec.conditions, allow=allow_identical_conditions or not loaded)
        check = _renders_every_job(ctx, _prompt_sig(ctx, spec, rv_id), strict=bool(loaded), same=same)
    info = store.create_campaign(engine, spec, records, rubric_version_id=rv_id, check=check)
    warnings = tuple(same.warnings) if check is not None else ()
    return replace(info, judge_keys=tuple(key_source(s).as_dict() for s in specs), warnings=warnings)


def _renders_every_job(
    ctx: CampaignContext, sig: str | None, *, strict: bool, same: SamePrompts | None = None
) -> Callable[[list[LeasedJob]], dict[int, tuple[int, int, int, str, str]]]:
    """A `create_campaign` check: each distinct prompt of the jobs renders, and its figures are
    returned for every job that shows it (`runner.shape`). `strict` (a user's template): a prompt
    that fails raises (BadInput naming the item and the template's error, and nothing is stored);
    otherwise its jobs get no figures, and plan and run render them, and fail, as before."""

    def check(jobs: list[LeasedJob]) -> dict[int, tuple[int, int, int, str, str]]:
        shapes: dict[tuple[Any, ...], PromptShape | None] = {}
        out: dict[int, tuple[int, int, int, str, str]] = {}
        for job in jobs:
            key = render_key(job)
            if key not in shapes:
                try:
                    prompt = render(job, ctx)
                    shapes[key] = shape_of(prompt)
                    if same is not None:
                        same.add(job, prompt)
                except Exception:  # reported where it was before: by plan and run, which render again
                    if strict:
                        raise
                    shapes[key] = None
            shape = shapes[key]
            if shape is not None and sig is not None:
                out[job.id] = (shape.chars, shape.messages, shape.prefix_tokens, sig, shape.prefixes)
        if same is not None:
            same.check()  # raises BadInput (nothing stored) for conditions that cannot differ
        return out

    return check


def _prompt_sig(ctx: CampaignContext, spec: CampaignSpec, rv_id: int | None) -> str | None:
    """The fingerprint of the stored prompt figures (`runner.shape.signature`); None for editor
    campaigns, whose tasks are stored after the jobs."""
    if ctx.protocol == "editor":
        return None
    return signature(
        protocol=ctx.protocol,
        rubric_version_id=rv_id,
        templates=spec.templates,
        turn=spec.turn,
        reference_categories=spec.reference_categories,
        asked={d: [c.clause_key for c in rows] for d, rows in ctx.clauses.items()},
        answered={d: [c.clause_key for c, _k in pairs] for d, pairs in ctx.checkers.items()},
    )


def create_from(engine: Engine, file: Path | None, flags: Mapping[str, Any]) -> CampaignInfo:
    """`campaign create [--from FILE]`: the file's options (if any) overridden by the `flags` that
    were given (keys as in `campaign_file.KEYS`; None or empty = not given); templates named in
    the file are read relative to the file, those given as flags relative to the working directory."""
    cf = load_campaign_file(file) if file is not None else None
    opts = merge(cf, flags)
    src = f" (or `{{key}}:` in {file})" if file is not None else ""
    for key, flag in (
        ("name", "NAME"),
        ("dataset", "--dataset"),
        ("protocol", "--protocol"),
        ("judges", "--judge"),
    ):
        if not opts.get(key):
            raise BadInput(f"missing {flag}" + src.format(key=key))
    file_templates = dict(cf.values.get("templates") or {}) if cf is not None else {}
    flag_templates = dict(flags.get("templates") or {})
    templates = {**file_templates, **{p: _from_cwd(r) for p, r in flag_templates.items()}}
    try:
        return _create_merged(engine, cf, opts, templates)
    except (BadInput, NotFound) as exc:
        where = locate(cf, flags, str(exc)) if cf is not None else None
        if where is None:
            raise
        raise type(exc)(where) from exc


def _create_merged(
    engine: Engine, cf: CampaignFile | None, opts: Mapping[str, Any], templates: dict[str, str]
) -> CampaignInfo:
    base = cf.base if cf is not None else None
    return create(
        engine,
        str(opts["name"]),
        dataset=str(opts["dataset"]),
        protocol=str(opts["protocol"]),
        judges=list(opts["judges"]),
        pairs=opts.get("pairs"),
        rubric=opts.get("rubric"),
        conditions=list(opts.get("conditions") or ["none"]),
        dimensions=list(opts.get("dimensions") or []),
        repeats=int(opts["repeats"]) if opts.get("repeats") is not None else 1,
        split=opts.get("split"),
        limit=opts.get("limit"),
        templates=templates,
        template_base=base,
        max_cost=opts.get("max_cost"),
        origin=cf.origin() if cf is not None else None,
        turn=opts.get("turn"),
        reference_categories=list(opts.get("reference_categories") or []),
        allow_identical_conditions=bool(opts.get("allow_identical_conditions")),
    )


def _from_cwd(ref: str) -> str:
    return ref if ref.startswith("@") else str(Path(ref).expanduser().resolve())


def stored_spec(engine: Engine, name: str) -> dict[str, Any]:
    """The spec a campaign was created with, as stored (templates with their source), its
    rubric named by the exact version it uses (`NAME@V`, also for campaigns stored before the
    name was pinned at create)."""
    with session_scope(engine) as s:
        spec = dict(store.campaign_by_name(s, name).spec)
        if spec.get("rubric_version_id") is not None and spec.get("rubric"):
            stored = load_rubric_version(s, int(spec["rubric_version_id"]))
            spec["rubric"] = stored.ref
        return spec


def spec_yaml(spec: Mapping[str, Any], name: str) -> str:
    """A campaign file that re-creates the campaign (see `campaign_file.to_yaml`)."""
    return to_yaml(spec, name)


def _identity_params(params: dict[str, Any]) -> dict[str, Any]:
    from judgepanel.providers.spec import OPERATIONAL_KEYS

    return {k: v for k, v in params.items() if k not in OPERATIONAL_KEYS}


# ---------------------------------------------------------------- estimates


@dataclass(frozen=True)
class Estimate:
    jobs: int
    calls: int  # calls still to make (jobs not done, minus those the cache will answer)
    cached: int  # jobs the store already has an identical answer for
    input_tokens: int
    output_tokens: int
    cost_usd: float | None  # None when a judge's price is unknown
    by_judge: dict[str, dict[str, Any]]
    # with the providers' prompt caching (the forecast in `providers.caching`), through their batch
    # APIs, and both; None when a rate they need is unknown
    cost_cached_usd: float | None = None
    cost_batch_usd: float | None = None
    cost_batch_cached_usd: float | None = None
    cache_read_tokens: int = 0  # forecast: prompt tokens read from the providers' caches
    cache_write_tokens: int = 0  # … and written to them
    # `base_url` judges whose served model is neither recorded by a run nor probed: their cached
    # count assumes the spec's key (see `runner.served`); `--probe` asks their servers
    unprobed: tuple[str, ...] = ()
    # per judge: the variable its key comes from (never the value) and the host it goes to
    judge_keys: tuple[dict[str, str | None], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "jobs": self.jobs,
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "cost_cached_usd": self.cost_cached_usd,
            "cost_batch_usd": self.cost_batch_usd,
            "cost_batch_cached_usd": self.cost_batch_cached_usd,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cached": self.cached,
            "by_judge": self.by_judge,
            "served_model_unknown": list(self.unprobed),
            "judge_keys": list(self.judge_keys),
        }


def estimate(engine: Engine, name: str, *, use_cache: bool = True, probe: bool = False) -> Estimate:
    """What running the rest of the campaign would take: every pending job's prompt is counted
    (≈ 4 characters a token), from the figures `create` stored or, where they are stale or the
    request key or prefix texts are needed, by rendering it (`runner.shape`); output tokens are the judge's mean so far, else
    `OUTPUT_ESTIMATE`, capped by its `max_tokens`; cost from the judge's prices (None if unknown).
    `cost_usd` is every input token at the input rate; `cost_cached_usd` prices the prompt-cache
    reads and writes that `providers.caching.CacheForecast` expects of the calls in order, and the
    batch figures apply the judge's batch discount to each.

    The model a `base_url` judge's server runs enters the cache key (`runner.served`): the estimate
    takes the one the campaign's last run recorded, and asks the servers (`GET /v1/models`, the
    provider SDKs loaded) only with `probe=True`; a judge with neither is listed in `unprobed`."""
    spec, rv_id = store.campaign_spec(engine, name)
    cid = store.campaign_id(engine, name)
    judges = {s.name: s for s in (parse_spec(j) for j in (spec.judge_specs or spec.judges))}
    served: dict[str, str] = {}
    unprobed: tuple[str, ...] = ()
    if use_cache:
        wanted = [n for n, js in judges.items() if js.base_url is not None and js.provider != "sim"]
        if probe and wanted:
            from judgepanel.runner.served import served_models_now  # loads the provider SDKs

            served = served_models_now(judges)
        elif wanted:
            served = store.learnt_served_models(engine, name, wanted)
        if not probe:
            unprobed = tuple(n for n in wanted if n not in served)
    _plan = clause_plan(engine, name, rv_id, spec.protocol, custom=bool(spec.templates))
    ctx = CampaignContext(
        spec.protocol,
        store.rubric_doc(engine, rv_id) if rv_id is not None else None,
        _plan[0],
        judges,
        served_models=served,
        tasks=editor_tasks(engine, name) if spec.protocol == "editor" else {},
        refused=store.learnt_refusals(engine, list(judges)),
        checkers=_plan[1],
        **context_options(spec),
    )
    counts = store.job_counts(engine, cid)
    sig = _prompt_sig(ctx, spec, rv_id)
    stored = store.pending_shapes(engine, cid)
    forecasts = {n: CacheForecast(js.provider, js.model) for n, js in ctx.judges.items()}
    # the request keys are needed only where the response cache could answer: judges whose
    # provider and model some stored request was sent to (the key includes both)
    keyed: set[str] = set()
    if use_cache:
        keyed = store.judges_with_requests(
            engine, [(n, js.provider, js.model) for n, js in ctx.judges.items()]
        )

    def renders(row: store.PendingShape) -> bool:
        """Whether plan must render this job: no current stored figures, a key to look up, or a
        stable prefix long enough for the judge's prompt cache whose digest was not stored (a job
        created before `prompt_prefixes`: the forecast then needs the prefix text)."""
        _id, judge, _dim, chars, n_msgs, prefix, row_sig, digests = row
        if sig is None or row_sig != sig or chars is None or n_msgs is None or prefix is None:
            return True
        floor = forecasts[judge].floor()
        return judge in keyed or (floor is not None and prefix >= floor and digests is None)

    todo = {row[0] for row in stored if renders(row)}
    prepared: dict[int, Prepared] = {}
    if todo:
        prompts: dict[tuple[Any, ...], Prompt] = {}  # one rendering per prompt, whichever judges see it
        # only the jobs to render are read with their texts (all of them in one query when all are)
        to_read = None if len(todo) == len(stored) else todo
        prepared = {
            j.id: prepare(j, ctx, prompts=prompts) for j in store.pending_jobs(engine, cid, ids=to_read)
        }
    hits = store.cache_lookup(engine, [p.request_hash for p in prepared.values()]) if use_cache else {}
    mean_out = store.mean_output_tokens(engine, list(ctx.judges))
    by_judge: dict[str, dict[str, Any]] = {
        n: {
            "calls": 0,
            "cached": 0,
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
            "cost_usd": 0.0,
        }
        for n in ctx.judges
    }
    names = stored_judge_names(list(ctx.judges), spec.as_dict())
    for n, d in by_judge.items():
        d["name"], d["spec"] = names[n], n
    caps: dict[tuple[str, str | None], int | None] = {}
    for job_id, judge, dimension, chars, n_msgs, _prefix, _sig, digests in stored:
        p = prepared.get(job_id)
        if p is None and job_id in todo:
            continue  # finished between the two reads
        d = by_judge[judge]
        if p is not None and p.request_hash in hits:
            d["cached"] += 1
            continue
        js = ctx.judges[judge]
        out = mean_out.get(js.name)
        if out is None:
            out = OUTPUT_ESTIMATE[spec.protocol]
            if spec.protocol == "clauses":
                out += OUTPUT_PER_CLAUSE * len(ctx.clauses.get(dimension or "", ()))
        if p is not None:
            cap = p.max_output
            chars, n_msgs = p.prompt_chars, len(p.request.messages)
            read, written = forecasts[judge].call(stable_prefixes(p.request.messages, p.request.cache_breaks))
        else:
            if (judge, dimension) not in caps:
                caps[judge, dimension] = max_output(request_params(js, ctx, dimension))
            cap = caps[judge, dimension]
            # the stored prefix digests, in the jobs' order as rendering them would (`runner.shape`)
            read, written = forecasts[judge].call_digests(decode_prefixes(digests)) if digests else (0, 0)
        assert chars is not None and n_msgs is not None
        if cap is not None:
            out = min(out, cap)
        d["calls"] += 1
        d["input_tokens"] += estimate_tokens(chars) + 4 * n_msgs
        d["output_tokens"] += round(out)
        d["cache_read_tokens"] += read
        d["cache_write_tokens"] += written
    totals: dict[str, float | None] = dict.fromkeys(_COSTS, 0.0)
    for n, d in by_judge.items():
        price = price_for(ctx.judges[n])
        full = None if price is None else price.cost(d["input_tokens"], d["output_tokens"])
        cached = (
            None
            if price is None
            else price.cost(
                d["input_tokens"], d["output_tokens"], d["cache_read_tokens"], d["cache_write_tokens"]
            )
        )
        figures = {
            "cost_usd": full,
            "cost_cached_usd": cached,
            "cost_batch_usd": _batch(price, full),
            "cost_batch_cached_usd": _batch(price, cached),
        }
        for key, value in figures.items():
            d[key] = None if value is None else round(value, 6)
            total = totals[key]
            totals[key] = None if value is None or total is None else total + value
    rounded = {k: None if v is None else round(v, 6) for k, v in totals.items()}
    return Estimate(
        sum(counts.values()),
        sum(d["calls"] for d in by_judge.values()),
        sum(d["cached"] for d in by_judge.values()),
        sum(d["input_tokens"] for d in by_judge.values()),
        sum(d["output_tokens"] for d in by_judge.values()),
        rounded["cost_usd"],
        by_judge,
        cost_cached_usd=rounded["cost_cached_usd"],
        cost_batch_usd=rounded["cost_batch_usd"],
        cost_batch_cached_usd=rounded["cost_batch_cached_usd"],
        cache_read_tokens=sum(d["cache_read_tokens"] for d in by_judge.values()),
        cache_write_tokens=sum(d["cache_write_tokens"] for d in by_judge.values()),
        unprobed=unprobed,
        judge_keys=tuple(key_source(js).as_dict() for js in ctx.judges.values()),
    )


_COSTS = ("cost_usd", "cost_cached_usd", "cost_batch_usd", "cost_batch_cached_usd")


def _batch(price: Price | None, cost: float | None) -> float | None:
    if cost == 0:
        return 0.0  # a free judge is free through a batch too
    if price is None or cost is None or price.batch_discount is None:
        return None
    return cost * (1.0 - price.batch_discount)


# ---------------------------------------------------------------- running


def run(
    engine: Engine,
    name: str,
    options: RunOptions | None = None,
    *,
    provider_factory: ProviderFactory | None = None,
    reask_parse_failures: bool = False,
    reask_truncated: bool = False,
    reask_fatal: bool = False,
    on_start: Callable[[Runner], None] | None = None,
) -> RunSummary:
    """Run what is not yet done, in a fresh event loop (see `Runner` for the details)."""

    async def main() -> RunSummary:
        runner = Runner(
            engine,
            name,
            options,
            provider_factory=provider_factory,
            reask_parse_failures=reask_parse_failures,
            reask_truncated=reask_truncated,
            reask_fatal=reask_fatal,
        )
        if on_start is not None:
            on_start(runner)
        return await runner.run()

    return asyncio.run(main())
