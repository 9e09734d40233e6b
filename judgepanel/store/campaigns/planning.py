"""Campaigns in, jobs out: creating a campaign, inserting its missing jobs, reading its spec back."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import Engine, bindparam, func, insert, select, update
from sqlalchemy.orm import Session

from judgepanel.errors import BadInput, NotFound
from judgepanel.protocol.plan import CampaignSpec, PlannedJob, Unit, plan_jobs
from judgepanel.rubrics import RubricDoc
from judgepanel.store import tables as t
from judgepanel.store.campaigns.leases import pending_in
from judgepanel.store.campaigns.records import (
    CampaignInfo,
    ClauseRow,
    JudgeRecord,
    LeasedJob,
)
from judgepanel.store.engine import session_scope
from judgepanel.store.models import (
    Campaign,
    CampaignJudge,
    Clause,
    Dataset,
    Item,
    Job,
    Judge,
    Pair,
    PairSet,
    RubricVersion,
    utcnow,
)
from judgepanel.store.queries import dataset_by_name, pair_set_by_name
from judgepanel.store.sources import imported_source
from judgepanel.store.widths import check_widths

CHUNK = 2_000
# what `create_campaign` stores of a job's prompt: chars, messages, prefix tokens, sig, prefixes
PromptFigures = tuple[int, int, int, str, str]

# ---------------------------------------------------------------- campaigns


def campaign_by_name(s: Session, name: str) -> Campaign:
    c = s.scalar(select(Campaign).where(Campaign.name == name))
    if c is None:
        known = ", ".join(s.scalars(select(Campaign.name).order_by(Campaign.name)).all()) or "none"
        raise NotFound(f"no campaign named {name!r} (known: {known})")
    return c


def _units(
    s: Session,
    ds: Dataset,
    ps: PairSet | None,
    split: str | None,
    limit: int | None,
    turn: int | None = None,
    only: Sequence[str] = (),
) -> tuple[list[Unit], int]:
    """The units to judge, in order, and how many were left out because an item has no assistant
    reply at `turn` (`--limit` counts the units kept)."""
    has_turn: dict[int, bool] = {}
    if turn is not None:
        from judgepanel.protocol.custom import reply_at_turn  # jinja2 is loaded only for --turn

        for i, e, out, meta in s.execute(
            select(Item.id, Item.external_id, Item.output, Item.meta).where(Item.dataset_id == ds.id)
        ):
            try:
                reply_at_turn(e, meta or {}, out, turn)
                has_turn[i] = True
            except BadInput:
                has_turn[i] = False
    skipped = 0
    if ps is None:
        q = select(Item.id, Item.external_id).where(Item.dataset_id == ds.id)
        if split is not None:
            q = q.where(Item.split == split)
        if only:
            q = q.where(Item.external_id.in_(list(only)))
            found = set(s.scalars(q.with_only_columns(Item.external_id)))
            absent = [e for e in only if e not in found]
            if absent:
                where = f" in split {split!r}" if split is not None else ""
                raise BadInput(f"item {absent[0]!r} is not in dataset {ds.name!r}{where}")
        q = q.order_by(Item.position)
        if limit is not None and turn is None:
            q = q.limit(limit)
        units = []
        for i, e in s.execute(q):
            if turn is not None and not has_turn[i]:
                skipped += 1
                continue
            units.append(Unit(i, None, (e,)))
            if limit is not None and len(units) >= limit:
                break
        return units, skipped
    if ps.dataset_id != ds.id:
        raise BadInput(f"pair set {ps.name!r} belongs to another dataset than {ds.name!r}")
    ext = dict(s.execute(select(Item.id, Item.external_id).where(Item.dataset_id == ds.id)).all())
    splits = (
        dict(s.execute(select(Item.id, Item.split).where(Item.dataset_id == ds.id)).all()) if split else {}
    )
    units = []
    for pid, a, b in s.execute(
        select(Pair.id, Pair.item_a_id, Pair.item_b_id)
        .where(Pair.pair_set_id == ps.id)
        .order_by(Pair.position)
    ):
        if split is not None and not (splits.get(a) == split and splits.get(b) == split):
            continue
        if turn is not None and not (has_turn[a] and has_turn[b]):
            skipped += 1
            continue
        units.append(Unit(None, pid, (ext[a], ext[b])))
        if limit is not None and len(units) >= limit:
            break
    return units, skipped


def _judge_ids(s: Session, judges: Sequence[JudgeRecord]) -> dict[str, int]:
    out: dict[str, int] = {}
    for j in judges:
        row = s.scalar(select(Judge).where(Judge.name == j.name))
        if row is None:
            row = Judge(name=j.name, provider=j.provider, model=j.model, params=dict(j.params))
            s.add(row)
            s.flush()
        out[j.name] = row.id
    return out


def _insert_jobs(s: Session, campaign_id: int, jobs: Sequence[PlannedJob], judge_ids: dict[str, int]) -> int:
    have = set(s.scalars(select(Job.job_key).where(Job.campaign_id == campaign_id)))
    now = utcnow()
    rows = [
        {
            "campaign_id": campaign_id,
            "job_key": j.key,
            "judge_id": judge_ids[j.judge],
            "item_id": j.item_id,
            "pair_id": j.pair_id,
            "order": j.order,
            "condition": j.condition,
            "dimension": j.dimension,
            "repeat": j.repeat,
            "status": "pending",
            "attempts": 0,
            "updated_at": now,
        }
        for j in jobs
        if j.key not in have
    ]
    for i in range(0, len(rows), CHUNK):
        s.execute(insert(Job), rows[i : i + CHUNK])
    return len(rows)


def _store_figures(s: Session, figures: Mapping[int, PromptFigures]) -> None:
    """`job.prompt_*` of the jobs in `figures` (one executemany on the Core table: the ORM's bulk
    update by primary key costs several times more per row)."""
    from judgepanel.store import tables as t

    stmt = (
        update(t.job)
        .where(t.job.c.id == bindparam("job_id"))
        .values(
            prompt_chars=bindparam("chars"),
            prompt_messages=bindparam("messages"),
            prompt_prefix_tokens=bindparam("prefix"),
            prompt_sig=bindparam("sig"),
            prompt_prefixes=bindparam("prefixes"),
        )
    )
    rows = [
        {"job_id": jid, "chars": c, "messages": m, "prefix": p, "sig": sig, "prefixes": px}
        for jid, (c, m, p, sig, px) in figures.items()
    ]
    conn = s.connection()
    for i in range(0, len(rows), CHUNK):
        conn.execute(stmt, rows[i : i + CHUNK])


def create_campaign(
    engine: Engine,
    spec: CampaignSpec,
    judges: Sequence[JudgeRecord],
    *,
    rubric_version_id: int | None = None,
    check: Callable[[list[LeasedJob]], Mapping[int, PromptFigures] | None] | None = None,
) -> CampaignInfo:
    """Create (or, with the identical spec, re-plan) a campaign and insert its missing jobs.
    `check` is called with every job still to do before anything is committed; what it raises
    leaves the database as it was (the runner renders each job's prompt there). What it returns,
    job id -> (prompt_chars, prompt_messages, prompt_prefix_tokens, prompt_sig), is stored on the
    jobs for `campaign plan` (`runner.shape`)."""
    spec.validate()
    check_widths(t.campaign, [{"name": spec.name, "split": spec.split}], "the campaign")
    with session_scope(engine) as s:
        ds = dataset_by_name(s, spec.dataset)
        ps = pair_set_by_name(s, spec.pairs) if spec.pairs else None
        rubric_hash = None
        if rubric_version_id is not None:
            rv = s.get(RubricVersion, rubric_version_id)
            if rv is None:
                raise NotFound(f"rubric version id {rubric_version_id} does not exist")
            rubric_hash = rv.content_hash
            doc = RubricDoc.from_dict(rv.body, origin=f"rubric {spec.rubric}")
            for d in spec.dimensions:
                doc.dimension(d)  # BadInput naming the rubric's dimensions
            asks_rubric = any(c != "none" for c in spec.conditions)
            if asks_rubric and spec.protocol != "clauses" and not spec.dimensions and len(doc.dimensions) > 1:
                raise BadInput(
                    f"--condition {','.join(c for c in spec.conditions if c != 'none')} needs --dimension: "
                    f"rubric {doc.name!r} has {', '.join(doc.dimension_names)}"
                )
            if spec.protocol == "clauses":
                have = set(
                    s.scalars(select(Clause.dimension).where(Clause.rubric_version_id == rv.id).distinct())
                )
                missing = [d for d in spec.dimensions if d not in have]
                if missing:
                    raise BadInput(
                        f"rubric {spec.rubric} has no clauses for {', '.join(missing)} "
                        f"(it has {', '.join(sorted(have)) or 'none'})"
                    )
        stored = dict(spec.as_dict(), rubric_version_id=rubric_version_id)
        camp = s.scalar(select(Campaign).where(Campaign.name == spec.name))
        if camp is not None:
            if _compared(camp.spec) != _compared(stored):
                raise BadInput(
                    f"campaign {spec.name!r} exists with another spec{_what_differs(camp.spec, stored)}; "
                    f"choose another name (see `judgepanel campaign list`)"
                )
            if stored.get("judge_names") and camp.spec.get("judge_names") != stored["judge_names"]:
                camp.spec = dict(
                    camp.spec, judge_names=stored["judge_names"]
                )  # names are for people: renaming is allowed
        else:
            camp = Campaign(
                name=spec.name,
                dataset_id=ds.id,
                pair_set_id=ps.id if ps else None,
                rubric_version_id=rubric_version_id,
                protocol=spec.protocol,
                condition=",".join(spec.conditions) if spec.protocol != "clauses" else None,
                dimension=",".join(spec.dimensions)[:100] or None,
                repeats=spec.repeats,
                split=spec.split,
                limit=spec.limit,
                status="planned",
                spec=stored,
                max_cost_usd=spec.max_cost,
            )
            s.add(camp)
            s.flush()
        ids = _judge_ids(s, judges)
        linked = set(s.scalars(select(CampaignJudge.judge_id).where(CampaignJudge.campaign_id == camp.id)))
        for jid in ids.values():
            if jid not in linked:
                s.add(CampaignJudge(campaign_id=camp.id, judge_id=jid))
        units, skipped = _units(s, ds, ps, spec.split, spec.limit, spec.turn, spec.items)
        if not units:
            what = f"pair set {spec.pairs!r}" if ps else f"dataset {spec.dataset!r}"
            raise BadInput(
                f"{what} has nothing to judge"
                + (f" in split {spec.split!r}" if spec.split else "")
                + (f": no item has an assistant reply at turn {spec.turn} (--turn)" if spec.turn else "")
            )
        planned = plan_jobs(spec, units, dataset_key=ds.name, rubric_hash=rubric_hash)
        added = _insert_jobs(s, camp.id, planned, ids)
        if check is not None:
            s.flush()
            figures = check(pending_in(s, camp.id))
            if figures:
                _store_figures(s, figures)
        n = s.scalar(select(func.count()).select_from(Job).where(Job.campaign_id == camp.id)) or 0
        return CampaignInfo(
            camp.id,
            camp.name,
            ds.name,
            camp.protocol,
            spec.pairs,
            rubric_version_id,
            spec.conditions,
            spec.dimensions,
            spec.repeats,
            tuple(judges),
            ids,
            stored,
            n,
            added,
            skipped if spec.turn is not None else None,
        )


def learnt_refusals(engine: Engine, judges: Sequence[str]) -> dict[str, frozenset[str]]:
    """judge name -> the parameters its server refused in any earlier run (`spec.refused_params`
    of every campaign, since a judge's name includes its `base_url`: the same server)."""
    wanted = set(judges)
    out: dict[str, set[str]] = {}
    with engine.connect() as conn:
        for (spec,) in conn.execute(select(Campaign.spec)):
            for judge, names in ((spec or {}).get("refused_params") or {}).items():
                if judge in wanted:
                    out.setdefault(judge, set()).update(str(n) for n in names)
    return {j: frozenset(n) for j, n in out.items()}


def remember_refusals(engine: Engine, campaign: str, judge: str, names: Sequence[str]) -> None:
    """Record in the campaign's spec that `judge`'s server refuses `names` (see `learnt_refusals`)."""
    with session_scope(engine) as s:
        camp = s.scalar(select(Campaign).where(Campaign.name == campaign).with_for_update())
        if camp is None:
            return
        spec = dict(camp.spec)
        known = dict(spec.get("refused_params") or {})
        merged = sorted(set(known.get(judge) or ()) | set(names))
        if merged == known.get(judge):
            return
        known[judge] = merged
        spec["refused_params"] = known
        camp.spec = spec  # a new object, so the JSON column is written


def learnt_served_models(engine: Engine, campaign: str, judges: Sequence[str]) -> dict[str, str]:
    """judge name -> the model its server said it runs (`spec.served_models`, written by
    `remember_served_models`): what `campaign plan` keys the request cache on without asking the
    servers again. This campaign's record first; for a judge it has none for (it never ran), the
    record of the newest campaign that has one, since a judge's name includes its `base_url`."""
    wanted = set(judges)
    out: dict[str, str] = {}
    with engine.connect() as conn:
        rows = conn.execute(select(Campaign.name, Campaign.spec).order_by(Campaign.id.desc())).all()
    for own in (True, False):
        for name, spec in rows:
            if (name == campaign) != own:
                continue
            for judge, model in ((spec or {}).get("served_models") or {}).items():
                if judge in wanted and judge not in out:
                    out[str(judge)] = str(model)
    return out


def remember_served_models(engine: Engine, campaign: str, served: Mapping[str, str]) -> None:
    """Record in the campaign's spec which model each `base_url` judge's server said it runs (see
    `runner.served`); the latest answer replaces an older one."""
    if not served:
        return
    with session_scope(engine) as s:
        camp = s.scalar(select(Campaign).where(Campaign.name == campaign).with_for_update())
        if camp is None:
            return
        spec = dict(camp.spec)
        known = dict(spec.get("served_models") or {})
        merged = {**known, **served}
        if merged == known:
            return
        spec["served_models"] = merged
        camp.spec = spec  # a new object, so the JSON column is written


# not part of what a campaign *is*: provenance, and what its runs learnt about the judges' servers
_NOT_COMPARED = ("origin", "refused_params", "served_models", "judge_names")


def _compared(spec: dict[str, Any]) -> dict[str, Any]:
    """A stored spec without its provenance: the same campaign from a file or from flags is one
    campaign. A template's `system` message version is left out too: a campaign stored before
    custom templates had one (system.v1) is the same campaign as its re-creation, and keeps the
    message it was created with."""
    out = {k: v for k, v in spec.items() if k not in _NOT_COMPARED}
    if out.get("rubric_version_id") is not None:
        # the version row is what the campaign uses; `rubric` is how it was named (a campaign
        # stored before names were pinned has `summeval` where a re-creation has `summeval@1`)
        out.pop("rubric", None)
    if out.get("templates"):
        out["templates"] = {
            p: {k: v for k, v in t.items() if k != "system"} for p, t in out["templates"].items()
        }
    return out


def _what_differs(old: dict[str, Any], new: dict[str, Any]) -> str:
    """` (its pairwise template changed: …)`: why a re-create is refused, so an edited template
    file is named as the reason instead of a bare "another spec"."""
    a, b = _compared(old), _compared(new)
    keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    notes: list[str] = []
    other = [k for k in keys if k != "templates"]
    if other:
        notes.append(f"it differs in {', '.join(other)}")
    for k in keys:
        if k == "templates":
            ta, tb = a.get(k) or {}, b.get(k) or {}
            for proto in sorted(set(ta) | set(tb)):
                sa, sb = (ta.get(proto) or {}).get("sha256"), (tb.get(proto) or {}).get("sha256")
                if sa != sb:
                    notes.append(
                        f"its {proto} template changed: sha256 {str(sa)[:12]} stored, {str(sb)[:12]} now"
                    )
    return f" ({'; '.join(notes)})" if notes else ""


def campaign_spec(engine: Engine, name: str) -> tuple[CampaignSpec, int | None]:
    """The spec a campaign was created with (to re-plan it) and its rubric version id."""
    with session_scope(engine) as s:
        c = campaign_by_name(s, name)
        d = dict(c.spec)
        source = imported_source(d)
        if source is not None:
            # `data import-inspect` / `import-promptfoo`: graded elsewhere, nothing to plan or ask
            files = ", ".join(source.get("files") or [])
            raise BadInput(
                f"campaign {name!r} was imported from {source['tool']} ({files}): its verdicts were graded "
                "there, so there is nothing to plan or run"
            )
        rv = d.pop("rubric_version_id", None)
        return (
            CampaignSpec(
                name=c.name,
                dataset=d["dataset"],
                protocol=d["protocol"],
                judges=tuple(d["judges"]),
                pairs=d.get("pairs"),
                rubric=d.get("rubric"),
                conditions=tuple(d.get("conditions") or ("none",)),
                dimensions=tuple(d.get("dimensions") or ()),
                repeats=int(d.get("repeats", 1)),
                split=d.get("split"),
                limit=d.get("limit"),
                judge_specs=tuple(d.get("judge_specs") or ()),
                templates=dict(d.get("templates") or {}),
                max_cost=d.get("max_cost"),
                origin=d.get("origin"),
                turn=d.get("turn"),
                reference_categories=tuple(d.get("reference_categories") or ()),
                judge_names=tuple(d.get("judge_names") or ()),
                items=tuple(d.get("items") or ()),
            ),
            rv,
        )


def rubric_doc(engine: Engine, rubric_version_id: int) -> RubricDoc:
    """The rubric document a campaign was planned with (as stored, whatever the files say now)."""
    with session_scope(engine) as s:
        rv = s.get(RubricVersion, rubric_version_id)
        if rv is None:
            raise NotFound(f"rubric version id {rubric_version_id} does not exist")
        return RubricDoc.from_dict(rv.body, origin=f"rubric version {rubric_version_id}")


def campaign_judges(engine: Engine, campaign_id: int) -> dict[int, JudgeRecord]:
    with session_scope(engine) as s:
        rows = s.scalars(
            select(Judge)
            .join(CampaignJudge, CampaignJudge.judge_id == Judge.id)
            .where(CampaignJudge.campaign_id == campaign_id)
            .order_by(Judge.id)
        )
        return {j.id: JudgeRecord(j.name, j.provider, j.model, dict(j.params)) for j in rows}


def campaign_clauses(engine: Engine, rubric_version_id: int | None) -> dict[str, list[ClauseRow]]:
    """dimension -> its clauses in rubric order (empty without a rubric)."""
    if rubric_version_id is None:
        return {}
    with session_scope(engine) as s:
        out: dict[str, list[ClauseRow]] = defaultdict(list)
        for c in s.scalars(
            select(Clause).where(Clause.rubric_version_id == rubric_version_id).order_by(Clause.position)
        ):
            out[c.dimension].append(ClauseRow(c.id, c.clause_key, c.dimension, c.text))
        return dict(out)


def set_campaign_status(engine: Engine, campaign_id: int, status: str) -> None:
    with session_scope(engine) as s:
        s.execute(update(Campaign).where(Campaign.id == campaign_id).values(status=status))
