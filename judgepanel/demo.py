"""`judgepanel demo`: the main job end to end on the embedded defaults, offline.

Each step is a plain library call, so the demo doubles as a worked example of the Python API.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine

from judgepanel.datasets.summeval import parse_summeval
from judgepanel.resources import sample_path
from judgepanel.store import migrate
from judgepanel.store.imports import import_parsed
from judgepanel.store.queries import create_pair_set, find_duplicates

DATASET = "summeval-sample"
PAIRS = "summeval-sample-pairs"


@dataclass
class DemoReport:
    steps: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    panel: list[dict[str, Any]] = field(default_factory=list)  # one row per simulated judge
    repair: dict[str, Any] | None = None  # the short repair iteration's comparison

    def add(self, title: str, result: dict[str, Any]) -> None:
        self.steps.append((title, result))


def run_demo(engine: Engine, say: Callable[[str], None] = lambda _m: None) -> DemoReport:
    report = DemoReport()
    migrate.upgrade(engine)
    say("database migrated")
    parsed = parse_summeval(
        sample_path("summeval_sample.jsonl.gz"), sample_path("summeval_articles_sample.jsonl.gz")
    )
    imported = import_parsed(engine, DATASET, parsed)
    report.add("import the bundled SummEval sample", imported.as_dict())
    say(
        f"imported {DATASET}: {len(parsed.items)} summaries of {len({i.group_key for i in parsed.items})} articles"
    )
    pairs = create_pair_set(engine, DATASET, PAIRS, seed=42, sample=200)
    report.add("sample within-article pairs", pairs.as_dict())
    say(f"pair set {PAIRS}: {pairs.sampled} of {pairs.pairs_total} pairs")
    dups = find_duplicates(engine, DATASET)
    report.add("duplicated annotation rows", dups.as_dict())
    run_panel(engine, report, say)
    run_repair(engine, report, say)
    return report


# ---------------------------------------------------------------- a simulated judge panel

PANEL = (
    "sim:judge-a?position_bias=0",
    "sim:judge-b?position_bias=0.15",
    "sim:judge-c?position_bias=0.35",
)
PAIRWISE = "demo-pairwise"
POINTWISE = "demo-pointwise"
PANEL_UNITS = 60
DIMENSION = "consistency"  # the simulated judge reads source support, a consistency proxy


def run_panel(engine: Engine, report: DemoReport, say: Callable[[str], None]) -> None:
    """Three simulated judges that differ only in how much they favour the second slot: a pairwise
    campaign asked in AB and BA order, and a pointwise one without and with the rubric; then each
    judge's position bias and its agreement with the expert annotators."""
    from judgepanel.providers.spec import parse_spec
    from judgepanel.rubrics import bundled_rubric
    from judgepanel.runner import RunOptions, create, run
    from judgepanel.runner.bias import campaign_bias
    from judgepanel.store.rubrics import add_rubric

    doc = bundled_rubric("summeval")
    rubric = (
        next((r for r in _versions(engine, "summeval") if r.content_hash == doc.content_hash), None)
        or add_rubric(engine, doc).rubric
    )
    create(
        engine, PAIRWISE, dataset=DATASET, protocol="pairwise", pairs=PAIRS, judges=PANEL, limit=PANEL_UNITS
    )
    create(
        engine,
        POINTWISE,
        dataset=DATASET,
        protocol="pointwise",
        judges=PANEL,
        rubric=rubric.ref,
        conditions=("none", "rubric"),
        dimensions=(DIMENSION,),
        limit=PANEL_UNITS,
    )
    for name in (PAIRWISE, POINTWISE):
        summary = run(engine, name, RunOptions(concurrency=16))
        report.add(f"run campaign {name} (simulated judges, offline)", summary.as_dict())
        say(
            f"campaign {name}: {summary.done}/{summary.jobs} jobs done, {summary.calls} calls, {summary.cached} cached"
        )
    names = [parse_spec(j).name for j in PANEL]
    bias = campaign_bias(engine, PAIRWISE)
    report.add("position bias (swapped AB/BA pairs, exact sign test)", {n: bias[n].as_dict() for n in names})
    agree = panel_agreement(engine, names)
    report.add("agreement with the experts", agree)
    for n in names:
        b = bias[n]
        report.panel.append(
            {
                "judge": n,
                "back_wins": b.back_wins,
                "front_wins": b.front_wins,
                "inconsistent": b.inconsistent,
                "p_value": b.p_value,
                "kappa_pairs": agree["pairs_kappa"][n],
                "spearman_none": agree["pointwise_spearman"][n]["none"],
                "spearman_rubric": agree["pointwise_spearman"][n]["rubric"],
            }
        )


def _versions(engine: Engine, name: str) -> list[Any]:
    """The stored versions of a rubric, oldest first (none if it is not stored): a second demo run
    reuses version 1 although the repair iteration has since added edited versions."""
    from judgepanel.errors import NotFound
    from judgepanel.store.rubrics import get_rubric, rubric_versions

    try:
        return [get_rubric(engine, f"{name}@{v}") for v in rubric_versions(engine, name)]
    except NotFound:
        return []


def panel_agreement(engine: Engine, judges: list[str]) -> dict[str, Any]:
    """Each judge against the three experts: Cohen κ with the experts' majority A/B/T label on the
    pairs (pairs without a majority left out), and Spearman's ρ with the experts' mean score."""
    import numpy as np

    from judgepanel.metrics.agreement import agreement
    from judgepanel.store.matrices import item_matrix, pair_matrix

    pm = pair_matrix(engine, PAIRS, with_judges=["all"])
    experts = pm.select(group="expert")
    exp_rows = {u: i for i, u in enumerate(experts.unit_ids)}
    majority = np.full(pm.n_units, np.nan)
    for i, u in enumerate(pm.unit_ids):
        if u in exp_rows:
            vals, counts = np.unique(
                experts.values[exp_rows[u]][~np.isnan(experts.values[exp_rows[u]])], return_counts=True
            )
            if counts.size and (counts == counts.max()).sum() == 1:
                majority[i] = vals[np.argmax(counts)]
    pairs_kappa = {}
    for n in judges:
        col = pm.values[:, pm.rater_names.index(f"{n}@{PAIRWISE}")]
        pairs_kappa[n] = agreement("cohen", np.column_stack([col, majority]), pm.categories).value
    im = item_matrix(engine, DATASET, DIMENSION, with_judges=["all"])
    expert_mean = np.nanmean(im.select(group="expert").values, axis=1)
    rows = {u: i for i, u in enumerate(im.select(group="expert").unit_ids)}
    mean_by_unit = np.array([expert_mean[rows[u]] if u in rows else np.nan for u in im.unit_ids])
    spearman: dict[str, dict[str, float]] = {}
    for n in judges:
        spearman[n] = {}
        for cond in ("none", "rubric"):
            col = im.values[:, im.rater_names.index(f"{n}@{POINTWISE}/{cond}")]
            spearman[n][cond] = agreement("spearman", np.column_stack([col, mean_by_unit])).value
    judged = pm.select(raters=[f"{n}@{PAIRWISE}" for n in judges])
    return {
        "pairs_kappa": pairs_kappa,
        "pairs_judges_alpha": agreement("alpha", judged.values, pm.categories, "nominal").value,
        "pointwise_spearman": spearman,
    }


# ---------------------------------------------------------------- one short rubric repair

REPAIR = "demo-repair"
REPAIR_DIMENSION = "coherence"
REPAIR_UNITS = 16
REPAIR_RUBRIC = "summeval@1"  # the bundled rubric as `run_panel` stored it


def run_repair(engine: Engine, report: DemoReport, say: Callable[[str], None]) -> None:
    """One repair iteration with the simulated panel and the simulated editor: the sample split by
    article into dev and eval halves, the coherence clauses the judges split on most rewritten, and
    the before/after comparison against a random-clause control (all simulated, see `judgepanel.simjudge`)."""
    from judgepanel.repair.iteration import RepairInputs, run_iteration
    from judgepanel.runner import RunOptions
    from judgepanel.store.splits import split_dataset

    split = split_dataset(engine, DATASET, {"dev": 0.5, "eval": 0.5}, seed=1, by_group=True)
    report.add("split the sample by article", split.as_dict())
    inputs = RepairInputs(
        DATASET,
        REPAIR_RUBRIC,
        PANEL,
        "sim:editor",
        "dev",
        "eval",
        (REPAIR_DIMENSION,),
        REPAIR_UNITS,
        control_seed=7,
        human_group="expert",
        n_boot=500,
    )
    rec = run_iteration(engine, REPAIR, inputs, RunOptions(concurrency=16), criterion="delta>=0.03,ci_low>0")
    say(f"repair iteration {REPAIR}: {', '.join(k for k, v in rec.steps.items() if v == 'done')} done")
    report.add("rubric repair iteration (simulated judges and editor)", rec.comparison or {})
    report.repair = rec.comparison
