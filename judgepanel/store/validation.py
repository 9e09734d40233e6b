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
- :func:`estimate_overlap_plan`: σ0, μ_d and Δ_min from stored labels (a pilot), then the planner.
- :func:`create_allocation`: a seeded allocation of the items to secondary annotators, recorded in
  ``allocation`` / ``allocation_item`` and written as one CSV per annotator.
"""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Engine, delete, insert, select
from sqlalchemy.orm import Session

from judgepanel.errors import BadInput, NotFound
from judgepanel.metrics.design import DESIGNS, OverlapPlan, allocate, pilot_inputs, plan_overlap
from judgepanel.metrics.validation import (
    SCORERS,
    AltTestResult,
    LooResult,
    Ranking,
    Scorer,
    alt_test,
    loo_differences,
    loo_rule,
    make_scorer,
    rank_judges,
)
from judgepanel.protocol.pairs import as_label, combine_orders, to_canonical
from judgepanel.providers.spec import parse_spec
from judgepanel.store.campaigns import campaign_by_name
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

    def scorer(self, name: str) -> Scorer:
        if name == "neg-rmse" and not self.numeric:
            example = next((t for t in self.texts if _number(t) is None), self.texts[0])
            raise BadInput(
                f"neg-rmse needs numeric labels; {self.dataset} has text labels such as {example!r}"
            )
        return make_scorer(name, self.texts)

    def matrices(self, scorer: str) -> tuple[FloatArray, FloatArray]:
        """(humans, judges) as the scorer reads them: values for neg-rmse, codes otherwise."""
        if scorer == "neg-rmse":
            self.scorer(scorer)
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


def _check_scorer(scorer: str) -> None:
    if scorer not in SCORERS:
        raise BadInput(f"unknown scorer {scorer!r}; use one of {', '.join(SCORERS)}")


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
    out: dict[str, int] = {}
    for spec in wanted:
        name = spec if spec in own else parse_spec(spec).name
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
    docstring). Only verdicts of done jobs that parsed, first sample (repeat 0). A pointwise
    judge's label is its argmax verdict, or with `score_source="expectation"` its stored score
    (the expectation of a `scoring=logprobs` judge, the argmax of any other)."""
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
        select(Judge.name, Job.item_id, Job.pair_id, Job.order, Verdict.value_presented, Verdict.score)
        .join(Judge, Judge.id == Job.judge_id)
        .join(Verdict, Verdict.job_id == Job.id)
        .where(
            Job.campaign_id == c.id,
            Job.status == "done",
            Job.repeat == 0,
            Verdict.parse_status == "ok",
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
        for name, item, _pid, _order, shown, score in s.execute(done):
            value = score if score_source == "expectation" else _number(shown or "")
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
        for name, _item, pid, order, shown, _score in s.execute(done):
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


def parse_label_map(pairs: Sequence[str]) -> dict[str, str]:
    """``FROM=TO`` options into a mapping of label texts."""
    out: dict[str, str] = {}
    for p in pairs:
        src, sep, dst = p.partition("=")
        if not sep or not src or not dst:
            raise BadInput(f"--map takes FROM=TO, got {p!r}")
        out[src] = dst
    return out


# ---------------------------------------------------------------- planning from a pilot


def estimate_overlap_plan(
    engine: Engine,
    dataset: str,
    judges: Sequence[str],
    *,
    epsilon: float,
    scorer: str = "accuracy",
    alpha: float = 0.05,
    coverage: float | None = None,
    n_items: int | None = None,
    dimension: str | None = None,
) -> OverlapPlan:
    """σ0 (pooled SD of per-item advantages), μ_d per judge and Δ_min (smallest gap between judges'
    mean advantage) from the stored labels, then :func:`metrics.design.plan_overlap`."""
    _check_scorer(scorer)
    if not judges:
        raise BadInput("name at least one --judge to estimate from")
    with session_scope(engine) as s:
        panel = read_panel(s, dataset, judges, dimension=dimension)
    h, j = panel.matrices(scorer)
    sc = panel.scorer(scorer)
    diffs = {name: loo_differences(h, j[:, c], sc) for c, name in enumerate(panel.judges)}
    sigma0, means, delta = pilot_inputs(diffs)
    return plan_overlap(
        sigma0=sigma0,
        mu_d=means,
        epsilon=epsilon,
        delta_min=delta,
        n_judges=len(judges),
        alpha=alpha,
        n_items=n_items if n_items is not None else len(panel.units),
        coverage=coverage,
        source=f"estimated from {dataset} ({scorer})",
    )


# ---------------------------------------------------------------- allocation


@dataclass(frozen=True)
class AllocationSummary:
    name: str
    dataset: str
    design: str
    coverage: float
    seed: int
    primary: str
    n_items: int
    items_per_annotator: int
    assigned: dict[str, int]
    overlaps: dict[str, dict[str, int]]
    files: list[str]
    unchanged: bool

    def as_dict(self) -> dict[str, Any]:
        n = self.n_items
        return {
            "name": self.name,
            "dataset": self.dataset,
            "design": self.design,
            "seed": self.seed,
            "primary": self.primary,
            "n_items": n,
            "items_per_annotator": self.items_per_annotator,
            "coverage": {a: k / n for a, k in self.assigned.items()},
            "assigned": self.assigned,
            "overlaps": self.overlaps,
            "with_primary": dict(self.assigned),
            "expected_overlap": {"secondary_pair": self.coverage**2 * n, "with_primary": self.coverage * n},
            "files": self.files,
            "unchanged": self.unchanged,
        }


_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _file_names(annotators: Sequence[str]) -> dict[str, str]:
    names = {a: (_SAFE.sub("_", a).strip("._") or "annotator") + ".csv" for a in annotators}
    if len(set(names.values())) != len(names):
        raise BadInput("two annotator names map to the same file name; rename one")
    return names


def _write_csvs(s: Session, out_dir: Path, lists: dict[str, list[int]], files: dict[str, str]) -> list[str]:
    ids = [i for items in lists.values() for i in items]
    info = (
        {
            i: (ext, g, sys_, inp, outp)
            for i, ext, g, sys_, inp, outp in s.execute(
                select(Item.id, Item.external_id, Item.group_key, Item.system, Item.input, Item.output).where(
                    Item.id.in_(ids)
                )
            )
        }
        if ids
        else {}
    )
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for ann, items in lists.items():
            path = out_dir / files[ann]
            with path.open("w", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                w.writerow(["position", "item_id", "group", "system", "input", "output"])
                for pos, i in enumerate(items, start=1):
                    w.writerow([pos, *info[i]])
            written.append(str(path))
    except OSError as exc:
        raise BadInput(f"cannot write assignment files to {out_dir}: {exc.strerror or exc}") from exc
    return written


def _summary(s: Session, alloc: Allocation, ds: Dataset, out_dir: Path, unchanged: bool) -> AllocationSummary:
    lists: dict[str, list[int]] = defaultdict(list)
    for ann, item in s.execute(
        select(AllocationItem.annotator, AllocationItem.item_id)
        .where(AllocationItem.allocation_id == alloc.id)
        .order_by(AllocationItem.id)
    ):
        lists[ann].append(item)
    annotators: list[str] = list(alloc.params["annotators"])
    for a in annotators:
        lists.setdefault(a, [])
    sets = {a: set(lists[a]) for a in annotators}
    overlaps = {a: {b: len(sets[a] & sets[b]) for b in annotators if b != a} for a in annotators}
    files = _write_csvs(s, out_dir, {a: lists[a] for a in annotators}, _file_names(annotators))
    return AllocationSummary(
        name=alloc.name,
        dataset=ds.name,
        design=alloc.design,
        coverage=alloc.coverage,
        seed=alloc.seed,
        primary=alloc.params["primary"],
        n_items=int(alloc.params["n_items"]),
        items_per_annotator=int(alloc.params["items_per_annotator"]),
        assigned={a: len(lists[a]) for a in annotators},
        overlaps=overlaps,
        files=files,
        unchanged=unchanged,
    )


def create_allocation(
    engine: Engine,
    *,
    dataset: str,
    name: str,
    primary: str,
    annotators: Sequence[str],
    coverage: float,
    design: str,
    seed: int,
    out_dir: Path,
    dimension: str | None = None,
    replace: bool = False,
) -> AllocationSummary:
    """Allocate the items the primary annotator labelled to ``annotators`` (see
    ``metrics.design``), store the assignment under ``name`` and write ``out_dir/<annotator>.csv``.
    The same name with the same parameters changes nothing (the files are written again).
    Files are written inside the transaction, so a failure to write them stores nothing."""
    with session_scope(engine) as s:
        return _create_allocation(
            s,
            dataset=dataset,
            name=name,
            primary=primary,
            annotators=annotators,
            coverage=coverage,
            design=design,
            seed=seed,
            out_dir=out_dir,
            dimension=dimension,
            replace=replace,
        )


def _create_allocation(
    s: Session,
    *,
    dataset: str,
    name: str,
    primary: str,
    annotators: Sequence[str],
    coverage: float,
    design: str,
    seed: int,
    out_dir: Path,
    dimension: str | None,
    replace: bool,
) -> AllocationSummary:
    if design not in DESIGNS:
        raise BadInput(f"unknown design {design!r}; use one of {', '.join(DESIGNS)}")
    if not name.strip():
        raise BadInput("an allocation name must not be empty")
    secondaries = [a.strip() for a in annotators]
    if not secondaries or any(not a for a in secondaries):
        raise BadInput("--annotators takes a comma-separated list of names")
    if len(set(secondaries)) != len(secondaries):
        raise BadInput("an annotator is named twice in --annotators")
    if primary in secondaries:
        raise BadInput(f"the primary annotator {primary!r} cannot also be a secondary")
    if not 0.0 < coverage <= 1.0:
        raise BadInput(f"coverage must be in (0, 1], got {coverage}")
    _file_names(secondaries)
    ds = dataset_by_name(s, dataset)
    dim = resolve_dimension(s, ds, dimension)
    params = {
        "primary": primary,
        "annotators": secondaries,
        "dimension": dim,
    }
    prev = s.scalar(select(Allocation).where(Allocation.name == name))
    if prev is not None:
        same = (prev.dataset_id, prev.design, prev.coverage, prev.seed) == (
            ds.id,
            design,
            coverage,
            seed,
        ) and all(prev.params.get(k) == v for k, v in params.items())
        if same:
            return _summary(s, prev, ds, out_dir, unchanged=True)
        if not replace:
            raise BadInput(
                f"allocation {name!r} exists with other parameters; pass --replace or choose another name"
            )
        s.execute(delete(Allocation).where(Allocation.id == prev.id))
        s.flush()

    ann = s.scalar(select(Annotator).where(Annotator.dataset_id == ds.id, Annotator.name == primary))
    if ann is None:
        raise NotFound(f"no annotator {primary!r} in dataset {dataset!r} to serve as primary")
    labels = s.execute(
        select(Label.item_id, Label.value_num, Label.value_text)
        .join(Item, Label.item_id == Item.id)
        .where(Label.annotator_id == ann.id, Label.dimension == dim)
        .order_by(Item.position)
    ).all()
    if not labels:
        raise BadInput(f"annotator {primary!r} has no labels on dimension {dim!r} of {dataset!r}")
    item_ids = [i for i, _, _ in labels]
    values = [_label_key(v, t) for _, v, t in labels]
    # strata in a stable order: numbers by value, texts alphabetically
    numeric = all(v is not None for _, v, _ in labels)
    distinct = sorted(set(values), key=(lambda x: float(x)) if numeric else None)
    code = {v: c for c, v in enumerate(distinct)}
    strata = np.array([code[v] for v in values], dtype=np.int64)
    revealed = _revealed(s, ds, dim, secondaries, item_ids, code)
    result = allocate(strata, len(secondaries), coverage, design, seed, revealed=revealed)
    alloc = Allocation(
        name=name,
        dataset_id=ds.id,
        design=design,
        coverage=coverage,
        seed=seed,
        params={**params, "n_items": len(item_ids), "items_per_annotator": result.items_per_annotator},
    )
    s.add(alloc)
    s.flush()
    rows: list[dict[str, Any]] = []
    for t, a in enumerate(secondaries):
        chosen = [int(i) for i in result.order[t] if result.assigned[t, i]]
        rows.extend(
            {"allocation_id": alloc.id, "annotator": a, "item_id": item_ids[i], "position": pos}
            for pos, i in enumerate(chosen)
        )
    for i in range(0, len(rows), 5000):
        s.execute(insert(AllocationItem), rows[i : i + 5000])
    s.flush()
    return _summary(s, alloc, ds, out_dir, unchanged=False)


def _label_key(num: float | None, text: str | None) -> str:
    """Numbers by value ("2" and "2.0" are one stratum), other labels by their text."""
    return f"{num:.15g}" if num is not None else str(text)


def _revealed(
    s: Session,
    ds: Dataset,
    dimension: str,
    secondaries: Sequence[str],
    item_ids: Sequence[int],
    code: dict[str, int],
) -> NDArray[np.int64] | None:
    """Labels the secondaries already gave (if they are annotators of the dataset), as codes in the
    primary's code space (new values get new codes); −1 where unknown. Seq-Refined reads them."""
    anns = dict(
        s.execute(
            select(Annotator.name, Annotator.id).where(
                Annotator.dataset_id == ds.id, Annotator.name.in_(secondaries)
            )
        ).all()
    )
    if not anns:
        return None
    pos = {i: r for r, i in enumerate(item_ids)}
    out = np.full((len(item_ids), len(secondaries)), -1, dtype=np.int64)
    for t, a in enumerate(secondaries):
        if a not in anns:
            continue
        for item, v, txt in s.execute(
            select(Label.item_id, Label.value_num, Label.value_text).where(
                Label.annotator_id == anns[a], Label.dimension == dimension
            )
        ):
            if item in pos:
                key = _label_key(v, txt)
                out[pos[item], t] = code.setdefault(key, len(code))
    return out


# ---------------------------------------------------------------- the validation commands

R = TypeVar("R", AltTestResult, LooResult, Ranking)


@dataclass(frozen=True)
class Validated(Generic[R]):
    """A validation result with what it was computed on: ``source`` names the dataset, dimension,
    campaign and condition read (campaign and condition None for imported judges) and the unit
    (item or pair); ``judges`` are the judges' stored names (a campaign judge's canonical spec)."""

    source: dict[str, Any]
    judges: tuple[str, ...]
    result: R

    def as_dict(self) -> dict[str, Any]:
        return {**self.source, **self.result.as_dict()}


def _source(panel: Panel) -> dict[str, Any]:
    return {
        "dataset": panel.dataset,
        "campaign": panel.campaign,
        "dimension": panel.dimension,
        "condition": panel.condition,
        "unit": panel.unit,
        "score_source": panel.score_source,
    }


def score_source_of(scorer: str) -> str:
    """Which score of a logprob-scored judge a scorer reads: RMSE the expectation, accuracy the argmax."""
    return "expectation" if scorer == "neg-rmse" else "argmax"


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


def alt_test_dataset(
    engine: Engine,
    dataset: str | None,
    judge: str,
    *,
    epsilon: float,
    scorer: str = "accuracy",
    q: float = 0.05,
    min_instances: int = 30,
    min_humans: int = 2,
    dimension: str | None = None,
    label_map: Mapping[str, str] | None = None,
    campaign: str | None = None,
    condition: str | None = None,
) -> Validated[AltTestResult]:
    """The alternative annotator test of one judge against the dataset's humans."""
    _check_scorer(scorer)
    panel = load_panel(
        engine,
        dataset,
        [judge],
        dimension=dimension,
        label_map=label_map,
        campaign=campaign,
        condition=condition,
        score_source=score_source_of(scorer),
    )
    h, j = panel.matrices(scorer)
    res = alt_test(
        h,
        j[:, 0],
        epsilon=epsilon,
        scorer=panel.scorer(scorer),
        q=q,
        min_instances=min_instances,
        min_humans=min_humans,
        names=panel.humans,
    )
    return Validated(_source(panel), tuple(panel.judges), res)


def loo_dataset(
    engine: Engine,
    dataset: str | None,
    judge: str,
    *,
    epsilon: float = 0.05,
    agreement: str = "observed",
    level: str = "nominal",
    dimension: str | None = None,
    label_map: Mapping[str, str] | None = None,
    campaign: str | None = None,
    condition: str | None = None,
) -> Validated[LooResult]:
    """The leave-one-annotator-out rule for one judge; interval/ordinal/ratio levels (α) read the
    numeric labels, nominal ones compare label texts."""
    panel = load_panel(
        engine,
        dataset,
        [judge],
        dimension=dimension,
        label_map=label_map,
        campaign=campaign,
        condition=condition,
    )
    cats = panel.categories(level)
    h, j = panel.agreement_matrices()
    res = loo_rule(
        h, j[:, 0], epsilon=epsilon, agreement=agreement, level=level, categories=cats, names=panel.humans
    )
    return Validated(_source(panel), tuple(panel.judges), res)


def rank_dataset(
    engine: Engine,
    dataset: str | None,
    judges: Sequence[str] | None,
    *,
    by: str = "rho",
    scorer: str = "accuracy",
    epsilon: float = 0.1,
    q: float = 0.05,
    min_instances: int = 30,
    min_humans: int = 2,
    n_boot: int = 1000,
    seed: int = 0,
    dimension: str | None = None,
    label_map: Mapping[str, str] | None = None,
    campaign: str | None = None,
    condition: str | None = None,
) -> Validated[Ranking]:
    """Rank the named judges (default: every llm annotator of the dataset) with bootstrap stability."""
    _check_scorer(scorer)
    panel = load_panel(
        engine,
        dataset,
        judges,
        dimension=dimension,
        label_map=label_map,
        campaign=campaign,
        condition=condition,
        score_source=score_source_of(scorer),
    )
    h, j = panel.matrices(scorer)
    ranking = rank_judges(
        h,
        j,
        judge_names=panel.judges,
        by=by,
        scorer=panel.scorer(scorer),
        epsilon=epsilon,
        q=q,
        min_instances=min_instances,
        min_humans=min_humans,
        n_boot=n_boot,
        seed=seed,
        human_names=panel.humans,
    )
    return Validated(_source(panel), tuple(panel.judges), ranking)
