"""The owner's view of a queue (`annotate status --json`, the owner's page and its `/api` twin):
progress per annotator, time per label, labels per unit, inter-annotator agreement, each stored
judge's agreement with the humans, and the certification state, recomputed from the labels as
they stand.

Boundary: read through `store.annotation_read`, compute with `metrics` (the anytime-valid
alt-test of `metrics.sequential`, the fixed-sample `metrics.validation.alt_test` beside it for
reference, Krippendorff's α with a bootstrap interval, `metrics.bias.position_bias` for the human
side of a pairwise queue), and shape one dict; `refresh_decided` records when every judge is
decided (what `--stop-when-decided` stops on).

The certification is computed on *complete* units only (every seat labelled), in the order they
were completed: that order is the stream the anytime test watches, and a complete unit's set of
humans no longer changes. The fixed-sample alt-test uses every unit with two or more labels.
"""

from __future__ import annotations

import copy
import math
import statistics
import threading
from collections import OrderedDict
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Engine

from judgepanel.errors import BadInput
from judgepanel.store import annotation as store
from judgepanel.store import annotation_read as read
from judgepanel.store.engine import PerEngine
from judgepanel.store.tables import utcnow

N_BOOT = 200
MIN_INSTANCES = 30  # a human joins the test with this many instances (as the alt-test's default)


def _distinct(panel: read.QueuePanel) -> set[Any]:
    out: set[Any] = set()
    for d in (*panel.humans.values(), *panel.judges.values()):
        out.update(d.values())  # a set of the values: the types are then checked once per value
    return out


def _encode(
    panel: read.QueuePanel, names: list[str], judges: list[str], units: list[int], numeric: bool
) -> tuple[Any, Any, tuple[str, ...]]:
    """(humans units × H, judges units × J) as numbers (numeric labels) or codes into the sorted
    label texts, NaN where missing; and those texts (numbers written as `%.15g`)."""
    every = _distinct(panel)
    if numeric:
        texts = tuple(f"{v:.15g}" for v in sorted(every, key=float))
        code: dict[Any, float] = {}
    else:
        shown = {v: (f"{v:.15g}" if isinstance(v, float) else str(v)) for v in every}
        texts = tuple(sorted(set(shown.values())))
        index = {t: float(c) for c, t in enumerate(texts)}
        code = {v: index[t] for v, t in shown.items()}
    ids = np.asarray(units, dtype=np.int64)
    lookup = np.full(int(ids.max()) + 1 if ids.size else 1, -1, dtype=np.int64)
    lookup[ids] = np.arange(ids.size)

    def matrix(columns: list[str], source: dict[str, dict[int, Any]]) -> Any:
        out = np.full((len(units), len(columns)), np.nan)
        for c, name in enumerate(columns):
            d = source[name]
            if not d:
                continue
            keys = np.fromiter(d.keys(), dtype=np.int64, count=len(d))
            values = (
                np.fromiter(d.values(), dtype=np.float64, count=len(d))
                if numeric
                else np.fromiter((code[v] for v in d.values()), dtype=np.float64, count=len(d))
            )
            inside = keys < lookup.size
            rows = np.full(keys.size, -1, dtype=np.int64)
            rows[inside] = lookup[keys[inside]]
            ok = rows >= 0
            out[rows[ok], c] = values[ok]
        return out

    return matrix(names, panel.humans), matrix(judges, panel.judges), texts


def _numeric(panel: read.QueuePanel) -> bool:
    return all(type(v) is float for v in _distinct(panel))


def _alpha(h: Any, level: str, n_boot: int, seed: int, draws: Any = None) -> dict[str, Any]:
    """Krippendorff's α among the humans with a unit-bootstrap percentile interval; value None
    when undefined (no unit with two labels, or a single value among them). `draws`: the resample
    counts `metrics.bootstrap.count_matrix(units, n_boot, seed)` gives (the very draws
    `bootstrap_ci` makes), kept by the caller between recomputations."""
    from judgepanel.metrics.agreement import krippendorff_alpha, unit_statistic
    from judgepanel.metrics.bootstrap import bootstrap_ci, interval

    pairable = int(((~np.isnan(h)).sum(axis=1) >= 2).sum()) if h.size else 0
    out: dict[str, Any] = {"metric": "alpha", "level": level, "value": None, "ci": None, "n_units": pairable}
    if pairable == 0 or h.shape[1] < 2:
        return out
    value = krippendorff_alpha(h, level)
    if not math.isfinite(value):
        return out
    out["value"] = value
    if pairable >= 2 and n_boot > 0:
        if draws is None:
            ci = bootstrap_ci("alpha", h, level=level, n_boot=n_boot, seed=seed)
        else:  # bootstrap_ci's percentile interval from the same draws, without drawing them again
            stat = unit_statistic("alpha", h, None, level)
            reps = np.concatenate(
                [
                    stat.finish(draws[b : b + 64].astype(np.float64) @ stat.contributions)
                    for b in range(0, n_boot, 64)
                ]
            )
            ci = interval(reps, stat.value(), confidence=0.95, method="percentile")
        if math.isfinite(ci.lo) and math.isfinite(ci.hi):
            out["ci"] = [ci.lo, ci.hi]
    return out


def _judge_alpha(h: Any, j: Any, level: str) -> float | None:
    from judgepanel.metrics.agreement import krippendorff_alpha

    both = np.column_stack([h, j])
    if int(((~np.isnan(both)).sum(axis=1) >= 2).sum()) == 0:
        return None
    v = krippendorff_alpha(both, level)
    return v if math.isfinite(v) else None


def certification(
    engine: Engine,
    name: str,
    *,
    n_boot: int = N_BOOT,
    panel: read.QueuePanel | None = None,
    decision_only: bool = False,
) -> dict[str, Any]:
    """The agreement and certification part of the status (see the module docstring);
    `decision_only`: each judge's state alone (what --stop-when-decided needs), no intervals,
    planner figures or fixed-sample reference. Without `panel`, the panel and the result come
    from the per-engine cache (`_Cache`): a result is reused only while the panel's key is the
    one it was computed under, and a panel is brought up to date by reading what changed."""
    if panel is not None:
        return _certification(store.queue(engine, name), panel, n_boot, decision_only, None)
    return _cache_of(engine).certification(engine, name, n_boot, decision_only)


def _certification(
    q: Any, panel: read.QueuePanel, n_boot: int, decision_only: bool, draws: Any
) -> dict[str, Any]:
    from judgepanel.metrics.sequential import advantages, certification_state, sequential_alt_test
    from judgepanel.metrics.validation import alt_test, make_scorer

    humans = sorted(n for n, d in panel.humans.items() if d)
    judges = sorted(panel.judges)
    numeric = _numeric(panel)
    scorer_name = q.scorer if (numeric or q.scorer != "neg-rmse") else "accuracy"
    units = list(panel.units)
    h, j, texts = _encode(panel, humans, judges, units, numeric)
    level = "interval" if numeric and q.kind == "pointwise" else "nominal"
    out: dict[str, Any] = {
        "humans": humans,
        "agreement": None if decision_only else _alpha(h, level, n_boot, 0, draws),
        "judges": {},
        "epsilon": q.epsilon,
        "q": q.q,
        "scorer": scorer_name,
        "min_instances": MIN_INSTANCES,
    }
    if not judges:
        out["note"] = "no stored judge has labelled these units: nothing to certify"
    scorer = make_scorer(scorer_name, texts)
    order = _completion_order(panel, units)
    for c, judge in enumerate(judges):
        entry: dict[str, Any] = (
            {} if decision_only else {"alpha_with_humans": _judge_alpha(h, j[:, [c]], level)}
        )
        if len(humans) < 2:
            entry |= {"state": "undecided", "message": "needs labels from at least 2 annotators"}
            out["judges"][judge] = entry
            continue
        d = advantages(h[order], j[order, c], scorer) if order.size else np.full((0, len(humans)), np.nan)
        streams = [d[:, k][~np.isnan(d[:, k])] for k in range(len(humans))]
        if decision_only:
            entry["state"] = certification_state(
                streams, epsilon=q.epsilon, q=q.q, min_instances=MIN_INSTANCES
            )
            out["judges"][judge] = entry
            continue
        w_j = [float(np.mean(s <= 0)) if s.size else None for s in streams]  # W_judge = 1 when D ≤ 0
        seq = sequential_alt_test(
            streams, epsilon=q.epsilon, q=q.q, names=humans, w_judge=w_j, min_instances=MIN_INSTANCES
        )
        entry |= seq.as_dict()
        entry["message"] = _message(seq.state, seq.epsilon, seq.certified_at, seq.labels_needed)
        try:
            fixed = alt_test(
                h, j[:, c], epsilon=q.epsilon, scorer=scorer, q=q.q, min_instances=MIN_INSTANCES, names=humans
            )
            entry["fixed_sample"] = {
                "omega": fixed.omega,
                "rho": fixed.rho,
                "passed": fixed.passed,
                "tested": fixed.tested,
            }
        except BadInput:
            entry["fixed_sample"] = None
        out["judges"][judge] = entry
    states = [e.get("state") for e in out["judges"].values()]
    out["decided"] = bool(states) and all(s in ("certified", "fails") for s in states)
    return out


class _Queue:
    """A queue's cached state: the panel and the key it stands at, the results computed on it, the
    bootstrap draws (they depend only on the number of units, n_boot and the seed)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.panel: read.QueuePanel | None = None
        self.key: read.PanelKey | None = None
        self.results: dict[tuple[int, bool], dict[str, Any]] = {}
        self.draws: dict[tuple[int, int], Any] = {}


class _Cache:
    """Per engine: queue name -> `_Queue`, the `SIZE` most recently used. Counters for tests and
    the benchmark: `reads` (whole panels read), `updates` (panels brought up to date from what
    changed), `computations` (results computed)."""

    SIZE = 8
    DRAWS_CELLS = 16_000_000  # keep the bootstrap counts (one byte each) up to this many

    def __init__(self) -> None:
        self.queues: OrderedDict[str, _Queue] = OrderedDict()
        self.lock = threading.Lock()
        self.reads = self.updates = self.computations = 0

    def _queue(self, name: str) -> _Queue:
        with self.lock:
            entry = self.queues.get(name)
            if entry is None:
                entry = self.queues[name] = _Queue()
            self.queues.move_to_end(name)
            while len(self.queues) > self.SIZE:
                self.queues.popitem(last=False)
            return entry

    def certification(self, engine: Engine, name: str, n_boot: int, decision_only: bool) -> dict[str, Any]:
        entry = self._queue(name)
        with entry.lock:
            fresh = None
            if entry.panel is not None and entry.key is not None:
                fresh = read.panel_update(engine, name, entry.panel, entry.key)
                if fresh is not None and fresh[1] != entry.key:
                    self.updates += 1
            if fresh is None:
                fresh = read.queue_panel_keyed(engine, name)
                self.reads += 1
            if fresh[1] != entry.key:
                entry.results = {}
            entry.panel, entry.key = fresh
            got = entry.results.get((n_boot, decision_only))
            if got is None:
                q = store.queue(engine, name)
                got = _certification(q, entry.panel, n_boot, decision_only, self._draws(entry, n_boot))
                entry.results[(n_boot, decision_only)] = got
                self.computations += 1
            return copy.deepcopy(got)

    def _draws(self, entry: _Queue, n_boot: int) -> Any:
        from judgepanel.metrics.bootstrap import count_matrix

        assert entry.panel is not None
        units = len(entry.panel.units)
        if n_boot <= 0 or units * n_boot > self.DRAWS_CELLS:
            return None
        got = entry.draws.get((units, n_boot))
        if got is None:
            counts = count_matrix(units, n_boot, 0)
            if counts.size and counts.max() > 255:  # a unit drawn 256 times: never at these sizes
                return None
            got = counts.astype(np.uint8)
            entry.draws = {(units, n_boot): got}  # one size kept: the queue's
        return got


_cache_of = PerEngine(_Cache)


def _completion_order(panel: read.QueuePanel, units: list[int]) -> Any:
    """Rows (into `units`) of the complete units in the order they were completed: sorted by
    (time, unit id) as pairs sort. SQLite's driver returns the times as ISO texts, sorted here in
    one numpy sort; other drivers' datetimes are sorted as pairs."""
    if not panel.completed:
        return np.zeros(0, dtype=np.int64)
    done = np.fromiter(panel.completed.keys(), dtype=np.int64, count=len(panel.completed))
    times = list(panel.completed.values())
    if set(map(type, times)) == {str}:
        by = np.lexsort((done, np.array(times)))
    else:
        by = np.asarray(sorted(range(len(times)), key=lambda k: (times[k], done[k])), dtype=np.int64)
    ids = np.asarray(units, dtype=np.int64)
    where = np.argsort(ids, kind="stable")
    return np.asarray(where[np.searchsorted(ids, done[by], sorter=where)], dtype=np.int64)


def _message(state: str, epsilon: float, certified_at: float | None, needed: int | None) -> str:
    if state == "certified":
        return f"certified at ε = {epsilon:g}" + (
            f" (and at every ε ≥ {certified_at:g})"
            if certified_at is not None and certified_at < epsilon
            else ""
        )
    if state == "fails":
        return f"fails at ε = {epsilon:g}: most annotators are shown better than the judge by more than ε"
    if needed is None:
        return f"undecided; on the labels so far no number of labels certifies it at ε = {epsilon:g}"
    return f"undecided; about {needed} more labels needed"


def human_position_bias(engine: Engine, name: str) -> dict[str, Any] | None:
    """Position bias of the queue's humans, computed exactly as `metrics bias` computes a judge's:
    pairs seen in both orders (the first label given in order AB and the first in BA, by
    different annotators of the group) as the (v_AB, v_BA) presented verdicts of
    `metrics.bias.position_bias`; None for a pointwise queue."""
    from judgepanel.metrics.bias import position_bias

    q = store.queue(engine, name)
    if q.kind != "pairwise":
        return None
    first: dict[tuple[int, str], str] = {}
    for unit, order, presented in read.presented_pairs(engine, name):
        first.setdefault((unit, order), presented)
    both = sorted({u for u, o in first if o == "AB"} & {u for u, o in first if o == "BA"})
    ab = [first[(u, "AB")] for u in both]
    ba = [first[(u, "BA")] for u in both]
    return position_bias(ab, ba).as_dict()


def status(engine: Engine, name: str, *, n_boot: int = N_BOOT, now: datetime | None = None) -> dict[str, Any]:
    """What `annotate status --json` prints and the owner's page shows."""
    now = now or utcnow()
    rows = read.queue_rows(engine, name, now)
    q = rows.queue
    members = {}
    for m in rows.members:
        members[m.name] = {
            "labels": m.labels,
            "edits": m.edits,
            "skips": m.skips,
            "reserved": m.reserved,
            "seconds_per_label": statistics.median(m.seconds) if m.seconds else None,
            "revoked": m.revoked,
            "last_label_at": None
            if m.last_label_at is None
            else m.last_label_at.isoformat(timespec="seconds"),
        }
    cert = certification(engine, name, n_boot=n_boot)
    return {
        "queue": q.name,
        "dataset": rows.dataset,
        "kind": q.kind,
        "dimension": q.dimension or None,
        "status": q.status,
        "order": q.item_order,
        "per_item": q.per_item,
        "access": q.access,
        "group": q.group_name,
        "rubric": rows.rubric,
        "stop_when_decided": bool(q.stop_when_decided),
        "decided_at": None if q.decided_at is None else q.decided_at.isoformat(timespec="seconds"),
        "progress": {
            "units": rows.units,
            "complete": rows.complete,
            "labels_done": rows.done,
            "labels_total": rows.seats,
            "reserved": rows.reserved,
        },
        "labels_per_unit": {str(k): v for k, v in rows.per_unit_done.items()},
        "annotators": members,
        "agreement": cert["agreement"],
        "judges": cert["judges"],
        "certification": {
            "epsilon": cert["epsilon"],
            "q": cert["q"],
            "scorer": cert["scorer"],
            "min_instances": cert["min_instances"],
            "decided": cert["decided"],
            "rule": "anytime-valid alt-test (docs/annotation.md)",
        },
        "human_position_bias": human_position_bias(engine, name),
    }


def refresh_decided(engine: Engine, name: str) -> bool:
    """Recompute the certification and record when every judge is first decided; whether the
    queue now stops handing out units (`--stop-when-decided`)."""
    q = store.queue(engine, name)
    if not q.stop_when_decided:
        return False
    if q.decided_at is not None:
        return True
    cert = certification(engine, name, n_boot=0, decision_only=True)
    if cert["decided"]:
        store.set_decided(engine, q.id, utcnow())
        return True
    return False
