"""What judge validation reads from the store and what re-annotation planning writes to it.

- :func:`read_panel`: a dataset's humans × units label matrix and its judges' labels, for
  ``metrics.validation``. A judge is named by an annotator of kind ``llm`` in the dataset (an
  external judge whose verdicts were imported, e.g. by ``data import-alttest``); see
  :func:`_judge_labels` for where campaign judges would plug in.
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
from typing import Any

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
from judgepanel.store.engine import session_scope
from judgepanel.store.models import Allocation, AllocationItem, Annotator, Dataset, Item, Label
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
    """The labels of one judge. Today a judge is an annotator of kind ``llm`` in the dataset.

    A campaign judge plugs in here: a name such as ``campaign:NAME:PROVIDER:MODEL`` would select
    that campaign's parsed pointwise verdicts (``verdict.score`` / ``value_canonical`` joined to
    ``job.item_id``) in the same (item id, name, number, text) shape; nothing downstream changes."""
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
    used = {r[0] for r in human_rows} | {r[0] for r in judge_rows}
    items = [
        (i, ext, g)
        for i, ext, g in s.execute(
            select(Item.id, Item.external_id, Item.group_key)
            .where(Item.dataset_id == ds.id)
            .order_by(Item.position)
        )
        if i in used
    ]
    row_of = {i: r for r, (i, _, _) in enumerate(items)}

    rows = human_rows + judge_rows
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
        humans=humans,
        judges=list(judges),
        texts=texts,
        human_codes=hc,
        judge_codes=jc,
        human_values=hv if numeric else None,
        judge_values=jv if numeric else None,
        label_map=mapping,
    )


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


def load_panel(
    engine: Engine,
    dataset: str,
    judges: Sequence[str] | None = None,
    *,
    dimension: str | None = None,
    label_map: Mapping[str, str] | None = None,
) -> Panel:
    with session_scope(engine) as s:
        return read_panel(s, dataset, judges, dimension=dimension, label_map=label_map)


def alt_test_dataset(
    engine: Engine,
    dataset: str,
    judge: str,
    *,
    epsilon: float,
    scorer: str = "accuracy",
    q: float = 0.05,
    min_instances: int = 30,
    min_humans: int = 2,
    dimension: str | None = None,
    label_map: Mapping[str, str] | None = None,
) -> AltTestResult:
    """The alternative annotator test of one judge against the dataset's humans."""
    _check_scorer(scorer)
    panel = load_panel(engine, dataset, [judge], dimension=dimension, label_map=label_map)
    h, j = panel.matrices(scorer)
    return alt_test(
        h,
        j[:, 0],
        epsilon=epsilon,
        scorer=panel.scorer(scorer),
        q=q,
        min_instances=min_instances,
        min_humans=min_humans,
        names=panel.humans,
    )


def loo_dataset(
    engine: Engine,
    dataset: str,
    judge: str,
    *,
    epsilon: float = 0.05,
    agreement: str = "observed",
    level: str = "nominal",
    dimension: str | None = None,
    label_map: Mapping[str, str] | None = None,
) -> LooResult:
    """The leave-one-annotator-out rule for one judge; interval/ordinal/ratio levels (α) read the
    numeric labels, nominal ones compare label texts."""
    panel = load_panel(engine, dataset, [judge], dimension=dimension, label_map=label_map)
    cats = panel.categories(level)
    h, j = panel.agreement_matrices()
    return loo_rule(
        h, j[:, 0], epsilon=epsilon, agreement=agreement, level=level, categories=cats, names=panel.humans
    )


def rank_dataset(
    engine: Engine,
    dataset: str,
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
) -> Ranking:
    """Rank the named judges (default: every llm annotator of the dataset) with bootstrap stability."""
    _check_scorer(scorer)
    panel = load_panel(engine, dataset, judges, dimension=dimension, label_map=label_map)
    h, j = panel.matrices(scorer)
    return rank_judges(
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
