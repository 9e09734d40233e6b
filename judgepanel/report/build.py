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
from collections import defaultdict
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
from judgepanel.report.distributions import Distribution, distributions
from judgepanel.store.identity import first_words, pair_short, short_id
from judgepanel.store.report import (
    CampaignFacts,
    HumanColumns,
    JudgeVerdict,
    UnitText,
    VerdictColumns,
    campaign_facts,
    campaign_verdicts,
    human_item_rationales,
    human_item_score_columns,
    human_pair_label_columns,
    unit_texts,
    verdict_columns,
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
    title: str = ""  # the first words of its source (`store.identity`)
    short: str = ""  # its short id; `unit` is the full one


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
    cases_total: int = 0  # units with a positive disagreement score; `cases` holds the first ones
    # what each judge column and the humans answered (`report.distributions`)
    distributions: list[Distribution] = field(default_factory=list)


def _none(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


Column = tuple[NDArray[np.int64], NDArray[np.float64]]  # sorted unit ids, their values
"""A rater's values by unit: pair labels as `PAIR_CODES`, item scores as they are."""

_SHIFT = 42  # unit ids below 2⁴⁰ (and two order bits) under a column code in one int64 key


def _last_per_key(keys: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Sorted distinct keys and the row of each one's last occurrence (later rows win, as when
    rows in job order overwrite a dict entry)."""
    uniq, first_from_end = np.unique(keys[::-1], return_index=True)
    return uniq, len(keys) - 1 - first_from_end


def _judge_columns(facts: CampaignFacts, vc: VerdictColumns) -> dict[str, Column]:
    """Judge column name -> its values by unit; names carry the condition/dimension when several
    ran. A pairwise column's label of a pair is its two orders combined (the last AB and the last
    BA verdict in job order)."""
    # one column code per (judge, condition, dimension) seen (one int64 key each: a 1-d unique is
    # far cheaper than a unique over rows); several may share a name
    n_c, n_d = max(1, len(vc.conditions)), max(1, len(vc.dimensions))
    key = (vc.judge.astype(np.int64) * n_c + vc.condition) * n_d + vc.dimension
    triples, row_triple = np.unique(key, return_inverse=True)
    names = [
        _name(facts, vc.judges[t // (n_c * n_d)], vc.conditions[t // n_d % n_c], vc.dimensions[t % n_d])
        for t in triples.tolist()
    ]
    col_names = list(dict.fromkeys(names))
    to_col = np.array([col_names.index(n) for n in names], dtype=np.int64)
    col = to_col[row_triple.reshape(-1)] if len(names) else np.zeros(0, dtype=np.int64)
    cols: dict[str, Column] = {}
    if facts.protocol == "pairwise":
        keep = (vc.order > 0) & (vc.value >= 0)
        keys = (col[keep] << _SHIFT) | (vc.unit[keep] << 2) | vc.order[keep].astype(np.int64)
        uniq, rows = _last_per_key(keys)
        values = vc.value[keep][rows]
        pk, inverse = np.unique(uniq >> 2, return_inverse=True)
        ab = np.full(len(pk), -1, dtype=np.int64)
        ba = np.full(len(pk), -1, dtype=np.int64)
        is_ab = (uniq & 3) == 1
        ab[inverse[is_ab]] = values[is_ab]
        ba[inverse[~is_ab]] = values[~is_ab]
        # the combination table over the (few) value pairs present
        pairs, which = np.unique(np.stack([ab, ba], axis=1), axis=0, return_inverse=True)
        codes = []
        for a, b in pairs.tolist():
            label = as_label(
                combine_orders(vc.values[a] if a >= 0 else None, vc.values[b] if b >= 0 else None)
            )
            codes.append(np.nan if label is None else PAIR_CODES[label])
        combined = np.array(codes, dtype=np.float64)[which.reshape(-1)] if codes else np.zeros(0)
        labelled = ~np.isnan(combined)
        c_of, u_of = pk >> (_SHIFT - 2), pk & ((1 << (_SHIFT - 2)) - 1)
        for k, n in enumerate(col_names):
            mine = labelled & (c_of == k)
            if mine.any():
                cols[n] = (u_of[mine], combined[mine])
    else:
        keep = ~np.isnan(vc.score)
        uniq, rows = _last_per_key((col[keep] << _SHIFT) | vc.unit[keep])
        scores = vc.score[keep][rows]
        c_of, u_of = uniq >> _SHIFT, uniq & ((1 << _SHIFT) - 1)
        for k, n in enumerate(col_names):
            mine = c_of == k
            if mine.any():
                cols[n] = (u_of[mine], scores[mine])
    return dict(sorted(cols.items(), key=lambda kv: _order(facts, kv[0])))


def _name(facts: CampaignFacts, judge: str, condition: str | None, dimension: str | None) -> str:
    parts = [judge]
    if len(facts.conditions) > 1 and condition:
        parts.append(condition)
    if len(facts.dimensions) > 1 and dimension:
        parts.append(dimension)
    return "/".join(parts)


def _order(facts: CampaignFacts, col: str) -> tuple[int, str]:
    judge = col.split("/")[0]
    return (facts.judges.index(judge) if judge in facts.judges else len(facts.judges), col)


def _human_columns(humans: HumanColumns) -> dict[str, Column]:
    """Annotator -> its values by unit (the last label of a unit wins)."""
    uniq, rows = _last_per_key((humans.rater.astype(np.int64) << _SHIFT) | humans.unit)
    values = humans.value[rows]
    if humans.labels:  # pair labels: codes into `labels` -> PAIR_CODES
        values = np.array([PAIR_CODES[x] for x in humans.labels], dtype=np.float64)[values.astype(np.int64)]
    r_of, u_of = uniq >> _SHIFT, uniq & ((1 << _SHIFT) - 1)
    return {n: (u_of[r_of == k], values[r_of == k]) for k, n in enumerate(humans.raters)}


def _human_reference(
    human_cols: dict[str, Column], groups: dict[str, str], unit_kind: str
) -> dict[str, Column]:
    """Group -> plurality label (pairs; no label when the top count is shared) or mean score
    (items) by unit, over the group's annotators."""
    out: dict[str, Column] = {}
    for group in sorted(set(groups.values())):
        members = {n: c for n, c in human_cols.items() if groups[n] == group}
        units = np.unique(np.concatenate([u for u, _ in members.values()]))
        if not len(units):
            continue
        m = _matrix(members, units)
        if unit_kind == "pair":
            counts = np.stack([(m == code).sum(axis=1) for code in (0.0, 1.0, 2.0)], axis=1)
            top = counts.max(axis=1)
            single = (counts == top[:, None]).sum(axis=1) == 1
            out[group] = (units[single], counts[single].argmax(axis=1).astype(np.float64))
        else:
            n = (~np.isnan(m)).sum(axis=1)
            out[group] = (units, np.where(np.isnan(m), 0.0, m).sum(axis=1) / n)
    return out


def _matrix(columns: dict[str, Column], units: NDArray[np.int64]) -> NDArray[np.float64]:
    """units × columns, NaN where a column has no value for a unit (`units` sorted)."""
    m = np.full((len(units), len(columns)), np.nan)
    for j, (u, v) in enumerate(columns.values()):
        idx = np.searchsorted(units, u)
        ok = idx < len(units)
        ok[ok] = units[idx[ok]] == u[ok]
        m[idx[ok], j] = v[ok]
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
    judge_cols: dict[str, Column], reference: dict[str, Column], unit_kind: str
) -> list[VersusHumans]:
    out = []
    for judge, (ju, jv) in judge_cols.items():
        for group, (hu, hv) in reference.items():
            units, ij, ih = np.intersect1d(ju, hu, assume_unique=True, return_indices=True)
            if not len(units):
                continue
            j = jv[ij]
            if unit_kind == "pair":
                labels = ["A", "B", "T"]
                h = hv[ih]
                cats = np.array([0.0, 1.0, 2.0])
                rho = None
                qwk = None
            else:
                raw = hv[ih]
                h = np.floor(raw + 0.5)  # the group's mean rounded half up
                cats = np.unique(np.concatenate([j, h]))
                labels = [f"{c:g}" for c in cats]
                rho = _none(spearman(j, raw)) if len(units) > 2 else None
                qwk = _none(cohen_kappa(h, j, cats, "quadratic"))
            k = len(cats)
            cells = np.searchsorted(cats, h) * k + np.searchsorted(cats, j)
            conf = np.bincount(cells, minlength=k * k).reshape(k, k)
            out.append(
                VersusHumans(
                    judge=judge,
                    group=group,
                    n=len(units),
                    labels=labels,
                    confusion=conf.tolist(),
                    kappa=_none(cohen_kappa(h, j, cats)),
                    qwk=qwk,
                    spearman=rho,
                )
            )
    return out


def _case_scores(
    judge_cols: dict[str, Column],
    reference: dict[str, Column],
    units: NDArray[np.int64],
    unit_kind: str,
) -> list[tuple[float, int]]:
    """(disagreement, unit) of every unit with a positive score, most disagreeing first: the
    judges' spread plus their mean distance to each human group's reference (both in [0, 1])."""
    if not len(units):
        return []
    j = _matrix(judge_cols, units)
    r = _matrix(reference, units)
    has = ~np.isnan(j).all(axis=1)
    if unit_kind == "pair":
        # spread: 1 − the commonest label's share; off: the share of (judge, group) label pairs
        # that differ — integer counts divided once, as the per-unit sums did
        n_j = (~np.isnan(j)).sum(axis=1)
        n_r = (~np.isnan(r)).sum(axis=1)
        counts = np.stack([(j == c).sum(axis=1) for c in (0.0, 1.0, 2.0)], axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            spreads = 1.0 - counts.max(axis=1) / n_j
        same = sum(
            np.where(
                np.isnan(r[:, g]),
                0,
                np.take_along_axis(counts, np.nan_to_num(r[:, g]).astype(np.int64)[:, None], 1)[:, 0],
            )
            for g in range(r.shape[1])
        )
        offs = (n_r * n_j - same) / np.maximum(1, n_r * n_j)
        score = spreads + offs
    else:
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: no judge or no human
            spreads = (np.nanmax(j, axis=1) - np.nanmin(j, axis=1)) / 4.0
            offs = np.nanmean(np.abs(j[:, :, None] - r[:, None, :]).reshape(len(units), -1), axis=1) / 4.0
        score = spreads + np.where(np.isnan(offs), 0.0, offs)
    keep = has & (score > 0)
    s, u = score[keep], units[keep]
    order = np.lexsort((u, -s))
    return list(zip(s[order].tolist(), u[order].tolist(), strict=True))


def _value_at(col: Column, unit: int) -> float | None:
    units, values = col
    k = int(np.searchsorted(units, unit))
    return float(values[k]) if k < len(units) and units[k] == unit else None


def _cases(
    facts: CampaignFacts,
    verdicts: list[JudgeVerdict],
    judge_cols: dict[str, Column],
    reference: dict[str, Column],
    human_rationales: dict[tuple[str, int], str],
    texts: dict[int, UnitText],
    top: list[tuple[float, int]],
    unit_kind: str,
) -> list[Case]:
    """The cases of the `top` units, with their texts and every rationale."""
    wanted = {u for _, u in top}
    names: dict[tuple[str, str | None, str | None], str] = {}
    rationales: dict[tuple[str, int], list[str]] = defaultdict(list)
    for v in verdicts:
        if v.rationale and v.unit in wanted:
            key = (v.judge, v.condition, v.dimension)
            col = names.get(key) or names.setdefault(key, _name(facts, *key))
            prefix = f"[{v.order}] " if v.order else ""
            rationales[(col, v.unit)].append(prefix + v.rationale)
    said: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for (a, u), r in human_rationales.items():
        if u in wanted:
            said[u].append((a, r))

    def shown(x: float, judge: bool) -> str:
        if unit_kind == "pair":
            return PAIR_NAMES[x]
        return f"{x:g}" if judge else f"{x:.2f}"

    cases = []
    for score, unit in top:
        t = texts[unit]
        vals = {c: x for c, col in judge_cols.items() if (x := _value_at(col, unit)) is not None}
        refs = {g: x for g, col in reference.items() if (x := _value_at(col, unit)) is not None}
        ids = [short_id(x) for x in t.label.split(" | ")]
        cases.append(
            Case(
                title=first_words(t.input) or first_words(t.outputs[0] if t.outputs else None),
                short=pair_short(*ids) if len(ids) == 2 else ids[0],
                unit=t.label,
                input=t.input,
                outputs=t.outputs,
                verdicts=[
                    CaseVerdict(c, shown(v, True), "\n".join(rationales[(c, unit)])) for c, v in vals.items()
                ],
                humans={g: shown(r, False) for g, r in refs.items()},
                human_rationales=said[unit],
                disagreement=round(score, 4),
            )
        )
    return cases


def campaign_report(
    engine: Engine, name: str, *, n_boot: int = 200, seed: int = 0, cases: int = 200
) -> CampaignReport:
    facts = campaign_facts(engine, name)
    # arrays, not rows: ~33 bytes a verdict; rationales are read below for the cases shown only
    vc = verdict_columns(engine, name)
    notes = []
    dimension = None
    if facts.protocol == "pairwise" and facts.pair_set_id is not None:
        unit_kind = "pair"
        humans = human_pair_label_columns(engine, facts.pair_set_id)
    elif facts.protocol == "pointwise" and len(facts.dimensions) <= 1:
        unit_kind = "item"
        dimension = facts.dimensions[0] if facts.dimensions else None
        humans = human_item_score_columns(engine, facts.dataset_id, dimension)
    else:
        unit_kind = "item"
        humans = None
        if facts.protocol == "clauses":
            notes.append(
                "Clause campaigns have no single rating per item; agreement is left to `repair compare`."
            )
    judge_cols = _judge_columns(facts, vc) if facts.protocol != "clauses" else {}
    human_cols = _human_columns(humans) if humans is not None else {}
    groups = dict(zip(humans.raters, humans.groups, strict=True)) if humans is not None else {}
    everyone = [u for u, _ in [*judge_cols.values(), *human_cols.values()]]
    units = np.unique(np.concatenate(everyone)) if everyone else np.zeros(0, dtype=np.int64)

    agreement: list[AgreementRow] = []
    if human_cols:
        m = _matrix(human_cols, units)
        row = _alpha_row(f"humans ({len(human_cols)})", m, unit_kind, n_boot, seed)
        agreement += [row] if row else []
        for g in sorted(set(groups.values())):
            members = {n: v for n, v in human_cols.items() if groups[n] == g}
            row = _alpha_row(f"{g} ({len(members)})", _matrix(members, units), unit_kind, n_boot, seed)
            agreement += [row] if row else []
    if len(judge_cols) > 1:
        row = _alpha_row(f"judges ({len(judge_cols)})", _matrix(judge_cols, units), unit_kind, n_boot, seed)
        agreement += [row] if row else []

    names = [*human_cols, *judge_cols]
    kappa: list[list[float | None]] = []
    clusters: list[list[str]] = []
    if len(names) >= 2:
        m = _matrix({**human_cols, **judge_cols}, units)
        cats = [0.0, 1.0, 2.0] if unit_kind == "pair" else np.unique(m[~np.isnan(m)]).tolist()
        km = kappa_matrix(m, cats, names=names)
        kappa = [[_none(float(v)) for v in row] for row in km.kappa]
        clusters = cluster_raters(km, k=min(2, len(names)))

    bias = _bias(facts, vc) if facts.protocol == "pairwise" else []
    reference = _human_reference(human_cols, groups, unit_kind)
    versus = _versus(judge_cols, reference, unit_kind)
    case_units = (
        np.unique(np.concatenate([u for u, _ in judge_cols.values()]))
        if judge_cols
        else np.zeros(0, np.int64)
    )
    scored = _case_scores(judge_cols, reference, case_units, unit_kind)
    top = scored[:cases] if cases else []
    shown = [u for _, u in top]
    # texts and rationales only for the cases shown, not for every unit
    texts = unit_texts(engine, facts.protocol, shown) if top else {}
    said = campaign_verdicts(engine, name, units=shown) if top else []
    human_said = (
        human_item_rationales(engine, facts.dataset_id, dimension, shown)
        if top and unit_kind == "item" and humans is not None
        else {}
    )
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
        cases=_cases(facts, said, judge_cols, reference, human_said, texts, top, unit_kind),
        notes=notes,
        cases_total=len(scored),
        distributions=distributions(facts.protocol, vc, humans) if facts.protocol != "clauses" else [],
    )


def _bias(facts: CampaignFacts, vc: VerdictColumns) -> list[dict[str, Any]]:
    """Position bias per judge over its pairs asked in both orders (the verdicts back in the
    presented slot: in BA order the canonical A was shown second); the last verdict per judge,
    pair and order wins, as in job order."""
    keep = (vc.order > 0) & (vc.value >= 0)
    judge = vc.judge[keep].astype(np.int64)
    keys = (judge << _SHIFT) | (vc.unit[keep] << 2) | vc.order[keep].astype(np.int64)
    uniq, rows = _last_per_key(keys)
    values = vc.value[keep][rows]
    canonical = np.array(vc.values, dtype=object)
    swapped = np.array([{"A": "B", "B": "A"}.get(v, v) for v in vc.values], dtype=object)
    out = []
    for name in facts.judges:
        k = vc.judges.index(name) if name in vc.judges else -1
        mine = (uniq >> _SHIFT) == k
        pk, order, val = uniq[mine] >> 2, uniq[mine] & 3, values[mine]
        ab_pairs, ab_at, ba_at = np.intersect1d(
            pk[order == 1], pk[order == 2], assume_unique=True, return_indices=True
        )
        ab = canonical[val[order == 1][ab_at]] if len(ab_pairs) else np.zeros(0, dtype=object)
        ba = swapped[val[order == 2][ba_at]] if len(ab_pairs) else np.zeros(0, dtype=object)
        pb = position_bias(ab, ba)
        out.append({"judge": name, **pb.as_dict(), "pairs": pb.pairs})
    return out


__all__ = ["PAIR_NAMES", "CampaignReport", "campaign_report"]
