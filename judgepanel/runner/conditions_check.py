"""Conditions that render the same prompt (issue 28 §2), found at `campaign create`.

A condition study asks each unit under several conditions (`none`, `criteria`, `rubric`) and
compares the judges' answers. A custom template that does not show what a condition adds renders
byte-identical prompts under two conditions: the campaign would pay for each twice (identical
requests are asked once per run since issue 28, but the study still counts `mini / none` and
`mini / rubric` as two raters that agree perfectly by construction). `SamePrompts` collects, per
unit (item or pair, order, dimension), a digest of the prompt under each condition while `create`
renders every distinct prompt anyway, and then

- refuses (`BadInput`, nothing stored) when two conditions render the same prompt for every
  unit, unless `allow=True` (`--allow-identical-conditions`, and always for the bundled
  templates: the pairwise one shows no condition by design, and the contract's
  `campaign create --protocol pairwise --condition …` stays valid);
- otherwise reports each pair of conditions that coincide for some (or, allowed, all) units as a
  warning line for `campaign create` to print.

Boundary: reads rendered prompts, writes nothing; the store and the CLI are above it.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Sequence
from itertools import combinations
from typing import Any

from judgepanel.errors import BadInput
from judgepanel.protocol.templates import Prompt
from judgepanel.store.campaigns import LeasedJob


def prompt_digest(prompt: Prompt) -> str:
    """sha256 of what the judge is shown and asked to return (messages and output schema)."""
    body = json.dumps([prompt.messages, prompt.schema], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()


class SamePrompts:
    def __init__(self, conditions: Sequence[str], *, allow: bool = False) -> None:
        self.conditions = tuple(dict.fromkeys(conditions))
        self.allow = allow
        self.warnings: list[str] = []
        # unit (item, pair, order, dimension) -> condition -> prompt digest
        self._units: dict[tuple[Any, ...], dict[str, str]] = defaultdict(dict)

    def add(self, job: LeasedJob, prompt: Prompt) -> None:
        if len(self.conditions) < 2 or job.condition is None:
            return
        unit = (job.item_id, job.pair_id, job.order, job.dimension)
        self._units[unit][job.condition] = prompt_digest(prompt)

    def check(self) -> None:
        self.warnings = []
        refused: list[str] = []
        for a, b in combinations(self.conditions, 2):
            both = [u for u in self._units.values() if a in u and b in u]
            same = sum(1 for u in both if u[a] == u[b])
            if not both or not same:
                continue
            if same == len(both):
                line = (
                    f"conditions {a} and {b} render the same prompt for all {len(both)} unit(s): "
                    "the template does not show what they differ in"
                )
                (self.warnings if self.allow else refused).append(line)
            else:
                self.warnings.append(
                    f"conditions {a} and {b} render the same prompt for {same} of {len(both)} unit(s); "
                    "those requests are asked once and their answer counted under both"
                )
        if refused:
            raise BadInput(
                "; ".join(refused)
                + ": a condition study needs conditions that differ (fix the template, or give "
                "--allow-identical-conditions to create it anyway)"
            )
