"""The figures of a report, computed once and rendered twice (HTML and Markdown).

For each campaign: what ran (judges, templates, usage, latency), agreement with bootstrap CIs
(humans, each human group, the judges), the rater κ matrix over humans and judges with its
average-linkage clusters, position bias per judge (pairwise), each judge against each human group
(confusion matrix, Cohen κ, quadratic-weighted κ, Spearman), and the disagreement cases with the
judges' and humans' rationales. Statistics come from `judgepanel.metrics`; nothing is computed in
the templates.

Conventions. A pairwise judge's label of a pair is its two orders combined
(`protocol.pairs.combine_orders` → `as_label`: an inconsistent pair counts as a tie); a human
group's label of a pair is its plurality label (no label when the top count is shared). A
pointwise judge's rating is its score of the first sample; a human group's rating is the group's
mean, rounded half up for the confusion matrix and κ, unrounded for Spearman.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Engine

from judgepanel.metrics.agreement import cohen_kappa, spearman
from judgepanel.metrics.bias import position_bias
from judgepanel.metrics.bootstrap import agreement_with_ci
from judgepanel.metrics.raters import cluster_raters, kappa_matrix
from judgepanel.protocol.pairs import as_label, combine_orders
from judgepanel.store.report import (
    CampaignFacts,
    HumanRatings,
    JudgeVerdict,
    UnitText,
    campaign_facts,
    campaign_verdicts,
    human_item_scores,
    human_pair_labels,
    unit_texts,
)

PAIR_CODES = {"A": 0.0, "B": 1.0, "T": 2.0}
PAIR_NAMES = {v: k for k, v in PAIR_CODES.items()}


@dataclass(frozen=True)
class AgreementRow:
    raters: str
    n_raters: int
    n_units: int
    metric: str
    value: float | None
    ci: tuple[float, float] | None


@dataclass(frozen=True)
class VersusHumans:
    judge: str
    group: str
    n: int
    labels: list[str]
    confusion: list[list[int]]  # rows: human group, columns: judge
    kappa: float | None
    qwk: float | None
    spearman: float | None


@dataclass(frozen=True)
class CaseVerdict:
    judge: str
    value: str
    rationale: str


@dataclass(frozen=True)
class Case:
    unit: str
    input: str | None
    outputs: list[str]
    verdicts: list[CaseVerdict]
    humans: dict[str, str]  # group -> reference label / mean
    human_rationales: list[tuple[str, str]]
    disagreement: float


@dataclass(frozen=True)
class CampaignReport:
    facts: CampaignFacts
    unit_kind: str  # pair | item
    agreement: list[AgreementRow]
    kappa_names: list[str]
    kappa_groups: list[str]
    kappa: list[list[float | None]]
    clusters: list[list[str]]
    bias: list[dict[str, Any]]
    versus: list[VersusHumans]
    cases: list[Case]
    notes: list[str] = field(default_factory=list)


def _none(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _plurality(values: list[str]) -> str | None:
    top = Counter(values).most_common()
    if not top or (len(top) > 1 and top[0][1] == top[1][1]):
        return None
    return top[0][0]


def _judge_columns(facts: CampaignFacts, verdicts: list[JudgeVerdict]) -> dict[str, dict[int, Any]]:
    """Judge column name -> {unit: value}; names carry the condition/dimension when several ran."""
    cols: dict[str, dict[int, Any]] = defaultdict(dict)
    if facts.protocol == "pairwise":
        orders: dict[tuple[str, int], dict[str, str]] = defaultdict(dict)
        for v in verdicts:
            if v.order and v.value:
                orders[(_name(facts, v), v.unit)][v.order] = v.value
        for (col, unit), o in orders.items():
            label = as_label(combine_orders(o.get("AB"), o.get("BA")))
            if label is not None:
                cols[col][unit] = label
    else:
        for v in verdicts:
            if v.score is not None:
                cols[_name(facts, v)][v.unit] = v.score
    return dict(sorted(cols.items(), key=lambda kv: _order(facts, kv[0])))


def _name(facts: CampaignFacts, v: JudgeVerdict) -> str:
    parts = [v.judge]
    if len(facts.conditions) > 1 and v.condition:
        parts.append(v.condition)
    if len(facts.dimensions) > 1 and v.dimension:
        parts.append(v.dimension)
    return "/".join(parts)


def _order(facts: CampaignFacts, col: str) -> tuple[int, str]:
    judge = col.split("/")[0]
    return (facts.judges.index(judge) if judge in facts.judges else len(facts.judges), col)


def _human_reference(humans: HumanRatings, unit_kind: str) -> dict[str, dict[int, Any]]:
    """Group -> {unit: plurality label (pairs) or mean score (items)}."""
    by_group: dict[str, dict[int, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for group, values in humans.raters.values():
        for unit, v in values.items():
            by_group[group][unit].append(v)
    out: dict[str, dict[int, Any]] = {}
    for group, units in sorted(by_group.items()):
        if unit_kind == "pair":
            out[group] = {u: lab for u, vs in units.items() if (lab := _plurality(vs)) is not None}
        else:
            out[group] = {u: float(np.mean(vs)) for u, vs in units.items()}
    return out


def _matrix(columns: dict[str, dict[int, Any]], units: list[int], unit_kind: str) -> NDArray[np.float64]:
    m = np.full((len(units), len(columns)), np.nan)
    index = {u: i for i, u in enumerate(units)}
    for j, values in enumerate(columns.values()):
        for u, v in values.items():
            if u in index:
                m[index[u], j] = PAIR_CODES[v] if unit_kind == "pair" else float(v)
    return m


def _alpha_row(
    label: str, m: NDArray[np.float64], unit_kind: str, n_boot: int, seed: int
) -> AgreementRow | None:
    if m.shape[1] < 2:
        return None
    keep = (~np.isnan(m)).sum(axis=1) >= 2
    m = m[keep]
    if m.shape[0] < 2:
        return None
    level = "nominal" if unit_kind == "pair" else "interval"
    cats = [0.0, 1.0, 2.0] if unit_kind == "pair" else None
    est = agreement_with_ci("alpha", m, cats, level, n_boot=n_boot, seed=seed)
    ci = None if est.ci is None else (float(est.ci.lo), float(est.ci.hi))
    if ci is not None and not all(math.isfinite(c) for c in ci):
        ci = None
    return AgreementRow(
        label, m.shape[1], int(m.shape[0]), f"Krippendorff α ({level})", _none(est.result.value), ci
    )


def _round_half_up(x: float) -> float:
    return float(math.floor(x + 0.5))


def _versus(
    judge_cols: dict[str, dict[int, Any]], reference: dict[str, dict[int, Any]], unit_kind: str
) -> list[VersusHumans]:
    out = []
    for judge, jv in judge_cols.items():
        for group, hv in reference.items():
            units = sorted(set(jv) & set(hv))
            if not units:
                continue
            if unit_kind == "pair":
                labels = ["A", "B", "T"]
                j = np.array([PAIR_CODES[jv[u]] for u in units])
                h = np.array([PAIR_CODES[hv[u]] for u in units])
                cats = np.array([0.0, 1.0, 2.0])
                rho = None
                qwk = None
            else:
                j = np.array([float(jv[u]) for u in units])
                raw = np.array([float(hv[u]) for u in units])
                h = np.array([_round_half_up(x) for x in raw])
                cats = np.unique(np.concatenate([j, h]))
                labels = [f"{c:g}" for c in cats]
                rho = _none(spearman(j, raw)) if len(units) > 2 else None
                qwk = _none(cohen_kappa(h, j, cats, "quadratic"))
            idx = {float(c): i for i, c in enumerate(cats)}
            conf = [[0] * len(cats) for _ in cats]
            for a, b in zip(h, j, strict=True):
                conf[idx[float(a)]][idx[float(b)]] += 1
            out.append(
                VersusHumans(
                    judge=judge,
                    group=group,
                    n=len(units),
                    labels=labels,
                    confusion=conf,
                    kappa=_none(cohen_kappa(h, j, cats)),
                    qwk=qwk,
                    spearman=rho,
                )
            )
    return out


def _case_scores(
    judge_cols: dict[str, dict[int, Any]],
    reference: dict[str, dict[int, Any]],
    units: list[int],
    unit_kind: str,
) -> list[tuple[float, int]]:
    """(disagreement, unit) of every unit with a positive score, most disagreeing first: the
    judges' spread plus their mean distance to each human group's reference (both in [0, 1])."""
    scored: list[tuple[float, int]] = []
    if unit_kind == "pair":
        for unit in units:
            judged = [vs[unit] for vs in judge_cols.values() if unit in vs]
            if not judged:
                continue
            refs = [hv[unit] for hv in reference.values() if unit in hv]
            spread = 1.0 - Counter(judged).most_common(1)[0][1] / len(judged)
            off = sum(1 for r in refs for v in judged if v != r) / max(1, len(refs) * len(judged))
            if spread + off > 0:
                scored.append((spread + off, unit))
    elif units:
        # items: the same sums over a units × judges and a units × groups matrix at once
        j = _matrix(judge_cols, units, unit_kind)
        r = _matrix(reference, units, unit_kind)
        has = ~np.isnan(j).all(axis=1)
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: no judge or no human
            spreads = (np.nanmax(j, axis=1) - np.nanmin(j, axis=1)) / 4.0
            offs = np.nanmean(np.abs(j[:, :, None] - r[:, None, :]).reshape(len(units), -1), axis=1) / 4.0
        score = spreads + np.where(np.isnan(offs), 0.0, offs)
        scored = [(float(score[k]), u) for k, u in enumerate(units) if has[k] and score[k] > 0]
    scored.sort(key=lambda t: (-t[0], t[1]))
    return scored


def _cases(
    facts: CampaignFacts,
    verdicts: list[JudgeVerdict],
    judge_cols: dict[str, dict[int, Any]],
    reference: dict[str, dict[int, Any]],
    humans: HumanRatings,
    texts: dict[int, UnitText],
    top: list[tuple[float, int]],
) -> list[Case]:
    """The cases of the `top` units, with their texts and every rationale."""
    wanted = {u for _, u in top}
    names: dict[tuple[str, str | None, str | None], str] = {}
    rationales: dict[tuple[str, int], list[str]] = defaultdict(list)
    for v in verdicts:
        if v.rationale and v.unit in wanted:
            key = (v.judge, v.condition, v.dimension)
            col = names.get(key) or names.setdefault(key, _name(facts, v))
            prefix = f"[{v.order}] " if v.order else ""
            rationales[(col, v.unit)].append(prefix + v.rationale)
    said: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for (a, u), r in humans.rationales.items():
        if u in wanted:
            said[u].append((a, r))
    cases = []
    for score, unit in top:
        t = texts[unit]
        vals = {c: vs[unit] for c, vs in judge_cols.items() if unit in vs}
        refs = {g: hv[unit] for g, hv in reference.items() if unit in hv}
        cases.append(
            Case(
                unit=t.label,
                input=t.input,
                outputs=t.outputs,
                verdicts=[
                    CaseVerdict(
                        c, f"{v:g}" if isinstance(v, float) else str(v), "\n".join(rationales[(c, unit)])
                    )
                    for c, v in vals.items()
                ],
                humans={g: (f"{r:.2f}" if isinstance(r, float) else str(r)) for g, r in refs.items()},
                human_rationales=said[unit],
                disagreement=round(score, 4),
            )
        )
    return cases


def campaign_report(
    engine: Engine, name: str, *, n_boot: int = 200, seed: int = 0, cases: int = 200
) -> CampaignReport:
    facts = campaign_facts(engine, name)
    # rationales are read below for the cases shown only
    verdicts = campaign_verdicts(engine, name, rationales=False)
    notes = []
    if facts.protocol == "pairwise" and facts.pair_set_id is not None:
        unit_kind = "pair"
        humans = human_pair_labels(engine, facts.pair_set_id)
    elif facts.protocol == "pointwise" and len(facts.dimensions) <= 1:
        unit_kind = "item"
        humans = human_item_scores(
            engine, facts.dataset_id, facts.dimensions[0] if facts.dimensions else None
        )
    else:
        unit_kind = "item"
        humans = HumanRatings()
        if facts.protocol == "clauses":
            notes.append(
                "Clause campaigns have no single rating per item; agreement is left to `repair compare`."
            )
    judge_cols = _judge_columns(facts, verdicts) if facts.protocol != "clauses" else {}
    human_cols = {n: v for n, (_g, v) in humans.raters.items()}
    groups = {n: g for n, (g, _v) in humans.raters.items()}
    units = sorted({u for vs in [*judge_cols.values(), *human_cols.values()] for u in vs})

    agreement: list[AgreementRow] = []
    if human_cols:
        m = _matrix(human_cols, units, unit_kind)
        row = _alpha_row(f"humans ({len(human_cols)})", m, unit_kind, n_boot, seed)
        agreement += [row] if row else []
        for g in sorted(set(groups.values())):
            members = {n: v for n, v in human_cols.items() if groups[n] == g}
            row = _alpha_row(
                f"{g} ({len(members)})", _matrix(members, units, unit_kind), unit_kind, n_boot, seed
            )
            agreement += [row] if row else []
    if len(judge_cols) > 1:
        row = _alpha_row(
            f"judges ({len(judge_cols)})", _matrix(judge_cols, units, unit_kind), unit_kind, n_boot, seed
        )
        agreement += [row] if row else []

    names = [*human_cols, *judge_cols]
    kappa: list[list[float | None]] = []
    clusters: list[list[str]] = []
    if len(names) >= 2:
        m = _matrix({**human_cols, **judge_cols}, units, unit_kind)
        cats = [0.0, 1.0, 2.0] if unit_kind == "pair" else sorted(set(m[~np.isnan(m)].tolist()))
        km = kappa_matrix(m, cats, names=names)
        kappa = [[_none(float(v)) for v in row] for row in km.kappa]
        clusters = cluster_raters(km, k=min(2, len(names)))

    bias: list[dict[str, Any]] = []
    if facts.protocol == "pairwise":
        presented: dict[tuple[str, int], dict[str, str]] = defaultdict(dict)
        for v in verdicts:
            if v.order and v.value:
                # back to the presented slot: in BA order the canonical A was shown second
                shown = v.value if v.order == "AB" else {"A": "B", "B": "A"}.get(v.value, v.value)
                presented[(v.judge, v.unit)][v.order] = shown
        for j in facts.judges:
            both = [o for (jj, _u), o in presented.items() if jj == j and "AB" in o and "BA" in o]
            pb = position_bias([o["AB"] for o in both], [o["BA"] for o in both])
            bias.append({"judge": j, **pb.as_dict(), "pairs": pb.pairs})

    reference = _human_reference(humans, unit_kind)
    versus = _versus(judge_cols, reference, unit_kind)
    case_units = sorted({u for vs in judge_cols.values() for u in vs})
    top = _case_scores(judge_cols, reference, case_units, unit_kind)[:cases] if cases else []
    # texts only for the cases shown, not for every unit
    texts = unit_texts(engine, facts.protocol, [u for _, u in top]) if top else {}
    said = campaign_verdicts(engine, name, units=[u for _, u in top]) if top else []
    return CampaignReport(
        facts=facts,
        unit_kind=unit_kind,
        agreement=agreement,
        kappa_names=names,
        kappa_groups=[groups.get(n, "judge") for n in names],
        kappa=kappa,
        clusters=clusters,
        bias=bias,
        versus=versus,
        cases=_cases(facts, said, judge_cols, reference, humans, texts, top),
        notes=notes,
    )


__all__ = ["PAIR_NAMES", "CampaignReport", "campaign_report"]
