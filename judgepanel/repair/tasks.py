"""What the editor is shown: building rewrite and split tasks from stored material (pure).

A rewrite task gets the clause (id, text, its dimension's name) and at most `MAX_EXAMPLES` items
on which the judges split on that clause — the most evenly split first (n1·n0 largest), then by
item position — each with the candidate, its source, and every judge's rationale for this clause
(judges named `judge 1`, `judge 2`, … in name order). Nothing else is passed in: no human label,
no score, no other clause's verdict.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Protocol

from judgepanel.protocol.editor import MAX_EXAMPLES, Example, RewriteTask, SplitTask
from judgepanel.rubrics import Dimension


class _Verdict(Protocol):
    @property
    def item_id(self) -> int: ...
    @property
    def judge(self) -> str: ...
    @property
    def met(self) -> bool: ...
    @property
    def rationale(self) -> str | None: ...


class _Texts(Protocol):
    @property
    def position(self) -> int: ...
    @property
    def input(self) -> str | None: ...
    @property
    def output(self) -> str | None: ...


def split_items(verdicts: Sequence[_Verdict], positions: Mapping[int, int]) -> list[int]:
    """Items where the judges split on the clause: most evenly split first, then by position."""
    by_item: dict[int, list[bool]] = defaultdict(list)
    for v in verdicts:
        by_item[v.item_id].append(v.met)
    split = [(sum(m) * (len(m) - sum(m)), i) for i, m in by_item.items() if 0 < sum(m) < len(m)]
    split.sort(key=lambda t: (-t[0], positions.get(t[1], 0), t[1]))
    return [i for _n, i in split[:MAX_EXAMPLES]]


def rewrite_task(
    clause_id: str,
    clause_text: str,
    dimension: str,
    verdicts: Sequence[_Verdict],
    texts: Mapping[int, _Texts],
    judges: Sequence[str],
) -> RewriteTask:
    """`verdicts`: this clause's verdicts only (any item); `judges`: every judge of the panel."""
    label = {j: f"judge {k + 1}" for k, j in enumerate(sorted(judges))}
    chosen = split_items(verdicts, {i: t.position for i, t in texts.items()})
    why: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for v in sorted(verdicts, key=lambda v: label.get(v.judge, v.judge)):
        if v.item_id in chosen:
            why[v.item_id].append(
                (label.get(v.judge, v.judge), (v.rationale or "").strip() or "(no rationale)")
            )
    examples = tuple(
        Example(texts[i].output or "", texts[i].input, tuple(why[i])) for i in chosen if i in texts
    )
    return RewriteTask(clause_id, clause_text, dimension, examples)


def split_task(dimension: Dimension) -> SplitTask:
    return SplitTask(
        dimension.name,
        dimension.definition,
        dimension.criteria,
        dimension.anchors,
        tuple(c.text for c in dimension.clauses),
    )
