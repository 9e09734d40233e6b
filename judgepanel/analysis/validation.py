"""Judge validation: read a panel from the store, run the statistics of `metrics.validation`
and `metrics.design`, and shape the result (the use cases behind `validate alt-test / loo / rank`
and `plan overlap --dataset`).

The store part (`store.validation`) reads the panel: a dataset's humans and its imported judges,
or a campaign's own judges; this module chooses the scorer, calls the pure statistics and names
what the result was computed on (`Validated.source`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import Engine

from judgepanel.errors import BadInput
from judgepanel.metrics.design import OverlapPlan, pilot_inputs, plan_overlap
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
from judgepanel.store.validation import Panel, load_panel


def scorer_of(panel: Panel, name: str) -> Scorer:
    """The scorer `name` over the panel's label texts (neg-rmse needs numeric labels)."""
    if name == "neg-rmse":
        panel.require_numeric(name)
    return make_scorer(name, panel.texts)


def _check_scorer(scorer: str) -> None:
    if scorer not in SCORERS:
        raise BadInput(f"unknown scorer {scorer!r}; use one of {', '.join(SCORERS)}")


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
    panel = load_panel(engine, dataset, judges, dimension=dimension)
    h, j = panel.matrices(scorer)
    sc = scorer_of(panel, scorer)
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
    # the name shown per judge (issue 19 §3): a campaign judge's short name (`NAME=SPEC` or
    # derived), an imported judge's annotator name; `specs` the full spec (None: imported)
    names: tuple[str, ...] = ()
    specs: tuple[str | None, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        out = {**self.source, **self.result.as_dict()}
        if isinstance(self.result, Ranking):  # keyed by name (`rank_dataset`), the spec inside
            spec_of = dict(zip(self.names, self.specs, strict=True))
            out["judges"] = {n: {**j, "spec": spec_of.get(n)} for n, j in out["judges"].items()}
        return out


def _names(engine: Engine, panel: Panel) -> tuple[tuple[str, ...], tuple[str | None, ...]]:
    """(names, specs) of the panel's judges: for a campaign's judges their short names and specs,
    for imported judges their annotator names and no spec."""
    if panel.campaign is None:
        return tuple(panel.judges), tuple(None for _ in panel.judges)
    from judgepanel.store.campaigns import campaign_judge_names

    shown = campaign_judge_names(engine, panel.campaign)
    return tuple(shown.get(j, j) for j in panel.judges), tuple(panel.judges)


def _source(engine: Engine, panel: Panel) -> dict[str, Any]:
    out: dict[str, Any] = {
        "dataset": panel.dataset,
        "campaign": panel.campaign,
        "dimension": panel.dimension,
        "condition": panel.condition,
        "unit": panel.unit,
        "score_source": panel.score_source,
    }
    if panel.campaign is not None and panel.score_source == "expectation":
        # a continuous scorer reads a logprob judge's expectation; where it was withheld the
        # argmax stands: how often, per judge (issue 30 §4; `runner.logprob_scores`)
        from judgepanel.runner.logprob_scores import logprob_withheld

        names, _ = _names(engine, panel)
        shown = dict(zip(panel.judges, names, strict=True))
        found = logprob_withheld(
            engine, panel.campaign, judges=panel.judges, dimension=panel.dimension, condition=panel.condition
        )
        out["logprob_withheld"] = {shown.get(j, j): c.as_dict() for j, c in found.items()} or None
    return out


def score_source_of(scorer: str) -> str:
    """Which score of a logprob-scored judge a scorer reads: RMSE the expectation, accuracy the argmax."""
    return "expectation" if scorer == "neg-rmse" else "argmax"


def _panel(
    engine: Engine,
    dataset: str | None,
    judges: Sequence[str] | None,
    scorer: str,
    dimension: str | None,
    label_map: Mapping[str, str] | None,
    campaign: str | None,
    condition: str | None,
) -> Panel:
    """The panel a validation reads (`load_panel`), with the score of a logprob-scored judge that
    `scorer` reads (checked first)."""
    _check_scorer(scorer)
    return load_panel(
        engine,
        dataset,
        judges,
        dimension=dimension,
        label_map=label_map,
        campaign=campaign,
        condition=condition,
        score_source=score_source_of(scorer),
    )


# A deliberate mirror (issue 31 §4): `alt_test_dataset`, `loo_dataset` and `rank_dataset` take the
# same panel keywords (dimension, label_map, campaign, condition), as `validate`'s commands do.
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
    panel = _panel(engine, dataset, [judge], scorer, dimension, label_map, campaign, condition)
    h, j = panel.matrices(scorer)
    res = alt_test(
        h,
        j[:, 0],
        epsilon=epsilon,
        scorer=scorer_of(panel, scorer),
        q=q,
        min_instances=min_instances,
        min_humans=min_humans,
        names=panel.humans,
    )
    return Validated(_source(engine, panel), tuple(panel.judges), res, *_names(engine, panel))


# A deliberate mirror (issue 31 §4): `alt_test_dataset`, `loo_dataset` and `rank_dataset` take the
# same panel keywords (dimension, label_map, campaign, condition), as `validate`'s commands do.
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
    # the rule compares labels: a logprob-scored judge's argmax, the score "accuracy" reads
    panel = _panel(engine, dataset, [judge], "accuracy", dimension, label_map, campaign, condition)
    cats = panel.categories(level)
    h, j = panel.agreement_matrices()
    res = loo_rule(
        h, j[:, 0], epsilon=epsilon, agreement=agreement, level=level, categories=cats, names=panel.humans
    )
    return Validated(_source(engine, panel), tuple(panel.judges), res, *_names(engine, panel))


# A deliberate mirror (issue 31 §4): `alt_test_dataset`, `loo_dataset` and `rank_dataset` take the
# same panel keywords (dimension, label_map, campaign, condition), as `validate`'s commands do.
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
    panel = _panel(engine, dataset, judges, scorer, dimension, label_map, campaign, condition)
    h, j = panel.matrices(scorer)
    names, specs = _names(engine, panel)
    ranking = rank_judges(
        h,
        j,
        judge_names=list(names),
        by=by,
        scorer=scorer_of(panel, scorer),
        epsilon=epsilon,
        q=q,
        min_instances=min_instances,
        min_humans=min_humans,
        n_boot=n_boot,
        seed=seed,
        human_names=panel.humans,
    )
    return Validated(_source(engine, panel), tuple(panel.judges), ranking, names, specs)
