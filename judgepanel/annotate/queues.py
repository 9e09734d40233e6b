"""Creating annotation queues and inviting their annotators (`annotate create / invite / revoke /
list / delete / close`).

Boundary: choose a queue's units and their order from what the store holds, mint tokens, and hand
rows to `store.annotation`; the statistics of the orders come from `metrics.design`.

Orders (`--items N --order …`, seeded):

- ``random``: N items drawn uniformly, in random order;
- ``stratified``: N items drawn proportionally from strata (the stored judges' median label,
  else the item's group such as its article; `metrics.design.stratified_pick`), and ordered so
  that every prefix of the queue is itself close to proportional (each stratum's items spread
  evenly over the queue), so stopping early still sees every stratum;
- ``disagreement``: the items the stored judges disagree on most first (variance of their
  numeric labels, else one minus the modal share), ties in random order; items fewer than two
  judges labelled come last.

`--allocation A` takes the units and who labels what from a `plan allocate` allocation; `--pairs
P` makes a pairwise queue of a pair set's pairs (in the set's seeded order by default).
"""

from __future__ import annotations

import math
import random
import secrets
import statistics
import urllib.parse
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Engine

from judgepanel.errors import BadInput
from judgepanel.store import annotation as store
from judgepanel.store import annotation_read as read

KINDS = ("pointwise", "pairwise")
ORDERS = ("random", "stratified", "disagreement")
ACCESS = ("any", "assigned")
SCORERS = ("accuracy", "neg-rmse")
TOKEN_PREFIX = "jpa-"  # what `providers.errors.redact` recognises, as it does `sk-` keys
MAX_INSTRUCTIONS = 100_000


@dataclass(frozen=True)
class CreateOptions:
    name: str
    dataset: str | None
    kind: str = "pointwise"
    dimension: str | None = None
    rubric: str | None = None
    instructions: str | None = None
    allocation: str | None = None
    items: int | None = None
    order: str = "random"
    pairs: str | None = None
    per_item: int = 2
    reserve_minutes: float = 30.0
    access: str = "any"
    group: str | None = None
    seed: int = 0
    epsilon: float = 0.2
    q: float = 0.05
    scorer: str | None = None
    stop_when_decided: bool = False
    scale: str | None = None


def read_instructions(path: Path | None) -> str | None:
    if path is None:
        return None
    from judgepanel.inputs import read_text

    if not path.exists():
        raise BadInput(f"cannot read --instructions {path}: no such file")
    # a regular file only, read up to a bound (issue 29 §6: /dev/zero or a FIFO was read for ever)
    text = read_text(path, "--instructions", max_bytes=4 * MAX_INSTRUCTIONS)
    if len(text) > MAX_INSTRUCTIONS:
        raise BadInput(f"--instructions {path} holds more than {MAX_INSTRUCTIONS:,} characters")
    return text


def parse_scale(text: str | None, levels: Sequence[int] | None) -> tuple[str, ...]:
    """`1-5` (integers lo..hi) or `a,b,c`; default the rubric dimension's levels, else 1..5."""
    if text is None:
        return tuple(str(v) for v in (levels or range(1, 6)))
    if "," not in text and "-" in text.strip("-"):
        lo, _, hi = text.partition("-")
        try:
            a, b = int(lo), int(hi)
        except ValueError:
            raise BadInput(f"--scale takes LO-HI or a,b,c, got {text!r}") from None
        if not a < b or b - a > 20:
            raise BadInput(f"--scale {text!r}: need LO < HI and at most 21 levels")
        return tuple(str(v) for v in range(a, b + 1))
    values = tuple(v.strip() for v in text.split(",") if v.strip())
    if len(values) < 2 or len(set(values)) != len(values) or any(len(v) > 20 for v in values):
        raise BadInput(f"--scale {text!r}: give at least two distinct values of at most 20 characters")
    return values


def _check(o: CreateOptions) -> None:
    if not o.name.strip() or len(o.name) > 200 or "/" in o.name:
        raise BadInput("a queue name must be 1-200 characters without '/'")
    if o.name in (".", ".."):  # a browser resolves the link /a/.. to / (and /a/. to /a/)
        raise BadInput(f"a queue name cannot be {o.name!r}: its link would lead elsewhere")
    if o.kind not in KINDS:
        raise BadInput(f"--kind must be one of {', '.join(KINDS)}, got {o.kind!r}")
    if o.order not in ORDERS:
        raise BadInput(f"--order must be one of {', '.join(ORDERS)}, got {o.order!r}")
    if o.access not in ACCESS:
        raise BadInput(f"--access must be one of {', '.join(ACCESS)}, got {o.access!r}")
    if o.scorer is not None and o.scorer not in SCORERS:
        raise BadInput(f"--scorer must be one of {', '.join(SCORERS)}, got {o.scorer!r}")
    sources = [x for x in (o.allocation, o.items, o.pairs) if x is not None]
    if o.allocation is not None and (o.items is not None or o.pairs is not None):
        raise BadInput("give the items one way: --allocation A, --items N [--order …], or --pairs P")
    if not sources:
        raise BadInput("say which items: --allocation A, --items N [--order …], or --pairs P")
    if (o.pairs is None) != (o.kind == "pointwise"):
        raise BadInput("a pairwise queue labels the pairs of --pairs P; a pointwise queue takes items")
    if o.items is not None and o.items < 1:
        raise BadInput(f"--items must be at least 1, got {o.items}")
    if not 1 <= o.per_item <= 50:
        raise BadInput(f"--per-item must be between 1 and 50, got {o.per_item}")
    if not 0 < o.reserve_minutes <= 7 * 24 * 60:
        raise BadInput(f"--reserve-minutes must be above 0 and at most a week, got {o.reserve_minutes:g}")
    if o.access == "assigned" and o.allocation is None:
        raise BadInput("--access assigned needs --allocation (it says which annotator labels which item)")
    if not 0.0 <= o.epsilon < 1.0:
        raise BadInput(f"--epsilon must be in [0, 1), got {o.epsilon:g}")
    if not 0.0 < o.q < 1.0:
        raise BadInput(f"--q must be in (0, 1), got {o.q:g}")


def _seeded_keys(n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.random() for _ in range(n)]


def _disagreement(labels: Sequence[str]) -> float:
    if len(labels) < 2:
        return -math.inf
    nums = [float(v) for v in labels if _is_number(v)]
    if len(nums) == len(labels):
        return statistics.pvariance(nums)
    return 1.0 - Counter(labels).most_common(1)[0][1] / len(labels)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _as_text(v: read.Value) -> str:
    return f"{v:.15g}" if isinstance(v, float) else v


def _stratum(labels: Sequence[str]) -> str | None:
    if not labels:
        return None
    if all(_is_number(v) for v in labels):
        return f"{round(statistics.median(float(v) for v in labels)):g}"
    return Counter(labels).most_common(1)[0][0]


def order_units(
    units: Sequence[read.SourceUnit],
    order: str,
    n: int | None,
    seed: int,
    judges: dict[str, dict[int, read.Value]],
) -> list[read.SourceUnit]:
    """The units a queue gets, in the order it hands them out (module docstring)."""
    key = [u.item_id if u.item_id is not None else u.pair_id for u in units]
    per_unit = [[_as_text(j[k]) for j in judges.values() if k in j] for k in key]
    keys = _seeded_keys(len(units), seed)
    count = len(units) if n is None else min(n, len(units))
    if order == "random":
        idx = sorted(range(len(units)), key=lambda i: keys[i])[:count]
        return [units[i] for i in idx]
    if order == "disagreement":
        if sum(1 for labels in per_unit if len(labels) >= 2) == 0:
            raise BadInput(
                "--order disagreement needs the labels of at least two stored judges on these items"
            )
        idx = sorted(range(len(units)), key=lambda i: (-_disagreement(per_unit[i]), keys[i]))[:count]
        return [units[i] for i in idx]
    from judgepanel.metrics.design import stratified_pick

    names = [_stratum(labels) or f"group:{units[i].group}" for i, labels in enumerate(per_unit)]
    codes = {s: c for c, s in enumerate(sorted(set(names)))}
    strata = np.array([[codes[s] for s in names]], dtype=np.int64)
    picked = stratified_pick(strata, len(codes), count, np.array([keys]))[0]
    chosen = [i for i in range(len(units)) if picked[i]]
    # spread each stratum evenly over the queue: its j-th item (of m) sits at (j + ½) / m
    by: dict[str, list[int]] = {}
    for i in sorted(chosen, key=lambda i: keys[i]):
        by.setdefault(names[i], []).append(i)
    place = {i: ((j + 0.5) / len(members), keys[i]) for members in by.values() for j, i in enumerate(members)}
    return [units[i] for i in sorted(chosen, key=lambda i: place[i])]


def create(engine: Engine, o: CreateOptions) -> dict[str, Any]:
    """Make the queue; returns what `annotate create --json` prints."""
    _check(o)
    rubric = None
    levels: Sequence[int] | None = None
    if o.rubric is not None:
        from judgepanel.store.rubrics import get_rubric

        rubric = get_rubric(engine, o.rubric)
        if o.dimension is None:
            raise BadInput("--rubric shows one dimension's clauses: name it with --dimension")
        levels = rubric.doc.dimension(o.dimension).levels
    pair_set_id = allocation_id = None
    if o.pairs is not None:
        pair_set_id, ds_id, units = read.pair_units(engine, o.pairs)
        if o.dataset is not None and read.dataset_id(engine, o.dataset) != ds_id:
            raise BadInput(f"pair set {o.pairs!r} is not drawn from dataset {o.dataset!r}")
        source, order = "pairs", o.order
    elif o.allocation is not None:
        allocation_id, ds_id, units = read.allocation_units(engine, o.allocation)
        if o.dataset is not None and read.dataset_id(engine, o.dataset) != ds_id:
            raise BadInput(f"allocation {o.allocation!r} is not of dataset {o.dataset!r}")
        source, order = "allocation", "allocation"
    else:
        if o.dataset is None:
            raise BadInput("--items needs --dataset D")
        ds_id = read.dataset_id(engine, o.dataset)
        units = read.dataset_items(engine, ds_id)
        source, order = "items", o.order
    dimension = o.dimension or ""
    if source != "allocation":
        judges = read.dataset_judge_labels(engine, ds_id, dimension, pair_set_id=pair_set_id)
        units = order_units(units, order, o.items, o.seed, judges)
    scale = ("A", "B", "T") if o.kind == "pairwise" else parse_scale(o.scale, levels)
    numeric = all(_is_number(v) for v in scale)
    scorer = o.scorer or ("neg-rmse" if numeric and o.kind == "pointwise" else "accuracy")
    if scorer == "neg-rmse" and not numeric:
        raise BadInput("--scorer neg-rmse needs a numeric scale")
    assigned = o.access == "assigned"
    spec = store.NewQueue(
        name=o.name,
        dataset_id=ds_id,
        kind=o.kind,
        dimension=dimension,
        scale=scale,
        source=source,
        item_order=order,
        seed=o.seed,
        per_item=o.per_item if source != "allocation" else max(len(u.assignees) for u in units),
        reserve_minutes=o.reserve_minutes,
        access=o.access,
        group_name=o.group or o.name,
        epsilon=o.epsilon,
        q=o.q,
        scorer=scorer,
        stop_when_decided=o.stop_when_decided,
        rubric_version_id=None if rubric is None else rubric.version_id,
        instructions=o.instructions,
        allocation_id=allocation_id,
        pair_set_id=pair_set_id,
    )
    rows = [
        store.NewUnit(
            u.item_id,
            u.pair_id,
            u.assignees if assigned else (),
            len(u.assignees) if source == "allocation" and not assigned else None,
        )
        for u in units
    ]
    store.create_queue(engine, spec, rows)
    return {
        "queue": o.name,
        "kind": o.kind,
        "units": len(rows),
        "labels_needed": sum(len(r.assignees) or r.seats or spec.per_item for r in rows),
        "per_item": spec.per_item,
        "order": order,
        "group": spec.group_name,
        "scale": list(scale),
        "scorer": scorer,
        "epsilon": o.epsilon,
    }


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def invite(engine: Engine, queue: str, name: str, base_url: str) -> dict[str, Any]:
    """A fresh token for `name` (stored only as its hash) and the link that carries it."""
    token = new_token()
    store.invite(engine, queue, name, store.token_hash(token))
    url = f"{base_url.rstrip('/')}/a/{urllib.parse.quote(queue, safe='')}?token={token}"
    return {"url": url, "token": token, "queue": queue, "annotator": name}
