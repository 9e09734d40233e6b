"""What the alignment steps and the comparison share: the inputs, the step context, running a
campaign to the end, and reading a pointwise campaign's scores against the human reference."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from sqlalchemy import Engine

from judgepanel.align.choose import DevItem
from judgepanel.analysis.conditions import ConditionData, load_condition_data
from judgepanel.errors import BadInput
from judgepanel.metrics.conditions import STATISTICS, item_tables, table_statistics
from judgepanel.providers.spec import editor_spec, panel_names, parse_spec, split_judge_name
from judgepanel.runner.study import StudyIncomplete, StudyKind, check_sampling
from judgepanel.store.align import AlignmentRecord

METHODS = ("fewshot", "instructions", "grid")


def judge_names(judges: list[str]) -> dict[str, str]:
    """canonical spec -> the short name every table and JSON shows (given `NAME=SPEC`, else
    derived, as campaigns name their judges)."""
    split = [split_judge_name(j) for j in judges]
    specs = [parse_spec(s).name for _n, s in split]
    return dict(zip(specs, panel_names(specs, [n for n, _s in split]), strict=True))


def spec_name(judge: str) -> str:
    """The canonical name of a judge given as SPEC or NAME=SPEC (as campaigns store it)."""
    return parse_spec(split_judge_name(judge)[1]).name


class AlignIncomplete(StudyIncomplete):
    """A step's campaign did not finish (budget, interruption): run the same command to resume."""


@dataclass(frozen=True)
class AlignInputs:
    dataset: str
    judge: str
    human_group: str
    dev_split: str
    eval_split: str
    method: str
    dimension: str | None = None  # None: the one dimension the human group rated
    rubric: str | None = None  # the starting instructions: this rubric's dimension definition
    rounds: int = 3
    k: int = 4
    editor: str | None = None
    grid_judges: tuple[str, ...] = ()
    grid_instructions: tuple[str, ...] = ()  # instruction texts (the CLI reads them from files)
    limit: int | None = None
    seed: int = 0
    n_boot: int = 1000
    resample: str | None = None
    epsilon: float = 0.2
    margin: float = 0.05

    def validate(self) -> None:
        if self.method not in METHODS:
            raise BadInput(f"--method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if self.dev_split == self.eval_split:
            raise BadInput("--dev-split and --eval-split must differ: evaluation items never reach a choice")
        if self.k < 1:
            raise BadInput(f"--k must be at least 1, got {self.k}")
        if self.rounds < 1:
            raise BadInput(f"--rounds must be at least 1, got {self.rounds}")
        check_sampling(self.limit, self.n_boot, self.resample)
        if not 0 < self.epsilon < 1:
            raise BadInput(f"--epsilon must lie in (0, 1), got {self.epsilon}")
        if not self.margin > 0:
            raise BadInput(f"--margin must be positive, got {self.margin}")
        if self.method == "instructions" and not self.editor:
            raise BadInput(
                "--method instructions needs --editor SPEC (the model that revises the instructions)"
            )
        if self.method == "grid" and not (self.grid_judges or self.grid_instructions):
            raise BadInput(
                "--method grid needs at least one --grid-judge SPEC or --grid-instructions FILE "
                "beside the original judge"
            )
        for j in (self.judge, *self.grid_judges):
            spec_name(j)
        if self.editor:
            editor_spec(self.editor)
        for t in self.grid_instructions:
            if not t.strip():
                raise BadInput("--grid-instructions: an instructions file is empty")

    def as_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "judge": self.judge,
            "human_group": self.human_group,
            "dev_split": self.dev_split,
            "eval_split": self.eval_split,
            "method": self.method,
            "dimension": self.dimension,
            "rubric": self.rubric,
            "rounds": self.rounds,
            "k": self.k,
            "editor": self.editor,
            "grid_judges": list(self.grid_judges),
            "grid_instructions": list(self.grid_instructions),
            "limit": self.limit,
            "seed": self.seed,
            "n_boot": self.n_boot,
            "resample": self.resample,
            "epsilon": self.epsilon,
            "margin": self.margin,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AlignInputs:
        known = {f for f in cls.__dataclass_fields__}
        kw = {k: v for k, v in d.items() if k in known}
        kw["grid_judges"] = tuple(kw.get("grid_judges") or ())
        kw["grid_instructions"] = tuple(kw.get("grid_instructions") or ())
        return cls(**kw)


RECORDED = ("sample", "instructions0")


# A step runs its campaigns to the end (`run_campaign`): a pending job (budget, interruption) stops
# the step; failed judge jobs do not — the step's figures use the items every version answered
# (`answered`, `restrict`) and `align run` ends with exit 3 (`judge_failures`). With
# `align run --retry-failed` the context re-asks the failed calls of the campaigns this run's steps
# drive (unreadable, truncated, out of retries, refused).
ALIGNMENTS = StudyKind("alignment", "align", AlignIncomplete)
step_context = ALIGNMENTS.context


def inputs_of(rec: AlignmentRecord) -> AlignInputs:
    return AlignInputs.from_dict(rec.inputs)


def sample_items(rec: AlignmentRecord, label: str) -> tuple[str, ...]:
    return tuple(rec.inputs["sample"][label]["items"])


def split_data(engine: Engine, rec: AlignmentRecord, camp: str) -> ConditionData:
    inp = inputs_of(rec)
    return load_condition_data(engine, camp, inp.human_group, dimension=inp.dimension)


def answered(data: ConditionData) -> set[str]:
    """The items the campaign's judge gave a score (a failed job leaves its item out)."""
    (scores,) = data.rows.scores.values()
    return {data.rows.items[k] for k in scores}


def restrict(data: ConditionData, keep: set[str]) -> ConditionData:
    """`data` on the items in `keep` only, so that versions are compared on the same items."""
    rows = data.rows
    idx = [k for k, e in enumerate(rows.items) if e in keep]
    new = {old: n for n, old in enumerate(idx)}
    return ConditionData(
        replace(
            rows,
            items=[rows.items[k] for k in idx],
            outputs=[rows.outputs[k] for k in idx],
            groups=[rows.groups[k] for k in idx],
            humans=[rows.humans[k] for k in idx],
            scores={c: {new[k]: v for k, v in by.items() if k in new} for c, by in rows.scores.items()},
        ),
        [data.reference[k] for k in idx],
    )


def on_common_items(datas: dict[str, ConditionData]) -> tuple[dict[str, ConditionData], int]:
    """Every data restricted to the items all of them answered, and how many items some version
    answered but not all (left out of every comparison)."""
    sets = [answered(d) for d in datas.values()]
    common = set.intersection(*sets) if sets else set()
    union = set.union(*sets) if sets else set()
    return {k: restrict(d, common) for k, d in datas.items()}, len(union - common)


def judge_failures(engine: Engine, rec: AlignmentRecord) -> dict[str, dict[str, int]]:
    """campaign -> {error class: failed jobs}, over the alignment's judge campaigns (the editor's
    failures stop the `align` step instead)."""
    from judgepanel.store.align import failed_jobs

    names = sorted({c for k, c in rec.campaigns.items() if c and not k.startswith("editor")})
    return failed_jobs(engine, names)


def failed_judge_jobs_message(rec: AlignmentRecord, failed: dict[str, dict[str, int]]) -> str:
    """What `align run` says (exit 3) when judge jobs of the alignment failed: how many, why, what
    the figures rest on, and what can still re-ask them."""
    by_class: dict[str, int] = {}
    for classes in failed.values():
        for cls, n in classes.items():
            by_class[cls] = by_class.get(cls, 0) + n
    total = sum(by_class.values())
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(by_class.items()))
    evals = {rec.campaigns["eval-original"], rec.campaigns["eval-aligned"]}
    in_eval = sum(sum(c.values()) for camp, c in failed.items() if camp in evals)
    decided = rec.steps["align"] == "done"
    in_choice = total - in_eval
    parts = [
        f"alignment {rec.name}: {total} judge job(s) failed ({kinds}); every comparison uses the items "
        "every version answered (`left_out` says how many were left out)"
    ]
    retry = f"`judgepanel align run {rec.name} --retry-failed`"
    if in_eval:
        parts.append(f"{retry} asks the {in_eval} evaluation job(s) again and recomputes the comparison")
    if in_choice and not decided:
        parts.append(f"{retry} asks the {in_choice} development job(s) again before the choice")
    elif in_choice:
        parts.append(
            f"the {in_choice} development job(s) fed a choice already made on the items every candidate "
            "answered; it stands (a new alignment asks them again)"
        )
    return "; ".join(parts) + " (exit 3)"


def dev_items(data: ConditionData) -> list[DevItem]:
    (scores,) = data.rows.scores.values()
    return [DevItem(data.rows.items[i], s.score, data.reference[i]) for i, s in sorted(scores.items())]


def agreement_of(data: ConditionData) -> dict[str, float | None]:
    """Exact, κ, QWK and Spearman of the campaign's judge against the human reference."""
    comparisons = data.comparisons()
    (c,) = comparisons.values()
    cats = np.asarray(data.rows.categories)
    stats = table_statistics(item_tables(c, cats, len(data.rows.items)).sum(axis=0, keepdims=True), cats)
    out: dict[str, float | None] = {}
    for s in STATISTICS:
        v = float(stats[s][0])
        out[s] = v if np.isfinite(v) else None
    out["items"] = float(c.judge.size)
    return out


need_steps = ALIGNMENTS.need


def is_simulated(engine: Engine, rec: AlignmentRecord) -> bool:
    """Whether the alignment rests on simulated answers: a `sim:` judge or editor in its inputs,
    or a simulated reply in any of its campaigns (the fake server)."""
    from judgepanel.store.simulated import simulated_campaigns

    inp = inputs_of(rec)
    specs = [inp.judge, *inp.grid_judges, *([inp.editor] if inp.editor else [])]
    if any(split_judge_name(s)[1].startswith("sim:") for s in specs):
        return True
    return any(simulated_campaigns(engine, sorted(set(rec.campaigns.values()))).values())
