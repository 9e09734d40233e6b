"""What each viewer page shows, as plain JSON-ready dicts: the page renders them and `/api/…`
returns them as they are.

Each dict carries the keys of the matching `--json` command (named beside each function) and adds
its own beside them; figures come from the library functions the report and the CLI use, not
from code of their own here. `Tracker` keeps what polling needs between requests (the newest
response seen, spend so far), so a poll while a run is going reads only the new rows.
"""

from __future__ import annotations

import math
import threading
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from judgepanel.analysis.pace import campaign_pace, stored_paces
from judgepanel.errors import BadInput, NotFound
from judgepanel.store import browse
from judgepanel.store.campaigns import campaign_judge_names
from judgepanel.store.fingerprint import results_key
from judgepanel.store.models import utcnow
from judgepanel.store.sources import imported_source_text
from judgepanel.view.stats import StatsCache
from judgepanel.view.table import PAGE_SIZES, VerdictQuery, neighbours, parse_verdict_query, verdicts

# row ids are INTEGER columns (32 bits on PostgreSQL): a larger case or request number in an
# address names no row, and binding it fails in the driver or the server instead (a 500)
MAX_ROW_ID = 2**31 - 1
__all__ = ["PAGE_SIZES", "Tracker", "VerdictQuery", "parse_verdict_query", "verdicts"]


def _finite(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


@dataclass
class _Spend:
    calls: int = 0
    cost: float = 0.0
    priced: int = 0
    simulated: bool = False


# a campaign as the tracker knows it: its id and when it was created (`browse.campaign_births`);
# the id alone could be a deleted campaign's, handed to a new one
CampaignKey = tuple[int, datetime | None]


@dataclass
class Tracker:
    """Spend and simulated-ness per campaign, summed incrementally over new responses, keyed by
    campaign id *and* creation time, so a new campaign never inherits a deleted one's spend."""

    last_response: int = 0
    spend: dict[CampaignKey, _Spend] = field(default_factory=lambda: defaultdict(_Spend))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def key(self, cid: int, births: dict[int, datetime]) -> CampaignKey:
        return (cid, births.get(cid))

    def update(self, engine: Engine) -> dict[int, datetime]:
        """Read the responses stored since the last poll; returns the births it keyed them by."""
        with self.lock:
            new = browse.spend_since(engine, self.last_response)
            births = browse.campaign_births(engine)
            for cid, newest, n, cost, priced, sim in new:
                s = self.spend[self.key(cid, births)]
                s.calls += n
                s.cost += cost
                s.priced += priced
                s.simulated = s.simulated or sim
                self.last_response = max(self.last_response, newest)
            return births


def campaigns(engine: Engine, tracker: Tracker) -> dict[str, Any]:
    """`campaign list --json` (`campaigns`: name, dataset, protocol, judges, jobs, done, failed,
    pending, status, created_at), each row with `cost_usd`, `max_cost_usd`, `simulated`,
    `failed_by_class`, `progress` {`calls_per_s`, `eta_s`, `active`, `window_s`,
    `mean_latency_s`, `concurrency`} (`analysis.pace`; a figure that cannot be known yet is null)
    and `part_of` (`kind` repair or align, `name`, `role`; None for a campaign of its own);
    `groups`: each iteration's or alignment's campaigns."""
    from judgepanel.store.campaigns import list_campaigns

    births = tracker.update(engine)
    rows = list_campaigns(engine)
    ids = {v: k for k, v in browse.campaign_names_by_id(engine).items()}
    failed: dict[int, dict[str, int]] = defaultdict(dict)
    for cid, cls, n in browse.failed_jobs_by_class(engine):
        failed[cid][cls or "unknown"] = n
    for r in rows:
        r["_id"] = ids[r["name"]]
    # rate over a window that scales with the judges' latency, ETA from latency and concurrency,
    # "active" from live leases: `analysis.pace`, as `campaign status` computes it
    paces = stored_paces(engine, {r["_id"]: r["pending"] for r in rows})
    progress = {r["name"]: paces[r["_id"]].as_dict() for r in rows}
    parts = browse.sub_campaigns(engine)
    specs = {r["name"]: r for r in rows}
    out = []
    for r in rows:
        cid = r.pop("_id")
        s = tracker.spend.get(tracker.key(cid, births), _Spend())
        row = browse.campaign_row(engine, r["name"]) if r["name"] in specs else {}
        sim = s.simulated or any(str(j).startswith("sim:") for j in r["judges"])
        out.append(
            {
                **r,
                "cost_usd": round(s.cost, 6) if s.priced or not s.calls else None,
                "max_cost_usd": row.get("max_cost_usd"),
                "simulated": sim,
                "failed_by_class": dict(sorted(failed.get(cid, {}).items())),
                "progress": progress[r["name"]],
                "part_of": (
                    {"kind": parts[r["name"]][0], "name": parts[r["name"]][1], "role": parts[r["name"]][2]}
                    if r["name"] in parts
                    else None
                ),
            }
        )
    groups: dict[tuple[str, str], list[str]] = {}
    for c in out:
        if c["part_of"]:
            groups.setdefault((c["part_of"]["kind"], c["part_of"]["name"]), []).append(c["name"])
    return {
        "campaigns": out,
        "simulated": any(c["simulated"] for c in out),
        # the repair iterations' and alignments' own campaigns, listed under them (not as peers)
        "groups": [{"kind": k, "name": n, "campaigns": cs} for (k, n), cs in groups.items()],
    }


def campaign(
    engine: Engine, name: str, *, n_boot: int = 200, cache: StatsCache | None = None
) -> dict[str, Any]:
    """`campaign status --json` (jobs, done, failed, pending, calls, cost_usd, …), with
    `campaign`, `protocol`, `judges`, `simulated`, `agreement` (rows as in the report), `bias`
    (`metrics bias --json`: `judges` {name: {…}}), `matrix` (`metrics matrix --json`: `raters`,
    `kappa`, `clusters`), `versus`, `distributions` (per judge column and for the humans:
    `rater`, `label`, `kind`, `counts` {category: n}, `total`), `failures` (per kind: count and a
    first example), `cost_split` (list price, saved by the prompt cache and by batch APIs, paid)
    and `computed` (`at`, `seconds`, `cached`, and what the figures were computed from:
    `verdicts`, `human_labels`, `bootstrap`). The page comes from `cache` (view.stats) while the
    campaign's stored results have not changed."""
    if cache is None:
        return {**_campaign(engine, name, n_boot), "_svg": None}
    entry, hit = cache.campaign(engine, name, n_boot, lambda: _campaign(engine, name, n_boot, svg=True))
    out = dict(entry.value)
    out["computed"] = {**out["computed"], "cached": hit, "seconds": round(entry.seconds, 3)}
    # what changes with the clock alone (a lease expiring, the rate's window) is never cached
    from judgepanel.store.campaigns.readers import campaign_state

    out["status"], pending = campaign_state(engine, name)
    out["progress"] = campaign_pace(engine, name, pending).as_dict()
    return out


def _campaign(engine: Engine, name: str, n_boot: int, *, svg: bool = False) -> dict[str, Any]:
    from judgepanel.analysis.checkers import checker_use
    from judgepanel.store.campaigns import campaign_status
    from judgepanel.store.simulated import simulated_campaigns

    info = browse.campaign_row(engine, name)
    st = {**campaign_status(engine, name).as_dict(), **checker_use(engine, name).as_dict()}
    st["progress"] = campaign_pace(engine, name, st["pending"]).as_dict()
    names = campaign_judge_names(engine, name)
    failures = [
        {**f, "judge_name": names.get(f["judge"], f["judge"])} for f in browse.failure_examples(engine, name)
    ]
    out: dict[str, Any] = {
        **st,
        "campaign": name,
        "protocol": info["protocol"],
        "judges": info["judges"],
        "judge_names": {j: names.get(j, j) for j in info["judges"]},
        "max_cost_usd": info["max_cost_usd"],
        "simulated": simulated_campaigns(engine, [name]).get(name, False),
        "source": imported_source_text(info["spec"]),  # issue 35: another tool's graders
        "agreement": [],
        "bias": {"judges": {}},
        "matrix": {"raters": [], "kappa": [], "clusters": [], "groups": []},
        "versus": [],
        "distributions": [],
        "failures": failures,
        "cost_split": {
            "list_usd": st["cost_list_usd"],
            "saved_by_cache_usd": st["saved_by_cache_usd"],
            "saved_by_batch_usd": st["saved_by_batch_usd"],
            "paid_usd": st["cost_usd"],
        },
        "notes": [],
        # the alignments (`align run`) this campaign is part of: linked from the page
        "alignments": browse.alignments_using(engine, name),
    }
    key = results_key(engine, name)
    out["computed"] = {
        "at": utcnow().isoformat(timespec="seconds") + "Z",
        "seconds": 0.0,
        "cached": False,
        "verdicts": key.n_verdicts,
        "human_labels": key.n_labels,
        "bootstrap": n_boot,
    }
    if info["dataset_id"] is None or not st["done"]:
        out["notes"].append("No figures: the campaign has no finished judge verdicts on a dataset.")
    else:
        stats = _statistics(engine, name, n_boot, names)
        out.update(stats)
        out["notes"] = list(stats["notes"])
    if svg:  # the page's plots, drawn once with the figures (kept out of the JSON twin)
        out["_svg"] = campaign_svgs(out)
    return out


def _statistics(engine: Engine, name: str, n_boot: int, names: dict[str, str]) -> dict[str, Any]:
    """The page's figures from `report.build.campaign_report`, shaped as the matching `--json`
    commands shape them."""
    from judgepanel.report.build import campaign_report
    from judgepanel.report.render import rater_label

    try:
        rep = campaign_report(engine, name, n_boot=n_boot, cases=0)
    except BadInput as exc:
        return {"notes": [str(exc)]}
    return {
        "agreement": [
            {**asdict(a), "value": _finite(a.value), "ci": list(a.ci) if a.ci else None}
            for a in rep.agreement
        ],
        # as `metrics bias --json`: keyed by the judge's short name, its spec inside
        "bias": {
            "judges": {
                names.get(b["judge"], b["judge"]): {
                    **{k: v for k, v in b.items() if k != "judge"},
                    "spec": b["judge"],
                }
                for b in rep.bias
            }
        },
        "matrix": {
            # judges by their short names, as `metrics matrix --json` names its judge columns
            "raters": [rater_label(n, rep.facts) for n in rep.kappa_names],
            "kappa": rep.kappa,
            "clusters": [[rater_label(n, rep.facts) for n in cl] for cl in rep.clusters],
            "groups": rep.kappa_groups,
        },
        "versus": [{**asdict(v), "judge_name": names.get(v.judge, v.judge)} for v in rep.versus],
        "distributions": [
            {**d.as_dict(), "label": rater_label(d.rater, rep.facts) if d.kind == "judge" else d.rater}
            for d in rep.distributions
        ],
        "notes": list(rep.notes),
    }


def distribution_of(d: dict[str, Any]) -> Any:
    """A `report.distributions.Distribution` back from its JSON form (named by its label)."""
    from judgepanel.report.distributions import Distribution

    cats = tuple(d["counts"])
    return Distribution(d["label"], d["kind"], cats, tuple(int(d["counts"][c]) for c in cats))


def campaign_svgs(payload: dict[str, Any]) -> dict[str, Any]:
    """The campaign page's SVGs from its payload (the viewer's page and the static bundle)."""
    from judgepanel.report import plots

    m = payload["matrix"]
    heat = plots.kappa_heatmap(m["raters"], m["kappa"], m["groups"]) if m["kappa"] else None
    rows = [{"judge": j, **b} for j, b in payload["bias"]["judges"].items()]
    dists = [distribution_of(d) for d in payload["distributions"]]
    return {
        "kappa_svg": heat,
        "bias_svg": plots.bias_plot(rows) if rows else None,
        "distribution_svg": plots.distribution_plot(dists) if dists else None,
    }


COMPARE_ROWS = 500  # units a compare page lists (changed first)


def compare(
    engine: Engine, params: dict[str, str], *, n_boot: int = 200, cache: StatsCache | None = None
) -> dict[str, Any]:
    """`judgepanel compare A B --json` (`a`, `b`, `protocol`, `differs`, `units`, `changed`,
    `columns`, `unmatched`, `rows`, `rows_total`, …) for `?a=A&b=B`, cached by both campaigns'
    results keys; `changed=1` lists only the changed units; `choices`: every campaign that judges
    items."""
    from judgepanel.analysis.compare import compare_campaigns
    from judgepanel.store.campaigns import list_campaigns

    choices = [c["name"] for c in list_campaigns(engine) if c["protocol"] in ("pairwise", "pointwise")]
    a, b = params.get("a") or "", params.get("b") or ""
    only = params.get("changed") in ("1", "true", "on")
    base: dict[str, Any] = {"choices": choices, "a": a, "b": b, "only_changed": only, "simulated": False}
    if not a or not b:
        return {**base, "columns": None}
    key = ("compare", results_key(engine, a), results_key(engine, b), n_boot)
    entry, _ = (cache or StatsCache(1)).get(
        key, lambda: compare_campaigns(engine, a, b, n_boot=n_boot, rows_limit=None)
    )
    out = dict(entry.value)
    rows = [r for r in out["rows"] if r["changed"]] if only else out["rows"]
    out["rows"] = rows[:COMPARE_ROWS]
    out["rows_total"] = len(rows)
    return {
        **base,
        **out,
        "only_changed": only,
        "computed_at": entry.computed_at.isoformat(timespec="seconds") + "Z",
    }


def case(
    engine: Engine, name: str, unit: int, nav: VerdictQuery | None = None, v: int | None = None
) -> dict[str, Any]:
    """One case: `items` (external_id, input, output, system), `identity` (the readable name:
    `id`, `short`, `title`, `label`), `verdicts` (every attempt of every judge: judge, order,
    condition, dimension, repeat, attempt, value, rationale, …, request_id for the raw request
    and reply), `combined` (pairwise: per judge, condition, dimension and repeat the two orders
    read together — `A`, `B`, `T`, `inconsistent` or `missing`, never a tie for an inconsistent
    pair), `humans` (pair labels by annotator), `labels` (item labels), `grid` (the human labels
    as annotator × dimension, per item) and `prev` / `next` (the neighbouring cases in the
    verdict table's list, `{case, v}` or None)."""
    from judgepanel.protocol.pairs import combine_orders
    from judgepanel.store.identity import unit_identities
    from judgepanel.store.simulated import simulated_campaigns

    rec = browse.case_record(engine, name, unit) if 0 < unit <= MAX_ROW_ID else None
    if rec is None:
        raise NotFound(f"campaign {name!r} has no case {unit}")
    names = campaign_judge_names(engine, name)
    ident = unit_identities(engine, rec.protocol, [unit]).get(unit)
    combined: list[dict[str, Any]] = []
    if rec.protocol == "pairwise":
        last: dict[tuple[Any, ...], dict[str, str | None]] = {}
        for a in rec.attempts:  # attempts in order: a later read answer of an order wins
            k = (a.judge, a.condition, a.dimension, a.repeat)
            if a.parse_status == "ok" and a.order:
                last.setdefault(k, {})[a.order] = a.value
            else:
                last.setdefault(k, {})
        for (judge, cond, dim, rep), by in last.items():
            combined.append(
                {
                    "judge": judge,
                    "judge_name": names.get(judge, judge),
                    "condition": cond,
                    "dimension": dim,
                    "repeat": rep,
                    "AB": by.get("AB"),
                    "BA": by.get("BA"),
                    "verdict": combine_orders(by.get("AB"), by.get("BA")),
                }
            )
    grid: dict[str, dict[str, Any]] = {}
    for h in rec.labels:
        g = grid.setdefault(h.item, {"annotators": [], "dimensions": [], "cells": {}})
        if h.annotator not in g["annotators"]:
            g["annotators"].append(h.annotator)
        if h.dimension not in g["dimensions"]:
            g["dimensions"].append(h.dimension)
        g["cells"].setdefault(h.annotator, {})[h.dimension] = {"value": h.value, "rationale": h.rationale}
    for g in grid.values():
        g["dimensions"].sort()
    walk = neighbours(engine, name, unit, nav or parse_verdict_query({}), v)
    return {
        "campaign": name,
        "protocol": rec.protocol,
        "case": unit,
        "identity": ident.as_dict() if ident else None,
        "simulated": simulated_campaigns(engine, [name]).get(name, False),
        "source": imported_source_text(browse.campaign_row(engine, name)["spec"]),
        "items": rec.items,
        "verdicts": [{**asdict(a), "judge_name": names.get(a.judge, a.judge)} for a in rec.attempts],
        "combined": combined,
        "humans": rec.pair_labels,
        "labels": [asdict(h) for h in rec.labels],
        "grid": grid,
        "prev": walk["prev"],
        "next": walk["next"],
        "v": walk["v"],
    }


def raw(engine: Engine, name: str, request_id: int) -> dict[str, Any]:
    """The request as sent (`messages`, `params`, `output_schema`) and the reply as received."""
    from judgepanel.simjudge import SIM_FINGERPRINT

    r = browse.raw_attempt(engine, name, request_id) if 0 < request_id <= MAX_ROW_ID else None
    if r is None:
        raise NotFound(f"campaign {name!r} has no request {request_id}")
    sim = r.system_fingerprint == SIM_FINGERPRINT or str(r.model_returned or "").startswith("sim/")
    source = imported_source_text(browse.campaign_row(engine, name)["spec"])
    return {"campaign": name, "simulated": sim, "source": source, **asdict(r)}


def rubrics(engine: Engine) -> dict[str, Any]:
    """`rubric list --json`: `rubrics` (name, latest_version, versions, clauses, dimensions)."""
    from judgepanel.store.rubrics import list_rubrics

    return {"rubrics": list_rubrics(engine)}


def rubric(engine: Engine, name: str) -> dict[str, Any]:
    """`rubric show --json` of the current version (the newest a person added, what `rubric show
    NAME` shows), and `history`: each version with its author, note and the `rubric diff --json`
    (changed, added, removed) from its predecessor."""
    from judgepanel.rubrics import diff_rubrics
    from judgepanel.store.rubrics import get_rubric, rubric_versions

    versions = rubric_versions(engine, name)
    if not versions:
        raise NotFound(f"no rubric named {name!r}")
    docs = {v: get_rubric(engine, f"{name}@{v}") for v in versions}
    latest = docs[get_rubric(engine, name).version]
    history = []
    for v in versions:
        r = docs[v]
        parent = docs.get(r.parent_version) if r.parent_version else docs.get(v - 1)
        history.append(
            {
                **r.as_dict(),
                "clauses": [{"id": c.id, "text": c.text} for c in r.doc.clauses],
                "diff_from": parent.version if parent else None,
                "diff": diff_rubrics(parent.doc, r.doc).as_dict() if parent else None,
                "texts_before": {c.id: c.text for c in parent.doc.clauses} if parent else {},
            }
        )
    return {
        **latest.as_dict(),
        "versions": versions,
        "document": latest.doc.to_dict(),
        "history": history,
        # a version written by a simulated editor
        "simulated": any(str(h.get("editor") or "").startswith("sim:") for h in history),
    }


def iterations(engine: Engine) -> dict[str, Any]:
    """`repair list --json`: `iterations`."""
    from judgepanel.store.repair import list_iterations

    rows = list_iterations(engine)
    return {"iterations": rows, "simulated": any(r["simulated"] for r in rows)}


def iteration(engine: Engine, name: str) -> dict[str, Any]:
    """`repair status --json` (with its `chain`) plus `comparison` (`repair compare --json`, None
    until compared), `selection`, `rewrites` (clause id -> old, new, reason), `checkers` (`repair
    checkers`: every proposal, kept or refused) and `simulated`."""
    from judgepanel.repair.iteration import chain, judges_named
    from judgepanel.store.checkers import iteration_checkers
    from judgepanel.store.repair import get_iteration
    from judgepanel.store.simulated import iteration_simulated

    rec = get_iteration(engine, name)
    sim = iteration_simulated(engine, rec.inputs, rec.campaigns)
    return {
        **rec.status_dict(),
        **judges_named(rec),  # as `repair status --json`
        "simulated": sim,
        "chain": chain(engine, name),  # as `repair status --json`
        "comparison": rec.comparison,
        "selection": rec.selection,
        "rewrites": rec.rewrites,
        "checkers": [r.as_dict() for r in iteration_checkers(engine, name)],
    }


def _alignment_simulated(rec: Any) -> bool:
    if rec.comparison is not None:
        return bool(rec.comparison.get("simulated"))
    inp = rec.inputs
    specs = [inp.get("judge"), *(inp.get("grid_judges") or []), inp.get("editor")]
    return any(str(s).startswith("sim:") for s in specs if s)


def alignments(engine: Engine) -> dict[str, Any]:
    """Every alignment: `alignment`, `method`, `dataset`, `judge`, `steps` (as `align status
    --json`), `compared`, and from its comparison (`align compare --json`) `gain_survives`, `gain`
    (the verdict on the choice statistic, "too few groups" below 5 articles), the QWK `delta` of
    the aligned judge and `simulated`."""
    from judgepanel.store.align import get_alignment, list_alignments

    rows = []
    for row in list_alignments(engine):
        rec = get_alignment(engine, row["alignment"])
        comp = rec.comparison or {}
        delta = (comp.get("delta") or {}).get("aligned_vs_original", {}).get("qwk")
        rows.append(
            {
                "alignment": rec.name,
                "method": rec.method,
                "dataset": rec.dataset,
                "judge": rec.inputs.get("judge"),
                "human_group": rec.inputs.get("human_group"),
                "steps": rec.steps,
                "compared": rec.comparison is not None,
                "delta_qwk": delta,
                "gain_survives": comp.get("gain_survives"),
                "gain": comp.get("gain"),
                "simulated": _alignment_simulated(rec),
            }
        )
    return {"alignments": rows, "simulated": any(r["simulated"] for r in rows)}


def alignment(engine: Engine, name: str) -> dict[str, Any]:
    """`align status --json` (`alignment`, `steps`, `campaigns`, `inputs`, `choices`, `templates`)
    merged with the stored comparison, whose keys are those of `align compare --json`
    (`versions`, `delta`, `overfit_gap`, `equivalence`, `cost_usd`, `simulated`, …; absent until
    compared); `compared` says whether there is one yet. The comparison is not repeated under a
    `comparison` key: one copy, with the keys of the matching `--json` command."""
    from judgepanel.store.align import get_alignment

    rec = get_alignment(engine, name)
    return {
        **(rec.comparison or {}),
        **rec.status_dict(),  # the same alignment, dataset and method; the row's name wins
        "compared": rec.comparison is not None,
        "simulated": _alignment_simulated(rec),
    }
