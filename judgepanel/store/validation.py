"""What judge validation reads from the store and what re-annotation planning writes to it.

- :func:`read_panel`: a dataset's humans × units label matrix and its judges' labels, for
  ``metrics.validation``. A judge is named by an annotator of kind ``llm`` in the dataset (an
  external judge whose verdicts were imported, e.g. by ``data import-alttest``).
- :func:`read_campaign_panel`: the same panel with a campaign's own judges as the judges, so the
  tool validates what it ran. Pointwise: one column per judge of the campaign's scores (first
  sample, parsed verdicts) on one dimension under one condition, against the humans' labels of
  that dimension. Pairwise: units are the pairs of the campaign's pair set, humans their A/B/T
  pair labels, each judge its combined AB/BA verdict (``protocol.pairs.combine_orders``; an
  inconsistent pair counts as T, a pair missing an order has no label).
- the rows of a re-annotation allocation: the primary annotator's labels (the strata), what the
  secondaries already labelled, and the stored assignment (``allocation`` / ``allocation_item``).

Reading and writing only: the statistics run in ``judgepanel.analysis.validation`` (alt-test,
leave-one-out, ranking, overlap plans) and ``judgepanel.analysis.allocation`` (the seeded draw
and the assignment files).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Engine, delete, insert, select
from sqlalchemy.orm import Session

from judgepanel.errors import BadInput, NotFound
from judgepanel.protocol.pairs import as_label, combine_orders, to_canonical
from judgepanel.providers.spec import parse_spec
from judgepanel.store.campaigns import campaign_by_name
from judgepanel.store.campaigns.readers import done_verdicts, judge_names_in
from judgepanel.store.engine import session_scope
from judgepanel.store.models import (
    Allocation,
    AllocationItem,
    Annotator,
    Campaign,
    CampaignJudge,
    Dataset,
    Item,
    Job,
    Judge,
    Label,
    Pair,
    PairLabel,
    PairSet,
    Verdict,
)
from judgepanel.store.queries import dataset_by_name, resolve_dimension

FloatArray = NDArray[np.float64]

Row = tuple[int, str, float | None, str | None]  # item id, annotator, value_num, value_text


# ---------------------------------------------------------------- reading a panel


@dataclass(frozen=True)
class Panel:
    """Labels of one dimension of a dataset: units in file order, humans and judges as columns.

    ``codes`` index ``texts`` (every distinct label text, sorted); ``values`` are the numbers when
    every label is numeric, else None. NaN marks a missing label in both."""

    dataset: str
    dimension: str
    units: list[str]
    groups: list[str | None]
    humans: list[str]
    judges: list[str]
    texts: tuple[str, ...]
    human_codes: FloatArray
    judge_codes: FloatArray
    human_values: FloatArray | None
    judge_values: FloatArray | None
    label_map: dict[str, str] = field(default_factory=dict)
    campaign: str | None = None  # set when the judges are a campaign's
    condition: str | None = None  # the pointwise condition read (campaign judges)
    unit: str = "item"  # item | pair
    # campaign judges scored with logprobs: which score was read (`protocol.logprobs`), the argmax
    # verdict or the expectation; None for imported judges
    score_source: str | None = None

    @property
    def numeric(self) -> bool:
        return self.human_values is not None

    def require_numeric(self, what: str) -> None:
        """Refuse `what` (a scorer that needs numbers) on a panel with text labels."""
        if not self.numeric:
            example = next((t for t in self.texts if _number(t) is None), self.texts[0])
            raise BadInput(f"{what} needs numeric labels; {self.dataset} has text labels such as {example!r}")

    def matrices(self, scorer: str) -> tuple[FloatArray, FloatArray]:
        """(humans, judges) as the scorer reads them: values for neg-rmse, codes otherwise."""
        if scorer == "neg-rmse":
            self.require_numeric(scorer)
            assert self.human_values is not None and self.judge_values is not None
            return self.human_values, self.judge_values
        return self.human_codes, self.judge_codes

    def agreement_matrices(self) -> tuple[FloatArray, FloatArray]:
        """(humans, judges) as the agreement coefficients read them: values when every label is
        numeric, codes otherwise."""
        if self.human_values is not None and self.judge_values is not None:
            return self.human_values, self.judge_values
        return self.human_codes, self.judge_codes

    def judge(self, name: str) -> int:
        return self.judges.index(name)

    def categories(self, agreement_level: str) -> FloatArray:
        """Every label value in the panel, as the agreement coefficients want them."""
        if agreement_level != "nominal" and not self.numeric:
            raise BadInput(f"level {agreement_level} needs numeric labels; {self.dataset} has text labels")
        h, j = self.agreement_matrices()
        both = np.concatenate([h.ravel(), j.ravel()])
        return np.asarray(np.unique(both[~np.isnan(both)]), dtype=np.float64)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _annotator_labels(s: Session, ds: Dataset, dimension: str, kinds: Sequence[str]) -> list[Row]:
    return [
        (item, name, num, text)
        for item, name, num, text in s.execute(
            select(Label.item_id, Annotator.name, Label.value_num, Label.value_text)
            .join(Annotator, Label.annotator_id == Annotator.id)
            .where(Annotator.dataset_id == ds.id, Annotator.kind.in_(kinds), Label.dimension == dimension)
        )
    ]


def _judge_labels(s: Session, ds: Dataset, dimension: str, name: str) -> list[Row]:
    """The labels of one imported judge: an annotator of kind ``llm`` in the dataset."""
    ann = s.scalar(select(Annotator).where(Annotator.dataset_id == ds.id, Annotator.name == name))
    if ann is None or ann.kind != "llm":
        llms = ", ".join(
            s.scalars(
                select(Annotator.name)
                .where(Annotator.dataset_id == ds.id, Annotator.kind == "llm")
                .order_by(Annotator.id)
            )
        )
        if ann is None:
            raise NotFound(f"no judge {name!r} in dataset {ds.name!r} (judges: {llms or 'none'})")
        raise BadInput(
            f"{name!r} is a human annotator of {ds.name!r}; --judge takes an annotator of kind llm "
            f"({llms or 'none in this dataset'})"
        )
    return [
        (item, name, num, text)
        for item, num, text in s.execute(
            select(Label.item_id, Label.value_num, Label.value_text).where(
                Label.annotator_id == ann.id, Label.dimension == dimension
            )
        )
    ]


def read_panel(
    s: Session,
    dataset: str,
    judges: Sequence[str] | None = None,
    *,
    dimension: str | None = None,
    label_map: Mapping[str, str] | None = None,
) -> Panel:
    """The panel of ``dataset``: every human annotator and the named judges (default: every
    annotator of kind llm). ``label_map`` rewrites label texts before anything compares them
    (e.g. ``{"Ignore": "No response"}``)."""
    ds = dataset_by_name(s, dataset)
    dim = resolve_dimension(s, ds, dimension)
    mapping = dict(label_map or {})
    if judges is None:
        judges = list(
            s.scalars(
                select(Annotator.name)
                .where(Annotator.dataset_id == ds.id, Annotator.kind == "llm")
                .order_by(Annotator.id)
            )
        )
    if len(set(judges)) != len(judges):
        raise BadInput("a judge is named twice")
    human_rows = _annotator_labels(s, ds, dim, ["human"])
    humans = list(
        s.scalars(
            select(Annotator.name)
            .where(Annotator.dataset_id == ds.id, Annotator.kind == "human")
            .order_by(Annotator.id)
        )
    )
    if len(humans) < 2:
        raise BadInput(
            f"dataset {dataset!r} has {len(humans)} human annotator(s); validation needs at least 2"
        )
    judge_rows = [r for name in judges for r in _judge_labels(s, ds, dim, name)]
    units = s.execute(
        select(Item.id, Item.external_id, Item.group_key)
        .where(Item.dataset_id == ds.id)
        .order_by(Item.position)
    ).all()
    return _assemble(
        dataset, dim, [(i, e, g) for i, e, g in units], humans, human_rows, list(judges), judge_rows, mapping
    )


def _assemble(
    dataset: str,
    dim: str,
    units: Sequence[tuple[int, str, str | None]],
    humans: Sequence[str],
    human_rows: Sequence[Row],
    judges: Sequence[str],
    judge_rows: Sequence[Row],
    mapping: dict[str, str],
    **extra: Any,
) -> Panel:
    """The panel over the units (id, external id, group; in order) that carry any label."""
    used = {r[0] for r in human_rows} | {r[0] for r in judge_rows}
    items = [u for u in units if u[0] in used]
    row_of = {i: r for r, (i, _, _) in enumerate(items)}

    rows = [*human_rows, *judge_rows]
    numeric = all(v is not None for _, _, v, _ in rows) and not mapping

    def text(t: str | None, num: float | None) -> str:
        # numbers compare by value ("2" and "2.0" are one label), other labels by their text
        if numeric or t is None:
            return f"{num:.15g}"
        return mapping.get(t, t)

    distinct = {text(t, v) for _, _, v, t in rows}
    texts = tuple(sorted(distinct, key=float) if numeric else sorted(distinct))
    code = {t: float(c) for c, t in enumerate(texts)}
    col = {name: c for c, name in enumerate(humans)}
    jcol = {name: c for c, name in enumerate(judges)}
    n = len(items)
    hc, jc = np.full((n, len(humans)), np.nan), np.full((n, len(judges)), np.nan)
    hv, jv = np.full_like(hc, np.nan), np.full_like(jc, np.nan)
    for item, name, v, t in human_rows:
        hc[row_of[item], col[name]] = code[text(t, v)]
        hv[row_of[item], col[name]] = np.nan if v is None else v
    for item, name, v, t in judge_rows:
        jc[row_of[item], jcol[name]] = code[text(t, v)]
        jv[row_of[item], jcol[name]] = np.nan if v is None else v
    return Panel(
        dataset=dataset,
        dimension=dim,
        units=[e for _, e, _ in items],
        groups=[g for _, _, g in items],
        humans=list(humans),
        judges=list(judges),
        texts=texts,
        human_codes=hc,
        judge_codes=jc,
        human_values=hv if numeric else None,
        judge_values=jv if numeric else None,
        label_map=mapping,
        **extra,
    )


# ---------------------------------------------------------------- campaign judges


def _campaign_judges(s: Session, c: Campaign, wanted: Sequence[str] | None) -> dict[str, int]:
    """Judge name → id for the named judges of the campaign (default: all, in id order). A spec is
    matched by its canonical name, so parameter order and operational settings do not matter."""
    own = dict(
        s.execute(
            select(Judge.name, Judge.id)
            .join(CampaignJudge, CampaignJudge.judge_id == Judge.id)
            .where(CampaignJudge.campaign_id == c.id)
            .order_by(Judge.id)
        ).all()
    )
    if wanted is None:
        return own
    # a judge is asked for by its short name (issue 19 §3) or by any spelling of its spec
    by_name = {n: spec for spec, n in judge_names_in(s, c).items()}
    out: dict[str, int] = {}
    for spec in wanted:
        name = spec if spec in own else by_name.get(spec) or parse_spec(spec).name
        if name not in own:
            raise NotFound(f"no judge {spec!r} in campaign {c.name!r} (judges: {', '.join(own) or 'none'})")
        if name in out:
            raise BadInput("a judge is named twice")
        out[name] = own[name]
    return out


def _choose(
    c: Campaign, what: str, option: str, asked: str | None, present: Sequence[str | None]
) -> str | None:
    """The one dimension / condition of the campaign's jobs to read: the one asked for, or the
    campaign's only one."""
    values = sorted({v for v in present if v is not None})
    if asked is None:
        if len(values) > 1:
            raise BadInput(
                f"campaign {c.name!r} asked several {what}s; choose one with {option} ({', '.join(values)})"
            )
        return values[0] if values else None
    if asked not in values:
        raise NotFound(f"campaign {c.name!r} has no {what} {asked!r} (known: {', '.join(values) or 'none'})")
    return asked


def read_campaign_panel(
    s: Session,
    campaign: str,
    judges: Sequence[str] | None = None,
    *,
    dataset: str | None = None,
    dimension: str | None = None,
    condition: str | None = None,
    label_map: Mapping[str, str] | None = None,
    score_source: str = "argmax",
) -> Panel:
    """The panel of a campaign's own judges against the humans of its dataset (see the module
    docstring). Only verdicts of done jobs that parsed, first sample (repeat 0)."""
    c = campaign_by_name(s, campaign)
    ds = s.get(Dataset, c.dataset_id)
    assert ds is not None
    if dataset is not None and dataset != ds.name:
        raise BadInput(f"campaign {campaign!r} runs on dataset {ds.name!r}, not {dataset!r}")
    if c.protocol not in ("pointwise", "pairwise"):
        raise BadInput(
            f"campaign {campaign!r} is a {c.protocol} campaign; validate reads pointwise scores or pairwise verdicts"
        )
    chosen = _campaign_judges(s, c, judges)
    jobs = select(Job.dimension, Job.condition).where(Job.campaign_id == c.id).distinct()
    present = s.execute(jobs).all()
    dim = _choose(c, "dimension", "--dimension", dimension, [d for d, _ in present])
    cond = _choose(c, "condition", "--condition", condition, [k for _, k in present])
    done = (
        done_verdicts(
            c.id,
            Judge.name,
            Job.item_id,
            Job.pair_id,
            Job.order,
            Verdict.value_presented,
            Verdict.score,
            Verdict.value_canonical,
            accepted=True,
        )
        .where(
            Job.judge_id.in_(list(chosen.values())),
            Job.dimension.is_(None) if dim is None else Job.dimension == dim,
            Job.condition.is_(None) if cond is None else Job.condition == cond,
        )
        .order_by(Job.id)
    )
    mapping = dict(label_map or {})
    extra: dict[str, Any] = {"campaign": campaign, "condition": cond, "score_source": score_source}
    if c.protocol == "pointwise":
        if dim is None:
            raise BadInput(f"campaign {campaign!r} names no dimension to compare with human labels")
        dim = resolve_dimension(s, ds, dim)
        human_rows = _annotator_labels(s, ds, dim, ["human"])
        judge_rows: list[Row] = []
        seen: set[tuple[str, int]] = set()
        for name, item, _pid, _order, _shown, score, canonical in s.execute(done):
            # a pointwise judge's label is its argmax verdict, or with score_source="expectation"
            # its stored score (the expectation of a `scoring=logprobs` judge, else the argmax).
            # The canonical value: the same text as the presented one for judgepanel's own judges,
            # the mapped number for an imported grader's grade ("C" presented, "2" canonical)
            value = score if score_source == "expectation" else _number(canonical or "")
            if item is not None and value is not None and (name, item) not in seen:
                seen.add((name, item))  # a re-asked job keeps its first accepted verdict
                judge_rows.append((item, name, float(value), f"{float(value):.15g}"))
        units = [
            (i, e, g)
            for i, e, g in s.execute(
                select(Item.id, Item.external_id, Item.group_key)
                .where(Item.dataset_id == ds.id)
                .order_by(Item.position)
            )
        ]
    else:
        if c.pair_set_id is None:
            raise BadInput(f"campaign {campaign!r} is pairwise but has no pair set")
        ps = s.get(PairSet, c.pair_set_id)
        assert ps is not None
        human_rows = [
            (pid, name, None, value)
            for pid, name, value in s.execute(
                select(PairLabel.pair_id, Annotator.name, PairLabel.value)
                .join(Annotator, PairLabel.annotator_id == Annotator.id)
                .join(Pair, PairLabel.pair_id == Pair.id)
                .where(Pair.pair_set_id == ps.id, Annotator.kind == "human")
            )
        ]
        orders: dict[tuple[str, int], dict[str, str]] = defaultdict(dict)
        for name, _item, pid, order, shown, _score, _canonical in s.execute(done):
            if pid is not None and order in ("AB", "BA") and shown is not None:
                orders[(name, pid)].setdefault(order, to_canonical(_presented(shown), cast(Any, order)))
        judge_rows = []
        for (name, pid), by_order in orders.items():
            label = as_label(combine_orders(by_order.get("AB"), by_order.get("BA")))
            if label is not None:
                judge_rows.append((pid, name, None, label))
        item_a = Item.__table__.alias("a")
        item_b = Item.__table__.alias("b")
        units = [
            (pid, f"{ea}|{eb}", g)
            for pid, ea, eb, g in s.execute(
                select(Pair.id, item_a.c.external_id, item_b.c.external_id, item_a.c.group_key)
                .join(item_a, item_a.c.id == Pair.item_a_id)
                .join(item_b, item_b.c.id == Pair.item_b_id)
                .where(Pair.pair_set_id == ps.id)
                .order_by(Pair.position)
            )
        ]
        extra["unit"] = "pair"
        dim = dim or ""
    humans = sorted({name for _, name, _, _ in human_rows}, key=_annotator_order(s, ds))
    if len(humans) < 2:
        where = f"pair set of {campaign!r}" if c.protocol == "pairwise" else f"{ds.name!r} on {dim!r}"
        raise BadInput(
            f"{where} has labels from {len(humans)} human annotator(s); validation needs at least 2"
        )
    names = list(chosen)
    if not judge_rows:
        raise BadInput(f"campaign {campaign!r} has no parsed verdicts for these judges yet; run it first")
    return _assemble(ds.name, dim, units, humans, human_rows, names, judge_rows, mapping, **extra)


def _presented(value: str) -> str:
    v = value.strip()
    return "tie" if v.upper().startswith("T") else v.upper()[:1]


def _annotator_order(s: Session, ds: Dataset) -> Any:
    order = {
        n: i
        for i, n in enumerate(
            s.scalars(select(Annotator.name).where(Annotator.dataset_id == ds.id).order_by(Annotator.id))
        )
    }
    return lambda name: order.get(name, len(order))


# ---------------------------------------------------------------- allocation rows

LabelRow = tuple[int, float | None, str | None]  # item id, value_num, value_text


def dataset_dimension(s: Session, dataset: str, dimension: str | None) -> tuple[Dataset, str]:
    """The dataset and the dimension an allocation reads (the dataset's only one by default)."""
    ds = dataset_by_name(s, dataset)
    return ds, resolve_dimension(s, ds, dimension)


def allocation_by_name(s: Session, name: str) -> Allocation | None:
    return s.scalar(select(Allocation).where(Allocation.name == name))


def delete_allocation(s: Session, alloc: Allocation) -> None:
    s.execute(delete(Allocation).where(Allocation.id == alloc.id))
    s.flush()


def primary_labels(s: Session, ds: Dataset, dimension: str, primary: str) -> list[LabelRow]:
    """The primary annotator's labels of ``dimension``, in dataset order."""
    ann = s.scalar(select(Annotator).where(Annotator.dataset_id == ds.id, Annotator.name == primary))
    if ann is None:
        raise NotFound(f"no annotator {primary!r} in dataset {ds.name!r} to serve as primary")
    labels = [
        (i, v, t)
        for i, v, t in s.execute(
            select(Label.item_id, Label.value_num, Label.value_text)
            .join(Item, Label.item_id == Item.id)
            .where(Label.annotator_id == ann.id, Label.dimension == dimension)
            .order_by(Item.position)
        )
    ]
    if not labels:
        raise BadInput(f"annotator {primary!r} has no labels on dimension {dimension!r} of {ds.name!r}")
    return labels


def secondary_labels(
    s: Session, ds: Dataset, dimension: str, secondaries: Sequence[str]
) -> dict[str, list[LabelRow]] | None:
    """Labels the secondaries already gave, per secondary that is an annotator of the dataset
    (None when none is)."""
    anns = dict(
        s.execute(
            select(Annotator.name, Annotator.id).where(
                Annotator.dataset_id == ds.id, Annotator.name.in_(secondaries)
            )
        ).all()
    )
    if not anns:
        return None
    return {
        a: [
            (item, v, txt)
            for item, v, txt in s.execute(
                select(Label.item_id, Label.value_num, Label.value_text).where(
                    Label.annotator_id == anns[a], Label.dimension == dimension
                )
            )
        ]
        for a in secondaries
        if a in anns
    }


def save_allocation(
    s: Session,
    *,
    name: str,
    dataset: Dataset,
    design: str,
    coverage: float,
    seed: int,
    params: Mapping[str, Any],
    assignments: Mapping[str, Sequence[int]],
) -> Allocation:
    """Store an allocation and its items (annotator → item ids, in the order to label them)."""
    alloc = Allocation(
        name=name,
        dataset_id=dataset.id,
        design=design,
        coverage=coverage,
        seed=seed,
        params=dict(params),
    )
    s.add(alloc)
    s.flush()
    rows: list[dict[str, Any]] = [
        {"allocation_id": alloc.id, "annotator": a, "item_id": item, "position": pos}
        for a, items in assignments.items()
        for pos, item in enumerate(items)
    ]
    for i in range(0, len(rows), 5000):
        s.execute(insert(AllocationItem), rows[i : i + 5000])
    s.flush()
    return alloc


def allocation_lists(s: Session, alloc: Allocation) -> dict[str, list[int]]:
    """Annotator → item ids of a stored allocation, in the order to label them."""
    lists: dict[str, list[int]] = defaultdict(list)
    for ann, item in s.execute(
        select(AllocationItem.annotator, AllocationItem.item_id)
        .where(AllocationItem.allocation_id == alloc.id)
        .order_by(AllocationItem.id)
    ):
        lists[ann].append(item)
    return dict(lists)


def item_rows(
    s: Session, ids: Sequence[int]
) -> dict[int, tuple[str, str | None, str | None, str | None, str | None]]:
    """Item id → (external id, group, system, input, output), what an assignment file shows."""
    if not ids:
        return {}
    return {
        i: (ext, g, sys_, inp, outp)
        for i, ext, g, sys_, inp, outp in s.execute(
            select(Item.id, Item.external_id, Item.group_key, Item.system, Item.input, Item.output).where(
                Item.id.in_(ids)
            )
        )
    }


# ---------------------------------------------------------------- loading a panel


def load_panel(
    engine: Engine,
    dataset: str | None,
    judges: Sequence[str] | None = None,
    *,
    dimension: str | None = None,
    label_map: Mapping[str, str] | None = None,
    campaign: str | None = None,
    condition: str | None = None,
    score_source: str = "argmax",
) -> Panel:
    """The panel to validate: a campaign's own judges when ``campaign`` is given (``dataset``
    then only checks that it is the campaign's), else the imported llm annotators of ``dataset``."""
    with session_scope(engine) as s:
        if campaign is not None:
            return read_campaign_panel(
                s,
                campaign,
                judges,
                dataset=dataset,
                dimension=dimension,
                condition=condition,
                label_map=label_map,
                score_source=score_source,
            )
        if dataset is None:
            raise BadInput("give --dataset (imported judges) or --campaign (the campaign's judges)")
        if condition is not None:
            raise BadInput("--condition selects a pointwise campaign's condition; give --campaign too")
        return read_panel(s, dataset, judges, dimension=dimension, label_map=label_map)
