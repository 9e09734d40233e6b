"""Selection on constructed clause verdicts with known rates, ties and zero rates."""

from __future__ import annotations

import numpy as np
import pytest

from judgepanel.repair.select import ClauseVerdicts, disagreement_rates, draw_control, select_clauses


def _verdicts(table: dict[str, list[list[int | None]]], dims: dict[str, str]) -> ClauseVerdicts:
    """table[clause][item] = one verdict per judge (1 met, 0 not, None missing)."""
    ids = tuple(table)
    rows = []
    for c, cid in enumerate(ids):
        for i, judges in enumerate(table[cid]):
            rows += [(i, j, c, bool(v)) for j, v in enumerate(judges) if v is not None]
    arr = np.array(rows, dtype=object)
    return ClauseVerdicts(
        arr[:, 0].astype(np.int64),
        arr[:, 1].astype(np.int64),
        arr[:, 2].astype(np.int64),
        arr[:, 3].astype(bool),
        ids,
        tuple(dims[c] for c in ids),
        max(len(v) for v in table.values()),
        3,
    )


def test_known_rates_ties_and_zero() -> None:
    table = {
        # item 0: 2 met 1 not -> 2 of 3 pairs differ; item 1: all met -> 0 of 3: rate 2/6
        "a.1": [[1, 1, 0], [1, 1, 1]],
        # item 0: one judge missing -> 1 pair, differs; item 1: 1/3... (1,0,0) -> 2 of 3: rate 3/4
        "a.2": [[1, 0, None], [1, 0, 0]],
        "a.3": [[1, 1, 1], [0, 0, 0]],  # zero rate
        "a.4": [[0, 1, 1], [1, 1, 1]],  # same rate as a.1: tie, broken by id
        "a.5": [[1, None, None], [None, None, None]],  # no comparison at all
        "b.1": [[1, 0, 1], [0, 0, 0]],
        "b.2": [[1, 1, 1], [1, 1, 1]],
        "b.3": [[0, 0, 0], [1, 1, 1]],
    }
    dims = {c: c.split(".")[0] for c in table}
    v = _verdicts(table, dims)
    r = disagreement_rates(v)
    assert r.rates["a.1"] == pytest.approx(2 / 6) and r.comparisons["a.1"] == 6
    assert r.rates["a.2"] == pytest.approx(3 / 4) and r.comparisons["a.2"] == 4
    assert r.rates["a.3"] == 0.0 and r.rates["a.5"] is None and r.comparisons["a.5"] == 0
    sel = select_clauses(v, control_seed=5)
    # a: 5 clauses -> k = 2: a.2 (0.75), then a.1 and a.4 tie at 1/3 -> a.1 by id
    assert sel.selected["a"] == ["a.2", "a.1"]
    # b: 3 clauses -> k = 1; only b.1 has a positive rate
    assert sel.selected["b"] == ["b.1"]
    assert [len(sel.control[d]) for d in ("a", "b")] == [2, 1]
    assert set(sel.control["a"]) <= {"a.1", "a.2", "a.3", "a.4", "a.5"}
    assert sel.overlap["a"] == sorted(set(sel.control["a"]) & {"a.1", "a.2"})
    assert select_clauses(v, control_seed=5).control == sel.control


def test_all_zero_rates_select_nothing() -> None:
    table = {"a.1": [[1, 1, 1]], "a.2": [[0, 0, 0]], "a.3": [[1, 1, 1]], "a.4": [[0, 0, 0]]}
    sel = select_clauses(_verdicts(table, {c: "a" for c in table}), control_seed=1)
    assert sel.selected == {"a": []} and sel.control == {"a": []}


def test_at_most_five_and_control_is_uniform() -> None:
    ids = [f"d.{i}" for i in range(14)]
    rng = np.random.default_rng(0)
    table = {c: [[int(x) for x in rng.integers(0, 2, 3)] for _ in range(30)] for c in ids}
    sel = select_clauses(_verdicts(table, {c: "d" for c in ids}), control_seed=3)
    assert len(sel.selected["d"]) == 5
    rates = disagreement_rates(_verdicts(table, {c: "d" for c in ids})).rates
    ranked = sorted(ids, key=lambda c: (-(rates[c] or 0), c))
    assert sel.selected["d"] == ranked[:5]
    # every clause is drawn about equally often over many seeds
    counts = dict.fromkeys(ids, 0)
    for seed in range(1400):
        for c in draw_control({"d": ["x"] * 5}, ids, ["d"] * 14, seed)["d"]:
            counts[c] += 1
    assert min(counts.values()) > 400 and max(counts.values()) < 600  # expectation 500
