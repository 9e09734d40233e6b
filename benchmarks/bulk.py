"""Bulk-generated campaigns for the benchmarks: Core inserts straight into the store (no runner, no
HTTP), every verdict with its job, request and response row, as a real run stores them.

One builder for both protocols, so the export, report and million-verdict benchmarks (and the test
that checks the million-verdict campaign at a small N) measure campaigns stored the same way:

- pointwise: `judges` judges score n / judges items (at most `ITEMS` items with one judge, asked
  again as repeats), and `humans` human scores per item;
- pairwise: `judges` judges asked every pair of pair set `bench-pairs` in both orders (AB and BA).

Seeded: the same arguments store the same rows.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, insert

from judgepanel.store import tables as t
from judgepanel.store.engine import make_engine
from judgepanel.store.migrate import upgrade

ITEMS = 2_000
STEP = 50_000

Row = dict[str, Any]
Attempt = tuple[Row, Row, Row, Row]  # job, request, response, verdict


def build(url: str, n: int, *, judges: int = 1, humans: int = 0, pairwise: bool = False) -> int:
    """Campaign `bench` of `n` verdicts (pairwise: rounded down to whole swapped pairs per judge)
    in a fresh store at `url`. Returns the number of verdicts stored."""
    eng = make_engine(url)
    upgrade(eng)
    rng = random.Random(0)
    n_pairs = max(1, n // (2 * judges)) if pairwise else 0
    if pairwise:
        n_items = 2
        while n_items * (n_items - 1) // 2 < n_pairs:
            n_items *= 2
    else:
        n_items = min(ITEMS, n) if judges == 1 else n // judges
    with eng.begin() as conn:
        ds_id = conn.execute(
            insert(t.dataset).values(name="d", kind="items", source_hash="x", meta={})
        ).inserted_primary_key[0]
        for start in range(0, n_items, STEP):
            conn.execute(
                insert(t.item),
                [
                    {
                        "dataset_id": ds_id,
                        "external_id": f"i{k}",
                        "position": k,
                        "output": f"summary {k}",
                        "meta": {},
                    }
                    for k in range(start, min(n_items, start + STEP))
                ],
            )
        item_ids = [r[0] for r in conn.exec_driver_sql("select id from item order by id")]
        ps_id = _pair_set(conn, ds_id, item_ids, n_pairs) if pairwise else None
        judge_ids = [
            conn.execute(
                insert(t.judge).values(name=f"sim:j{j}", provider="sim", model=f"j{j}", params={})
            ).inserted_primary_key[0]
            for j in range(judges)
        ]
        cid = conn.execute(
            insert(t.campaign).values(
                name="bench",
                dataset_id=ds_id,
                pair_set_id=ps_id,
                protocol="pairwise" if pairwise else "pointwise",
                condition="none",
                dimension=None if pairwise else "coherence",
                repeats=1 if pairwise else max(1, n // (n_items * judges)),
                status="done",
                spec={},
            )
        ).inserted_primary_key[0]
        conn.execute(insert(t.campaign_judge), [{"campaign_id": cid, "judge_id": j} for j in judge_ids])
        if not pairwise:
            scores = [rng.randint(1, 5) for _ in item_ids]
            if humans:
                _human_scores(conn, ds_id, item_ids, scores, humans, rng)
    if pairwise:
        winners = [rng.choice("AAABBBT") for _ in range(n_pairs)]
        total = n_pairs * judges * 2
    else:
        total = n
    for start in range(1, total + 1, STEP):
        ids = range(start, min(total, start + STEP - 1) + 1)
        if pairwise:
            attempts = _pairwise(ids, cid, judge_ids, winners, rng)
        else:
            attempts = _pointwise(ids, cid, judge_ids, item_ids, scores, rng)
        with eng.begin() as conn:
            for model, rows in zip(
                (t.job, t.request, t.response, t.verdict), zip(*attempts, strict=True), strict=True
            ):
                conn.execute(insert(model), list(rows))
    eng.dispose()
    return total


def _pair_set(conn: Connection, ds_id: int, item_ids: list[int], n_pairs: int) -> int:
    """Pair set `bench-pairs`: pairs (a, b), a < b, walked row by row of the upper triangle."""
    ps_id: int = conn.execute(
        insert(t.pair_set).values(
            name="bench-pairs", dataset_id=ds_id, seed=0, sample=n_pairs, tie_eps=0.0, pairs_total=n_pairs
        )
    ).inserted_primary_key[0]
    pairs: list[tuple[int, int]] = []
    a = 0
    while len(pairs) < n_pairs:
        for b in range(a + 1, len(item_ids)):
            pairs.append((a, b))
            if len(pairs) == n_pairs:
                break
        a += 1
    for start in range(0, n_pairs, STEP):
        conn.execute(
            insert(t.pair),
            [
                {
                    "id": p + 1,
                    "pair_set_id": ps_id,
                    "position": p,
                    "item_a_id": item_ids[pairs[p][0]],
                    "item_b_id": item_ids[pairs[p][1]],
                }
                for p in range(start, min(n_pairs, start + STEP))
            ],
        )
    return ps_id


def _human_scores(
    conn: Connection, ds_id: int, item_ids: list[int], truth: list[int], humans: int, rng: random.Random
) -> None:
    ann = [
        conn.execute(
            insert(t.annotator).values(dataset_id=ds_id, name=f"h{h}", kind="human", group="expert")
        ).inserted_primary_key[0]
        for h in range(humans)
    ]
    conn.execute(
        insert(t.label),
        [
            {
                "item_id": i,
                "annotator_id": a,
                "dimension": "coherence",
                "value_num": float(v),
                "value_text": str(v),
            }
            for i, t in zip(item_ids, truth, strict=True)
            for a in ann
            for v in [min(5, max(1, t + rng.choice((-1, 0, 0, 1))))]
        ],
    )


def _attempt(
    k: int, cid: int, judge_id: int, job: Row, template: str, response: Row, verdict: Row
) -> Attempt:
    """Job `k`'s one answered attempt: the rows every protocol stores alike, plus its own fields."""
    return (
        {
            "id": k,
            "campaign_id": cid,
            "job_key": f"{k:064x}",
            "judge_id": judge_id,
            "condition": "none",
            "status": "done",
            "attempts": 1,
            **job,
        },
        {
            "id": k,
            "job_id": k,
            "attempt": 1,
            "request_hash": f"{k:064x}",
            "template_name": template,
            "template_hash": "t" * 64,
            "messages": [],
            "params": {},
        },
        {"id": k, "request_id": k, "ok": True, "model_returned": "sim/j", "output_tokens": 60, **response},
        {
            "id": k,
            "job_id": k,
            "attempt": 1,
            "request_id": k,
            "parse_status": "ok",
            "parse_method": "structured",
            **verdict,
        },
    )


def _pointwise(
    ids: range,
    cid: int,
    judge_ids: Sequence[int],
    item_ids: Sequence[int],
    truth: Sequence[int],
    rng: random.Random,
) -> list[Attempt]:
    """Job k: judge k % judges, item (k // judges) % items, repeat k // (judges × items); a score
    within two of the item's true score."""
    judges, n_items = len(judge_ids), len(item_ids)
    latencies = [rng.uniform(100, 900) for _ in ids]
    scores = [min(5, max(1, truth[(k // judges) % n_items] + rng.choice((-2, -1, 0, 0, 1)))) for k in ids]
    return [
        _attempt(
            k,
            cid,
            judge_ids[k % judges],
            {
                "item_id": item_ids[(k // judges) % n_items],
                "dimension": "coherence",
                "repeat": k // (judges * n_items),
            },
            "pointwise",
            {"text": "{}", "input_tokens": 400, "latency_ms": latency, "cost_usd": 1e-4},
            {
                "value_presented": str(s),
                "value_canonical": str(s),
                "score": float(s),
                "rationale": "The summary states the main facts in order.",
            },
        )
        for k, latency, s in zip(ids, latencies, scores, strict=True)
    ]


def _flip(v: str) -> str:
    return {"A": "B", "B": "A"}.get(v, v)


def _pairwise(
    ids: range, cid: int, judge_ids: Sequence[int], truth: Sequence[str], rng: random.Random
) -> list[Attempt]:
    """Job k (1-based): pair (k-1) // (2 × judges), judge ((k-1) // 2) % judges, order AB when k is odd.
    A judge agrees with the truth 70 % of the time and prefers the front slot a little."""
    judges = len(judge_ids)
    out: list[Attempt] = []
    for k in ids:
        p, j, ab = (k - 1) // (2 * judges), ((k - 1) // 2) % judges, k % 2 == 1
        canon = truth[p] if rng.random() < 0.7 else rng.choice("ABT")
        if rng.random() < 0.05:
            canon = "A" if ab else "B"  # answered "A" (front) whatever the order
        presented = canon if ab else _flip(canon)
        out.append(
            _attempt(
                k,
                cid,
                judge_ids[j],
                {"pair_id": p + 1, "order": "AB" if ab else "BA", "dimension": None, "repeat": 0},
                "pairwise",
                {
                    "text": f'{{"verdict": "{presented}"}}',
                    "input_tokens": 800,
                    "latency_ms": 100 + 800 * rng.random(),
                    "cost_usd": 2e-4,
                },
                {
                    "value_presented": presented,
                    "value_canonical": canon,
                    "rationale": "Response A states the main facts in order; B omits one.",
                },
            )
        )
    return out
