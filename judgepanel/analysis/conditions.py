"""The rubric-condition study (`metrics conditions`): read a pointwise campaign's scores and a
human group's ratings (`store.conditions`), form the human reference, run
`metrics.conditions.condition_study` and pick the disagreement cases.

What is compared, per condition (`none`, `criteria`, `rubric`): one judge's accepted score on an
item (repeat 0) against the human reference on the same item and dimension — the group's mean
rounded half up (`metrics.conditions.rounded_mean`), or, with `per_human`, each human's own
rating. Every reference and score must lie on the campaign's scale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Engine

from judgepanel.errors import BadInput
from judgepanel.metrics.conditions import (
    STATISTICS,
    Comparisons,
    ConditionStudy,
    Estimate,
    condition_study,
    rounded_mean,
)
from judgepanel.metrics.group_ci import few_groups_warning
from judgepanel.store.conditions import ConditionRows, HumanRating, load_condition_rows
from judgepanel.store.identity import first_words, short_id


@dataclass(frozen=True)
class ConditionData:
    """Everything `metrics conditions` needs: the store's rows (`store.conditions.ConditionRows`,
    aligned on `rows.items`, index = position there) and each item's human reference."""

    rows: ConditionRows
    reference: list[float]  # per item: the rounded group mean

    def comparisons(self) -> dict[str, Comparisons]:
        out: dict[str, Comparisons] = {}
        rows = self.rows
        for cond, by_item in rows.scores.items():
            judge: list[float] = []
            human: list[float] = []
            item: list[int] = []
            for i, js in sorted(by_item.items()):
                refs = [h.value for h in rows.humans[i]] if rows.per_human else [self.reference[i]]
                judge += [js.score] * len(refs)
                human += refs
                item += [i] * len(refs)
            out[cond] = Comparisons.of(np.array(judge), np.array(human), np.array(item, dtype=np.intp))
        return out


def condition_data(rows: ConditionRows) -> ConditionData:
    """The rows with each item's human reference, every reference (or rating) and score checked
    against the scale."""
    reference = [rounded_mean([h.value for h in ratings]) for ratings in rows.humans]
    lo, hi = rows.categories[0], rows.categories[-1]
    allowed = set(rows.categories)
    for i, hs in enumerate(rows.humans):
        values = [h.value for h in hs] if rows.per_human else [reference[i]]
        bad = [v for v in values if v not in allowed]
        if bad:
            raise BadInput(
                f"item {rows.items[i]!r}: human rating {bad[0]:g} is not on the {lo:g}..{hi:g} scale of "
                f"{rows.dimension or 'the campaign'}"
            )
    for by_item in rows.scores.values():
        for js in by_item.values():
            if js.score not in allowed:
                raise BadInput(f"a {rows.judge} score {js.score:g} is not on the {lo:g}..{hi:g} scale")
    return ConditionData(rows, reference)


# A deliberate mirror (issue 31 §4): `analysis.conditions.load_condition_data` takes the keywords of
# `store.conditions.load_condition_rows`, which it reads through, so their signatures repeat.
def load_condition_data(
    engine: Engine,
    campaign: str,
    human_group: str,
    *,
    dimension: str | None = None,
    judge: str | None = None,
    per_human: bool = False,
) -> ConditionData:
    rows = load_condition_rows(
        engine, campaign, human_group, dimension=dimension, judge=judge, per_human=per_human
    )
    return condition_data(rows)


# ---------------------------------------------------------------- the report


@dataclass(frozen=True)
class DisagreementCase:
    condition: str
    item: str
    judge: float
    human: float  # the reference (rounded group mean)
    judge_rationale: str | None
    humans: tuple[HumanRating, ...]
    output: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "condition": self.condition,
            "item": self.item,
            # how a person recognises the item (`store.identity`): first words · short id
            "item_label": " · ".join(x for x in (first_words(self.output), short_id(self.item)) if x),
            "judge": self.judge,
            "human": self.human,
            "gap": self.judge - self.human,
            "judge_rationale": self.judge_rationale,
            "human_ratings": [
                {"annotator": h.annotator, "value": h.value, "rationale": h.rationale} for h in self.humans
            ],
            "output": None if self.output is None else self.output[:CASE_OUTPUT_CHARS],
        }


CASE_OUTPUT_CHARS = 300


def disagreement_cases(data: ConditionData, per_condition: int) -> list[DisagreementCase]:
    """Up to `per_condition` items per condition where the judge's score differs from the human
    reference, largest gap first, then dataset order (deterministic)."""
    out: list[DisagreementCase] = []
    if per_condition <= 0:
        return out
    for cond, by_item in data.rows.scores.items():
        differing = [(i, js) for i, js in by_item.items() if js.score != data.reference[i]]
        differing.sort(key=lambda t: (-abs(t[1].score - data.reference[t[0]]), t[0]))
        for i, js in differing[:per_condition]:
            out.append(
                DisagreementCase(
                    cond,
                    data.rows.items[i],
                    js.score,
                    data.reference[i],
                    js.rationale,
                    tuple(data.rows.humans[i]),
                    data.rows.outputs[i],
                )
            )
    return out


def _estimate(e: Estimate) -> dict[str, Any]:
    return {"value": e.value, "ci": list(e.ci), "ci_method": e.method}


@dataclass(frozen=True)
class ConditionReport:
    data: ConditionData
    study: ConditionStudy
    cases: list[DisagreementCase]

    def warnings(self) -> list[str]:
        """Few groups (issue 30 §1) and jobs that left no score (issue 34 §1), in words."""
        out: list[str] = []
        g = self.study.groups_in_data
        if any(x is not None for x in self.data.rows.groups):
            w = few_groups_warning(g, "groups (articles)")
            if w is not None:
                out.append(w)
        skipped = self.data.rows.skipped
        left = skipped.get("jobs_failed", 0) + skipped.get("jobs_not_done", 0)
        if left:
            out.append(
                f"{left} job(s) of this judge and dimension have no score "
                f"({skipped.get('jobs_failed', 0)} failed, {skipped.get('jobs_not_done', 0)} not done) "
                "and are left out of every figure"
            )
        return out

    def as_dict(self) -> dict[str, Any]:
        d, st = self.data.rows, self.study
        return {
            "campaign": d.campaign,
            "dataset": d.dataset,
            "dimension": d.dimension,
            "judge": d.judge,
            "human_group": d.group,
            "reference": "each human" if d.per_human else "rounded group mean",
            # a logprob-scored judge is compared on its argmax verdict (`store.conditions`)
            "score_source": "argmax",
            "scale": [d.categories[0], d.categories[-1]],
            "bootstrap": st.n_boot,
            "confidence": st.confidence,
            "seed": st.seed,
            "resample": st.resample,
            "n_groups": st.n_groups,
            "groups_in_data": st.groups_in_data,
            "warnings": self.warnings(),
            "conditions": {
                name: {
                    "n": r.n,
                    "items": r.items,
                    **{s: _estimate(getattr(r, s)) for s in STATISTICS},
                }
                for name, r in st.conditions.items()
            },
            "deltas": {
                key: {"items": r.items, **{s: _estimate(getattr(r, s)) for s in STATISTICS}}
                for key, r in st.deltas.items()
            },
            "cases": [c.as_dict() for c in self.cases],
            "skipped": d.skipped,
        }


# A deliberate mirror (issue 31 §4): `condition_report` takes the keywords of
# `load_condition_data`, which it reads through, before its own (cases, n_boot, …).
def condition_report(
    engine: Engine,
    campaign: str,
    human_group: str,
    *,
    dimension: str | None = None,
    judge: str | None = None,
    per_human: bool = False,
    cases: int = 0,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    resample: str | None = None,
) -> ConditionReport:
    """The whole `metrics conditions` computation: read, compute, pick the cases."""
    if cases < 0:
        raise BadInput(f"--cases must be 0 or more, got {cases}")
    data = load_condition_data(
        engine, campaign, human_group, dimension=dimension, judge=judge, per_human=per_human
    )
    study = condition_study(
        data.comparisons(),
        data.rows.categories,
        n_items=len(data.rows.items),
        n_boot=n_boot,
        confidence=confidence,
        seed=seed,
        groups=data.rows.groups,
        resample=resample,
    )
    return ConditionReport(data, study, disagreement_cases(data, cases))
