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
from typing import Any

from sqlalchemy import Engine

from judgepanel.errors import BadInput, NotFound
from judgepanel.runner.pace import campaign_pace, stored_paces
from judgepanel.store import browse
from judgepanel.store.campaigns import campaign_judge_names

PAGE_SIZES = (25, 50, 100, 200)


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


@dataclass
class Tracker:
    """Spend and simulated-ness per campaign, summed incrementally over new responses."""

    last_response: int = 0
    spend: dict[int, _Spend] = field(default_factory=lambda: defaultdict(_Spend))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def update(self, engine: Engine) -> None:
        with self.lock:
            for cid, newest, n, cost, priced, sim in browse.spend_since(engine, self.last_response):
                s = self.spend[cid]
                s.calls += n
                s.cost += cost
                s.priced += priced
                s.simulated = s.simulated or sim
                self.last_response = max(self.last_response, newest)


def campaigns(engine: Engine, tracker: Tracker) -> dict[str, Any]:
    """`campaign list --json` (`campaigns`: name, dataset, protocol, judges, jobs, done, failed,
    pending, status, created_at), each row with `cost_usd`, `max_cost_usd`, `simulated`,
    `failed_by_class` and `progress` {`calls_per_s`, `eta_s`, `active`, `window_s`,
    `mean_latency_s`, `concurrency`} (`runner.pace`; a figure that cannot be known yet is null)."""
    from judgepanel.store.campaigns import list_campaigns

    tracker.update(engine)
    rows = list_campaigns(engine)
    ids = {v: k for k, v in browse.campaign_names_by_id(engine).items()}
    failed: dict[int, dict[str, int]] = defaultdict(dict)
    for cid, cls, n in browse.failed_jobs_by_class(engine):
        failed[cid][cls or "unknown"] = n
    for r in rows:
        r["_id"] = ids[r["name"]]
    # rate over a window that scales with the judges' latency, ETA from latency and concurrency,
    # "active" from live leases: `runner.pace`, as `campaign status` computes it
    paces = stored_paces(engine, {r["_id"]: r["pending"] for r in rows})
    progress = {r["name"]: paces[r["_id"]].as_dict() for r in rows}
    specs = {r["name"]: r for r in rows}
    out = []
    for r in rows:
        cid = r.pop("_id")
        s = tracker.spend.get(cid, _Spend())
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
            }
        )
    return {"campaigns": out, "simulated": any(c["simulated"] for c in out)}


def campaign(engine: Engine, name: str, *, n_boot: int = 200) -> dict[str, Any]:
    """`campaign status --json` (jobs, done, failed, pending, calls, cost_usd, …), with
    `campaign`, `protocol`, `judges`, `simulated`, `agreement` (rows as in the report), `bias`
    (`metrics bias --json`: `judges` {name: {…}}), `matrix` (`metrics matrix --json`: `raters`,
    `kappa`, `clusters`), `versus`, `failures` (per kind: count and a first example) and
    `cost_split` (list price, saved by the prompt cache and by batch APIs, paid)."""
    from judgepanel.analysis.checkers import checker_use
    from judgepanel.report.build import campaign_report
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
        "agreement": [],
        "bias": {"judges": {}},
        "matrix": {"raters": [], "kappa": [], "clusters": [], "groups": []},
        "versus": [],
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
    if info["dataset_id"] is None or not st["done"]:
        out["notes"].append("No figures: the campaign has no finished judge verdicts on a dataset.")
        return out
    try:
        rep = campaign_report(engine, name, n_boot=n_boot, cases=0)
    except BadInput as exc:
        out["notes"].append(str(exc))
        return out
    out["agreement"] = [
        {**asdict(a), "value": _finite(a.value), "ci": list(a.ci) if a.ci else None} for a in rep.agreement
    ]
    # as `metrics bias --json`: keyed by the judge's short name, its spec inside
    out["bias"] = {
        "judges": {
            names.get(b["judge"], b["judge"]): {
                **{k: v for k, v in b.items() if k != "judge"},
                "spec": b["judge"],
            }
            for b in rep.bias
        }
    }
    from judgepanel.report.render import rater_label

    out["matrix"] = {
        # judges by their short names, as `metrics matrix --json` names its judge columns
        "raters": [rater_label(n, rep.facts) for n in rep.kappa_names],
        "kappa": rep.kappa,
        "clusters": [[rater_label(n, rep.facts) for n in cl] for cl in rep.clusters],
        "groups": rep.kappa_groups,
    }
    out["versus"] = [{**asdict(v), "judge_name": names.get(v.judge, v.judge)} for v in rep.versus]
    out["notes"] += rep.notes
    return out


@dataclass(frozen=True)
class VerdictQuery:
    filter: browse.VerdictFilter
    after: int | None
    limit: int


def parse_verdict_query(params: dict[str, str]) -> VerdictQuery:
    """The query string of the verdict table; a bad value is a BadInput (HTTP 400)."""

    def flag(key: str) -> bool:
        v = params.get(key, "")
        if v not in ("", "0", "1", "true", "false", "on"):
            raise BadInput(f"{key} must be 0 or 1, got {v!r}")
        return v in ("1", "true", "on")

    order = params.get("order") or None
    if order is not None and order not in browse.ORDERS:
        raise BadInput(f"order must be AB or BA, got {order!r}")
    kind = params.get("failure_kind") or None
    if kind is not None and kind not in browse.FAILURE_KINDS:
        raise BadInput(f"failure_kind must be one of {', '.join(browse.FAILURE_KINDS)}, got {kind!r}")
    try:
        after = int(params["after"]) if params.get("after") else None
        limit = int(params.get("limit") or 50)
    except ValueError:
        raise BadInput("after and limit must be whole numbers") from None
    if limit not in PAGE_SIZES:
        raise BadInput(f"limit must be one of {', '.join(map(str, PAGE_SIZES))}, got {limit}")
    return VerdictQuery(
        browse.VerdictFilter(
            judge=params.get("judge") or None,
            dimension=params.get("dimension") or None,
            condition=params.get("condition") or None,
            order=order,
            failure_kind=kind,
            judges_disagree=flag("judges_disagree"),
            humans_disagree=flag("humans_disagree"),
        ),
        after,
        limit,
    )


def verdicts(engine: Engine, name: str, q: VerdictQuery) -> dict[str, Any]:
    """`rows` with the column names of `export --what verdicts` (campaign, judge, unit, order,
    condition, dimension, repeat, attempt, parse_status, failure_kind, value, value_presented,
    score, rationale, created_at) plus `verdict_id` and `case` (the case's unit id); `next_after`
    (the keyset cursor of the next page, None on the last) and the `filters` a page offers."""
    from judgepanel.store.simulated import simulated_campaigns

    info = browse.campaign_row(engine, name)
    names = campaign_judge_names(engine, name)
    rows, more = browse.verdict_page(engine, name, q.filter, after=q.after, limit=q.limit)
    labels = browse.unit_labels(engine, info["protocol"], sorted({r.unit for r in rows}))
    spec = info["spec"]
    return {
        "campaign": name,
        "protocol": info["protocol"],
        "simulated": simulated_campaigns(engine, [name]).get(name, False),
        "rows": [
            {
                "verdict_id": r.verdict_id,
                "campaign": name,
                "judge": r.judge,
                "judge_name": names.get(r.judge, r.judge),
                "unit": labels.get(r.unit, str(r.unit)),
                "case": r.unit,
                "order": r.order,
                "condition": r.condition,
                "dimension": r.dimension,
                "repeat": r.repeat,
                "attempt": r.attempt,
                "parse_status": r.parse_status,
                "failure_kind": r.failure_kind,
                "value": r.value,
                "value_presented": r.value_presented,
                "score": r.score,
                "rationale": r.rationale,
                "created_at": r.created_at.isoformat(timespec="seconds") if r.created_at else None,
            }
            for r in rows
        ],
        "next_after": rows[-1].verdict_id if rows and more else None,
        "limit": q.limit,
        "filters": {
            "judge": info["judges"],
            "judge_names": {j: names.get(j, j) for j in info["judges"]},
            "dimension": list(spec.get("dimensions") or ([info["dimension"]] if info["dimension"] else [])),
            "condition": list(spec.get("conditions") or ([info["condition"]] if info["condition"] else [])),
            "order": list(browse.ORDERS) if info["protocol"] == "pairwise" else [],
            "failure_kind": list(browse.FAILURE_KINDS),
        },
        "applied": {k: v for k, v in asdict(q.filter).items() if v},
    }


def case(engine: Engine, name: str, unit: int) -> dict[str, Any]:
    """One case: `items` (external_id, input, output, system), `verdicts` (every attempt of every
    judge: judge, order, condition, dimension, repeat, attempt, value, rationale, …, request_id for
    the raw request and reply), `humans` (pair labels by annotator) and `labels` (item labels)."""
    from judgepanel.store.simulated import simulated_campaigns

    rec = browse.case_record(engine, name, unit)
    if rec is None:
        raise NotFound(f"campaign {name!r} has no case {unit}")
    names = campaign_judge_names(engine, name)
    return {
        "campaign": name,
        "protocol": rec.protocol,
        "case": unit,
        "simulated": simulated_campaigns(engine, [name]).get(name, False),
        "items": rec.items,
        "verdicts": [{**asdict(a), "judge_name": names.get(a.judge, a.judge)} for a in rec.attempts],
        "humans": rec.pair_labels,
        "labels": [asdict(h) for h in rec.labels],
    }


def raw(engine: Engine, name: str, request_id: int) -> dict[str, Any]:
    """The request as sent (`messages`, `params`, `output_schema`) and the reply as received."""
    from judgepanel.simjudge import SIM_FINGERPRINT

    r = browse.raw_attempt(engine, name, request_id)
    if r is None:
        raise NotFound(f"campaign {name!r} has no request {request_id}")
    sim = r.system_fingerprint == SIM_FINGERPRINT or str(r.model_returned or "").startswith("sim/")
    return {"campaign": name, "simulated": sim, **asdict(r)}


def rubrics(engine: Engine) -> dict[str, Any]:
    """`rubric list --json`: `rubrics` (name, latest_version, versions, clauses, dimensions)."""
    from judgepanel.store.rubrics import list_rubrics

    return {"rubrics": list_rubrics(engine)}


def rubric(engine: Engine, name: str) -> dict[str, Any]:
    """`rubric show --json` of the latest version, and `history`: each version with its author,
    note and the `rubric diff --json` (changed, added, removed) from its predecessor."""
    from judgepanel.rubrics import diff_rubrics
    from judgepanel.store.rubrics import get_rubric, rubric_versions

    versions = rubric_versions(engine, name)
    if not versions:
        raise NotFound(f"no rubric named {name!r}")
    docs = {v: get_rubric(engine, f"{name}@{v}") for v in versions}
    latest = docs[versions[-1]]
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
    --json`), `compared`, and from its comparison (`align compare --json`) `gain_survives`, the
    QWK `delta` of the aligned judge and `simulated`."""
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
