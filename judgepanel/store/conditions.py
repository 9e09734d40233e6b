"""Reading a pointwise campaign's verdicts and a human group's labels for the rubric-condition
study (`metrics conditions`): the statistics live in `metrics.conditions` and the study's
orchestration (the human reference, the scale checks, the cases) in `analysis.conditions`; this
module only collects the rows and the texts a disagreement case shows.

What is compared, per condition (`none`, `criteria`, `rubric`): one judge's accepted verdict (its
argmax score, also for a `scoring=logprobs` judge whose stored score is the expectation) on an
item (repeat 0: a campaign with `--repeats N` is compared on its first sample) against the human
reference on the same item and dimension — the group's mean rounded half up, or, with
`per_human`, each human's own rating. Items without a human rating of that dimension are left out
and counted. The scale is the campaign rubric's dimension scale (1..5 without a rubric, which is
what such a prompt asked for).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from judgepanel.errors import BadInput, JudgepanelError, NotFound
from judgepanel.providers.spec import parse_spec
from judgepanel.rubrics import SCALE, RubricDoc
from judgepanel.store.campaigns import campaign_by_name
from judgepanel.store.campaigns.readers import done_verdicts, judge_names_in
from judgepanel.store.engine import session_scope
from judgepanel.store.models import (
    Annotator,
    Campaign,
    Dataset,
    Item,
    Job,
    Judge,
    Label,
    RubricVersion,
    Verdict,
)

CONDITION_ORDER: tuple[str, ...] = ("none", "criteria", "rubric")


@dataclass(frozen=True)
class HumanRating:
    annotator: str
    value: float
    rationale: str | None


@dataclass(frozen=True)
class JudgeScore:
    score: float
    rationale: str | None


@dataclass(frozen=True)
class ConditionRows:
    """What a campaign and a human group hold for the study, aligned on `items` (index = position
    here): only items judged and rated by the group, in dataset order."""

    campaign: str
    dataset: str
    dimension: str | None
    judge: str
    group: str
    per_human: bool
    categories: tuple[float, ...]
    items: list[str]  # external ids, in dataset order
    outputs: list[str | None]
    groups: list[str | None]  # per item: its group key (article), None when it has none
    humans: list[list[HumanRating]]  # per item
    scores: dict[str, dict[int, JudgeScore]]  # condition -> item index -> judge score
    skipped: dict[str, int] = field(default_factory=dict)


def _argmax(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _campaign(s: Session, name: str) -> Campaign:
    c = campaign_by_name(s, name)
    if c.protocol != "pointwise":
        raise BadInput(f"campaign {name!r} is {c.protocol}; the condition study needs a pointwise campaign")
    return c


def _one(what: str, asked: str | None, found: list[str], option: str) -> str:
    if asked is not None:
        if asked not in found:
            raise BadInput(f"the campaign has no {what} {asked!r} (it has: {', '.join(found) or 'none'})")
        return asked
    if len(found) != 1:
        raise BadInput(f"the campaign has several {what}s; choose one with {option} ({', '.join(found)})")
    return found[0]


def _canonical(judge: str | None) -> str | None:
    """A judge as the campaign stores it (`sim:a?noise=0.1&position_bias=0.2`, sorted parameters),
    so any spelling of the same spec finds it; an unparseable name is compared as given."""
    if judge is None:
        return None
    try:
        return parse_spec(judge).name
    except JudgepanelError:
        return judge


def _scale(s: Session, c: Campaign, dimension: str | None) -> tuple[int, int]:
    if c.rubric_version_id is None or dimension is None:
        return SCALE
    rv = s.get(RubricVersion, c.rubric_version_id)
    doc = RubricDoc.from_dict(rv.body, origin="stored rubric") if rv is not None else None
    if doc is None or dimension not in doc.dimension_names:
        return SCALE
    return doc.dimension(dimension).scale


# A deliberate mirror (issue 31 §4): `analysis.conditions.load_condition_data` takes the keywords of
# `store.conditions.load_condition_rows`, which it reads through, so their signatures repeat.
def load_condition_rows(
    engine: Engine,
    campaign: str,
    human_group: str,
    *,
    dimension: str | None = None,
    judge: str | None = None,
    per_human: bool = False,
) -> ConditionRows:
    with session_scope(engine) as s:
        c = _campaign(s, campaign)
        dims = sorted(
            {d for (d,) in s.execute(select(Job.dimension).where(Job.campaign_id == c.id).distinct())},
            key=lambda d: d or "",
        )
        named = [d for d in dims if d is not None]
        if dims == [None]:
            if dimension is not None:
                raise BadInput(f"campaign {campaign!r} judged no named dimension; leave out --dimension")
            dim: str | None = None
        else:
            dim = _one("dimension", dimension, named, "--dimension")
        judges = list(
            s.scalars(
                select(Judge.name)
                .join(Job, Job.judge_id == Judge.id)
                .where(Job.campaign_id == c.id)
                .distinct()
                .order_by(Judge.name)
            )
        )
        # `--judge` takes the judge's short name (issue 19 §3) or any spelling of its spec
        by_name = {n: spec for spec, n in judge_names_in(s, c).items()}
        jname = _one(
            "judge", by_name.get(judge) if judge in by_name else _canonical(judge), judges, "--judge"
        )
        groups = sorted(
            {
                g or ""
                for (g,) in s.execute(
                    select(Annotator.group).where(
                        Annotator.dataset_id == c.dataset_id, Annotator.kind == "human"
                    )
                )
            }
        )
        if human_group not in groups:
            raise NotFound(
                f"the campaign's dataset has no human group {human_group!r} (groups: {', '.join(groups) or 'none'})"
            )
        lo, hi = _scale(s, c, dim)
        categories = tuple(float(v) for v in range(lo, hi + 1))

        # the judge's accepted verdicts, latest accepted attempt per job: the argmax verdict, also
        # for a `scoring=logprobs` judge whose stored score is the expectation (every statistic
        # of the study reads the scale's categories)
        q = (
            done_verdicts(
                c.id,
                Job.condition,
                Job.item_id,
                Verdict.attempt,
                Verdict.value_canonical,
                Verdict.rationale,
                accepted=True,
            )
            .where(Judge.name == jname, Verdict.value_canonical.is_not(None))
            .order_by(Job.id, Verdict.attempt)
        )
        q = q.where(Job.dimension.is_(None)) if dim is None else q.where(Job.dimension == dim)
        by_cond: dict[str, dict[int, JudgeScore]] = defaultdict(dict)
        for cond, item_id, _attempt, shown, rationale in s.execute(q):
            score = _argmax(shown)
            if item_id is not None and score is not None:
                by_cond[cond or "none"][item_id] = JudgeScore(score, rationale)
        if not by_cond:
            raise NotFound(f"campaign {campaign!r} has no accepted verdicts of {jname} yet (run it first)")
        # jobs of this judge and dimension that left no score behind (issue 34 §1: a failed job
        # was silently missing from the comparison): counted by status under `skipped`
        jq = (
            select(Job.status, func.count())
            .join(Judge, Judge.id == Job.judge_id)
            .where(Job.campaign_id == c.id, Job.repeat == 0, Judge.name == jname, Job.status != "done")
            .group_by(Job.status)
        )
        jq = jq.where(Job.dimension.is_(None)) if dim is None else jq.where(Job.dimension == dim)
        unscored = {str(st): int(n) for st, n in s.execute(jq)}

        label_dim = dim or ""
        labels: dict[int, list[HumanRating]] = defaultdict(list)
        for item_id, name, value, rationale in s.execute(
            select(Label.item_id, Annotator.name, Label.value_num, Label.rationale)
            .join(Annotator, Annotator.id == Label.annotator_id)
            .join(Item, Item.id == Label.item_id)
            .where(
                Item.dataset_id == c.dataset_id,
                Annotator.kind == "human",
                Annotator.group == human_group,
                Label.dimension == label_dim,
                Label.value_num.is_not(None),
            )
            .order_by(Item.position, Annotator.name)
        ):
            if value is not None:
                labels[item_id].append(HumanRating(name, float(value), rationale))

        judged = sorted({i for m in by_cond.values() for i in m})
        rows = s.execute(
            select(Item.id, Item.external_id, Item.output, Item.position, Item.group_key)
            .where(Item.id.in_(judged))
            .order_by(Item.position)
        ).all()
        dataset = s.scalar(select(Dataset.name).where(Dataset.id == c.dataset_id)) or ""

    index: dict[int, int] = {}
    items: list[str] = []
    outputs: list[str | None] = []
    humans: list[list[HumanRating]] = []
    no_label = 0
    item_groups: list[str | None] = []
    for item_id, ext, output, _pos, group in rows:
        ratings = labels.get(item_id, [])
        if not ratings:
            no_label += 1
            continue
        index[item_id] = len(items)
        items.append(ext)
        outputs.append(output)
        item_groups.append(group)
        humans.append(ratings)
    if not items:
        raise NotFound(
            f"no item judged in campaign {campaign!r} has a {human_group!r} rating"
            + (f" of {dim!r}" if dim else "")
        )
    scores: dict[str, dict[int, JudgeScore]] = {}
    for cond in sorted(by_cond, key=lambda k: (CONDITION_ORDER.index(k) if k in CONDITION_ORDER else 9, k)):
        scores[cond] = {index[i]: js for i, js in by_cond[cond].items() if i in index}
    return ConditionRows(
        campaign=campaign,
        dataset=dataset,
        dimension=dim,
        judge=jname,
        group=human_group,
        per_human=per_human,
        categories=categories,
        items=items,
        outputs=outputs,
        groups=item_groups,
        humans=humans,
        scores=scores,
        skipped={
            **({"items_without_human_rating": no_label} if no_label else {}),
            **({"jobs_failed": unscored.pop("failed")} if "failed" in unscored else {}),
            **({"jobs_not_done": sum(unscored.values())} if unscored else {}),
        },
    )
