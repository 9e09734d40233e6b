"""Planning: a campaign spec and its units become a deterministic list of jobs.

A job is one model call's worth of work: one item or pair × one judge × one presentation order
(pairwise: AB and BA, asked as separate jobs) × one rubric condition × one dimension (or, for the
clause protocol, the clause set of a dimension) × one repeat. Its `job_key` is the sha256 of a
canonical JSON description built from stable names only (judge name, items' external ids, rubric
content hash), never from database ids, so planning the same campaign again — after a crash, on
another machine, or after adding items — finds the jobs it already has instead of duplicating them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from judgepanel.errors import BadInput

PROTOCOLS = ("pairwise", "pointwise", "clauses")
CONDITIONS = ("none", "criteria", "rubric")
ORDERS = ("AB", "BA")
KEY_VERSION = 1
REFERENCE = "reference"  # the `templates` key of the reference-guided template (`reference_categories`)


# The most jobs one campaign may plan (issue 29 §6: `repeats: 1000000000` was planned and rendered
# without an answer); checked from the sizes alone, before a job is built
MAX_JOBS = 1_000_000


@dataclass(frozen=True)
class CampaignSpec:
    """What `campaign create` was asked for; stored as the campaign's `spec` and compared on re-create."""

    name: str
    dataset: str
    protocol: str
    judges: tuple[str, ...]  # canonical judge names (identity: part of every job key)
    pairs: str | None = None
    rubric: str | None = None
    conditions: tuple[str, ...] = ("none",)
    dimensions: tuple[str, ...] = ()
    repeats: int = 1
    split: str | None = None
    limit: int | None = None
    # the specs as given, with operational parameters (rpm, concurrency, timeout, prices) that the
    # canonical names leave out; used when running, never part of a job key
    judge_specs: tuple[str, ...] = ()
    # protocol -> {"name", "path", "sha256", "source"} of a custom or classic template
    # (`judgepanel.protocol.custom`); its sha256 is part of every job key
    templates: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    max_cost: float | None = None  # the default `--max-cost` of `campaign run`
    # where the spec came from: {"file": path, "sha256": …} for `--from FILE`; provenance only,
    # left out when a re-create compares specs
    origin: Mapping[str, Any] | None = None
    # judge the assistant reply at this turn (1-based) of each item's conversation, with the turns
    # before it as context; None: the item's own reply (`output`)
    turn: int | None = None
    # items whose `meta.category` is one of these are judged with `templates["reference"]` (a
    # reference-guided template), the others with `templates[protocol]`
    reference_categories: tuple[str, ...] = ()
    # the judges' short names, parallel to `judges` (given as `NAME=SPEC` / `name:`, else derived);
    # shown everywhere a judge is named, never part of a job key nor of the re-create comparison
    judge_names: tuple[str, ...] = ()
    # judge exactly these items (external ids; dataset order), e.g. a seeded sample spread over
    # groups that a repair iteration drew; within `split` when one is given
    items: tuple[str, ...] = ()

    def validate(self) -> None:
        if not self.name.strip():
            raise BadInput("a campaign name must not be empty")
        if self.protocol not in PROTOCOLS:
            raise BadInput(f"--protocol must be one of {', '.join(PROTOCOLS)}, got {self.protocol!r}")
        if not self.judges:
            raise BadInput("a campaign needs at least one --judge")
        if len(set(self.judges)) != len(self.judges):
            raise BadInput("the same --judge is given twice; use --repeats to ask a judge again")
        if self.judge_names and len(set(self.judge_names)) != len(self.judge_names):
            raise BadInput("two judges of the campaign share a name; judge names must be unique")
        if self.repeats < 1:
            raise BadInput(f"--repeats must be at least 1, got {self.repeats}")
        if self.repeats > MAX_JOBS:
            raise BadInput(
                f"--repeats {self.repeats:,} would plan more than the {MAX_JOBS:,} jobs a campaign may have"
            )
        if self.limit is not None and self.limit < 1:
            raise BadInput(f"--limit must be at least 1, got {self.limit}")
        if self.limit is not None and self.limit > 2**31 - 1:
            raise BadInput(f"--limit must be at most {2**31 - 1:,}, got {self.limit}")
        for c in self.conditions:
            if c not in CONDITIONS:
                raise BadInput(f"--condition must be one of {', '.join(CONDITIONS)}, got {c!r}")
        if len(set(self.conditions)) != len(self.conditions):
            raise BadInput("a --condition is given twice")
        if self.protocol == "pairwise" and not self.pairs:
            raise BadInput("a pairwise campaign needs --pairs NAME (create one with `judgepanel data pairs`)")
        if self.protocol != "pairwise" and self.pairs:
            raise BadInput(f"--pairs is for pairwise campaigns, not {self.protocol}")
        needs_rubric = self.protocol == "clauses" or any(c != "none" for c in self.conditions)
        if needs_rubric and not self.rubric:
            what = "the clause protocol" if self.protocol == "clauses" else "--condition criteria/rubric"
            raise BadInput(f"{what} needs --rubric NAME[@VERSION]")
        if self.protocol == "clauses" and not self.dimensions:
            raise BadInput("the clause protocol needs --dimension (whose clauses to ask)")
        for proto in self.templates:
            if proto not in (self.protocol, REFERENCE):
                raise BadInput(f"a {proto} template was given for a {self.protocol} campaign")
        if self.turn is not None:
            if isinstance(self.turn, bool) or not isinstance(self.turn, int) or self.turn < 1:
                raise BadInput(f"--turn must be a whole number from 1, got {self.turn!r}")
            if self.protocol not in self.templates:
                raise BadInput(
                    f"--turn needs a {self.protocol} template that shows the conversation: add "
                    f"--template {self.protocol}=@classic-{'pairwise' if self.protocol == 'pairwise' else 'single'}"
                    " (or your own template)"
                )
        if self.reference_categories and REFERENCE not in self.templates:
            raise BadInput(
                "--reference-categories needs a reference-guided template: --template "
                "reference=FILE, or a classic --template (its -ref variant is then used)"
            )
        if REFERENCE in self.templates and not self.reference_categories:
            raise BadInput("--template reference=… is used only with --reference-categories CATEGORY,…")
        if self.reference_categories and self.protocol not in self.templates:
            raise BadInput(
                f"--reference-categories needs a {self.protocol} template for the other items too "
                f"(--template {self.protocol}=…)"
            )
        if self.items and self.pairs:
            raise BadInput("an explicit item list is for item campaigns, not pairwise ones")
        if self.items and self.limit is not None:
            raise BadInput("give either an explicit item list or --limit, not both")
        if len(set(self.items)) != len(self.items):
            raise BadInput("an item is listed twice")
        if self.max_cost is not None and not self.max_cost > 0:
            raise BadInput(f"max_cost must be a positive number of USD, got {self.max_cost}")

    def as_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "protocol": self.protocol,
            "judges": list(self.judges),
            "pairs": self.pairs,
            "rubric": self.rubric,
            "conditions": list(self.conditions),
            "dimensions": list(self.dimensions),
            "repeats": self.repeats,
            "split": self.split,
            "limit": self.limit,
            "judge_specs": list(self.judge_specs),
            # added only when used, so specs stored before these keys existed still compare equal
            **({"templates": {k: dict(v) for k, v in self.templates.items()}} if self.templates else {}),
            **({"max_cost": self.max_cost} if self.max_cost is not None else {}),
            **({"judge_names": list(self.judge_names)} if self.judge_names else {}),
            **({"origin": dict(self.origin)} if self.origin is not None else {}),
            **({"turn": self.turn} if self.turn is not None else {}),
            **(
                {"reference_categories": list(self.reference_categories)} if self.reference_categories else {}
            ),
            **({"items": list(self.items)} if self.items else {}),
        }


@dataclass(frozen=True)
class Unit:
    """What one job judges: an item (pointwise, clauses) or a pair (pairwise), by database id for the
    foreign key and by external id(s) for the job key."""

    item_id: int | None
    pair_id: int | None
    external: tuple[str, ...]


@dataclass(frozen=True)
class PlannedJob:
    key: str
    judge: str
    item_id: int | None
    pair_id: int | None
    order: str | None
    condition: str | None
    dimension: str | None
    repeat: int


def job_key(description: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of a job description (sorted keys, no whitespace)."""
    canon = json.dumps(description, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canon.encode()).hexdigest()


def plan_jobs(
    spec: CampaignSpec,
    units: Sequence[Unit],
    *,
    dataset_key: str,
    rubric_hash: str | None,
) -> list[PlannedJob]:
    """Every job of the campaign in execution order: repeat-major (a partial run covers every unit
    once before any second sample), then unit, judge, order, condition, dimension. A campaign of
    more than `MAX_JOBS` jobs is refused before any is built (or rendered)."""
    orders: tuple[str | None, ...] = ORDERS if spec.protocol == "pairwise" else (None,)
    # the clause protocol asks a dimension's whole clause set in one call: the condition is moot
    conditions: tuple[str | None, ...] = (None,) if spec.protocol == "clauses" else spec.conditions
    dims: tuple[str | None, ...] = spec.dimensions or (None,)
    total = spec.repeats * len(units) * len(spec.judges) * len(orders) * len(conditions) * len(dims)
    if total > MAX_JOBS:
        raise BadInput(
            f"campaign {spec.name} would have {total:,} jobs, more than the {MAX_JOBS:,} one campaign "
            "may plan: lower --repeats or --limit, or split the work into several campaigns"
        )
    template = spec.templates.get(spec.protocol)
    extra: dict[str, Any] = {"template": template["sha256"]} if template else {}  # old keys unchanged
    if spec.turn is not None:
        extra["turn"] = spec.turn
    if spec.reference_categories:
        extra["reference_template"] = spec.templates[REFERENCE]["sha256"]
        extra["reference_categories"] = sorted(spec.reference_categories)
    jobs: list[PlannedJob] = []
    for repeat in range(spec.repeats):
        for unit in units:
            for judge in spec.judges:
                for order in orders:
                    for condition in conditions:
                        for dim in dims:
                            desc = {
                                "v": KEY_VERSION,
                                "dataset": dataset_key,
                                "protocol": spec.protocol,
                                "judge": judge,
                                "unit": list(unit.external),
                                "order": order,
                                "condition": condition,
                                "dimension": dim,
                                "rubric": rubric_hash
                                if (condition not in (None, "none") or spec.protocol == "clauses")
                                else None,
                                "repeat": repeat,
                                **extra,
                            }
                            jobs.append(
                                PlannedJob(
                                    job_key(desc),
                                    judge,
                                    unit.item_id,
                                    unit.pair_id,
                                    order,
                                    condition,
                                    dim,
                                    repeat,
                                )
                            )
    return jobs
