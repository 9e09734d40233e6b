"""`judgepanel compare A B` and the viewer's `/compare?a=A&b=B`: two campaigns side by side on the
items both judged.

What differs is said first (protocol, dataset, pair set, rubric version, templates and their
hashes, judges, conditions, dimensions). A judge column is a judge (by its short name) with its
condition and dimension; columns are matched by all three, or — when each campaign has exactly one
judge — by condition and dimension alone (the same question to another judge). A unit is matched
by its items (an item; a pair's A and B in order), so two pair sets that share pairs compare too.

Per matched column: each unit's verdict in A and in B (pointwise the score; pairwise the two
orders read together, `protocol.pairs.combine_orders`: A, B, T or inconsistent), how many changed,
and agreement with the humans in A and in B with the paired difference B − A and its interval —
`metrics.conditions.condition_study` with A as the baseline, the statistics and resampling the
rubric-condition study and `align compare` use (exact, Cohen's κ, QWK, Spearman ρ; group
bootstrap over the dataset's groups, SummEval's articles, where items share groups). The human
reference of a unit is the rounded mean of its human scores (pointwise; `--human-group` for one
group) or the plurality of its human pair labels (none when the top count is shared); for the
statistics an inconsistent pair counts as a tie, as everywhere agreement is computed.
Undefined values are None (JSON null).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

import numpy as np
from sqlalchemy import Engine

from judgepanel.errors import BadInput
from judgepanel.metrics.conditions import STATISTICS, Comparisons, condition_study, rounded_mean
from judgepanel.protocol.pairs import MISSING, as_label, combine_orders
from judgepanel.store.campaigns import campaign_judge_names
from judgepanel.store.compare import unit_items
from judgepanel.store.identity import unit_identities
from judgepanel.store.report import (
    CampaignFacts,
    HumanColumns,
    VerdictColumns,
    campaign_facts,
    human_item_score_columns,
    human_pair_label_columns,
    verdict_columns,
)
from judgepanel.store.simulated import simulated_campaigns

PAIR_CODES = {"A": 0.0, "B": 1.0, "T": 2.0}
Column = tuple[str, str | None, str | None]  # judge short name, condition, dimension
UnitKey = tuple[int, ...]


def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _columns(
    facts: CampaignFacts, vc: VerdictColumns, names: dict[str, str], keys: dict[int, UnitKey]
) -> dict[Column, dict[UnitKey, Any]]:
    """Judge column → unit key → verdict (the last accepted one in job order)."""
    out: dict[Column, dict[UnitKey, Any]] = defaultdict(dict)
    if facts.protocol == "pairwise":
        orders: dict[tuple[Column, UnitKey], dict[int, str]] = defaultdict(dict)
        for j, c, d, u, o, v in zip(
            vc.judge.tolist(), vc.condition.tolist(), vc.dimension.tolist(), vc.unit.tolist(),
            vc.order.tolist(), vc.value.tolist(), strict=True,
        ):  # fmt: skip
            if o in (1, 2) and v >= 0 and u in keys:
                col = (names.get(vc.judges[j], vc.judges[j]), vc.conditions[c], vc.dimensions[d])
                orders[(col, keys[u])][o] = vc.values[v]
        for (col, key), by in orders.items():
            verdict = combine_orders(by.get(1), by.get(2))
            if verdict != MISSING:
                out[col][key] = verdict
        return dict(out)
    for j, c, d, u, s in zip(
        vc.judge.tolist(), vc.condition.tolist(), vc.dimension.tolist(), vc.unit.tolist(), vc.score.tolist(),
        strict=True,
    ):  # fmt: skip
        if not math.isnan(s) and u in keys:
            out[(names.get(vc.judges[j], vc.judges[j]), vc.conditions[c], vc.dimensions[d])][keys[u]] = s
    return dict(out)


def _match(a: dict[Column, Any], b: dict[Column, Any]) -> list[tuple[Column, Column]]:
    same = [(c, c) for c in a if c in b]
    if same:
        return same
    judges_a, judges_b = {c[0] for c in a}, {c[0] for c in b}
    if len(judges_a) == 1 and len(judges_b) == 1:  # one judge each: the same question, another judge
        return [(ca, cb) for ca in a for cb in b if ca[1:] == cb[1:]]
    return []


def _humans(
    hc: HumanColumns, keys: dict[int, UnitKey], group: str | None, pairwise: bool
) -> dict[UnitKey, float]:
    """Unit key → the human reference (a PAIR_CODES code, or the rounded mean score)."""
    groups = dict(zip(hc.raters, hc.groups, strict=True))
    values: dict[UnitKey, list[Any]] = defaultdict(list)
    for r, u, v in zip(hc.rater.tolist(), hc.unit.tolist(), hc.value.tolist(), strict=True):
        if u in keys and (group is None or groups[hc.raters[r]] == group):
            values[keys[u]].append(hc.labels[int(v)] if pairwise else v)
    out: dict[UnitKey, float] = {}
    for key, vs in values.items():
        if pairwise:
            top = Counter(vs).most_common()
            if len(top) == 1 or top[0][1] > top[1][1]:
                out[key] = PAIR_CODES[top[0][0]]
        elif vs:
            out[key] = rounded_mean(vs)
    return out


def _code(verdict: Any, pairwise: bool) -> float:
    if pairwise:
        label = as_label(str(verdict))
        return math.nan if label is None else PAIR_CODES[label]
    return float(verdict)


def _what_differs(
    fa: CampaignFacts, fb: CampaignFacts, na: dict[str, str], nb: dict[str, str]
) -> list[dict[str, Any]]:
    out = []
    for what, x, y in (
        ("protocol", fa.protocol, fb.protocol),
        ("dataset", fa.dataset, fb.dataset),
        ("pair set", fa.pair_set, fb.pair_set),
        ("rubric", fa.rubric, fb.rubric),
        ("templates", fa.templates, fb.templates),
        ("judges", sorted(na.get(j, j) for j in fa.judges), sorted(nb.get(j, j) for j in fb.judges)),
        ("judge specs", sorted(fa.judges), sorted(fb.judges)),
        ("conditions", fa.conditions, fb.conditions),
        ("dimensions", fa.dimensions, fb.dimensions),
    ):
        if x != y:
            out.append({"what": what, "a": x, "b": y})
    return out


def _est(e: Any) -> dict[str, Any]:
    return {"value": _num(e.value), "ci": [_num(e.ci[0]), _num(e.ci[1])]}


def compare_campaigns(
    engine: Engine,
    a: str,
    b: str,
    *,
    human_group: str | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    resample: str | None = None,
    rows_limit: int | None = None,
) -> dict[str, Any]:
    """The comparison as a JSON-ready dict: `a`, `b`, `protocol`, `differs`, `units` (judged by
    both), `changed` (verdicts that differ, over every matched column), `columns` (per matched
    column: `column`, `judge_a`, `judge_b`, `condition`, `dimension`, `units`, `changed`,
    `agreement` {a, b: {statistic: value, ci, items}} and `delta` (B − A: `items`, each statistic
    {value, ci}), None without human references), `unmatched` {a, b}, `rows` (per unit: `key`,
    `case_a`, `case_b`, `unit` {id, short, title, label}, `verdicts` [{column, a, b, changed}],
    `changed`; changed units first; `rows_limit` of them), `rows_total`, `n_boot`, `seed`,
    `resample`, `human_group` and `simulated`."""
    if n_boot < 1:
        raise BadInput(f"--bootstrap must be at least 1, got {n_boot}")
    fa, fb = campaign_facts(engine, a), campaign_facts(engine, b)
    if fa.protocol != fb.protocol:
        raise BadInput(
            f"{a} is {fa.protocol} and {b} is {fb.protocol}: there is no verdict to compare item by item"
        )
    if fa.protocol == "clauses":
        raise BadInput("clause campaigns have no single verdict per item: compare them with `repair compare`")
    pairwise = fa.protocol == "pairwise"
    na, nb = campaign_judge_names(engine, a), campaign_judge_names(engine, b)
    va, vb = verdict_columns(engine, a), verdict_columns(engine, b)
    ua = unit_items(engine, fa.protocol, np.unique(va.unit).tolist())
    ub = unit_items(engine, fb.protocol, np.unique(vb.unit).tolist())
    keys_a = {u: k for u, (k, _) in ua.items()}
    keys_b = {u: k for u, (k, _) in ub.items()}
    group_of = {k: g for _, (k, g) in [*ua.items(), *ub.items()]}
    case_a = {k: u for u, k in keys_a.items()}
    case_b = {k: u for u, k in keys_b.items()}
    cols_a, cols_b = _columns(fa, va, na, keys_a), _columns(fb, vb, nb, keys_b)
    matched = _match(cols_a, cols_b)
    # the human references, per dimension (pointwise) or of the pairs (pairwise)
    refs: dict[str | None, dict[UnitKey, float]] = {}
    for ca, _ in matched:
        dim = ca[2] if ca[2] is not None else (fa.dimensions[0] if len(fa.dimensions) == 1 else None)
        if dim in refs:
            continue
        ref: dict[UnitKey, float] = {}
        if pairwise:
            for facts, keys in ((fa, keys_a), (fb, keys_b)):
                if facts.pair_set_id is not None:
                    got = _humans(
                        human_pair_label_columns(engine, facts.pair_set_id), keys, human_group, True
                    )
                    ref = {**got, **ref}
        else:
            ref = _humans(human_item_score_columns(engine, fa.dataset_id, dim), keys_a, human_group, False)
        refs[dim] = ref
    columns = []
    per_unit: dict[UnitKey, list[dict[str, Any]]] = defaultdict(list)
    for ca, cb in matched:
        xa, xb = cols_a[ca], cols_b[cb]
        shared = sorted(set(xa) & set(xb))
        changed = [k for k in shared if xa[k] != xb[k]]
        label = "/".join(
            str(p) for p in (ca[0] if ca[0] == cb[0] else f"{ca[0]} → {cb[0]}", ca[1], ca[2]) if p
        )
        for k in shared:
            per_unit[k].append({"column": label, "a": xa[k], "b": xb[k], "changed": xa[k] != xb[k]})
        dim = ca[2] if ca[2] is not None else (fa.dimensions[0] if len(fa.dimensions) == 1 else None)
        ref = refs.get(dim, {})
        items = [
            k
            for k in shared
            if k in ref and not math.isnan(_code(xa[k], pairwise)) and not math.isnan(_code(xb[k], pairwise))
        ]
        agreement = delta = None
        if items:
            idx = np.arange(len(items))
            human = [ref[k] for k in items]
            comps = {
                side: Comparisons.of([_code(x[k], pairwise) for k in items], human, idx)
                for side, x in (("A", xa), ("B", xb))
            }
            cats = (
                [0.0, 1.0, 2.0]
                if pairwise
                else sorted({*human, *comps["A"].judge.tolist(), *comps["B"].judge.tolist()})
            )
            groups = [group_of.get(k) for k in items]
            study = condition_study(
                comps, cats, n_items=len(items), baseline="A", n_boot=n_boot, seed=seed,
                groups=groups if any(g is not None for g in groups) else None, resample=resample,
            )  # fmt: skip
            agreement = {
                side.lower(): {
                    **{s: _num(getattr(r, s).value) for s in STATISTICS},
                    "ci": {s: [_num(getattr(r, s).ci[0]), _num(getattr(r, s).ci[1])] for s in STATISTICS},
                    "items": r.items,
                }
                for side, r in study.conditions.items()
            }
            d = study.deltas["B_vs_A"]
            delta = {"items": d.items, **{s: _est(getattr(d, s)) for s in STATISTICS}}
            resample = study.resample
        columns.append(
            {
                "column": label,
                "judge_a": ca[0],
                "judge_b": cb[0],
                "condition": ca[1],
                "dimension": ca[2],
                "units": len(shared),
                "changed": len(changed),
                "with_human_reference": len(items),
                "agreement": agreement,
                "delta": delta,
            }
        )
    ordered = sorted(per_unit, key=lambda k: (not any(v["changed"] for v in per_unit[k]), k))
    shown = ordered if rows_limit is None else ordered[:rows_limit]
    ids = unit_identities(engine, fa.protocol, [case_a[k] for k in shown if k in case_a])
    rows = [
        {
            "key": list(k),
            "case_a": case_a.get(k),
            "case_b": case_b.get(k),
            "unit": ids[case_a[k]].as_dict() if k in case_a and case_a[k] in ids else None,
            "verdicts": per_unit[k],
            "changed": any(v["changed"] for v in per_unit[k]),
        }
        for k in shown
    ]
    sim = simulated_campaigns(engine, [a, b])
    return {
        "a": a,
        "b": b,
        "protocol": fa.protocol,
        "differs": _what_differs(fa, fb, na, nb),
        "units": len(set(keys_a.values()) & set(keys_b.values())),
        "changed": sum(c["changed"] for c in columns),
        "columns": columns,
        "unmatched": {
            "a": ["/".join(str(p) for p in c if p) for c in cols_a if c not in {x for x, _ in matched}],
            "b": ["/".join(str(p) for p in c if p) for c in cols_b if c not in {y for _, y in matched}],
        },
        "rows": rows,
        "rows_total": len(ordered),
        "n_boot": n_boot,
        "seed": seed,
        "resample": resample or "items",
        "human_group": human_group,
        "simulated": bool(sim.get(a) or sim.get(b)),
    }


__all__ = ["compare_campaigns"]
